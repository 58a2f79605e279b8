"""The relay's archive: which modules go in (against this file's own walk of the imports) and the zip itself."""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Set

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.relay_code import (
    PACKAGE,
    RelayCodeError,
    archive,
    closure,
    imported,
)

MODULE_UTILS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils"
ROOT = PACKAGE.replace(".", "/")


def relay_imports() -> Set[str]:
    """The oracle: relay/program.py and the module_utils it imports, transitively, as paths under module_utils."""
    found: Set[str] = set()
    todo = ["relay.program"]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for node in ast.walk(ast.parse((MODULE_UTILS / f"{name.replace('.', '/')}.py").read_text())):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            todo += [m[len(PACKAGE) + 1:] for m in modules if m.startswith(PACKAGE + ".")]
    return {f"{name.replace('.', '/')}.py" for name in found}


def read(path: str) -> str:
    return (MODULE_UTILS / path).read_text()


def exists(path: str) -> bool:
    return (MODULE_UTILS / path).is_file()


def test_the_closure_is_the_relay_program_and_all_it_imports() -> None:
    paths = closure(read, exists)
    assert set(paths) == relay_imports() and paths == sorted(paths) and len(paths) > 10


def test_the_archive_carries_no_task_or_lock_rule_the_relay_never_runs() -> None:
    """The relay runs no module task and takes no lease lock: their code shipped to every VM all the same."""
    paths = closure(read, exists)
    assert not [p for p in paths if p.startswith(("tasks/", "host/"))] and "lease/cycle_lock.py" not in paths


def test_imports_inside_functions_count_and_other_packages_do_not() -> None:
    source = (f"import json\nfrom ansible.module_utils.basic import AnsibleModule\nfrom {PACKAGE}.a.b import c\n"
              f"def later():\n    import {PACKAGE}.d.e\n")
    assert sorted(imported(source, lambda path: path in ("a/b.py", "d/e.py"))) == ["a.b", "d.e"]


def test_a_module_imported_from_its_package_is_found_and_a_relative_import_refused() -> None:
    modules = {"relay/metrics.py", "cycle/quiet.py"}
    source = f"from {PACKAGE}.relay import metrics\nfrom {PACKAGE} import cycle\nfrom {PACKAGE}.cycle import quiet\n"
    assert sorted(imported(source, modules.__contains__)) == ["cycle.quiet", "relay.metrics"]
    with pytest.raises(RelayCodeError, match=r"relative import \(from \.events\)"):
        imported("from .events import x\n", modules.__contains__)


def test_the_archive_has_a_package_at_every_level_and_the_same_bytes_each_time() -> None:
    files = {"relay/program.py": b"X = 1\n", "document/events.py": b"Y = 2\n"}
    first = archive(files)
    assert archive(dict(reversed(list(files.items())))) == first, "the same code, the same bytes: no change"
    with zipfile.ZipFile(BytesIO(first)) as bundle:
        members = {info.filename: info for info in bundle.infolist()}
        assert bundle.read(f"{ROOT}/relay/program.py") == b"X = 1\n"
        inits = sorted(name for name in members if name.endswith("__init__.py"))
        assert all(bundle.read(name) == b"" for name in inits)
    assert inits == sorted(["ansible_collections/__init__.py", "ansible_collections/azure_imds/__init__.py",
                            "ansible_collections/azure_imds/scheduled_events/__init__.py",
                            "ansible_collections/azure_imds/scheduled_events/plugins/__init__.py",
                            f"{ROOT}/__init__.py", f"{ROOT}/relay/__init__.py", f"{ROOT}/document/__init__.py"])
    assert {info.date_time for info in members.values()} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.compress_type for info in members.values()} == {zipfile.ZIP_STORED}, "the same bytes with any zlib"
    assert {info.external_attr >> 16 for info in members.values()} == {0o644}


def test_a_python_without_ansible_imports_the_relay_from_the_archive(tmp_path: Path) -> None:
    paths = closure(read, exists)
    bundle = tmp_path / "relay.zip"
    bundle.write_bytes(archive({path: (MODULE_UTILS / path).read_bytes() for path in paths}))
    plain = getattr(sys, "_base_executable", sys.executable)  # no Ansible, no collection there
    found = subprocess.run([plain, "-c", f"import {PACKAGE}.relay.program as p; print(p.__file__)"],
                           env={"PYTHONPATH": str(bundle)}, capture_output=True, text=True, timeout=60,
                           check=False)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == f"{bundle}/{ROOT}/relay/program.py"
