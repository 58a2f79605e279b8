"""The newest-ansible-core leg says why it skips when no Python 3.12+ exists (it runs for real in make test)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_without_python_312_the_leg_skips_with_a_reason(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}  # no python3.12/3.13 on PATH, no pyenv
    run = subprocess.run([sys.executable, "tools/newest_core_leg.py"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0 and "SKIPPED: no Python 3.12+ interpreter" in run.stdout
    assert not (tmp_path / ".venv-core-newest").exists()
