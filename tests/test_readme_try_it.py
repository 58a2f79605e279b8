"""The README's first screen tells a newcomer without Azure how to try the collection: `make demo` and `make test`."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
FIRST_SCREEN = 60  # lines


def try_it_block() -> str:
    start = README.index("\n## Try it without Azure\n")
    (block,) = re.findall(r"```sh\n(.*?)```", README[start:README.index("\n## ", start + 1)], re.S)
    return block


def test_the_first_screen_names_both_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:FIRST_SCREEN])
    assert "## Try it without Azure" in first_screen
    for command in ("make demo", "make test"):
        assert command in first_screen, f"{command} is in the README's first {FIRST_SCREEN} lines"


def test_the_try_it_block_is_make_targets_that_exist() -> None:
    """Each line of the block is a target of the Makefile, as written (make -n runs nothing)."""
    commands = [line.split("#")[0].strip() for line in try_it_block().splitlines()]
    commands = [command for command in commands if command]
    assert commands == ["make demo", "make test"]
    for command in commands:
        done = subprocess.run(command.split() + ["-n", "-C", str(REPO)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


def test_make_demo_runs_as_written_and_leaves_no_vm_drained(tmp_path: Path) -> None:
    """`make demo` from the block, in the repository as a newcomer runs it (a HOME of its own, where the demo leaves
    its history). Judged by what the simulated VMs were left with, not by the demo's own summary: no VM keeps a
    maintenance marker, every VM prepared for an event recovered from it, and the captured history (marked
    simulated) shows no two fault domains in maintenance at once. On a loaded machine the demo slows its clock
    and some events may start at NotBefore: what it must never do is leave a VM drained."""
    import event_analysis as ea  # pandas: imported by this test only, not at collection

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "SCHEDULED_EVENTS_"))}
    done = subprocess.run(["make", "demo"], cwd=REPO, env=dict(env, HOME=str(home)), capture_output=True, text=True,
                          timeout=2400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Demo finished" in done.stdout, done.stdout[-3000:]
    markers = REPO / "build" / "demo" / "markers"
    assert sorted(p.name for p in markers.iterdir()) == [f"avset-web-vm{n}" for n in range(6)]
    assert not list(markers.glob("*/in-maintenance-*")), "a VM was left drained"
    audit = [json.loads(line) for path in markers.glob("*/maintenance-audit.jsonl")
             for line in path.read_text().splitlines() if line.strip()]
    prepared = {(a["host"], a["event_id"]) for a in audit if a["phase"] == "prepare"}
    recovered = {(a["host"], a["event_id"]) for a in audit if a["phase"] == "recover"}
    assert prepared and prepared <= recovered, "every VM prepared for an event recovered from it"
    history = home / ".ansible" / "scheduled_events" / "demo-history.jsonl"
    assert json.loads(Path(str(history) + ".meta.json").read_text())["simulated"] is True
    lifecycles = ea.event_lifecycles(ea.load_history(history, warn=False))
    assert set(lifecycles["event_id"]) >= {event for _, event in prepared}, "what was prepared was read first"
    overlaps = ea.domain_overlaps(lifecycles)
    assert not (overlaps["kind"] == "certain").any(), "two fault domains seen Started at once"
