# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event relay's Prometheus metrics (docs/reference/metrics.md): what one VM's relay knows, as families; pure.

Per VM, so every series describes this VM only: events are those whose Resources list it (every VM of a
set sees the set's events; counting them on each VM would raise one alert per VM of the set). Label values
are bounded: the documented event types, statuses and sources, anything else as "other"; the known
combinations are always written (0 when none), so that a query never meets a missing series.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    KNOWN_EVENT_STATUSES,
    KNOWN_EVENT_TYPES,
    DocumentError,
    parse_not_before,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import PREFIX, Family
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import lists

EVENT_TYPES = KNOWN_EVENT_TYPES  # label values: any other type is counted as OTHER
EVENT_STATUSES = KNOWN_EVENT_STATUSES
EVENT_SOURCES = ("Platform", "User")
OTHER = "other"
PUSH_RESULTS = ("sent", "refused", "failed")


@dataclass
class RelayCounters:
    """What the relay process counts beyond the tracker (reset when it restarts: counters may reset)."""
    started_at: float
    polls: int = 0
    pushes: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(PUSH_RESULTS, 0))
    spool_depth: int = 0
    spool_dropped: int = 0
    # the fast path's command (fast_path.py) by how it ended: exit status 0, or another status or a signal
    local_command_exits: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(LOCAL_COMMAND_RESULTS, 0))


def relay_families(document, vm_name, quiet, imds_errors, last_success_at, counters):
    # type: (Optional[Dict[str, Any]], str, bool, int, Optional[float], RelayCounters) -> List[Family]
    """This VM's metrics, from the last document read (None: none yet, or an empty 200)."""
    mine = [e for e in _events(document) if lists(e, vm_name)]
    families = [_events_family(mine)]
    next_not_before = _next_not_before(mine)
    if next_not_before is not None:
        families.append(Family(PREFIX + "next_not_before_timestamp_seconds", "gauge",
                               "Earliest NotBefore of the Scheduled events that list this VM, Unix time (absent "
                               "when none): alert on it minus time().").add(next_not_before))
    if document is not None and isinstance(document.get("DocumentIncarnation"), int):
        families.append(Family(PREFIX + "document_incarnation", "gauge",
                               "DocumentIncarnation of the last document read.").add(document["DocumentIncarnation"]))
    families += [
        Family(PREFIX + "quiet", "gauge", "1 when no event lists this VM and no cycle owes it anything (the relay's "
               "view), else 0.").add(1 if quiet else 0),
        Family(PREFIX + "polls_total", "counter", "IMDS polls the relay made.").add(counters.polls),
        Family(PREFIX + "imds_errors_total", "counter", "IMDS polls that got no document (no answer, an HTTP error, "
               "a malformed body).").add(imds_errors),
        Family(PREFIX + "last_successful_poll_timestamp_seconds", "gauge", "Unix time of the last poll IMDS "
               "answered (0: none since the relay started).").add(last_success_at or 0),
        Family(PREFIX + "spool_pushes", "gauge", "Pushes waiting in the relay's spool for the controller.")
        .add(counters.spool_depth),
        Family(PREFIX + "spool_dropped_total", "counter", "Pushes dropped from a full spool (the oldest first).")
        .add(counters.spool_dropped),
        _pushes_family(counters.pushes),
        _local_command_family(counters.local_command_exits),
        Family(PREFIX + "relay_start_time_seconds", "gauge", "Unix time the relay process started.")
        .add(counters.started_at),
    ]
    return families


def _events(document):
    events = (document or {}).get("Events")
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _bounded(value, known):
    return value if value in known else OTHER


def _events_family(events):
    family = Family(PREFIX + "events", "gauge", "Events in the Scheduled Events document that list this VM, by "
                    "type, status and source.")
    counts = dict(((t, s, o), 0) for t in EVENT_TYPES for s in EVENT_STATUSES for o in EVENT_SOURCES)
    for event in events:
        key = (_bounded(event.get("EventType"), EVENT_TYPES), _bounded(event.get("EventStatus"), EVENT_STATUSES),
               _bounded(event.get("EventSource"), EVENT_SOURCES))
        counts[key] = counts.get(key, 0) + 1
    for (event_type, status, source), count in sorted(counts.items()):
        family.add(count, event_type=event_type, event_status=status, event_source=source)
    return family


def _next_not_before(events):
    times = []
    for event in events:
        if event.get("EventStatus") != "Scheduled":
            continue
        try:
            moment = parse_not_before(event.get("NotBefore"))
        except DocumentError:
            continue   # the modules refuse such a document; the relay's metrics just leave it out
        if moment is not None:
            times.append(moment.timestamp())
    return min(times) if times else None


def _pushes_family(pushes):
    return _results_family("pushes_total", "Pushes to the controller by result (sent; refused for good with a 400 or "
                           "413 and dropped; failed and kept to retry).", PUSH_RESULTS, pushes)


LOCAL_COMMAND_RESULTS = ("ok", "failed")


def _local_command_family(exits):
    return _results_family("local_command_exits_total", "The fast path's local command runs that ended, by result "
                           "(ok: exit status 0; failed: another status or a signal).", LOCAL_COMMAND_RESULTS, exits)


def _results_family(name, description, results, counts):
    """A counter by `result`, every known result present (a counter that appears only once it counts breaks rate())."""
    family = Family(PREFIX + name, "counter", description)
    for result in results:
        family.add(counts.get(result, 0), result=result)
    return family
