"""Run `ansible-test sanity` or `ansible-test units` on a staged copy of the collection, offline-safe.

    python tools/run_ansible_test.py sanity|units [ansible-test options]

1. Stage the collection under a temporary ansible_collections/azure_imds/scheduled_events
   (ansible-test needs that path, as a copy, and outside this git checkout: inside it,
   ansible-test lists files with git and an ignored folder holds none).
2. Put tools/get_pip_offline.py where ansible-test looks for its cached get-pip.
3. For units, tell the staged tests where the repository is (tests/unit/repo_root.txt): the
   simulator they run against is not part of the collection.
4. Run ansible-test in its own virtual environments (--venv) for this Python; units installs
   tests/unit/requirements.txt there (--requirements). This environment's bin comes first on PATH, so that the
   get-pip stand-in bootstraps each new venv's pip with this environment's uv.
Exit status is ansible-test's.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tools.stage_collection import stage  # noqa: E402


def ansible_test_pip_version() -> str:
    import ansible_test
    source = Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
    match = re.search(r"pip='([0-9.]+)'", source.read_text())
    if not match:
        raise SystemExit("cannot tell which pip version ansible-test bootstraps; update tools/run_ansible_test.py.")
    return match.group(1)


def install_get_pip_shim() -> Path:
    version = ansible_test_pip_version().replace(".", "_")
    target = Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{version}.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "tools" / "get_pip_offline.py", target)
    return target


def with_own_bin_first() -> dict:
    return dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


COMMANDS = {"sanity": [], "units": ["--requirements"]}


def main(argv: list) -> int:
    if not argv or argv[0] not in COMMANDS:
        raise SystemExit("usage: python tools/run_ansible_test.py sanity|units [ansible-test options]")
    test, options = argv[0], argv[1:]
    root = Path(tempfile.mkdtemp(prefix=f"azure-imds-{test}-"))
    collection = stage(root)
    if test == "units":
        (collection / "tests" / "unit" / "repo_root.txt").write_text(str(REPO) + "\n")
    install_get_pip_shim()
    ansible_test = str(Path(sys.executable).parent / "ansible-test")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    command = [ansible_test, test, "--venv", "--python", python, "--color", "no", *COMMANDS[test], *options]
    print("+", " ".join(command), flush=True)
    try:
        return subprocess.call(command, cwd=collection, env=with_own_bin_first())
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
