"""Control-plane payloads shaped as Microsoft publishes them (Event Grid's ScheduledEventEmitted examples in the
Event Grid and CloudEvents schemas, Resource Graph's maintenanceresources rows; azure-rest-api-specs,
specification/eventgrid/data-plane/Microsoft.ResourceNotifications, and the Scheduled Events Learn pages), with this
project's own values."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

SUBSCRIPTION = "8d3a2c61-5a0e-4d1f-9c2b-1f0e6a7b9c01"
EVENT_ID = "1A7C2E44-0B3D-4F5E-9A8B-7C6D5E4F3A21"
SET_ID = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Compute/virtualMachineScaleSets/web"


def properties(status: str = "Scheduled", event_id: str = EVENT_ID, resources: Optional[List[str]] = None,
               not_before: str = "Fri, 27 Nov 2026 10:15:00 GMT") -> Dict[str, Any]:
    return {"EventId": event_id, "EventType": "Reboot", "ResourceType": "VirtualMachine",
            "Resources": resources if resources is not None else ["web_1", "web_2"], "EventStatus": status,
            "NotBefore": not_before if status == "Scheduled" else "", "Description": "Host maintenance",
            "EventSource": "Platform", "DurationInSeconds": -1}


def event_id_path(event_id: str = EVENT_ID, scope: str = SET_ID) -> str:
    # The examples write the provider segment in lower case.
    return f"{scope}/providers/microsoft.maintenance/scheduledevents/{event_id}"


def event_grid(status: str = "Scheduled", delivery_id: str = "5b0f6c3e-2d4a-4b7c-8e9f-0a1b2c3d4e5f",
               event_time: str = "2026-11-27T10:00:00.9584103Z", **props: Any) -> Dict[str, Any]:
    """The Event Grid schema (dataVersion 3.0); the subject names the scale set, as in the specification's example."""
    return {"id": delivery_id, "topic": f"/subscriptions/{SUBSCRIPTION}", "subject": SET_ID,
            "eventType": "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted",
            "eventTime": event_time, "dataVersion": "3.0", "metadataVersion": "1",
            "data": {"resourceInfo": {"id": event_id_path(props.get("event_id", EVENT_ID)),
                                      "name": props.get("event_id", EVENT_ID),
                                      "type": "Microsoft.Maintenance/scheduledEvents", "location": "westeurope",
                                      "properties": properties(status, **props)},
                     "operationalInfo": {"resourceEventTime": event_time}, "apiVersion": "2023-07-01"}}


def cloud_event(status: str = "Scheduled") -> Dict[str, Any]:
    """The same delivery in CloudEvents 1.0: source for topic, type for eventType, time for eventTime."""
    grid = event_grid(status)
    data = dict(grid["data"])
    del data["operationalInfo"]
    return {"id": grid["id"], "source": grid["topic"], "subject": grid["subject"], "type": grid["eventType"],
            "specversion": "1.0", "time": grid["eventTime"], "data": data}


def graph_row(status: str = "Scheduled", **props: Any) -> Dict[str, Any]:
    """A row of `maintenanceresources | where type == "microsoft.maintenance/scheduledevents"`."""
    event_id = props.get("event_id", EVENT_ID)
    return {"id": event_id_path(event_id).replace("resourceGroups", "resourcegroups"), "name": event_id,
            "type": "microsoft.maintenance/scheduledevents", "tenantId": "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
            "location": "westeurope", "resourceGroup": "rg-web", "subscriptionId": SUBSCRIPTION, "zones": ["1", "2"],
            "properties": properties(status, **props)}
