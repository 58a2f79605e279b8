"""ansible-lint, production profile, offline, on the roles, playbooks and the AWX example."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tools.make_watch_playbook import render
from tools.stage_collection import stage

REPO = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "ansible-lint"
# awx/eda_controller.yml's modules resolve to the tests' stand-in of ansible.eda (not installable here)
EDA_STAND_IN = REPO / "tests" / "awx" / "ansible_eda_stand_in"


def lint(tmp: Path, *paths: str) -> subprocess.CompletedProcess:
    """Lint a staged copy (or `paths` in it), where the collection resolves by FQCN as it does when installed."""
    collection = tmp / "ansible_collections" / "azure_imds" / "scheduled_events"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=f"{tmp}{os.pathsep}{EDA_STAND_IN}", NO_COLOR="1", ANSIBLE_NOCOLOR="1",
               PATH=f"{LINT.parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(LINT), *paths], cwd=collection, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def staged(tmp: Path) -> Path:
    collection = stage(tmp)
    # The watch with 2 rounds, not 600: every round is the same pair of plays (tests/test_generated_files.py ties
    # the committed file to the generator), and ansible-lint spent about 25 of its 59 CPU-seconds on the other 598.
    (collection / "playbooks" / "watch.yml").write_text(render(2))
    shutil.copy2(REPO / ".ansible-lint", collection / ".ansible-lint")
    shutil.copytree(REPO / "awx", collection / "awx")
    return collection


def test_the_production_profile_passes(tmp_path: Path) -> None:
    staged(tmp_path)
    run = lint(tmp_path)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "Profile 'production' was required, and it passed" in run.stdout + run.stderr


def test_a_sloppy_playbook_fails_it(tmp_path: Path) -> None:
    collection = staged(tmp_path)
    (collection / "playbooks" / "sloppy.yml").write_text(
        "- hosts: all\n  tasks:\n    - shell: echo hi\n")  # no names, no FQCN, shell without need
    run = lint(tmp_path, "playbooks/sloppy.yml")  # the whole tree passes (test above): lint just this
    assert run.returncode != 0 and "sloppy.yml" in run.stdout + run.stderr
