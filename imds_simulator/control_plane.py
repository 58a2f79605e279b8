"""The control plane's face of the same engine: Azure Resource Graph rows, Event Grid deliveries and the
Microsoft.Maintenance acknowledge endpoints, consistent with what the VMs' IMDS serves (an event approved on one
side is approved on the other).

Shapes follow Microsoft's published examples (azure-rest-api-specs: Microsoft.Maintenance's ScheduledEvents
operations, Event Grid's MaintenanceResources.ScheduledEventEmitted; the Scheduled Events Learn pages). Stricter
than Azure where it costs nothing: every request needs a bearer token the simulator was started with, acknowledging
needs the Scheduled Events Contributor role, and api-versions outside the published ones are refused. Where it
differs from Azure, docs/reference/simulator.md says so.
"""
from __future__ import annotations

import base64
import json
import random
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Tuple, Union
from urllib.parse import parse_qs

from .engine import Engine, SimEvent
from .wire import rfc1123

ACKNOWLEDGE_VERSIONS = ("2023-10-01-preview", "2025-10-01-preview", "2025-11-01", "2026-02-01-preview")
LIST_ACKNOWLEDGE_VERSIONS = ACKNOWLEDGE_VERSIONS[1:]
GRAPH_VERSIONS = ("2021-03-01", "2022-10-01", "2024-04-01")
CONTRIBUTOR = "Scheduled Events Contributor"
EVENT_GRID_TYPE = "Microsoft.ResourceNotifications.MaintenanceResources.ScheduledEventEmitted"
GRAPH_TYPE = "microsoft.maintenance/scheduledevents"
_ENDS = {"completed": "Completed", "cancelled": "Canceled"}
_SCOPE_TYPES = {"availabilitysets": "availabilitySets", "virtualmachinescalesets": "virtualMachineScaleSets",
                "virtualmachines": "virtualMachines"}
_ACK = re.compile(r"^/subscriptions/(?P<subscription>[^/]+)/resourcegroups/(?P<group>[^/]+)/providers/"
                  r"Microsoft\.Compute/(?P<type>[^/]+)/(?P<name>[^/]+)/providers/Microsoft\.Maintenance/"
                  r"scheduledevents(?:/(?P<event_id>[^/]+)/acknowledge)?$", re.IGNORECASE)
_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_TOKEN_PATH = re.compile(r"^/[^/]+/oauth2/v2\.0/token$")
# (HTTP status, JSON body) or (HTTP status, JSON body, response headers)
Answer = Union[Tuple[int, Dict[str, Any]], Tuple[int, Dict[str, Any], Dict[str, str]]]


def scope_path(engine: Engine, ev: SimEvent) -> str:
    """The ARM id of what the event was published for: its availability set or scale set, or a lone VM."""
    vm = engine.fleet.vm(ev.resources[0])
    prefix = vm.resource_id.split("/providers/")[0]  # type: ignore[union-attr]
    if vm.vm_scale_set_name:  # type: ignore[union-attr]
        return f"{prefix}/providers/Microsoft.Compute/virtualMachineScaleSets/{vm.vm_scale_set_name}"  # type: ignore
    if ev.set_name:
        return f"{prefix}/providers/Microsoft.Compute/availabilitySets/{ev.set_name}"
    return f"{prefix}/providers/Microsoft.Compute/virtualMachines/{vm.name}"  # type: ignore[union-attr]


def event_arm_id(engine: Engine, ev: SimEvent) -> str:
    return f"{scope_path(engine, ev)}/providers/microsoft.maintenance/scheduledevents/{ev.event_id}"


def status_at(ev: SimEvent, at: datetime) -> Optional[str]:
    """What the control plane says of the event at `at` (None: not yet announced)."""
    if ev.appeared_at > at:
        return None
    if ev.removed_at is not None and ev.removed_at <= at:
        return _ENDS[ev.outcome]
    if ev.started_at is not None and ev.started_at <= at:
        return "Started"
    return "Scheduled"


