"""The second ansible-core line: sanity, unit and module tests on the newest ansible-core.

    python tools/newest_core_leg.py

ansible-core 2.20+ needs Python 3.12+. This finds such an interpreter (python3.13 or
python3.12 on PATH, else a pyenv install), builds .venv-core-newest from
requirements-newest-core.txt (rebuilt when that file changes), and runs there:
tools/run_ansible_test.py sanity, then pytest on tests/unit and tests/modules. Without Python 3.12+
it prints why it skips and exits 0; any failure exits non-zero.
"""
from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-core-newest"
REQUIREMENTS = REPO / "requirements-newest-core.txt"
CANDIDATES = ("python3.12", "python3.13")  # 3.12 first: the line the issue names
# In `make test` (its 10-minute aim): the units, the modules' documentation, and the module tests of what
# ansible-core itself does for the modules (marked core_line: arguments, check mode, results, warnings,
# failures, the POST, the oldest target), against the live simulator. The other module tests exercise the
# modules' own code, which is the same whatever the core (and runs on the main line and in the units).
# NEWEST_CORE_FULL=1 (`make newest-core-full`) runs all of tests/modules and tests/history (the history callback).
TESTS = ["tests/unit", "tests/modules/test_docs.py", "tests/modules/test_modules.py", "-k", "core_line or not test_modules"]
FULL_TESTS = ["tests/unit", "tests/modules", "tests/history"]


def works(python: str) -> bool:
    """A pyenv shim exists for every version but fails for one not selected: try it."""
    try:
        probe = subprocess.run([python, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                               capture_output=True, timeout=30, check=False)
    except OSError:
        return False
    return probe.returncode == 0


def find_python() -> Optional[str]:
    on_path = [shutil.which(name) for name in CANDIDATES]
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]")))
    for python in [p for p in on_path if p] + pyenv:
        if works(python):
            return python
    return None


def ensure_venv(python: str) -> Path:
    stamp = VENV / (".installed-" + hashlib.sha256(REQUIREMENTS.read_bytes() + python.encode()).hexdigest()[:16])
    venv_python = VENV / "bin" / "python"
    if stamp.exists():
        return venv_python
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(venv_python), str(REPO / "tools" / "install_requirements.py"), "-r", str(REQUIREMENTS)],
                   check=True)
    stamp.touch()
    return venv_python


def run(command: List[str]) -> int:
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, cwd=REPO, check=False).returncode


def main() -> int:
    python = find_python()
    if python is None:
        print("newest ansible-core leg SKIPPED: no Python 3.12+ interpreter here "
              f"({', '.join(CANDIDATES)} on PATH, or ~/.pyenv/versions/3.12+); ansible-core 2.20+ needs one.")
        return 0
    venv_python = ensure_venv(python)
    version = subprocess.run([str(venv_python), "-c", "import ansible; print(ansible.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"newest ansible-core leg: ansible-core {version} on {python}", flush=True)
    status = run([str(venv_python), "tools/run_ansible_test.py", "sanity"])
    tests = FULL_TESTS if os.environ.get("NEWEST_CORE_FULL") == "1" else TESTS
    status = run([str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]) or status
    print(f"newest ansible-core leg (ansible-core {version}): {'passed' if status == 0 else 'FAILED'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
