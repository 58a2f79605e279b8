"""module_utils is a folder per concept, and each folder imports only folders below it (docs/guide/development.md).

A newcomer changing a rule finds it in its concept's folder; an import that points up the ladder (the IMDS
document importing the cycle, say) would tie a lower concept to a higher one, so this test names it."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
PACKAGE = "ansible_collections.azure_imds.scheduled_events.plugins.module_utils"
# Lower rungs first: a folder may import its own rung's folder and any folder on a lower rung.
LADDER: Dict[str, int] = {
    "document": 0,     # the IMDS document: its meaning, its client, which approvals may be sent
    "observation": 0,  # history records, the history appender and Prometheus text, shared by the relay and the callback
    "lease": 0,        # the lease lock a run holds on each VM
    "cycle": 1,        # the maintenance cycle: host views, fault domains, the plan, the state file's content
    "control_plane": 1,  # Azure's control plane: Event Grid and Resource Graph sightings, their hosts, acknowledge
    "host": 1,         # what a task may ask of a host, and the Linux VM's answers
    "tasks": 2,        # each module's behaviour, with its I/O passed in
    "relay": 3,        # the event relay on the VM, and the controller's view of its pushes
}


def imports_of(path: Path) -> List[str]:
    """The collection's module_utils folders a file imports."""
    folders = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        folders += [n[len(PACKAGE) + 1:].split(".")[0] for n in names if n.startswith(PACKAGE + ".")]
    return folders


def test_every_file_is_in_a_concept_folder() -> None:
    assert not list(MODULE_UTILS.glob("*.py")), "a file directly under module_utils belongs to no concept"
    assert {p.name for p in MODULE_UTILS.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LADDER)


def test_no_folder_imports_one_above_it() -> None:
    upward: Set[str] = set()
    for path in MODULE_UTILS.glob("*/*.py"):
        folder = path.parent.name
        upward |= {f"{folder}/{path.name} imports {target}/" for target in imports_of(path)
                   if LADDER[target] > LADDER[folder] or (LADDER[target] == LADDER[folder] and target != folder)}
    assert not upward, sorted(upward)


def test_the_ladder_check_sees_an_upward_import(tmp_path: Path) -> None:
    upward = tmp_path / "events.py"
    upward.write_text(f"from {PACKAGE}.cycle.plan import plan_cycle\n")
    assert imports_of(upward) == ["cycle"]
