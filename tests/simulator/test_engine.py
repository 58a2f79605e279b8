"""The engine on a virtual clock: transitions, scope, approvals, serialisation, incarnations."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from imds_simulator import scenario as sc
from imds_simulator.engine import ApprovalError, Engine, EngineOptions, fault_domains_in_maintenance, parse_start_requests
from imds_simulator.fleet import FleetSpec, build_fleet

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
GUID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
API = "2020-07-01"


def is_guid(event_id: str, case: str = "upper") -> bool:
    """A GUID in exactly the case the scenario serves."""
    return bool(GUID.match(event_id.upper())) and event_id == (event_id.lower() if case == "lower" else event_id.upper())


def make_engine(name: str, vms: int = 6, fault_domains: int = 3, scale: float = 1.0, seed: int = 1,
                kind: str = "availability_set", params: Optional[Dict[str, float]] = None,
                start: datetime = T0, **options: object) -> Engine:
    scenario = sc.load(name, params or {})
    fields = dict(scenario.fleet, vms=vms, fault_domains=fault_domains, kind=kind)
    if "names" in scenario.fleet:
        fields["vms"] = len(scenario.fleet["names"])
    fleet = build_fleet(FleetSpec(**fields))
    return Engine(fleet, scenario, start, time_scale=scale, seed=seed, options=EngineOptions(**options))  # type: ignore[arg-type]


def run_until_quiet(engine: Engine, limit: timedelta = timedelta(days=9)) -> None:
    """Step the virtual clock from transition to transition until nothing is left."""
    end = engine.start + limit
    while True:
        due = engine.next_change()
        if due is None or due > end:
            return
        engine.advance_to(due)


def doc(engine: Engine, vm: str, at: datetime, api: str = API) -> dict:
    served = engine.serve(vm, api, at)
    assert served.kind == "document", served.kind
    return served.document  # type: ignore[return-value]


# --------------------------------------------------------------------- platform maintenance

def test_platform_maintenance_walks_fault_domains_one_at_a_time() -> None:
    engine = make_engine("platform-maintenance")
    run_until_quiet(engine)
    events = sorted(engine.events, key=lambda e: e.appeared_at)
    assert len(events) == 3
    assert [sorted(e.fault_domains) for e in events] == [[0], [1], [2]]
    for ev in events:
        members = {v.name for v in engine.fleet.in_fault_domain(next(iter(ev.fault_domains)))}
        assert set(ev.resources) == members
        assert ev.outcome == "completed" and ev.start_reason == "not_before"
        assert ev.started_at == ev.not_before  # unapproved: starts exactly at NotBefore
        assert (ev.not_before - ev.appeared_at).total_seconds() >= 900
        assert 540 <= (ev.removed_at - ev.started_at).total_seconds() <= 660
    for earlier, later in zip(events, events[1:]):
        gap = (later.appeared_at - earlier.removed_at).total_seconds()
        assert 60 <= gap <= 240  # the next domain is scheduled shortly after the previous ends


def test_every_vm_of_the_set_sees_every_event_and_resources_say_who() -> None:
    engine = make_engine("platform-maintenance")
    at = T0 + timedelta(seconds=10)
    documents = [doc(engine, v.name, at) for v in engine.fleet.vms]
    assert all(d == documents[0] for d in documents)
    assert len(documents[0]["Events"]) == 1
    assert documents[0]["Events"][0]["Resources"] == ["avset-web-vm0", "avset-web-vm3"]


def test_affected_only_scope_hides_events_from_other_vms() -> None:
    scenario = sc.load("platform-maintenance")
    fleet = build_fleet(FleetSpec(kind="scale_set", name="gpu", vms=4, fault_domains=1, scope="affected_only"))
    engine = Engine(fleet, scenario, T0)
    at = T0 + timedelta(seconds=10)
    # one fault domain: the whole set is one walk step, so every VM is listed
    assert all(len(doc(engine, v.name, at)["Events"]) == 1 for v in fleet.vms)
    engine.load(sc.from_event({"key": "one", "type": "Reboot", "source": "User", "resources": {"vms": [1]}}), at)
    assert [e["EventId"] for e in doc(engine, "gpu_1", at)["Events"]][-1] not in \
        [e["EventId"] for e in doc(engine, "gpu_0", at)["Events"]]


# --------------------------------------------------------------------- wire format and incarnations

def test_wire_format_and_same_event_id_across_states() -> None:
    engine = make_engine("user-reboot", vms=2, fault_domains=2)
    scheduled = doc(engine, "avset-web-vm0", T0 + timedelta(seconds=6))["Events"][0]
    assert GUID.match(scheduled["EventId"])
    assert scheduled["NotBefore"].endswith(" GMT")
    assert parsedate_to_datetime(scheduled["NotBefore"]) == T0 + timedelta(seconds=905)
    assert list(scheduled) == ["EventId", "EventStatus", "EventType", "ResourceType", "Resources",
                               "NotBefore", "Description", "EventSource", "DurationInSeconds"]
    started = doc(engine, "avset-web-vm1", T0 + timedelta(seconds=906))["Events"][0]  # vm0 is rebooting
    assert started["EventId"] == scheduled["EventId"]
    assert (started["EventStatus"], started["NotBefore"]) == ("Started", "")


def test_incarnation_grows_on_every_change_and_only_then() -> None:
    engine = make_engine("platform-maintenance")
    seen: Dict[int, list] = {}
    previous = 0
    at = T0
    while at < T0 + timedelta(hours=2):
        d = doc(engine, "avset-web-vm1", at)
        incarnation = d["DocumentIncarnation"]
        assert incarnation >= previous
        if incarnation in seen:
            assert seen[incarnation] == d["Events"]
        seen[incarnation] = d["Events"]
        previous = incarnation
        at += timedelta(seconds=20)
    # 1 empty + (appear, start, remove) x 3 fault domains
    assert sorted(seen) == list(range(1, 11))
    assert [len(seen[i]) for i in sorted(seen)] == [0, 1, 1, 0, 1, 1, 0, 1, 1, 0]


@pytest.mark.parametrize("api, fields, prefix", [
    ("2017-03-01", {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore"}, "_"),
    ("2017-08-01", {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore"}, ""),
    ("2019-04-01", {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore",
                    "Description"}, ""),
    ("2019-08-01", {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore",
                    "Description", "EventSource"}, ""),
])
def test_older_api_versions_serve_their_own_field_set(api: str, fields: set, prefix: str) -> None:
    engine = make_engine("platform-maintenance")
    event = doc(engine, "avset-web-vm0", T0 + timedelta(seconds=10), api)["Events"][0]
    assert set(event) == fields
    assert event["Resources"] == [prefix + "avset-web-vm0", prefix + "avset-web-vm3"]


def test_preempt_is_not_served_to_versions_before_2017_11_01() -> None:
    engine = make_engine("spot-eviction", vms=4, fault_domains=5, kind="scale_set")
    at = T0 + timedelta(seconds=10)
    vm = engine.fleet.vms[0].name
    assert doc(engine, vm, at, "2017-08-01")["Events"] == []
    assert [e["EventType"] for e in doc(engine, vm, at, "2017-11-01")["Events"]] == ["Preempt"]


def test_incarnation_restarts_after_24h_without_requests() -> None:
    engine = make_engine("platform-maintenance")
    first = engine.serve("avset-web-vm0", API, T0)
    assert first.first_call
    later = T0 + timedelta(hours=3)
    assert doc(engine, "avset-web-vm0", later)["DocumentIncarnation"] > 1
    assert not engine.serve("avset-web-vm0", API, later + timedelta(hours=1)).first_call
    silent = later + timedelta(hours=1, seconds=86401)
    again = engine.serve("avset-web-vm0", API, silent)
    assert again.first_call and again.document["DocumentIncarnation"] == 1  # type: ignore[index]
    assert engine.vm_state("avset-web-vm1").incarnation > 1  # only the silent VM restarted


def test_enabling_window_answers_empty_until_the_service_is_ready() -> None:
    engine = make_engine("platform-maintenance", enabling_s=120.0)
    assert engine.serve("avset-web-vm0", API, T0).kind == "enabling"
    assert engine.serve("avset-web-vm0", API, T0 + timedelta(seconds=119)).kind == "enabling"
    assert engine.serve("avset-web-vm0", API, T0 + timedelta(seconds=121)).kind == "document"


# --------------------------------------------------------------------- approvals

def test_one_approval_starts_the_event_for_every_listed_vm() -> None:
    engine = make_engine("platform-maintenance", simulate_impact=False)  # read the rebooting VMs too
    at = T0 + timedelta(seconds=30)
    event_id = doc(engine, "avset-web-vm0", at)["Events"][0]["EventId"]
    entry = engine.approve("avset-web-vm0", {"StartRequests": [{"EventId": event_id}]}, at)
    assert entry["results"] == {event_id: "started"} and entry["in_resources"] == {event_id: True}
    for vm in ("avset-web-vm0", "avset-web-vm3", "avset-web-vm1"):
        event = doc(engine, vm, at)["Events"][0]
        assert (event["EventId"], event["EventStatus"]) == (event_id, "Started")
    ev = engine.events[0]
    assert ev.started_at == at and ev.start_reason == "approved"
    again = engine.approve("avset-web-vm3", {"StartRequests": [{"EventId": event_id}]}, at)
    assert again["results"] == {event_id: "already_started"}


def test_any_vm_of_the_set_may_approve_and_the_log_says_it_was_not_listed() -> None:
    engine = make_engine("platform-maintenance")
    at = T0 + timedelta(seconds=30)
    event_id = doc(engine, "avset-web-vm1", at)["Events"][0]["EventId"]
    entry = engine.approve("avset-web-vm1", {"StartRequests": [{"EventId": event_id}]}, at)
    assert entry["in_resources"] == {event_id: False}
    assert engine.events[0].status == "Started"


def test_approval_rule_all_waits_for_every_listed_vm() -> None:
    engine = make_engine("platform-maintenance")
    engine.load(sc.from_event({"key": "shared-host", "type": "Redeploy", "notice_s": 900, "approval": "all",
                               "resources": {"fault_domain": 1}, "source": "Platform"}), T0)
    ev = next(e for e in engine.events if e.key == "shared-host")
    at = T0 + timedelta(seconds=1)
    doc(engine, "avset-web-vm1", at)
    first = engine.approve("avset-web-vm1", {"StartRequests": [{"EventId": ev.event_id}]}, at)
    assert first["results"] == {ev.event_id: "waiting_for_other_vms"} and ev.status == "Scheduled"
    second = engine.approve("avset-web-vm4", {"StartRequests": [{"EventId": ev.event_id}]}, at + timedelta(seconds=5))
    assert ev.status == "Started" and ev.started_at == at + timedelta(seconds=5)
    assert second["results"][ev.event_id] in ("started", "held_for_fault_domain")


def test_approving_a_second_fault_domain_is_held_until_the_first_is_done() -> None:
    scenario = sc.parse({"name": "two", "summary": "two fault domains at once", "events": [
        {"key": "fd0", "type": "Reboot", "resources": {"fault_domain": 0}, "notice_s": 900},
        {"key": "fd1", "type": "Reboot", "resources": {"fault_domain": 1}, "notice_s": 900}]}, {})
    fleet = build_fleet(FleetSpec())
    engine = Engine(fleet, scenario, T0)
    fd0, fd1 = engine.events
    for ev, vm in ((fd0, "avset-web-vm0"), (fd1, "avset-web-vm1")):
        doc(engine, vm, T0)
        engine.approve(vm, {"StartRequests": [{"EventId": ev.event_id}]}, T0)
    assert fd0.status == "Started" and fd1.status == "Scheduled" and fd1.held
    run_until_quiet(engine)
    assert fd1.started_at == fd0.removed_at  # entered the moment the other domain was done


def test_unknown_event_id_is_rejected_and_logged() -> None:
    engine = make_engine("platform-maintenance")
    with pytest.raises(ApprovalError, match="not a scheduled event of this VM"):
        engine.approve("avset-web-vm0", {"StartRequests": [{"EventId": "00000000-0000-0000-0000-000000000000"}]}, T0)
    assert engine.approvals[-1]["accepted"] is False


@pytest.mark.parametrize("body", [
    None, [], "text", {}, {"StartRequests": []}, {"StartRequests": "id"}, {"StartRequests": [{"Id": "x"}]},
    {"StartRequests": [{"EventId": 7}]}, {"StartRequests": [{"EventId": "x", "More": 1}]},
    {"StartRequests": [{"EventId": "x"}], "Extra": True},
])
def test_malformed_start_requests_are_rejected(body: object) -> None:
    with pytest.raises(ApprovalError, match="^Bad request"):
        parse_start_requests(body)


def test_2017_body_with_document_incarnation_is_accepted() -> None:
    assert parse_start_requests({"DocumentIncarnation": 3, "StartRequests": [{"EventId": "A"}]}) == ["A"]


# --------------------------------------------------------------------- special life cycles

def test_cancelled_event_is_removed_without_starting() -> None:
    engine = make_engine("cancelled-maintenance")
    run_until_quiet(engine)
    (ev,) = engine.events
    assert ev.outcome == "cancelled" and ev.started_at is None
    assert 240 <= (ev.removed_at - ev.appeared_at).total_seconds() <= 420
    statuses = [tuple(e["EventStatus"] for e in c["events"]) for c in engine.vm_state("avset-web-vm0").changes]
    assert statuses == [(), ("Scheduled",), ()]


def test_a_cancel_removes_a_scheduled_event_now_and_refuses_a_started_or_unknown_one() -> None:
    engine = make_engine("platform-maintenance")
    engine.advance_to(T0 + timedelta(seconds=10))
    (ev,) = engine.events
    engine.cancel(ev.event_id, T0 + timedelta(seconds=20))
    assert (ev.status, ev.outcome, ev.started_at) == ("Removed", "cancelled", None)
    assert ev.removed_at == T0 + timedelta(seconds=20)
    assert [e["Events"] for e in [doc(engine, ev.resources[0], T0 + timedelta(seconds=21))]] == [[]]
    with pytest.raises(sc.ScenarioError, match="only a Scheduled event can be cancelled"):
        engine.cancel(ev.event_id, T0 + timedelta(seconds=30))
    with pytest.raises(sc.ScenarioError, match="no event NOPE to cancel"):
        engine.cancel("NOPE", T0 + timedelta(seconds=30))


def test_stopping_arrivals_ends_the_streams_but_lets_events_under_way_finish() -> None:
    engine = make_engine("fleet-mix", vms=12)
    engine.advance_to(T0 + timedelta(days=2))
    under_way = list(engine.active)
    assert engine.stop_arrivals(T0 + timedelta(days=2)) > 0
    count = len(engine.events)
    run_until_quiet(engine, limit=timedelta(days=30))
    assert not engine.active and all(e.status == "Removed" for e in under_way)
    # Only what was already under way could still add events (a walk's next fault domain, an `after` chain).
    assert count > len(under_way) and all(e.key in {u.key for u in under_way} for e in engine.events[count:])


def test_hardware_failure_appears_already_started() -> None:
    engine = make_engine("hardware-failure")
    run_until_quiet(engine)
    (ev,) = engine.events
    assert ev.start_reason == "no_notice" and ev.outcome == "completed"
    assert len(ev.resources) == 2 and len(ev.fault_domains) == 1
    first = engine.vm_state(ev.resources[0]).changes[1]["events"][0]
    assert (first["EventStatus"], first["NotBefore"]) == ("Started", "")


def test_spot_eviction_gives_30s_and_deletes_the_vm() -> None:
    engine = make_engine("spot-eviction", vms=4, fault_domains=5, kind="scale_set")
    run_until_quiet(engine)
    (ev,) = engine.events
    assert ev.event_type == "Preempt" and (ev.not_before - ev.appeared_at).total_seconds() == 30
    (victim,) = ev.resources
    assert re.match(r"^vmss-spot_\d$", victim)
    assert engine.serve(victim, API, ev.removed_at + timedelta(seconds=1)).kind == "deleted"
    survivor = next(v.name for v in engine.fleet.vms if v.name != victim)
    assert engine.serve(survivor, API, ev.removed_at + timedelta(seconds=1)).kind == "document"


@pytest.mark.parametrize("notice", [300, 900])
def test_scale_in_notice_follows_the_terminate_profile(notice: int) -> None:
    engine = make_engine("scale-in", kind="scale_set", fault_domains=5, params={"terminate_notice_s": notice})
    run_until_quiet(engine)
    (ev,) = engine.events
    assert (ev.not_before - ev.appeared_at).total_seconds() == notice and len(ev.resources) == 2


def test_scale_in_notice_outside_5_to_15_minutes_is_refused() -> None:
    with pytest.raises(sc.ScenarioError, match=r"outside its allowed range 300\.\.900\.$"):
        sc.load("scale-in", {"terminate_notice_s": 120})


def test_degraded_hardware_gives_days_of_notice() -> None:
    engine = make_engine("degraded-hardware")
    run_until_quiet(engine, limit=timedelta(days=10))
    (ev,) = engine.events
    assert (ev.not_before - ev.appeared_at) >= timedelta(days=6, hours=23)


def test_live_migration_replay_serves_the_documented_sequence() -> None:
    recorded = datetime(2022, 4, 11, 22, 11, 48, tzinfo=timezone.utc)
    engine = make_engine("live-migration-replay", fault_domains=1, start=recorded)
    seen = [doc(engine, "WestNO_0", recorded + timedelta(seconds=s)) for s in (1, 11)]
    assert engine.serve("WestNO_1", API, recorded + timedelta(seconds=912)).kind == "frozen"  # 5 s freeze from 910
    seen.append(doc(engine, "WestNO_0", recorded + timedelta(seconds=916)))
    assert doc(engine, "WestNO_1", recorded + timedelta(seconds=916)) == seen[2]
    seen.append(doc(engine, "WestNO_0", recorded + timedelta(seconds=926)))
    assert [d["DocumentIncarnation"] for d in seen] == [1, 2, 3, 4]
    assert seen[0]["Events"] == [] and seen[3]["Events"] == []
    scheduled, started = seen[1]["Events"][0], seen[2]["Events"][0]
    assert scheduled["EventId"] == started["EventId"] == "C7061BAC-AFDC-4513-B24B-AA5F13A16123"
    assert scheduled["NotBefore"] == "Mon, 11 Apr 2022 22:26:58 GMT"
    assert (scheduled["EventType"], scheduled["DurationInSeconds"], scheduled["Resources"]) == \
        ("Freeze", 5, ["WestNO_0", "WestNO_1"])
    assert started["NotBefore"] == ""


def test_replay_is_rebased_onto_the_serving_clock() -> None:
    engine = make_engine("live-migration-replay", fault_domains=1, scale=10.0)
    scheduled = doc(engine, "WestNO_0", T0 + timedelta(seconds=1.5))["Events"][0]
    assert parsedate_to_datetime(scheduled["NotBefore"]) == T0 + timedelta(seconds=91)  # (10 + 900) s / 10


def test_time_scale_compresses_durations_but_not_timestamps() -> None:
    engine = make_engine("platform-maintenance", scale=60.0)
    run_until_quiet(engine)
    first = min(engine.events, key=lambda e: e.appeared_at)
    assert first.appeared_at == T0 + timedelta(seconds=5 / 60)
    notice = (first.not_before - first.appeared_at).total_seconds()
    assert 15 <= notice <= 1020 / 60 + 1  # 900-1020 scenario s, rounded up to the second


def test_frozen_and_rebooting_vms_do_not_answer_during_the_impact() -> None:
    engine = make_engine("live-migration")
    engine.advance_to(T0 + timedelta(seconds=10))
    ev = engine.events[0]
    engine.advance_to(ev.not_before)
    vm = ev.resources[0]
    assert engine.condition(vm, ev.started_at + timedelta(seconds=1)) == ("frozen", ev.started_at + ev.impact)
    assert engine.condition(vm, ev.started_at + ev.impact)[0] == "up"
    rebooting = make_engine("platform-maintenance")
    rebooting.advance_to(T0 + timedelta(seconds=10))
    ev = rebooting.events[0]
    assert rebooting.serve(ev.resources[0], API, ev.not_before + timedelta(seconds=3)).kind == "down"
    assert rebooting.serve(ev.resources[0], API, ev.not_before + timedelta(seconds=8)).kind == "document"


def test_routine_event_over_several_fault_domains_is_walked_not_started_at_once() -> None:
    engine = Engine(build_fleet(FleetSpec()), sc.from_event({"key": "all", "type": "Reboot", "notice_s": 60}), T0)
    run_until_quiet(engine)
    assert [sorted(e.fault_domains) for e in engine.events] == [[0], [1], [2]]


# --------------------------------------------------------------------- streams and properties

def test_fleet_mix_stream_is_varied_and_reproducible() -> None:
    def kinds(seed: int) -> List[tuple]:
        engine = make_engine("fleet-mix", seed=seed)
        run_until_quiet(engine, limit=timedelta(days=20))
        return [(e.event_id, e.key, e.outcome) for e in engine.events]
    first = kinds(5)
    assert first == kinds(5)
    assert first != kinds(6)
    keys = {k for _, k, _ in first}
    assert {"host-update", "live-migration", "user-reboot", "cancelled", "hardware-failure"} <= keys


SCENARIOS = [s.name for s in sc.available() if s.name != "live-migration-replay"]


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(SCENARIOS), vms=st.integers(1, 12), fds=st.integers(1, 3), seed=st.integers(0, 10_000),
       approve_every=st.sampled_from([None, 7, 60, 400]))
def test_invariants_hold_for_random_fleets_and_responders(name: str, vms: int, fds: int, seed: int,
                                                         approve_every: Optional[int]) -> None:
    kind = "scale_set" if name in ("spot-eviction", "scale-in") else "availability_set"
    engine = make_engine(name, vms=vms, fault_domains=fds, seed=seed, kind=kind)
    last: Dict[str, int] = {}
    at = T0
    while at < T0 + timedelta(hours=3):
        at += timedelta(seconds=approve_every or 90)
        for vm in engine.fleet.vms:
            served = engine.serve(vm.name, API, at)
            if served.kind != "document":
                continue
            incarnation = served.document["DocumentIncarnation"]  # type: ignore[index]
            assert incarnation >= last.get(vm.name, 0)
            last[vm.name] = incarnation
            leader_ids = [e["EventId"] for e in served.document["Events"]  # type: ignore[index]
                          if e["EventStatus"] == "Scheduled" and e["Resources"][0] == vm.name]
            if approve_every and leader_ids:
                engine.approve(vm.name, {"StartRequests": [{"EventId": i} for i in leader_ids]}, at)
        assert len(fault_domains_in_maintenance(engine.events, at)) <= 1
    ids = [e.event_id for e in engine.events]
    assert len(ids) == len(set(ids)) and all(is_guid(i, sc.load(name).event_id_case or "upper") for i in ids)
    for ev in engine.events:
        if ev.started_at is None or ev.start_reason == "no_notice":
            continue
        assert ev.started_at >= (ev.first_approved_at if ev.start_reason == "approved" else ev.not_before)
        assert ev.started_at >= ev.appeared_at


# --------------------------------------------------------------------- scenario validation

@pytest.mark.parametrize("data, message", [
    ({"name": "x", "summary": "s"}, "needs an 'events' list \\(\\[\\] for a quiet fleet\\) or a 'replay'"),
    ({"name": "x", "summary": "s", "events": {}}, "needs an 'events' list"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "colour": 1}]}, "unknown field 'colour'"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Nap"}]}, "type 'Nap' is not one of"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "notice_s": "soon"}]},
     "notice_s must be a number of seconds"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "at_s": 1, "per_day": 2}]},
     "one trigger"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "after": {"key": "b"}}]},
     "waits for unknown event 'b'"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "notice_s": "$n"}]},
     "undefined parameter \\$n"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "notice_s": None,
                                               "cancel_after_s": 5}]}, "cannot be cancelled"),
    ({"name": "x", "summary": "s", "events": [{"key": "a", "type": "Reboot", "resources": {"count": 0}}]},
     "count must be a positive whole number"),
    ([], "must hold a JSON object"),
])
def test_bad_scenarios_get_one_sentence(data: object, message: str) -> None:
    with pytest.raises(sc.ScenarioError, match=message) as info:
        sc.parse(data, {})
    text = str(info.value)
    assert text.endswith(".") and "\n" not in text


def test_unknown_scenario_name_lists_the_known_ones() -> None:
    with pytest.raises(sc.ScenarioError, match="known scenarios: cancelled-maintenance, "):
        sc.load("no-such-scenario")


@pytest.mark.parametrize("scenario", sc.available(), ids=lambda s: s.name)
def test_every_bundled_scenario_produces_events(scenario: sc.Scenario) -> None:
    kind = scenario.fleet.get("kind", "availability_set")
    fields = dict(scenario.fleet, kind=kind)
    if "names" in fields:
        fields["vms"] = len(fields["names"])
    engine = Engine(build_fleet(FleetSpec(**fields)), scenario, T0, seed=3)
    run_until_quiet(engine, limit=timedelta(days=10))
    assert engine.events, scenario.name
    assert all(ev.status == "Removed" for ev in engine.events if ev.key != "degraded-hardware")


# --------------------------------------------------------------------- coupled Terminates

def two_terminates(first_notice: int, second_notice: int) -> tuple:
    """A scale set with a scale-in Terminate pending on vm0 and another on vm1."""
    engine = make_engine("user-reboot", kind="scale_set", fault_domains=5)  # its one Reboot stays on vm0
    names = [v.name for v in engine.fleet.vms]
    for key, vm, notice in (("first", names[0], first_notice), ("second", names[1], second_notice)):
        engine.load(sc.from_event({"key": key, "type": "Terminate", "source": "User", "notice_s": notice,
                                   "started_for_s": 60, "resources": {"names": [vm]}}), T0)
    first, second = (next(e for e in engine.events if e.key == k) for k in ("first", "second"))
    at = T0 + timedelta(seconds=1)
    for vm in names[:2]:
        doc(engine, vm, at)
    return engine, names, first, second, at


def test_an_approved_terminate_waits_while_another_of_its_set_waits_unapproved() -> None:
    """Azure's terminate notification: VM_2, approved, is not deleted until VM_1's Terminate is approved."""
    engine, names, first, second, at = two_terminates(600, 900)
    alone = engine.approve(names[1], {"StartRequests": [{"EventId": second.event_id}]}, at)
    assert alone["results"] == {second.event_id: "held_for_other_terminates"} and second.status == "Scheduled"
    engine.advance_to(at + timedelta(seconds=100))
    assert second.status == "Scheduled", "approving one Terminate alone shortens nothing"
    engine.approve(names[0], {"StartRequests": [{"EventId": first.event_id}]}, at + timedelta(seconds=100))
    assert first.status == second.status == "Started" and second.start_reason == "approved"


def test_an_approved_terminate_goes_once_the_other_reaches_its_not_before() -> None:
    """... or its timeout has elapsed: VM_1's Terminate starts at its NotBefore, and VM_2's approval then counts."""
    engine, names, first, second, at = two_terminates(600, 900)
    engine.approve(names[1], {"StartRequests": [{"EventId": second.event_id}]}, at)
    engine.advance_to(first.not_before + timedelta(seconds=1))
    assert first.start_reason == "not_before" and second.status == "Started"
    assert second.started_at == first.not_before < second.not_before


def test_terminates_with_the_same_not_before_go_early_only_together() -> None:
    engine, names, first, second, at = two_terminates(600, 600)
    engine.approve(names[0], {"StartRequests": [{"EventId": first.event_id}]}, at)
    engine.advance_to(at + timedelta(seconds=300))
    assert first.status == second.status == "Scheduled"
    engine.approve(names[1], {"StartRequests": [{"EventId": second.event_id}]}, at + timedelta(seconds=300))
    assert first.status == second.status == "Started"


def test_an_advisory_is_served_and_never_started_by_an_approval() -> None:
    """SpotRebalanceRecommendation: a type third-party mocks serve and Azure's docs do not list yet."""
    engine = make_engine("user-reboot", kind="scale_set", fault_domains=5)
    vm = engine.fleet.vms[1].name
    engine.load(sc.from_event({"key": "rebalance", "type": "SpotRebalanceRecommendation", "notice_s": 600,
                               "duration_s": 0, "started_for_s": 30, "resources": {"names": [vm]}}), T0)
    ev = next(e for e in engine.events if e.key == "rebalance")
    at = T0 + timedelta(seconds=1)
    (served,) = [e for e in doc(engine, vm, at)["Events"] if e["EventId"] == ev.event_id]
    assert served["EventType"] == "SpotRebalanceRecommendation" and served["EventStatus"] == "Scheduled"
    entry = engine.approve(vm, {"StartRequests": [{"EventId": ev.event_id}]}, at)
    assert entry["results"] == {ev.event_id: "advisory_not_approvable"} and ev.status == "Scheduled"
    older = doc(engine, vm, at, api="2019-08-01")["Events"]
    assert ev.event_id not in [e["EventId"] for e in older], "an older api-version is not served the newer type"


def test_a_scenario_with_no_events_is_a_quiet_fleet() -> None:
    """For one's own tests of a fleet where nothing happens (it needed an event 30 years away)."""
    engine = Engine(build_fleet(FleetSpec()), sc.parse({"name": "quiet", "summary": "nothing", "events": []}, {}), T0)
    assert engine.events == []
    for vm in ("avset-web-vm0", "avset-web-vm1"):
        assert doc(engine, vm, T0 + timedelta(days=30))["Events"] == []
