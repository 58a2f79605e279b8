"""Event Grid deliveries and Resource Graph rows read into IMDS's normalised event, or refused in one sentence."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    SightingError,
    from_event_grid,
    from_resource_graph,
    scope_of,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import normalise_event

from .payloads import EVENT_ID, SUBSCRIPTION, cloud_event, event_grid, event_id_path, graph_row, properties

SCOPE = {"subscription": SUBSCRIPTION, "resource_group": "rg-web", "scope_type": "virtualMachineScaleSets",
         "scope_name": "web"}


def test_an_event_grid_delivery_is_the_imds_event_with_its_scope_and_delivery_id() -> None:
    sighting = from_event_grid(event_grid())
    assert sighting["event"] == normalise_event(properties()), "the same parsing as an IMDS document's"
    assert sighting["event"]["not_before"] == "2026-11-27T10:15:00Z" and sighting["event"]["duration_in_seconds"] == -1
    assert sighting["scope"] == SCOPE
    assert (sighting["source"], sighting["delivery_id"]) == ("event_grid", "5b0f6c3e-2d4a-4b7c-8e9f-0a1b2c3d4e5f")
    assert sighting["seen_at"] == "2026-11-27T10:00:00Z"


def test_cloud_events_carry_the_same_sighting() -> None:
    grid, cloud = from_event_grid(event_grid()), from_event_grid(cloud_event())
    assert (cloud["event"], cloud["scope"], cloud["seen_at"]) == (grid["event"], grid["scope"], grid["seen_at"])


@pytest.mark.parametrize("status", ["Completed", "Canceled"])
def test_the_control_planes_own_statuses_are_known(status: str) -> None:
    event = from_event_grid(event_grid(status))["event"]
    assert event["event_status"] == status and event["known_status"] is True and event["not_before"] is None


def test_an_unknown_status_is_kept_and_flagged() -> None:
    assert from_event_grid(event_grid("Paused"))["event"]["known_status"] is False


def test_regression_both_event_types_learn_gives_are_scheduled_events() -> None:
    """Learn's Event Grid page gives ScheduledEventEmitted in its example and microsoft.maintenance/scheduledevents/write
    in its field table; only the first was read, so if the table is right the rulebook never fired."""
    written = dict(event_grid(), eventType="microsoft.maintenance/scheduledevents/write")
    assert from_event_grid(written)["event"] == from_event_grid(event_grid())["event"]


def test_another_event_type_on_the_topic_is_not_ours() -> None:
    other = dict(event_grid(), eventType="Microsoft.ResourceNotifications.HealthResources.AvailabilityStatusChanged")
    assert from_event_grid(other) is None


def test_a_resource_graph_row_is_seen_when_the_query_ran() -> None:
    sighting = from_resource_graph(graph_row("Started"), "2026-11-27T10:20:03Z")
    assert sighting["event"] == dict(normalise_event(properties("Started")), known_status=True)
    assert sighting["scope"] == SCOPE and sighting["delivery_id"] is None and sighting["seen_at"] == "2026-11-27T10:20:03Z"


def test_ids_are_read_in_any_case_and_scope_types_in_the_paths_spelling() -> None:
    lowered = event_id_path(EVENT_ID.lower()).lower()
    assert scope_of(lowered) == dict(SCOPE, event_id=EVENT_ID.lower())
    sighting = from_event_grid(event_grid(event_id=EVENT_ID.lower()))
    assert sighting["event"]["event_id"] == EVENT_ID.lower()


@pytest.mark.parametrize("change, sentence", [
    (lambda e: e.pop("id"), "has no id, so a repeat of it could not be told apart"),
    (lambda e: e["data"].pop("resourceInfo"), "has no data.resourceInfo"),
    (lambda e: e["data"]["resourceInfo"].update(id="/subscriptions/x/resourceGroups/y"), "is not a scheduled event's id"),
    (lambda e: e["data"]["resourceInfo"].update(
        id=event_id_path(scope="/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/disks/d")),
     "names a disks, not one of virtualMachines, virtualMachineScaleSets, availabilitySets"),
    (lambda e: e["data"]["resourceInfo"]["properties"].update(EventId="0A7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21"),
     "which is not the event its id names"),
    (lambda e: e["data"]["resourceInfo"]["properties"].update(Resources="web_1"),
     "has Resources that are not a list of names"),
    (lambda e: (e["data"].pop("operationalInfo"), e.update(eventTime="yesterday")), "says not when it was seen"),
])
def test_what_does_not_add_up_is_refused_in_one_sentence(change, sentence: str) -> None:
    delivery = event_grid()
    change(delivery)
    with pytest.raises(SightingError, match=sentence.replace("(", r"\(").replace(")", r"\)")) as refused:
        from_event_grid(delivery)
    assert str(refused.value).count(". ") == 0 and str(refused.value).endswith(".")


def test_a_row_of_another_table_is_refused() -> None:
    with pytest.raises(SightingError, match="not microsoft.maintenance/scheduledevents"):
        from_resource_graph(dict(graph_row(), type="microsoft.maintenance/updates"), "2026-11-27T10:20:03Z")
