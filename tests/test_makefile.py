"""The Makefile's recipes run in the environment they were measured in."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_recipes_write_bytecode_caches_even_where_the_environment_forbids_it() -> None:
    """uv installs no bytecode caches; with PYTHONDONTWRITEBYTECODE set (as on this image), every process of make test
    compiled what it imported again: 614 s against 527 s for a fresh clone's make test."""
    probe = "bytecode-probe: ; @$(PY) -c 'import sys; print(\"dont_write_bytecode:\", sys.dont_write_bytecode)'"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(["make", "--no-print-directory", "-s", "-C", str(REPO), "PY=python3", "--eval", probe,
                           "bytecode-probe"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "dont_write_bytecode: False"