def properties_at(ev: SimEvent, status: str) -> Dict[str, Any]:
    wire = ev.wire()
    wire["EventStatus"] = status
    wire["NotBefore"] = rfc1123(ev.not_before) if status == "Scheduled" and ev.not_before else ""
    return wire


def graph_rows(engine: Engine, now: datetime, lag_s: float, subscriptions: List[str]) -> List[Dict[str, Any]]:
    """maintenanceresources rows of the scheduled events, one per event updated in place, as of `lag_s` ago."""
    seen_at = now - timedelta(seconds=lag_s)
    wanted = {s.lower() for s in subscriptions}
    rows = []
    for ev in engine.events:
        status = status_at(ev, seen_at)
        arm_id = event_arm_id(engine, ev)
        subscription = arm_id.split("/")[2]
        if status is None or subscription.lower() not in wanted:
            continue
        vms = [engine.fleet.vm(r) for r in ev.resources]
        rows.append({"id": arm_id, "name": ev.event_id, "type": GRAPH_TYPE, "tenantId": TENANT,
                     "location": "westeurope", "resourceGroup": arm_id.split("/")[4], "subscriptionId": subscription,
                     "zones": sorted({v.zone for v in vms if v is not None and v.zone}),
                     "properties": properties_at(ev, status)})
    return rows


def deliveries(engine: Engine, upto: datetime) -> List[Dict[str, Any]]:
    """Event Grid deliveries (Event Grid schema) of every status change up to `upto`, oldest first; each delivery's
    id is fixed by the event and the status, so a repeat carries the same id."""
    out = []
    for ev in engine.events:
        changes = [("Scheduled", ev.appeared_at), ("Started", ev.started_at), (_ENDS.get(ev.outcome), ev.removed_at)]
        for status, at in changes:
            if status is None or at is None or at > upto or (status == "Scheduled" and ev.started_at == ev.appeared_at):
                continue
            stamp = at.strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"  # Event Grid's 7 fractional digits
            arm_id = event_arm_id(engine, ev)
            out.append({"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{ev.event_id}/{status}")),
                        "topic": "/" + "/".join(arm_id.split("/")[1:3]), "subject": scope_path(engine, ev),
                        "eventType": EVENT_GRID_TYPE, "eventTime": stamp, "dataVersion": "3.0",
                        "metadataVersion": "1", "data": {
                            "resourceInfo": {"id": arm_id, "name": ev.event_id,
                                             "type": "Microsoft.Maintenance/scheduledEvents",
                                             "location": "westeurope", "properties": properties_at(ev, status)},
                            "operationalInfo": {"resourceEventTime": stamp}, "apiVersion": "2023-07-01"}})
    return sorted(out, key=lambda d: d["eventTime"])


TENANT = "72f988bf-0000-4000-8000-000000000000"


def error(status: int, code: str, message: str) -> Answer:
    return status, {"error": {"code": code, "message": message}}


def is_management(path: str) -> bool:
    """Whether a path is the control plane's (Resource Manager, Resource Graph, the token and cloud-metadata
    endpoints) rather than a VM's IMDS root."""
    lowered = path.lower()
    return lowered.startswith(("/subscriptions/", "/providers/microsoft.resourcegraph/")) \
        or lowered == "/metadata/endpoints" or _TOKEN_PATH.match(path) is not None


