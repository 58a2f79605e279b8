"""The simulator's control-plane face over real HTTP: Resource Graph rows and Event Grid deliveries of the same
events the VMs' IMDS serves, and Microsoft.Maintenance acknowledge, consistent with IMDS; read back by the
collection's own control-plane code (plugins/module_utils/control_plane/)."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.acknowledge import (
    acknowledge_outcome,
    acknowledge_request,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.event_view import (
    ended,
    event_key,
    fold,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    from_event_grid,
    from_resource_graph,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import parse_document
from imds_simulator import control_plane
from imds_simulator.fleet import FleetSpec
from tests.live_fleet import LiveFleet

TOKENS = {"operator": ["Scheduled Events Contributor"], "reader": ["Reader"]}
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
QUERY = 'maintenanceresources | where type == "microsoft.maintenance/scheduledevents"'


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    # No impact: a VM in its reboot does not answer, and these tests read IMDS while events are Started.
    live = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=3, fault_domains=3), control_plane_tokens=TOKENS,
                     simulate_impact=False)
    yield live
    live.close()


def call(fleet: LiveFleet, path: str, body: Any = None, token: Optional[str] = "operator") -> Tuple[int, Dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(fleet.sim.base_url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read() or b"null")


def rows(fleet: LiveFleet) -> list:
    status, answer = call(fleet, "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01",
                          {"subscriptions": [SUBSCRIPTION], "query": QUERY})
    assert status == 200, answer
    return [from_resource_graph(row, "2026-11-28T00:00:00Z") for row in answer["data"]]


def imds_event(fleet: LiveFleet, vm: str, event_id: str) -> Dict[str, Any]:
    request = urllib.request.Request(fleet.url(vm) + "/metadata/scheduledevents?api-version=2020-07-01",
                                     headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        (event,) = [e for e in parse_document(answer.read())["events"] if e["event_id"] == event_id]
    return event


def test_one_event_seen_through_resource_graph_and_imds_and_acknowledged_from_outside() -> None:
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=2, fault_domains=1), control_plane_tokens=TOKENS,
                      simulate_impact=False)
    try:
        _seen_both_ways_and_acknowledged(fleet)
    finally:
        fleet.close()


def _seen_both_ways_and_acknowledged(fleet: LiveFleet) -> None:
    (event_id,) = fleet.inject({"key": "r", "type": "Reboot", "notice_s": 3600, "started_for_s": 3600,
                                "resources": {"names": fleet.vms[:2]}})
    (row,) = rows(fleet)
    listed = imds_event(fleet, fleet.vms[0], event_id)
    assert row["event"] == dict(listed, known_status=True), "the same event as IMDS serves, by the same parsing"
    assert row["scope"]["scope_type"] == "availabilitySets"
    request = acknowledge_request(row["scope"], [event_id])
    status, answer = call(fleet, request["path"])
    assert (status, acknowledge_outcome(status, answer, [event_id])["approved"]) == (200, [event_id])
    assert imds_event(fleet, fleet.vms[1], event_id)["event_status"] == "Started", "approved on one side, started on the other"
    (entry,) = fleet.approvals()
    assert (entry["via"], entry["event_ids"], entry["results"]) == ("control_plane", [event_id], {event_id: "approved"})
    assert sorted(fleet.truth()[0]["approved_by"]) == sorted(fleet.vms[:2]), "counted as every listed VM's approval"
    (row,) = rows(fleet)
    assert row["event"]["event_status"] == "Started"


def test_event_grid_delivers_each_status_and_the_end_the_vms_never_see(fleet: LiveFleet) -> None:
    (done,) = fleet.inject({"key": "f", "type": "Freeze", "notice_s": 60, "started_for_s": 1, "duration_s": 1,
                            "resources": {"names": fleet.vms[:1]}})
    (withdrawn,) = fleet.inject({"key": "w", "type": "Reboot", "notice_s": 3600, "resources": {"names": fleet.vms[2:]}})
    fleet.cancel(withdrawn)
    deadline = time.monotonic() + 10
    while fleet.truth()[0]["status"] != "Removed" and time.monotonic() < deadline:
        time.sleep(0.1)
    sightings = [from_event_grid(d) for d in control_plane.deliveries(fleet.engine, fleet.sim.clock.now())]
    assert [(s["event"]["event_id"], s["event"]["event_status"]) for s in sightings if s["event"]["event_id"] == done] \
        == [(done, "Scheduled"), (done, "Started"), (done, "Completed")]
    view, dropped = fold(sightings + sightings[:1])  # a repeated delivery carries the same id and is dropped
    assert ended(view) == {event_key(done): "Completed", event_key(withdrawn): "Canceled"}
    assert [d["reason"] for d in dropped] == [f"a repeat of delivery {sightings[0]['delivery_id']}"]
    assert {r["event"]["event_id"]: r["event"]["event_status"] for r in rows(fleet)} == {
        done: "Completed", withdrawn: "Canceled"}


def test_a_list_acknowledge_answers_207_per_event_and_the_collection_never_counts_an_unnamed_one(
        fleet: LiveFleet) -> None:
    first, second = (fleet.inject({"key": k, "type": "Reboot", "notice_s": 3600, "started_for_s": 3600,
                                   "resources": {"names": [vm]}})[0] for k, vm in (("a", fleet.vms[0]),
                                                                                   ("b", fleet.vms[1])))
    (row, _) = sorted(rows(fleet), key=lambda r: r["event"]["event_id"] != first)
    call(fleet, acknowledge_request(row["scope"], [second])["path"])  # second is Started now
    ghost = "00000000-1111-2222-3333-444444444444"
    request = acknowledge_request(row["scope"], [first, second, ghost])
    status, answer = call(fleet, request["path"], request["body"])
    outcome = acknowledge_outcome(status, answer, [first, second, ghost])
    assert status == 207 and outcome["gone"] == [ghost] and outcome["refused"] == {second: "Conflict"}
    assert outcome["unknown"] == [first] and outcome["approved"] == [], "a 207 that does not name it: not counted"
    truth = {e["event_id"]: e for e in fleet.truth()}
    assert truth[first]["approved_by"] == [fleet.vms[0]], "though Azure did approve it (it waits for the other domain)"


@pytest.mark.parametrize("change, token, status, sentence", [
    ((), None, 401, "Azure refused the credentials (401: "),
    ((), "reader", 403, "needs the Scheduled Events Contributor role"),
    (("2025-11-01", "2022-07-01-preview"), "operator", 400, "found for API version '2022-07-01-preview'"),
    (("availabilitySets/", "availabilitySets/other-"), "operator", 404, "Azure knows no such VM"),
])
def test_what_azure_refuses_approves_nothing_and_reads_as_one_sentence(fleet: LiveFleet, change: tuple,
                                                                         token: Optional[str], status: int,
                                                                         sentence: str) -> None:
    (event_id,) = fleet.inject({"key": "r", "type": "Reboot", "notice_s": 3600, "resources": {"names": fleet.vms[:1]}})
    (row,) = rows(fleet)
    ack = acknowledge_request(row["scope"], [event_id])["path"]
    got, answer = call(fleet, ack.replace(*change) if change else ack, token=token)
    outcome = acknowledge_outcome(got, answer, [event_id])
    assert got == status and outcome["approved"] == [] and sentence in (outcome["error"] or json.dumps(answer))
    assert [a for a in fleet.approvals() if a["accepted"]] == []
    assert imds_event(fleet, fleet.vms[0], event_id)["event_status"] == "Scheduled"


def test_resource_graph_lags_as_asked_and_the_face_is_off_unless_asked_for() -> None:
    lagging = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1), control_plane_tokens=TOKENS, graph_lag_s=1.0)
    plain = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1))
    try:
        lagging.inject({"key": "r", "type": "Reboot", "notice_s": 3600, "resources": {"names": lagging.vms}})
        assert rows(lagging) == [], "not in Resource Graph yet"
        time.sleep(1.1)
        assert len(rows(lagging)) == 1
        assert call(plain, "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01", {})[0] == 404
    finally:
        lagging.close()
        plain.close()


def test_a_vms_managed_identity_answers_only_with_the_metadata_header_and_for_an_identity_it_has() -> None:
    from imds_simulator.control_plane import identity_token
    identities = {"vm0": {"system": "t-sys", "app-2": "t-user"}}
    query = {"api-version": ["2018-02-01"], "resource": ["https://management.azure.com/"]}
    assert identity_token(identities, "vm0", query, "true")[1]["access_token"] == "t-sys"
    assert identity_token(identities, "vm0", dict(query, client_id=["app-2"]), "true")[1]["access_token"] == "t-user"
    assert identity_token(identities, "vm0", query, None) == (
        400, {"error": "invalid_request", "error_description": "Required metadata header not specified"})
    assert identity_token(identities, "vm1", query, "true")[1]["error_description"] == "Identity not found"
    assert identity_token(identities, "vm0", dict(query, resource=["http://plain"]), "true")[0] == 400


# ------------------------------------------------------------------ Resource Graph pages and throttles as Azure does

GRAPH = "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01"


class GraphOverHttp:
    """The transport the collection's read is given (ArmClient's post_reading_headers and post), over real HTTP to
    the simulator with a bearer token the simulator knows."""

    def __init__(self, fleet: LiveFleet) -> None:
        self.fleet = fleet
        self.bodies: list = []

    def post_reading_headers(self, path: str, body: Any = None) -> Tuple[int, Any, Dict[str, str]]:
        self.bodies.append(body)
        request = urllib.request.Request(self.fleet.sim.base_url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", "Authorization": "Bearer operator"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, json.loads(answer.read() or b"null"), dict(answer.headers.items())
        except urllib.error.HTTPError as failed:
            return failed.code, json.loads(failed.read() or b"null"), dict(failed.headers.items())

    def post(self, path: str, body: Any = None) -> Tuple[int, Any]:
        return self.post_reading_headers(path, body)[:2]

    def subscription_id(self) -> str:
        return SUBSCRIPTION


def paged_fleet(**server: Any) -> LiveFleet:
    live = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=6, fault_domains=3), control_plane_tokens=TOKENS,
                     simulate_impact=False, **server)
    for vm in live.vms:  # one event per VM: six rows
        live.inject({"key": vm, "type": "Reboot", "notice_s": 3600, "resources": {"names": [vm]}})
    return live


def test_resource_graph_pages_at_its_limit_orders_only_when_asked_and_throttles_past_the_quota() -> None:
    fleet = paged_fleet(graph_page_rows=4, graph_quota=3)
    http = GraphOverHttp(fleet)
    try:
        ordered = QUERY + " | order by id asc"
        status, first, headers = http.post_reading_headers(GRAPH, {"subscriptions": [SUBSCRIPTION], "query": ordered})
        assert status == 200 and first["count"] == 4 and first["totalRecords"] == 6
        assert first["resultTruncated"] == "true" and first["$skipToken"]
        assert headers["x-ms-user-quota-remaining"] == "2" and headers["x-ms-user-quota-resets-after"] == "00:00:05"
        status, rest, _ = http.post_reading_headers(GRAPH, {"subscriptions": [SUBSCRIPTION], "query": ordered,
                                                            "options": {"$skipToken": first["$skipToken"]}})
        ids = [r["id"] for r in first["data"] + rest["data"]]
        assert rest["count"] == 2 and "$skipToken" not in rest and rest["resultTruncated"] == "false"
        assert ids == sorted(ids, key=str.lower) and len(set(ids)) == 6
        status, _answer, _ = http.post_reading_headers(GRAPH, {"subscriptions": [SUBSCRIPTION], "query": QUERY,
                                                               "options": {"$top": 1001}})
        assert status == 400, "$top is 1 to 1,000"
        status, answer, headers = http.post_reading_headers(GRAPH, {"subscriptions": [SUBSCRIPTION], "query": QUERY})
        assert status == 429 and answer["error"]["code"] == "RateLimiting"
        assert headers["x-ms-user-quota-remaining"] == "0" and headers["x-ms-user-quota-resets-after"] <= "00:00:05"
    finally:
        fleet.close()


def test_regression_a_read_cut_at_resource_graphs_page_limit_is_read_to_its_end_or_not_at_all() -> None:
    """Resource Graph answers at most 1,000 rows and marks a cut answer; the read sent one query and took its first
    page as the whole table, so the events on later pages (a VM's Started event among them) were not in the read:
    that VM was read as quiet and its fault domain free. Pages of two rows here, as 1,000 are in Azure."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
        read_control_plane)
    fleet = paged_fleet(graph_page_rows=2, graph_quota=0)
    try:
        vm_ids = {vm.name: vm.resource_id for vm in fleet.engine.fleet.vms}
        read = read_control_plane(GraphOverHttp(fleet), [SUBSCRIPTION], vm_ids, host_index(vm_ids), lambda text: None)
        assert sorted(read["hosts"]) == sorted(fleet.vms), "every VM's event, from every page"
        assert len(read["events"]) == 6
    finally:
        fleet.close()


