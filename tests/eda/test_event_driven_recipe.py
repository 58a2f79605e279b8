"""The README's event-driven recipe, run as written against simulated VMs, from a collection installed as the README's
Install section says: the secret, the relays installed by the role, and the rulebook, which prepares and approves.

As the quick-start test does, only where things live changes: the controller's address and port are this machine's,
the tasks files' directory is temporary, and `host_vars/` in the inventory directory point each simulated VM at its
IMDS root over a local connection and put the relay's files under a temporary root; no systemd runs here, so they set
`event_relay_manage_service: false` and the relays start as docs/guide/event-driven.md's "A trial without systemd" says.
The first line, `pip install ansible-rulebook`, is checked, not run: the test's environment has it, and a `pip` on
PATH may belong to another interpreter.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import yaml

from imds_simulator.fleet import FleetSpec
from tests.eda.rulebook_setup import free_port, listening
from tests.live_fleet import LiveFleet
from tests.test_readme_quickstart import (CRON_DIR, install_as_the_readme_says, run, section, shell_blocks,
                                         shell_env, user_task_files)
from tests.timing import wait_for
from tools.relay_fleet import kill_tree

REPO = Path(__file__).resolve().parent.parent.parent
CONTROLLER = "controller.example"
PORT = "5081"


def trial_command() -> str:
    """docs/guide/event-driven.md's command that starts a relay without systemd."""
    text = (REPO / "docs" / "guide" / "event-driven.md").read_text()
    part = text.split("\n## A trial without systemd\n", 1)[1].split("\n## ", 1)[0]
    (block,) = shell_blocks(part)
    (line,) = [line for line in block.splitlines() if line.strip()]
    return line


def host_vars(fleet: LiveFleet, vm: str, root: Path) -> Dict[str, object]:
    relay = root / "relays" / vm
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "maintenance_cycle_imds_url": fleet.url(vm),
            "maintenance_cycle_state_path": str(root / "state" / f"{vm}.json"),
            "event_relay_prefix": str(relay / "opt" / "azure-imds-relay"),
            "event_relay_config_dir": str(relay / "etc" / "azure-imds-relay"),
            "event_relay_state_dir": str(relay / "var" / "lib" / "azure-imds-relay"),
            "event_relay_unit_dir": str(relay / "etc" / "systemd" / "system"),
            "event_relay_manage_service": False,  # no systemd here: as docs/guide/event-driven.md says for a trial
            "prepared_dir": str(root / "prepared")}


def start_relay(command: str, vm: str, root: Path, env: Dict[str, str], log: Path) -> subprocess.Popen:
    relay = root / "relays" / vm
    line = (command.replace("sudo env ", "env ")  # the test is the VM's user already
            .replace("/opt/azure-imds-relay", str(relay / "opt" / "azure-imds-relay"))
            .replace("/etc/azure-imds-relay", str(relay / "etc" / "azure-imds-relay")))
    assert line != command
    return subprocess.Popen(["bash", "-ec", line], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


@pytest.fixture
def user_env(tmp_path: Path) -> Dict[str, str]:
    """A user of their own, who runs the install lines in this test (the quick start's shared install is another
    home's): the collection goes under this home."""
    home = tmp_path / "home"
    home.mkdir()
    return shell_env(home, tmp_path, home / ".ansible" / "collections")


def test_the_readme_event_driven_recipe_prepares_and_approves_on_simulated_vms(
        tmp_path: Path, user_env: Dict[str, str]) -> None:
    assert shutil.which("java"), "ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless"
    install_as_the_readme_says(tmp_path, user_env)
    (block,) = shell_blocks(section("Event-driven"))
    lines = block.splitlines()
    assert lines[0].startswith("pip install ansible-rulebook") and "openjdk-17" in lines[0]
    assert shutil.which("ansible-rulebook", path=user_env["PATH"]), "what the first line installs"
    start = lines[-1]
    assert start.startswith("ansible-rulebook -r azure_imds.scheduled_events.scheduled_events -i inventory/ ")
    port = str(free_port())
    site = tmp_path / "site"  # stands for the directory of the README's inventory directory
    vms = ["web-vm0", "web-vm1"]
    assert f"expected_hosts: {','.join(vms)}" in block, "the recipe names the VMs the test simulates"
    # Time scale 4: the 15-minute notice lasts 225 s, minutes more than the relay's push and the rulebook's cycle
    # need on a loaded machine to prepare and approve
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(names=vms, vms=len(vms), fault_domains=len(vms)))
    processes: List[subprocess.Popen] = []
    try:
        (site / "inventory" / "host_vars").mkdir(parents=True)
        (site / "inventory" / "hosts.ini").write_text("[azure_vms]\n" + "\n".join(vms) + "\n")
        for vm in vms:
            (site / "inventory" / "host_vars" / f"{vm}.yml").write_text(yaml.safe_dump(host_vars(fleet, vm, tmp_path)))
            (tmp_path / "relays" / vm / "etc" / "systemd" / "system").mkdir(parents=True)  # as on any Linux VM
        user_task_files(site, tmp_path / "prepared")

        # The secret, relays.yml and its run, rulebook_vars.yml: as written, on this machine's address and port.
        setup = "\n".join(lines[1:-1]).replace(f"{CONTROLLER}:{PORT}", f"127.0.0.1:{port}")
        setup = setup.replace(f"listen_port: {PORT}", f"listen_port: {port}").replace(CRON_DIR, str(site))
        assert setup.count(port) == 2 and str(site) in setup, "the recipe names the address, port and paths replaced"
        done = run(setup, site, user_env)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert (site / "relay.secret").stat().st_mode & 0o777 == 0o600
        for vm in vms:
            assert (tmp_path / "relays" / vm / "etc" / "azure-imds-relay" / "relay.json").is_file(), vm

        # The relays, as docs/guide/event-driven.md starts them without systemd; then the rulebook, as written.
        processes += [start_relay(trial_command(), vm, tmp_path, user_env, tmp_path / f"relay-{vm}.log") for vm in vms]
        log = tmp_path / "rulebook.log"
        processes.append(subprocess.Popen(["bash", "-ec", start], cwd=site, env=dict(user_env, PYTHONUNBUFFERED="1"),
                                          stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True))
        wait_for(lambda: listening(int(port)) or processes[-1].poll() is not None, 120, "the source to listen")
        assert processes[-1].poll() is None, log.read_text()[-3000:]

        (event_id,) = fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 900,
                                    "resources": {"names": [vms[0]]}})
        prepared = tmp_path / "prepared" / event_id
        wait_for(lambda: prepared.is_file() and fleet.approvals(), 240,
                 f"the prepare and the approval of {event_id}:\n{log.read_text()[-3000:] if log.exists() else ''}")
    finally:
        for process in processes:
            kill_tree(process)
        approvals = fleet.approvals()
        fleet.close()
    assert prepared.read_text() == vms[0], "prepared from the absolute path in rulebook_vars.yml"
    assert [a["event_ids"] for a in approvals] == [[event_id]] and approvals[0]["vm"] == vms[0]
