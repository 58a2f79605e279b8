"""The Event Grid path's filter: notifications as azure.azcollection's azure_service_bus source delivers them (the
simulator's Event Grid deliveries of real events) become the hosts a cycle looks at, and limit the run to them."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml

import ansible_collections.azure.azcollection as azcollection
from imds_simulator import control_plane
from imds_simulator.fleet import FleetSpec
from tests.live_fleet import LiveFleet

from tests.conftest import COLLECTIONS_PATH

# The staged copy: the plugin finds the collection's module_utils from where it is installed
FILTER = Path(COLLECTIONS_PATH, "ansible_collections", "azure_imds", "scheduled_events", "extensions", "eda", "plugins",
              "event_filter", "event_grid_hosts.py")
SERVICE_BUS_SOURCE = Path(azcollection.__path__[0]) / "extensions" / "eda" / "plugins" / "event_source" / \
    "azure_service_bus.py"


def load_filter() -> Any:
    spec = importlib.util.spec_from_file_location("event_grid_hosts", FILTER)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def as_service_bus_delivers(body: Dict[str, Any], message_id: str) -> Dict[str, Any]:
    """What azure_service_bus puts on the queue for one message (the test below ties this to its code)."""
    return {"body": body, "meta": {"message_id": message_id}}


def test_the_shape_is_the_one_azure_service_bus_puts_on_the_queue() -> None:
    code = SERVICE_BUS_SOURCE.read_text()
    assert 'meta = {"message_id": msg.message_id}' in code and 'await queue.put({"body": body, "meta": meta})' in code
    assert "body = json.loads(body)" in code, "the message's JSON arrives parsed"


def test_a_notification_wakes_every_host_once_naming_the_ones_it_lists(tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=3, fault_domains=1), simulate_impact=False,
                      control_plane_tokens={})
    try:
        (event_id,) = fleet.inject({"key": "r", "type": "Reboot", "notice_s": 900, "resources": {"names": fleet.vms[:2]}})
        (delivery,) = control_plane.deliveries(fleet.engine, fleet.sim.clock.now())
        vm_ids = {f"host-{vm.name}": vm.resource_id for vm in fleet.engine.fleet.vms}
    finally:
        fleet.close()
    (tmp_path / "vm_ids.yml").write_text(yaml.safe_dump(vm_ids))
    plugin = load_filter()
    event = plugin.main(as_service_bus_delivers(delivery, "m1"), vm_ids_file=str(tmp_path / "vm_ids.yml"))
    listed = [f"host-{vm}" for vm in fleet.vms[:2]]
    assert event["scheduled_events"]["listed"] == listed and event["scheduled_events"]["event_id"] == event_id
    assert event["meta"]["hosts"] == ["all", "localhost"], \
        "the rule's cycle runs on its whole target (one not listed may owe a recover) and its localhost plays"
    again = plugin.main(as_service_bus_delivers(delivery, "m2"), vm_ids_file=str(tmp_path / "vm_ids.yml"))
    assert "scheduled_events" not in again, "Event Grid delivered it twice: one cycle"
    unplaced = json.loads(json.dumps(delivery).replace(fleet.vms[0], "somebody-else"))
    unplaced["id"] = "another-delivery"
    woken = plugin.main(as_service_bus_delivers(unplaced, "m3"), vm_ids_file=str(tmp_path / "vm_ids.yml"))
    assert woken["scheduled_events"]["hosts"] == sorted(vm_ids) and "no single host is" in \
        woken["scheduled_events"]["reason"], "what it cannot place is said"


@pytest.mark.parametrize("content, sentence", [
    ("- a list\n", "must map inventory host names to their VMs' ARM ids."),
    ("web1: /subscriptions/s\n", "Host web1 has id '/subscriptions/s', which is not a VM's ARM id"),
])
def test_a_bad_vm_ids_file_stops_in_one_sentence(tmp_path: Path, content: str, sentence: str) -> None:
    (tmp_path / "vm_ids.yml").write_text(content)
    with pytest.raises(ValueError, match=re.escape(sentence)):
        load_filter().main({"body": {}}, vm_ids_file=str(tmp_path / "vm_ids.yml"))


def test_regression_a_host_missing_from_vm_ids_is_still_in_the_cycle(tmp_path: Path) -> None:
    """The cycle was limited to vm_ids.yml's hosts: an IMDS host of a mixed target, or a VM added to the inventory
    since the file was written, was in no plan once its event was gone, though it might still be drained."""
    (tmp_path / "vm_ids.yml").write_text(yaml.safe_dump({"web0": "/subscriptions/s/resourceGroups/rg/providers/"
                                                                 "Microsoft.Compute/virtualMachines/web0"}))
    delivery = {"id": "d-1", "eventType": "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted",
                "data": {}}  # unreadable: every expected host
    event = load_filter().main(as_service_bus_delivers(delivery, "m1"), vm_ids_file=str(tmp_path / "vm_ids.yml"))
    assert event["scheduled_events"]["hosts"] == ["web0"]
    assert event["meta"]["hosts"] == ["all", "localhost"], "no --limit to the file's hosts: web1, not in it, is read"
