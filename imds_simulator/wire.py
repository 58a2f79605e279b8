"""The IMDS wire format, as the Scheduled Events service serves it.

Pure functions only: which api-versions exist, which fields each one carries,
how dates and ids look, and the error bodies IMDS answers with. The engine
decides *what* is in a document; this module decides *how it looks*.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any, Dict, List, Optional, Sequence

# Scheduled Events api-versions, oldest first, with what each one added.
SCHEDULED_EVENTS_API_VERSIONS: Sequence[str] = (
    "2017-03-01",  # preview: IaaS resource names carry a leading underscore
    "2017-08-01",  # underscores dropped
    "2017-11-01",  # EventType Preempt
    "2019-01-01",  # EventType Terminate
    "2019-04-01",  # Description
    "2019-08-01",  # EventSource
    "2020-07-01",  # DurationInSeconds
)

# Instance metadata api-versions we answer for /metadata/instance/compute.
INSTANCE_API_VERSIONS: Sequence[str] = (
    "2017-03-01", "2017-04-02", "2017-08-01", "2017-12-01", "2018-02-01",
    "2018-04-02", "2018-10-01", "2019-02-01", "2019-03-11", "2019-04-30",
    "2019-06-01", "2019-06-04", "2019-08-01", "2019-08-15", "2019-11-01",
    "2020-06-01", "2020-07-15", "2020-09-01", "2020-10-01", "2020-12-01",
    "2021-01-01", "2021-02-01", "2021-03-01", "2021-05-01", "2021-08-01",
    "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01",
)

EVENT_TYPES: Sequence[str] = ("Freeze", "Reboot", "Redeploy", "Preempt", "Terminate")
# Advisories: types Azure's documentation does not list yet, which third-party Azure test mocks already serve and AKS's
# roadmap promises (2026). They announce, they do not act: no impact, never started by an approval (a client that
# approved one would be wrong), gone when their time is over. A scenario may play them to test a client's tolerance.
ADVISORY_TYPES: Sequence[str] = ("SpotRebalanceRecommendation",)
SCENARIO_TYPES: Sequence[str] = tuple(EVENT_TYPES) + tuple(ADVISORY_TYPES)
EVENT_SOURCES: Sequence[str] = ("Platform", "User")

# Event types an api-version can name; older clients are not served newer types.
_TYPE_SINCE = {"Preempt": "2017-11-01", "Terminate": "2019-01-01", "SpotRebalanceRecommendation": "2020-07-01"}
_FIELD_SINCE = {
    "Description": "2019-04-01",
    "EventSource": "2019-08-01",
    "DurationInSeconds": "2020-07-01",
}
_UNDERSCORE_UNTIL = "2017-08-01"  # versions before this prefix IaaS names with "_"


def new_event_id(rng: Any = None) -> str:
    """An uppercase GUID, as IMDS serves EventId (seeded when `rng` is given)."""
    if rng is None:
        return str(uuid.uuid4()).upper()
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()


def rfc1123(moment: datetime) -> str:
    """`Mon, 19 Sep 2016 18:29:47 GMT`: the NotBefore format IMDS serves."""
    return format_datetime(moment.astimezone(timezone.utc).replace(microsecond=0), usegmt=True)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 UTC with a `Z` and millisecond precision, for observation records."""
    text = moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def type_served(event_type: str, api_version: str) -> bool:
    since = _TYPE_SINCE.get(event_type)
    return since is None or api_version >= since


def field_served(field: str, api_version: str) -> bool:
    since = _FIELD_SINCE.get(field)
    return since is None or api_version >= since


def resource_name_on_wire(name: str, api_version: str) -> str:
    """The 2017-03-01 preview prefixed IaaS resource names with an underscore."""
    return "_" + name if api_version < _UNDERSCORE_UNTIL else name


def render_event(event: Dict[str, Any], api_version: str) -> Dict[str, Any]:
    """One event in the field order and field set of `api_version`.

    `event` holds every field of the newest version; fields newer than the
    requested version are dropped, as IMDS does.
    """
    rendered: Dict[str, Any] = {}
    for field in ("EventId", "EventStatus", "EventType", "ResourceType", "Resources",
                  "NotBefore", "Description", "EventSource", "DurationInSeconds"):
        if field not in event or not field_served(field, api_version):
            continue
        value = event[field]
        if field == "Resources":
            value = [resource_name_on_wire(name, api_version) for name in value]
        rendered[field] = value
    return rendered


def render_document(incarnation: int, events: List[Dict[str, Any]], api_version: str) -> Dict[str, Any]:
    """The whole GET body for `api_version`."""
    served = [render_event(e, api_version) for e in events if type_served(e["EventType"], api_version)]
    return {"DocumentIncarnation": incarnation, "Events": served}


def newest_versions(versions: Sequence[str]) -> List[str]:
    return sorted(versions, reverse=True)[:3]


def error_body(message: str, versions: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """IMDS-style error JSON (`{"error": ..., "newest-versions": [...]}`)."""
    body: Dict[str, Any] = {"error": message}
    if versions:
        body["newest-versions"] = newest_versions(versions)
    return body


MISSING_HEADER = "Bad request. Required metadata header not specified"
FORWARDED_HEADER = "Bad request. Requests with an X-Forwarded-For header are not supported"
ABSOLUTE_FORM = "Bad request. Requests through a proxy (absolute-form request target) are not supported"
MISSING_VERSION = "Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds"
INVALID_VERSION = "Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds"
NOT_FOUND = "Not found"
THROTTLED = "Too many requests"


# ---------------------------------------------------------------- Microsoft's mock server, where a client can tell

# Azure-Samples/scheduled-events-mock-server (Flask), which Microsoft's docs tell users to rehearse against, differs
# from IMDS in what a client sees: no compute metadata (a web framework's HTML 404 page), lower-case EventIds, an
# ISO 8601 NotBefore with a `Z`. `serve --mock-server` plays those differences, nothing else.
MOCK_NOT_FOUND_PAGE = (b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
                       b"<p>The requested URL was not found on the server. If you entered the URL manually please "
                       b"check your spelling and try again.</p>\n")
MOCK_VM_NAME = "vmss_vm1"  # the mock's default resource


def mock_server_document(document: Any) -> Any:
    """A served document as the mock serves it: each RFC 1123 NotBefore in ISO 8601 with a `Z` ("" stays "")."""
    if not isinstance(document, dict) or not isinstance(document.get("Events"), list):
        return document
    events = []
    for event in document["Events"]:
        event = dict(event)
        if event.get("NotBefore"):
            moment = parsedate_to_datetime(event["NotBefore"]).astimezone(timezone.utc)
            event["NotBefore"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        events.append(event)
    return dict(document, Events=events)
