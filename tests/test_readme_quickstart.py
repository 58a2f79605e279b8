"""The README's install and quick-start lines, run as written against simulated VMs.

From the README itself: the collection is built and installed from its tarball (not the test
session's staged copy), the inventory is the README's, and each command runs through bash as a user
would type it. The only changes are where things live: the clone is a copy of this work tree, the
cron line's directory, log and ansible-playbook path are temporary, and `host_vars/` beside the
inventory points each VM at its simulated IMDS root over a local connection (Ansible reads host_vars
next to an inventory). The install lines run once for both quick starts (one clone, one tarball installed), each
quick start then in a home of its own.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

import event_analysis as ea
from imds_simulator.fleet import FleetSpec
from tests.live_fleet import LiveFleet
from tests.timing import wait_for

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
BIN = Path(sys.executable).parent
CRON_DIR = "/etc/ansible/maintenance"
CRON_LOG = "/var/log/azure-maintenance.log"
CRON_PLAYBOOK = "/usr/local/bin/ansible-playbook"  # cron's PATH finds no venv: the line gives a full path

pytestmark = pytest.mark.xdist_group("readme-quickstart")  # one worker installs once for both tests


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


def shell_env(home: Path, tmp_path: Path, collections: Path) -> Dict[str, str]:
    """A user's shell: the venv's tools on PATH, a home of their own, collections installed in `collections`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_COLLECTIONS_PATH")}
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{env['PATH']}", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's install lines, run once: the clone (ROOT/scheduled_events) and the collection installed from
    its tarball under ROOT/home/.ansible/collections. Returns ROOT."""
    root = tmp_path_factory.mktemp("readme-install")
    (root / "home").mkdir()
    install_as_the_readme_says(root, shell_env(root / "home", root, root / "home" / ".ansible" / "collections"))
    return root


@pytest.fixture
def user_env(tmp_path: Path, installed: Path) -> Dict[str, str]:
    """The shell of a user who ran the install lines: a home of their own (state, locks, VM memory), the installed
    collection."""
    (tmp_path / "home").mkdir()
    return shell_env(tmp_path / "home", tmp_path, installed / "home" / ".ansible" / "collections")


def install_as_the_readme_says(root: Path, env: Dict[str, str]) -> None:
    (install,) = shell_blocks(section("Install"))[:1]
    clone, *rest = [line for line in install.splitlines() if line.strip()]
    assert clone.startswith("git clone ") and clone.endswith("&& cd scheduled_events")
    source = root / "scheduled_events"  # the clone: this work tree, without venvs and caches
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*_cache",
                                                                 ".hypothesis", "build"))
    done = run("\n".join(rest), source, env)
    assert done.returncode == 0, done.stdout + done.stderr
    installed = Path(env["ANSIBLE_COLLECTIONS_PATH"]) / "ansible_collections" / "azure_imds" / "scheduled_events"
    assert (installed / "MANIFEST.json").is_file(), "installed where ansible looks, from the tarball"


def test_the_readme_quick_start_runs_against_simulated_vms(tmp_path: Path, user_env: Dict[str, str]) -> None:
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


def rehearsal_block() -> List[str]:
    """The quick start's rehearsal: the simulator's command (run in the background) and the `cd`."""
    quick_start = section("Quick start")
    block = shell_blocks(quick_start[quick_start.index("**Rehearse first"):])[0]
    serve, cd = [line.strip() for line in block.splitlines() if line.strip()]
    assert serve.startswith(".venv/bin/python -m imds_simulator serve ") and serve.endswith(" &")
    assert cd == "cd rehearsal" and "--inventory rehearsal/" in serve
    return [serve[:-1].strip(), cd]


def start_rehearsal(serve: str, clone: Path, env: Dict[str, str]) -> "tuple[subprocess.Popen, str]":
    """The README's serve line from the clone, at time scale 1: a test never races the simulator's clock, so the
    event's 15 minutes of notice stay 15 minutes (the line's own scale is checked in tests/simulator)."""
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)  # `make venv`'s, without building it again
    assert "--time-scale 10 " in serve
    server = subprocess.Popen(["bash", "-ec", "exec " + serve.replace("--time-scale 10 ", "--time-scale 1 ")],
                              cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert server.stdout is not None
    ready = server.stdout.readline()
    assert "ready at" in ready, ready + server.stdout.read()
    wrote = server.stdout.readline()
    assert "rehearsal inventory:" in wrote, wrote
    return server, re.search(r"ready at (\S+) ", ready).group(1)  # type: ignore[union-attr]


def simulator_record(url: str, name: str) -> List[Dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/_simulator/{name}", timeout=10) as answer:
        return json.loads(answer.read())[name]


def test_the_readme_quick_start_runs_as_written_against_the_rehearsal_fleet(tmp_path: Path, installed: Path,
                                                                           user_env: Dict[str, str]) -> None:
    """The rehearsal's folder holds all a quick start needs: steps 1 to 3 run there as written, each VM on its own
    state file, and what they capture is a history marked simulated."""
    clone = installed / "scheduled_events"  # only this test writes in it (rehearsal/, the .venv link)
    user_env = {k: v for k, v in user_env.items() if k != "ANSIBLE_CONFIG"}  # the rehearsal's ansible.cfg, as a user's
    serve, _cd = rehearsal_block()
    steps, cron = shell_blocks(section("Quick start"))[:2]
    commands = [line for line in steps.splitlines() if line.startswith("ansible-playbook ")]
    assert [c.split()[1] for c in commands] == ["azure_imds.scheduled_events.collect", "azure_imds.scheduled_events.cycle"]
    server, url = start_rehearsal(serve, clone, user_env)
    site = clone / "rehearsal"
    try:
        (event,) = wait_for(lambda: simulator_record(url, "events"), 30, "the first fault domain's event")
        checked = run("\n".join(commands), site, user_env)  # steps 1 and 2
        assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
        assert all(f"ok: [{vm}]" in checked.stdout for vm in ("web-vm0", "web-vm1"))
        assert event["event_id"] in checked.stdout and simulator_record(url, "approvals") == []
        assert not any((site / "state").iterdir()), "--check writes no state"

        prepared = tmp_path / "prepared"
        prepared.mkdir()
        (site / "maintenance").mkdir()
        (site / "maintenance" / "prepare.yml").write_text(
            f"- name: Record the prepare\n  ansible.builtin.copy:\n    dest: \"{prepared}/{{{{ inventory_hostname }}}}\"\n"
            "    content: \"{{ maintenance_cycle_event.event_id }}\"\n    mode: \"0600\"\n")
        (site / "maintenance" / "recover.yml").write_text("- name: Recover\n  ansible.builtin.debug:\n    msg: back\n")
        (schedule_line,) = [line for line in cron.splitlines() if line.strip()]
        command = (schedule_line.split(None, 5)[5].replace(CRON_DIR, str(site))
                   .replace(CRON_LOG, str(tmp_path / "cron.log"))
                   .replace(CRON_PLAYBOOK, str(shutil.which("ansible-playbook", path=user_env["PATH"]))))
        cycle = run(command, site, user_env)  # step 3
        assert cycle.returncode == 0, (tmp_path / "cron.log").read_text()[-4000:]
        approvals = simulator_record(url, "approvals")
    finally:
        server.terminate()
        server.wait(timeout=30)
    (listed,) = event["resources"]
    assert (prepared / listed).read_text() == event["event_id"] and len(list(prepared.iterdir())) == 1
    assert [a["event_ids"] for a in approvals] == [[event["event_id"]]] and approvals[0]["vm"] == listed
    saved = json.loads((site / "state" / f"{listed}.json").read_text())
    assert [e["event_id"] for e in saved["events"]] == [event["event_id"]], "each VM its own state file"
    history = ea.load_history(site / "history.jsonl")
    report = ea.report_of(history)
    assert report.simulated and report.time_scale == 1.0 and report.approvals == 1
