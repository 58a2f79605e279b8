"""The README's install and quick-start lines, run as written against simulated VMs.

From the README itself: the collection is built and installed from its tarball (not the test
session's staged copy), the inventory is the README's, and each command runs through bash as a user
would type it. The only changes are where things live: the clone is a copy of this work tree, the
cron line's directory, log and ansible-playbook path are temporary, and `host_vars/` beside the
inventory points each VM at its simulated IMDS root over a local connection (Ansible reads host_vars
next to an inventory).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from imds_simulator.fleet import FleetSpec
from tests.live_fleet import LiveFleet

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
BIN = Path(sys.executable).parent
CRON_DIR = "/etc/ansible/maintenance"
CRON_LOG = "/var/log/azure-maintenance.log"
CRON_PLAYBOOK = "/usr/local/bin/ansible-playbook"  # cron's PATH finds no venv: the line gives a full path


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def shell_blocks(text: str) -> List[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def user_task_files(site: Path, prepared: Path) -> None:
    """The user's maintenance/prepare.yml (a file per prepared event in `prepared`, named by its id, holding the
    host) and maintenance/recover.yml, in `site`."""
    (site / "maintenance").mkdir()
    (site / "maintenance" / "prepare.yml").write_text(
        "- name: Record the prepare\n  ansible.builtin.copy:\n"
        "    dest: \"{{ prepared_dir }}/{{ maintenance_cycle_event.event_id }}\"\n"
        "    content: \"{{ inventory_hostname }}\"\n    mode: \"0600\"\n")
    (site / "maintenance" / "recover.yml").write_text(
        "- name: Nothing to recover in this test\n  ansible.builtin.debug:\n    msg: recovered\n")
    prepared.mkdir()


def run(command: str, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-ec", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def user_env(tmp_path: Path) -> Dict[str, str]:
    """A user's shell: the venv's tools on PATH, a home of their own, collections installed under it."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_COLLECTIONS_PATH")}
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{env['PATH']}", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(home / ".ansible" / "collections"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    return env


def install_as_the_readme_says(tmp_path: Path, env: Dict[str, str]) -> None:
    (install,) = shell_blocks(section("Install"))[:1]
    clone, *rest = [line for line in install.splitlines() if line.strip()]
    assert clone.startswith("git clone ") and clone.endswith("&& cd scheduled_events")
    source = tmp_path / "scheduled_events"  # the clone: this work tree, without venvs and caches
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*_cache",
                                                                 ".hypothesis", "build"))
    done = run("\n".join(rest), source, env)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = Path(env["ANSIBLE_COLLECTIONS_PATH"]) / "ansible_collections" / "azure_imds" / "scheduled_events"
    assert (installed / "MANIFEST.json").is_file(), "installed where ansible looks, from the tarball"


def test_the_readme_quick_start_runs_against_simulated_vms(tmp_path: Path, user_env: Dict[str, str]) -> None:
    install_as_the_readme_says(tmp_path, user_env)
    steps, cron = shell_blocks(section("Quick start"))[:2]
    site = tmp_path / "site"  # stands for the cron line's directory
    site.mkdir()
    inventory_and_checks = steps
    vms = re.findall(r"^(web-vm\d) ansible_host=", steps, re.M)
    assert len(vms) >= 2, "the README's inventory names the VMs the test simulates"
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(names=vms, vms=len(vms), fault_domains=len(vms)))
    try:
        (host_vars := site / "host_vars").mkdir()
        for vm in vms:
            (host_vars / f"{vm}.yml").write_text(yaml.safe_dump({
                "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                "maintenance_cycle_imds_url": fleet.url(vm),
                "maintenance_cycle_state_path": str(tmp_path / "state" / f"{vm}.json"),
                "prepared_dir": str(tmp_path / "prepared")}))
        (event_id,) = fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 900,
                                    "resources": {"names": [vms[0]]}})

        # Steps 1 and 2: each VM reads its IMDS; the cycle in check mode approves and writes nothing.
        checked = run(inventory_and_checks, site, user_env)
        assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
        assert (site / "inventory.ini").is_file()
        assert all(f"ok: [{vm}]" in checked.stdout for vm in vms) and event_id in checked.stdout
        assert fleet.approvals() == [] and not (tmp_path / "state").exists()

        # Step 3: the cron line, with prepare and recover tasks by relative path from its directory.
        user_task_files(site, tmp_path / "prepared")
        (schedule_line,) = [line for line in cron.splitlines() if line.strip()]
        fields = schedule_line.split(None, 5)
        assert fields[:5] == ["*/5", "*", "*", "*", "*"], "a 5-minute schedule"
        assert f"&& {CRON_PLAYBOOK} " in fields[5], "a full path: cron's PATH is /usr/bin:/bin"
        playbook = shutil.which("ansible-playbook", path=user_env.get("PATH"))
        assert playbook, "the test's ansible-playbook"
        command = (fields[5].replace(CRON_DIR, str(site)).replace(CRON_LOG, str(tmp_path / "cron.log"))
                   .replace(CRON_PLAYBOOK, playbook))
        assert command != fields[5], "the cron line names the directory and log the test replaces"
        cycle = run(command, site, user_env)
        log = (tmp_path / "cron.log").read_text()
        assert cycle.returncode == 0, log[-4000:]
        approvals = fleet.approvals()
        (event,) = fleet.truth()
    finally:
        fleet.close()
    assert (tmp_path / "prepared" / event_id).read_text() == vms[0], "prepared from maintenance/prepare.yml"
    assert [a["event_ids"] for a in approvals] == [[event_id]] and approvals[0]["vm"] == vms[0]
    assert event["start_reason"] == "approved"
    saved = json.loads((tmp_path / "state" / f"{vms[0]}.json").read_text())
    assert any(e["event_id"] == event_id for e in saved["events"])
