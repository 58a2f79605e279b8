"""ansible-lint, production profile, offline, on the roles, playbooks and the AWX example."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools.stage_collection import stage

REPO = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "ansible-lint"


def lint(tmp: Path, *paths: str) -> subprocess.CompletedProcess:
    """Lint a staged copy (or `paths` in it), where the collection resolves by FQCN as it does when installed. No
    ansible.eda is installed, as on a machine without Galaxy: .ansible-lint mocks the modules awx/requirements.yml
    names it for."""
    collection = tmp / "ansible_collections" / "azure_imds" / "scheduled_events"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp), NO_COLOR="1", ANSIBLE_NOCOLOR="1",
               PATH=f"{LINT.parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(LINT), *paths], cwd=collection, env=env, capture_output=True, text=True, timeout=1800,
                          check=False)


def staged(tmp: Path) -> Path:
    collection = stage(tmp)
    shutil.copy2(REPO / ".ansible-lint", collection / ".ansible-lint")
    shutil.copytree(REPO / "awx", collection / "awx")
    return collection


def test_the_production_profile_passes_and_a_sloppy_playbook_fails_it(tmp_path: Path) -> None:
    """One ansible-lint run over the whole tree and a sloppy playbook added to it (it was two runs): every finding
    is the sloppy playbook's, so the rest passes, and the lint can fail."""
    collection = staged(tmp_path)
    (collection / "playbooks" / "sloppy.yml").write_text(
        "- hosts: all\n  tasks:\n    - shell: echo hi\n")  # no names, no FQCN, shell without need
    run = lint(tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "Profile 'production' was required" in output, output[-4000:]
    findings = re.findall(r"^([\w./-]+\.ya?ml):\d+", output, re.M)  # each finding names path:line[:column]
    assert findings and set(findings) == {"playbooks/sloppy.yml"}, output[-4000:]
