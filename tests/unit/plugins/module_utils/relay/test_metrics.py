"""The relay's Prometheus textfile (metrics.py, prometheus_text.py), read back with the Prometheus client
library's own parser."""
from __future__ import annotations

from typing import Dict, Tuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import Family, render
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.metrics import (
    RelayCounters,
    relay_families,
)

NOT_BEFORE = "Mon, 05 Jan 2026 00:15:12 GMT"
NOT_BEFORE_EPOCH = 1767572112.0


def event(event_id: str, status: str, resources, event_type: str = "Reboot", source: str = "Platform",
          not_before: str = NOT_BEFORE) -> dict:
    return {"EventId": event_id, "EventStatus": status, "EventType": event_type, "Resources": resources,
            "NotBefore": not_before if status == "Scheduled" else "", "EventSource": source}


def parsed(text: str) -> Dict[str, Tuple[str, Dict[Tuple[Tuple[str, str], ...], float]]]:
    """name -> (type, {sorted labels: value}) for every sample, as Prometheus reads the file."""
    out = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = (family.type, {(s.name,) + tuple(sorted(s.labels.items())): s.value
                                          for s in family.samples})
    return out


def relay_text(document, quiet=False, errors=0, last_ok=1767571000.5, **counters) -> str:
    return render(relay_families(document, "vm0", quiet, errors, last_ok,
                                 RelayCounters(started_at=1767570000.0, **counters)))


def test_only_events_listing_this_vm_count_and_every_known_combination_is_written() -> None:
    document = {"DocumentIncarnation": 7, "Events": [
        event("A", "Scheduled", ["vm0", "vm1"]), event("B", "Scheduled", ["vm1"]),   # B: another VM's
        event("C", "Started", ["VM0"], event_type="Freeze", not_before=""),
        event("D", "Scheduled", ["vm0"], event_type="Hibernate", source="Customer")]}  # unknown: "other"
    families = parsed(relay_text(document, polls=12, spool_depth=3, spool_dropped=1,
                                 pushes={"sent": 5, "refused": 1, "failed": 2}))
    kind, events = families["azure_scheduled_events_events"]
    assert kind == "gauge" and len(events) == 5 * 2 * 2 + 1

    def key(event_type: str, status: str, source: str) -> tuple:
        return ("azure_scheduled_events_events", ("event_source", source), ("event_status", status),
                ("event_type", event_type))
    assert events[key("Reboot", "Scheduled", "Platform")] == 1, "B lists vm1 only"
    assert events[key("Freeze", "Started", "Platform")] == 1 and events[key("other", "Scheduled", "other")] == 1
    assert sum(events.values()) == 3
    assert families["azure_scheduled_events_next_not_before_timestamp_seconds"][1] == {
        ("azure_scheduled_events_next_not_before_timestamp_seconds",): NOT_BEFORE_EPOCH}
    single = {name: next(iter(values.values())) for name, (_kind, values) in families.items() if len(values) == 1}
    assert single["azure_scheduled_events_document_incarnation"] == 7
    assert single["azure_scheduled_events_polls"] == 12 and families["azure_scheduled_events_polls"][0] == "counter"
    assert single["azure_scheduled_events_spool_pushes"] == 3 and single["azure_scheduled_events_spool_dropped"] == 1
    assert single["azure_scheduled_events_last_successful_poll_timestamp_seconds"] == 1767571000.5
    assert single["azure_scheduled_events_quiet"] == 0
    pushes = families["azure_scheduled_events_pushes"][1]
    assert pushes[("azure_scheduled_events_pushes_total", ("result", "failed"))] == 2


def test_before_any_document_there_is_no_not_before_nor_incarnation_and_last_poll_is_zero() -> None:
    families = parsed(relay_text(None, quiet=False, errors=4, last_ok=None))
    assert "azure_scheduled_events_next_not_before_timestamp_seconds" not in families
    assert "azure_scheduled_events_document_incarnation" not in families
    (value,) = families["azure_scheduled_events_last_successful_poll_timestamp_seconds"][1].values()
    assert value == 0, "never polled successfully: an alert on its age fires (fail closed)"
    (errors,) = families["azure_scheduled_events_imds_errors"][1].values()
    assert errors == 4


def test_label_values_are_escaped_and_bad_names_refused() -> None:
    text = render([Family("x_total", "counter", "a\nb").add(1, why='a "quoted"\\ thing\n')])
    (family,) = text_string_to_metric_families(text)
    assert family.samples[0].labels == {"why": 'a "quoted"\\ thing\n'}
    with pytest.raises(ValueError):
        render([Family("9bad", "gauge", "x")])
    with pytest.raises(ValueError):
        render([Family("ok", "gauge", "x").add(1, **{"__reserved": "x"})])
