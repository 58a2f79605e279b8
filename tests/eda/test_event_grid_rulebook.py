"""Event-driven without relays, end to end, with docs/guide/event-driven.md's command as written: the simulator's Event Grid deliveries of a real event, through a TEST
DOUBLE of azure.azcollection's azure_service_bus source (Service Bus is out of reach; tests/eda/service_bus_double/),
into the real ansible-rulebook with the collection's scheduled_events_event_grid rulebook, whose cycle prepares the
VMs the event lists, reading them itself through a lagging Resource Graph (nothing on the VMs), and approves through
Microsoft.Maintenance; the delivery Event Grid repeats starts nothing more."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from imds_simulator import control_plane
from imds_simulator.control_plane import CONTRIBUTOR
from imds_simulator.fleet import FleetSpec
from tests.conftest import COLLECTIONS_PATH
from tests.certificates import certificate_chain
from tests.eda.rulebook_setup import event_grid_env, event_grid_files
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet
from tests.timing import wait_for
from tools.relay_fleet import kill_tree

BIN = Path(sys.executable).parent
DOCS = Path(__file__).resolve().parents[2] / "docs" / "guide" / "event-driven.md"


def docs_command() -> str:
    """The command docs/guide/event-driven.md gives for this path, as written."""
    part = DOCS.read_text().split("\n## Without relays: Event Grid through Service Bus (preview)\n", 1)[1]
    (block,) = re.findall(r"```sh\n(.*?)```", part.split("\n## ", 1)[0], re.S)
    return block.strip()


def test_a_notification_through_service_bus_starts_a_cycle_on_the_vms_it_lists(tmp_path: Path) -> None:
    assert shutil.which("java"), "ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless"
    ca, cert, key = certificate_chain(tmp_path)
    # Nothing on the VMs: every host is read and approved through the control plane, whose Resource Graph shows
    # the events as they were 20 s ago: the cycle the notification starts at once must
    # wait for the read to show its event (a read too soon saw nothing, and nothing was prepared or approved).
    fleet = LiveFleet(None, time_scale=10.0, fleet=FleetSpec(vms=3, fault_domains=1), graph_lag_s=20.0,
                      certfile=str(cert), keyfile=str(key), control_plane_tokens={"t-eda": [CONTRIBUTOR]},
                      control_plane_clients={"eda-app": {"secret": "eda-secret", "token": "t-eda"}})
    vms = fleet.vms
    bench = CycleBench(fleet, tmp_path, control_plane=vms)
    queue = event_grid_files(tmp_path, bench.inventory, {vm.name: vm.resource_id for vm in fleet.engine.fleet.vms})
    env = dict(os.environ, **event_grid_env(COLLECTIONS_PATH), HOME=str(tmp_path),
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), AZURE_CLIENT_ID="eda-app", AZURE_SECRET="eda-secret",
               AZURE_TENANT="contoso", AZURE_SUBSCRIPTION_ID=fleet.engine.fleet.vms[0].resource_id.split("/")[2],
               AZURE_CLOUD_ENVIRONMENT=fleet.sim.base_url, REQUESTS_CA_BUNDLE=str(ca), SSL_CERT_FILE=str(ca))
    log = tmp_path / "rulebook.log"
    rulebook = subprocess.Popen(["bash", "-ec", docs_command()], cwd=tmp_path, env=env, stdout=log.open("w"),
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # 360 s of notice at time scale 10: the rulebook's start, the Resource Graph's lag and the cycle must approve
        # before NotBefore, and take minutes less than that on a loaded machine
        (event_id,) = fleet.inject({"key": "r", "type": "Reboot", "notice_s": 3600, "resources": {"names": vms[:2]}})
        (delivery,) = control_plane.deliveries(fleet.engine, fleet.sim.clock.now())
        queue.write_text(json.dumps(delivery) + "\n" + json.dumps(delivery) + "\n")  # Event Grid sent it twice
        wait_for(lambda: fleet.approvals() or rulebook.poll() is not None, 360,
                 f"the cycle's approval:\n{log.read_text()[-3000:] if log.exists() else ''}")
        approvals = fleet.approvals()
        # The first cycle ends; a second one (for the repeated delivery) would start right after it.
        wait_for(lambda: "PLAY RECAP" in log.read_text(), 120, "the cycle's end")
        time.sleep(5)
    finally:
        kill_tree(rulebook)
        fleet.close()
    text = log.read_text()
    assert [(a["via"], a["event_ids"], a["accepted"]) for a in approvals] == [("control_plane", [event_id], True)], \
        text[-3000:]
    assert text.count("PLAY RECAP") == 1, "the repeated delivery ran no cycle"
    prepared = sorted(a["host"] for a in bench.actions("prepare"))
    assert prepared == sorted(vms[:2]), "the listed VMs, each read by the cycle itself, and only they"
    assert "Read the scheduled events of the hosts read through Azure's control plane" in text, "no IMDS was read"