def test_a_read_throttled_waits_for_the_quota_it_is_told_and_gives_up_in_one_sentence() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_paging import (
        GraphIncomplete, all_rows, events_query)
    fleet = paged_fleet(graph_page_rows=2, graph_quota=2, graph_quota_window_s=1.0)  # Azure's window is 5 s
    http = GraphOverHttp(fleet)
    waits: list = []
    try:
        query = events_query([fleet.engine.fleet.vms[0].resource_id.split("/")[4]])
        # Three pages, a quota of two queries a second: the read waits after the second page, as the headers say
        rows = all_rows(lambda body: http.post_reading_headers(GRAPH, body), [SUBSCRIPTION], query,
                        lambda s: (waits.append(s), time.sleep(s)))
        assert len(rows) == 6 and waits == [1.0], "one wait, of what x-ms-user-quota-resets-after said"
        with pytest.raises(GraphIncomplete, match=r"^Resource Graph throttled the read \(429\) 3 times in a row"):
            all_rows(lambda body: http.post_reading_headers(GRAPH, body), [SUBSCRIPTION], query, lambda s: None)
    finally:
        fleet.close()


def test_regression_the_managed_identitys_token_is_retried_as_azure_identity_retries_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """IMDS answers 404 while an identity is being assigned, 410 while it updates, 429 and 5xx under load; one such
    answer failed the task, where azure-identity tries five times more, waiting 2, 4, 8, 16 and 32 s."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.arm_client import (
        ArmClient, ArmError)
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1), control_plane_tokens=TOKENS,
                      control_plane_identities={"avset-web-vm0": {"system": "operator"}})
    try:
        monkeypatch.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", fleet.url("avset-web-vm0"))
        credentials = {"kind": "msi", "client_id": None, "subscription_id": SUBSCRIPTION,
                       "cloud_environment": "AzureCloud"}  # the token's audience; no request goes to Azure

        def token_after(*statuses: int) -> Tuple[List[float], Any]:
            waits: List[float] = []
            for status in statuses:
                fleet.fault("avset-web-vm0", {"kind": "status", "status": status, "path": "identity"})
            client = ArmClient(credentials)
            client._sleep = waits.append  # the waits, not slept: the schedule is what is checked
            try:
                return waits, client.token()
            except ArmError as exc:
                return waits, exc
        assert token_after(404, 429, 503) == ([2.0, 4.0, 8.0], "operator")
        waits, failed = token_after(*[500] * 6)
        assert waits == [2.0, 4.0, 8.0, 16.0, 32.0] and isinstance(failed, ArmError)
        assert str(failed).startswith("The managed identity gave no token (HTTP 500")
        waits, refused = token_after(400)
        assert waits == [] and isinstance(refused, ArmError), "a 400 is an answer, not a passing moment: not retried"
    finally:
        fleet.close()