def handle(engine: Engine, options: Any, base_url: str, method: str, path: str, query: Dict[str, List[str]],
           authorization: Optional[str], body: Optional[bytes], now: datetime,
           graph: Optional[GraphSettings] = None) -> Answer:
    """One management request -> (HTTP status, JSON body). `options` is the server's (tokens, clients, lag)."""
    if path.lower() == "/metadata/endpoints":
        # What a cloud's metadata endpoint says (Azure Stack's convention, which azure.azcollection follows for a
        # cloud_environment given as a URL): this server is both Resource Manager and the login endpoint.
        return 200, {"resourceManager": base_url + "/", "portal": base_url + "/",
                     "authentication": {"loginEndpoint": base_url + "/", "audiences": [base_url + "/"]}}
    if _TOKEN_PATH.match(path):
        return _token(options.control_plane_clients or {}, method, body)
    roles_by_token = options.control_plane_tokens or {}
    graph_lag_s = options.graph_lag_s
    token = (authorization or "")[7:] if (authorization or "").startswith("Bearer ") else None
    if token not in roles_by_token:
        return error(401, "AuthenticationFailed", "Authentication failed: no valid bearer token was given.")
    version = (query.get("api-version") or [""])[0]
    if method != "POST":
        return error(405, "MethodNotAllowed", f"{method} is not allowed here; the control-plane face takes POST.")
    if path.lower() == "/providers/microsoft.resourcegraph/resources":
        return _graph(engine, version, body, now, graph_lag_s, graph, token or "")
    match = _ACK.match(path)
    if match is None:
        return error(404, "InvalidResourceType", f"The simulator's control plane serves no {path}.")
    single = match.group("event_id") is not None
    versions = ACKNOWLEDGE_VERSIONS if single else LIST_ACKNOWLEDGE_VERSIONS
    if version not in versions:
        return error(400, "NoRegisteredProviderFound",
                     f"No registered resource provider found for API version '{version}'; "
                     f"supported api-versions are '{', '.join(versions)}'.")
    if CONTRIBUTOR not in roles_by_token[token]:
        return error(403, "AuthorizationFailed", "The client does not have authorization to perform action "
                     "'Microsoft.Maintenance/scheduledevents/acknowledge/action' over this scope.")
    scope_error = _check_scope(engine, match)
    if scope_error:
        return scope_error
    if single:
        return _acknowledge_one(engine, match.group("name"), match.group("event_id"), now)
    return _acknowledge_list(engine, match.group("name"), body, now)


