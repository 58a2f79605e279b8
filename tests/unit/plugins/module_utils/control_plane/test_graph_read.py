"""graph_read: a Resource Graph answer read into the run's read: each event once, placed on hosts, what it cannot
place or parse kept apart, the ended ones named, and what it covered and placed echoed (host_read checks them)."""
from __future__ import annotations

from typing import List

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_read import (
    lags_behind,
    read_of_rows,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index

from .payloads import EVENT_ID, SUBSCRIPTION, event_id_path, properties

GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Compute"
VM_IDS = {"web-1": f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/1"}
ENDED_ID = "9B8A7C6D-5E4F-4A3B-8C2D-1E0F9A8B7C6D"


def row(status: str = "Scheduled", event_id: str = EVENT_ID) -> dict:
    return {"id": event_id_path(event_id), "name": event_id, "type": "microsoft.maintenance/scheduledevents",
            "properties": properties(status, event_id=event_id)}


def test_rows_are_placed_on_hosts_and_what_cannot_be_placed_or_parsed_is_kept_apart() -> None:
    warnings: List[str] = []
    read = read_of_rows([row(), row("Completed", ENDED_ID), {"type": "something else"}], "2026-11-27T10:00:00Z",
                        [SUBSCRIPTION], VM_IDS, host_index(VM_IDS), warnings.append)
    assert [(e["event_id"], e["hosts"]) for e in read["events"]] == [(EVENT_ID, ["web-1"]), (ENDED_ID, ["web-1"])]
    assert read["events"][0]["scope"] == f"{GROUP}/virtualMachineScaleSets/web"
    assert read["unmapped"] == {EVENT_ID: ["web_2"], ENDED_ID: ["web_2"]} and read["ambiguous"] == {}
    assert len(read["unreadable"]) == 1 and len(warnings) == 1 and "every host it might list" in warnings[0]
    assert read["ended"] == {ENDED_ID: "Completed"}
    assert (read["read_at"], read["subscriptions"], read["vm_ids"]) == ("2026-11-27T10:00:00Z", [SUBSCRIPTION], VM_IDS)


def test_a_read_lags_behind_a_notification_until_it_shows_the_event_at_that_status_or_later() -> None:
    def read_showing(*statuses: str) -> dict:
        return read_of_rows([row(s) for s in statuses], "2026-11-27T10:00:00Z", [SUBSCRIPTION], VM_IDS,
                            host_index(VM_IDS), lambda _: None)
    started = {"event_id": EVENT_ID.lower(), "event_status": "Started"}
    assert lags_behind(read_showing(), started), "not shown at all"
    assert lags_behind(read_showing("Scheduled"), started), "shown, but at an older moment"
    assert not lags_behind(read_showing("Started"), started)
    assert not lags_behind(read_showing("Completed"), started), "ended is later than Started"
    assert not lags_behind(read_showing(), {"event_id": None, "event_status": None}), "an unparsed notification"
    assert not lags_behind(read_showing(), None) and not lags_behind(read_showing(), {})
