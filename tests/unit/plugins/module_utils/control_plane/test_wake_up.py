"""An Event Grid notification wakes a cycle on every expected host (the ones it lists named apart), since the
fault-domain limit needs every host that may owe a recover; on nothing more when it repeats."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.wake_up import (
    REMEMBERED_DELIVERIES,
    hosts_to_wake,
)

from .payloads import SUBSCRIPTION, event_grid

GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachineScaleSets/web"
INDEX = host_index({"web1": f"{GROUP}/virtualMachines/1", "web2": f"{GROUP}/virtualMachines/2"})
EXPECTED = ["web1", "web2", "db1"]


def test_every_expected_host_is_woken_once_and_the_listed_ones_named() -> None:
    seen: list = []
    woken = hosts_to_wake(event_grid(), INDEX, EXPECTED, seen)
    # Not only web1 and web2: db1 may be drained for an event that is gone, its recover owed, its fault domain in
    # maintenance; a cycle that does not read it would not count it (the fault model's Event Grid kind).
    assert woken == {"hosts": ["db1", "web1", "web2"], "listed": ["web1", "web2"],
                     "event_id": "1A7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21", "event_status": "Scheduled",
                     "reason": "Reboot Scheduled lists web1, web2: every expected host is looked at."}
    assert hosts_to_wake(event_grid(), INDEX, EXPECTED, seen) is None, "a repeated delivery wakes nothing more"
    assert hosts_to_wake(event_grid("Completed", delivery_id="d2"), INDEX, EXPECTED, seen)["listed"] == ["web1", "web2"]


def test_what_cannot_be_placed_wakes_every_expected_host() -> None:
    woken = hosts_to_wake(event_grid(resources=["web_1", "web_9"]), INDEX, EXPECTED, [])
    assert woken["hosts"] == ["db1", "web1", "web2"]
    assert woken["reason"] == "Reboot Scheduled lists web_9, which no single host is: every expected host is looked at."
    assert hosts_to_wake(event_grid(resources=[]), INDEX, EXPECTED, [])["hosts"] == ["db1", "web1", "web2"]


def test_an_unreadable_delivery_wakes_every_expected_host_and_another_type_nothing() -> None:
    broken = event_grid()
    del broken["data"]["resourceInfo"]
    woken = hosts_to_wake(broken, INDEX, EXPECTED, [])
    assert woken["hosts"] == ["db1", "web1", "web2"] and woken["reason"].endswith("Every expected host is looked at.")
    assert hosts_to_wake(dict(event_grid(), eventType="Microsoft.Storage.BlobCreated"), INDEX, EXPECTED, []) is None


def test_the_memory_of_deliveries_is_bounded() -> None:
    seen = [str(i) for i in range(REMEMBERED_DELIVERIES)]
    hosts_to_wake(event_grid(delivery_id="new"), INDEX, EXPECTED, seen)
    assert len(seen) == REMEMBERED_DELIVERIES and seen[-1] == "new" and seen[0] == "1"