def _token(clients: Dict[str, Dict[str, str]], method: str, body: Optional[bytes]) -> Answer:
    """Microsoft identity platform's client-credentials grant (POST /<tenant>/oauth2/v2.0/token, a form)."""
    form = parse_qs((body or b"").decode("utf-8", "replace")) if method == "POST" else {}
    fields = {k: v[0] for k, v in form.items()}
    client = clients.get(fields.get("client_id", ""))
    if fields.get("grant_type") != "client_credentials" or not fields.get("scope", "").endswith("/.default"):
        return 400, {"error": "invalid_request", "error_description": "AADSTS900144: the request needs "
                     "grant_type=client_credentials and a scope ending in /.default."}
    if client is None or client.get("secret") != fields.get("client_secret"):
        return 401, {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."}
    return 200, {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                 "access_token": client["token"]}


IDENTITY_VERSIONS = ("2018-02-01", "2019-08-01")


def identity_token(identities: Dict[str, Dict[str, str]], vm: str, query: Dict[str, List[str]],
                   metadata_header: Optional[str]) -> Answer:
    """A VM's managed identity (GET <its IMDS>/metadata/identity/oauth2/token): `identities` is {VM name:
    {"system": token, <a user-assigned identity's client id>: token}}; a token is a key of the control plane's
    tokens. Stricter than Azure in one way: a resource other than a Resource Manager's is refused."""
    if (metadata_header or "").lower() != "true":
        return 400, {"error": "invalid_request", "error_description": "Required metadata header not specified"}
    version, resource = (query.get("api-version") or [""])[0], (query.get("resource") or [""])[0]
    if version not in IDENTITY_VERSIONS:
        return 400, {"error": "invalid_request", "error_description": "Invalid or missing api-version: %r" % version}
    if not resource.startswith("https://"):
        return 400, {"error": "invalid_resource", "error_description": "AADSTS500011: the resource %r is not a "
                     "Resource Manager." % resource}
    mine = identities.get(vm.lower()) or {}
    wanted = (query.get("client_id") or ["system"])[0]
    if wanted not in mine:
        return 400, {"error": "invalid_request", "error_description": "Identity not found"}
    return 200, {"access_token": mine[wanted], "client_id": wanted, "expires_in": "86399", "resource": resource,
                 "token_type": "Bearer"}


def _check_scope(engine: Engine, match: "re.Match[str]") -> Optional[Answer]:
    kind = _SCOPE_TYPES.get(match.group("type").lower())
    prefix = engine.fleet.vms[0].resource_id.split("/providers/")[0].lower()
    asked = f"/subscriptions/{match.group('subscription')}/resourcegroups/{match.group('group')}".lower()
    names = {s.lower() for s in engine.fleet.sets} | {v.name.lower() for v in engine.fleet.vms}
    if kind is None or asked != prefix or match.group("name").lower() not in names:
        return error(404, "ResourceNotFound", f"The resource '{match.group('type')}/{match.group('name')}' was not "
                     "found in this subscription and resource group.")
    return None


def _acknowledge_one(engine: Engine, scope_name: str, event_id: str, now: datetime) -> Answer:
    if not _GUID.match(event_id):
        return error(400, "BadRequest", f"The ScheduledEventId '{event_id}' is not a GUID.")
    result = engine.acknowledge(event_id, scope_name, now)
    if result == "not_found":
        return error(404, "InvalidScheduledEventId", "Scheduled event not found")
    if result == "conflict":
        return error(409, "Conflict", "The event cannot be acknowledged.")
    return 200, {"value": "Successfully Approved"}


def _acknowledge_list(engine: Engine, scope_name: str, body: Optional[bytes], now: datetime) -> Answer:
    try:
        ids = json.loads((body or b"").decode("utf-8"))["value"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return error(400, "BadRequest", 'The body must be {"value": ["<scheduled event id>", ...]}.')
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and _GUID.match(i) for i in ids):
        return error(400, "BadRequest", "value must be a non-empty list of scheduled event ids (GUIDs).")
    failed = []
    for event_id in ids:
        result = engine.acknowledge(event_id, scope_name, now)
        if result == "not_found":
            failed.append({"target": event_id, "code": "NotFound", "message": "Scheduled event not found"})
        elif result == "conflict":
            failed.append({"target": event_id, "code": "Conflict", "message": "The event cannot be acknowledged."})
    if not failed:
        return 200, {"value": "Successfully Approved"}
    # As Azure's clients show it: only the events that were not approved are detailed, newest first.
    return 207, {"error": {"code": "MultiStatusResponse", "message": "The scheduled events returned different "
                           "statuses; review each event's result.", "details": failed[::-1]}}


GRAPH_PAGE_ROWS = 1000  # Resource Graph's most rows per answer ($top: 1 to 1,000)
GRAPH_QUOTA = 15  # queries per user per window (Learn: "Guidance for throttled requests")
GRAPH_QUOTA_WINDOW_S = 5.0
_GROUPS = re.compile(r'\| where resourcegroup in~ \(((?:"[^"]*"(?:, )?)+)\)')


@dataclass
class GraphSettings:
    """How the simulated Resource Graph pages and throttles: as Azure documents by default; a test makes pages
    small. `quota` 0 is no throttling (the fault model's own reads count their cost apart)."""
    page_rows: int = GRAPH_PAGE_ROWS
    quota: int = GRAPH_QUOTA
    window_s: float = GRAPH_QUOTA_WINDOW_S
    asked: Dict[str, List[datetime]] = field(default_factory=dict)  # token -> when its recent queries came
    rng: random.Random = field(default_factory=random.Random)  # the order of rows a query does not order


def _graph(engine: Engine, version: str, body: Optional[bytes], now: datetime, lag_s: float,
           settings: Optional[GraphSettings] = None, token: str = "") -> Answer:
    """A Resource Graph query, as Azure serves it: at most `page_rows` rows per answer, the rest behind a
    $skipToken; rows in a random order unless the query orders them by id (a page of an unordered query may repeat
    or miss rows of another, as Azure warns); 429 past the quota, the quota in every answer's headers."""
    settings = settings or GraphSettings()
    if version not in GRAPH_VERSIONS:
        return error(400, "NoRegisteredProviderFound", f"No registered resource provider found for API version "
                     f"'{version}'; supported api-versions are '{', '.join(GRAPH_VERSIONS)}'.")
    quota = _quota_headers(settings, token, now)
    if quota is None:
        reset = _quota_reset_s(settings, token, now)
        return 429, {"error": {"code": "RateLimiting", "message": "Please provide below info when asking for "
                               "support: too many requests, retry after the quota resets."}}, {
            "x-ms-user-quota-remaining": "0", "x-ms-user-quota-resets-after": _hms(reset)}
    try:
        request = json.loads((body or b"").decode("utf-8"))
        query, subscriptions = request["query"], request["subscriptions"]
        options = request.get("options") or {}
        top = int(options.get("$top", settings.page_rows))
        offset = _offset(options.get("$skipToken"))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        return error(400, "BadRequest", 'The body must be {"subscriptions": [...], "query": "...", "options": '
                     '{"$top": 1-1000, "$skipToken": "..."}}.')
    if not 1 <= top <= GRAPH_PAGE_ROWS:
        return error(400, "BadRequest", f"$top must be between 1 and {GRAPH_PAGE_ROWS}.")
    flat = " ".join(str(query).split()).lower().replace("'", '"')
    if not flat.startswith(f'maintenanceresources | where type == "{GRAPH_TYPE}"'):
        return error(400, "BadRequest", "The simulator answers only the scheduled-events query: maintenanceresources "
                     f'| where type == "{GRAPH_TYPE}" [| where resourceGroup in~ ("...")] [| order by id asc].')
    rows = graph_rows(engine, now, lag_s, [str(s) for s in subscriptions or []])
    groups = _GROUPS.search(flat)
    if groups:
        wanted = {g.strip('"') for g in groups.group(1).split(", ")}
        rows = [r for r in rows if r["resourceGroup"].lower() in wanted]
    if flat.endswith("| order by id asc"):
        rows.sort(key=lambda r: r["id"].lower())
    else:
        settings.rng.shuffle(rows)
    page = rows[offset:offset + min(top, settings.page_rows)]
    answer: Dict[str, Any] = {"totalRecords": len(rows), "count": len(page), "facets": [], "data": page,
                              "resultTruncated": "true" if offset + len(page) < len(rows) else "false"}
    if offset + len(page) < len(rows):
        answer["$skipToken"] = base64.b64encode(json.dumps({"offset": offset + len(page)}).encode()).decode()
    return 200, answer, quota


def _offset(token: Any) -> int:
    if token is None:
        return 0
    offset = json.loads(base64.b64decode(str(token), validate=True).decode("utf-8"))["offset"]
    if not isinstance(offset, int) or offset < 0:
        raise ValueError("not a $skipToken of this simulator")
    return offset


def _quota_headers(settings: GraphSettings, token: str, now: datetime) -> Optional[Dict[str, str]]:
    """The quota headers of a query counted now, or None when it is over the quota (429)."""
    if settings.quota <= 0:
        return {}
    recent = [t for t in settings.asked.get(token, []) if (now - t).total_seconds() < settings.window_s]
    if len(recent) >= settings.quota:
        settings.asked[token] = recent
        return None
    settings.asked[token] = recent + [now]
    return {"x-ms-user-quota-remaining": str(settings.quota - len(recent) - 1),
            "x-ms-user-quota-resets-after": _hms(_quota_reset_s(settings, token, now))}


def _quota_reset_s(settings: GraphSettings, token: str, now: datetime) -> float:
    first = min(settings.asked.get(token) or [now])
    return max(0.0, settings.window_s - (now - first).total_seconds())


def _hms(seconds: float) -> str:
    whole = int(seconds + 0.999)
    return "%02d:%02d:%02d" % (whole // 3600, whole // 60 % 60, whole % 60)
