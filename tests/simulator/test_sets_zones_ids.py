"""Opt-in strictness: lower-case EventIds matched exactly, fleets of several sets, zonal fleets.

Everything here runs on the virtual clock (engine or offline generation), so
weeks of simulated maintenance take well under a second or two.
"""
from __future__ import annotations

import io
import itertools
import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from imds_simulator import scenario as sc
from imds_simulator.engine import ApprovalError, Engine, EngineOptions, SimEvent, maintenance_domains
from imds_simulator.fleet import FleetError, FleetSpec, build_fleet, spec_from_fields
from imds_simulator.offline import GenerateOptions, generate

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
API = "2020-07-01"
LOWER_GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
UPPER_GUID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")

TWO_AVSETS = FleetSpec(sets=2)                                          # avset-web-a / -b, 6 VMs, FD 0-2 each
TWO_SCALE_SETS = FleetSpec(kind="scale_set", name="vmss", vms=4, fault_domains=2, set_names=["vmss-web", "vmss-db"])
ZONAL = FleetSpec(kind="scale_set", name="vmss-zonal", vms=6, zones=["1", "2", "3"])
TWO_ZONAL = FleetSpec(kind="scale_set", name="vmss-z", vms=6, zones=["1", "2", "3"], sets=2)


def engine_for(scenario: str, spec: FleetSpec, seed: int = 1, **options: Any) -> Engine:
    return Engine(build_fleet(spec), sc.load(scenario), T0, seed=seed, options=EngineOptions(**options))


def run_until(engine: Engine, days: float) -> None:
    """Step the virtual clock from transition to transition."""
    end = engine.start + timedelta(days=days)
    while True:
        due = engine.next_change()
        if due is None or due > end:
            return
        engine.advance_to(due)


def document(engine: Engine, vm: str, at: datetime) -> Dict[str, Any]:
    served = engine.serve(vm, API, at)
    assert served.kind == "document", served.kind
    return served.document  # type: ignore[return-value]


def approve(engine: Engine, vm: str, at: datetime, *event_ids: str) -> Dict[str, Any]:
    return engine.approve(vm, {"StartRequests": [{"EventId": i} for i in event_ids]}, at)


def routine_overlaps(events: List[SimEvent]) -> Iterator[Tuple[SimEvent, SimEvent]]:
    """Every pair of routine events whose Started intervals overlap (exact, not sampled)."""
    started = [e for e in events if e.routine and e.started_at is not None]
    for a, b in itertools.combinations(started, 2):
        a_end = a.removed_at or datetime.max.replace(tzinfo=timezone.utc)
        b_end = b.removed_at or datetime.max.replace(tzinfo=timezone.utc)
        if a.started_at < b_end and b.started_at < a_end:  # type: ignore[operator]
            yield a, b


# =========================================================================== lower-case EventIds

def test_lowercase_ids_are_served_and_kept_from_scheduled_to_removal() -> None:
    engine = engine_for("lowercase-ids", FleetSpec(), simulate_impact=False)
    served: Dict[str, set] = {}
    at = T0
    while at < T0 + timedelta(hours=3):
        for vm in engine.fleet.vms:
            for event in document(engine, vm.name, at)["Events"]:
                served.setdefault(event["EventId"], set()).add(event["EventStatus"])
        at += timedelta(seconds=30)
    assert len(served) == 4  # the user reboot and the three fault domains of the walk
    assert all(LOWER_GUID.match(i) for i in served)
    assert all(statuses == {"Scheduled", "Started"} for statuses in served.values())
    truth = engine.event_summaries()
    assert sorted(e["event_id"] for e in truth) == sorted(served)  # ground truth keeps the served string
    assert all(e["status"] == "Removed" and e["outcome"] == "completed" for e in truth)
    for state in engine.vms.values():
        assert all(LOWER_GUID.match(e["EventId"]) for change in state.changes for e in change["events"])


@pytest.mark.parametrize("case, recase", [("lower", str.upper), ("upper", str.lower)])
def test_an_id_in_the_other_case_is_400_and_starts_nothing(case: str, recase: Any) -> None:
    engine = engine_for("platform-maintenance", FleetSpec(), event_id_case=case)
    at = T0 + timedelta(seconds=30)
    served = document(engine, "avset-web-vm0", at)["Events"][0]["EventId"]
    assert served == (served.lower() if case == "lower" else served.upper())
    wrong = recase(served)
    with pytest.raises(ApprovalError) as info:
        approve(engine, "avset-web-vm0", at, wrong)
    assert str(info.value) == f"Bad request. EventId {wrong} is not a scheduled event of this VM"
    with pytest.raises(ApprovalError, match=r"^Bad request. EventId 00000000-0000-0000-0000-000000000000 is not"):
        approve(engine, "avset-web-vm0", at, "00000000-0000-0000-0000-000000000000")  # same 400 as unknown
    rejected, unknown = engine.approvals
    assert (rejected["accepted"], rejected["event_ids"], rejected["wrong_case"]) == (False, [wrong], [wrong])
    assert unknown["accepted"] is False and "wrong_case" not in unknown
    ev = engine.events[0]
    assert (ev.status, ev.approved_by, ev.first_approved_at) == ("Scheduled", [], None)
    engine.advance_to(ev.not_before - timedelta(seconds=1))
    assert ev.status == "Scheduled"  # the rejected POST released nothing
    entry = approve(engine, "avset-web-vm0", ev.not_before - timedelta(seconds=1), served)
    assert entry["results"] == {served: "started"} and ev.start_reason == "approved"


def test_one_wrong_case_id_rejects_the_whole_request() -> None:
    engine = engine_for("lowercase-ids", FleetSpec(), simulate_impact=False)
    at = T0 + timedelta(seconds=30)
    ids = [e["EventId"] for e in document(engine, "avset-web-vm0", at)["Events"]]
    assert len(ids) == 2
    with pytest.raises(ApprovalError):
        approve(engine, "avset-web-vm0", at, ids[0], ids[1].upper())
    assert all(ev.status == "Scheduled" and not ev.approved_by for ev in engine.events)
    assert approve(engine, "avset-web-vm0", at, *ids)["accepted"] is True


def test_case_is_chosen_per_event_then_scenario_then_engine() -> None:
    lower_event = {"key": "lower", "type": "Reboot", "source": "User", "event_id_case": "lower"}
    upper_event = {"key": "upper", "type": "Reboot", "source": "User"}
    plain = Engine(build_fleet(FleetSpec()), None, T0)
    plain.load(sc.from_event(lower_event), T0)
    plain.load(sc.from_event(upper_event), T0)
    assert [bool(LOWER_GUID.match(e.event_id)) for e in plain.events] == [True, False]
    defaulted = Engine(build_fleet(FleetSpec()), None, T0, options=EngineOptions(event_id_case="lower"))
    defaulted.load(sc.from_event(upper_event), T0)  # no case of its own: the engine's default
    defaulted.load(sc.from_event(dict(upper_event, key="u2", event_id_case="upper")), T0)
    assert [bool(LOWER_GUID.match(e.event_id)) for e in defaulted.events] == [True, False]
    scenario = sc.parse({"name": "s", "summary": "s", "event_id_case": "lower",
                         "events": [dict(upper_event), dict(upper_event, key="u2", event_id_case="upper")]}, {})
    mixed = Engine(build_fleet(FleetSpec()), scenario, T0)
    assert [bool(UPPER_GUID.match(e.event_id)) for e in mixed.events] == [False, True]


def test_lowercase_keeps_the_seeded_run_apart_from_the_case() -> None:
    upper = engine_for("fleet-mix", FleetSpec(), seed=4)
    lower = engine_for("fleet-mix", FleetSpec(), seed=4, event_id_case="lower")
    run_until(upper, 10)
    run_until(lower, 10)
    assert [e.event_id.lower() for e in upper.events] == [e.event_id for e in lower.events]
    assert [e.started_at for e in upper.events] == [e.started_at for e in lower.events]


def test_replay_can_serve_its_ids_in_lower_case() -> None:
    data = json.loads((REPO / "imds_simulator" / "scenarios" / "live-migration-replay.json").read_text())
    scenario = sc.parse(dict(data, event_id_case="lower"), {})
    engine = Engine(build_fleet(FleetSpec(names=["WestNO_0", "WestNO_1"], vms=2, fault_domains=1)), scenario,
                    datetime(2022, 4, 11, 22, 11, 48, tzinfo=timezone.utc))
    run_until(engine, 1)
    assert [e.event_id for e in engine.events] == ["c7061bac-afdc-4513-b24b-aa5f13a16123"]


def test_offline_responder_posts_lowercase_ids_as_served() -> None:
    engine = engine_for("lowercase-ids", FleetSpec(), record_served=False)
    out = io.StringIO()
    stats = generate(engine, GenerateOptions(days=0.2, poll_interval_s=10, approve="all"), out, seed=1)
    assert stats.events == 4
    assert all(a["accepted"] and "wrong_case" not in a for a in engine.approvals)
    assert sorted(i for a in engine.approvals for i in a["event_ids"]) == sorted(e.event_id for e in engine.events)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert all(LOWER_GUID.match(e["EventId"]) for line in lines for e in line.get("events", []))


@pytest.mark.parametrize("where", ["scenario", "event"])
def test_bad_event_id_case_is_one_sentence(where: str) -> None:
    event = {"key": "a", "type": "Reboot"}
    data: Dict[str, Any] = {"name": "x", "summary": "s", "events": [event]}
    (data if where == "scenario" else event)["event_id_case"] = "Mixed"
    with pytest.raises(sc.ScenarioError, match=r"event_id_case 'Mixed' is not one of upper, lower\.$"):
        sc.parse(data, {})
    with pytest.raises(ValueError, match="event id case must be one of upper, lower."):
        Engine(build_fleet(FleetSpec()), None, T0, options=EngineOptions(event_id_case="Lower"))


# =========================================================================== several sets

def test_two_availability_sets_reuse_fault_domain_numbers() -> None:
    fleet = build_fleet(TWO_AVSETS)
    assert fleet.sets == ["avset-web-a", "avset-web-b"] and len(fleet.vms) == 12
    assert len({v.name.lower() for v in fleet.vms}) == 12
    for set_name in fleet.sets:
        members = fleet.in_set(set_name)
        assert [v.fault_domain for v in members] == [0, 1, 2, 0, 1, 2]
        assert all(v.availability_set == set_name and v.vm_scale_set_name == "" for v in members)
        assert all(v.name.startswith(set_name + "-vm") for v in members)
    compute = fleet.vms[7].compute_document()
    assert (compute["name"], compute["vmScaleSetName"], compute["platformFaultDomain"]) == ("avset-web-b-vm1", "", "1")
    assert not any("avset" in key.lower() or key == "availabilitySet" for key in compute)  # IMDS has no such field


def test_two_scale_sets_report_their_set_in_compute_metadata() -> None:
    fleet = build_fleet(TWO_SCALE_SETS)
    assert [v.name for v in fleet.vms] == [f"vmss-web_{i}" for i in range(4)] + [f"vmss-db_{i}" for i in range(4)]
    for vm in fleet.vms:
        compute = vm.compute_document()
        assert compute["vmScaleSetName"] == vm.set_name == vm.name.split("_")[0] and vm.availability_set == ""
        assert compute["resourceId"].endswith(f"/virtualMachineScaleSets/{vm.set_name}/virtualMachines/"
                                              f"{vm.name.split('_')[1]}")


def test_single_set_default_is_unchanged() -> None:
    fleet = build_fleet(FleetSpec())
    assert fleet.sets == ["avset-web"] and fleet.zones == []
    assert [(v.name, v.fault_domain, v.update_domain, v.zone) for v in fleet.vms] == \
        [(f"avset-web-vm{i}", i % 3, i % 5, "") for i in range(6)]
    assert all(v.availability_set == "avset-web" for v in fleet.vms)


@pytest.mark.parametrize("spec", [TWO_AVSETS, TWO_SCALE_SETS], ids=["avsets", "scale-sets"])
def test_a_vm_never_sees_nor_approves_another_sets_events(spec: FleetSpec) -> None:
    engine = engine_for("fleet-mix", spec, seed=3)
    run_until(engine, 30)
    by_id = {ev.event_id: ev for ev in engine.events}
    assert {ev.set_name for ev in engine.events} == set(engine.fleet.sets)  # both sets got events
    for state in engine.vms.values():
        own = state.vm.set_name
        seen = {e["EventId"] for change in state.changes for e in change["events"]}
        assert seen and all(by_id[i].set_name == own for i in seen)
        assert all(engine.fleet.vm(r).set_name == own for i in seen for r in by_id[i].resources)  # type: ignore
    at = engine.now
    engine.load(sc.from_event({"key": "b-only", "type": "Freeze", "notice_s": 900,
                               "resources": {"set": engine.fleet.sets[1], "fault_domain": 0}}), at)
    (injected,) = [e for e in engine.events if e.key == "b-only"]
    outsider, insider = engine.fleet.in_set(engine.fleet.sets[0])[0], engine.fleet.in_set(engine.fleet.sets[1])[1]
    assert injected.event_id not in [e["EventId"] for e in document(engine, outsider.name, at)["Events"]]
    assert injected.event_id in [e["EventId"] for e in document(engine, insider.name, at)["Events"]]
    with pytest.raises(ApprovalError):
        approve(engine, outsider.name, at, injected.event_id)
    assert injected.status == "Scheduled"


@pytest.mark.parametrize("spec", [TWO_AVSETS, TWO_SCALE_SETS], ids=["avsets", "scale-sets"])
def test_fault_domains_are_serialised_per_set_over_a_long_run(spec: FleetSpec) -> None:
    engine = engine_for("fleet-mix", spec, seed=11, record_served=False)
    generate(engine, GenerateOptions(days=20, poll_interval_s=300, approve="all"), io.StringIO(), seed=11)
    routine = [e for e in engine.events if e.routine and e.started_at]
    assert len(routine) > 20
    assert all(len(e.fault_domains) == 1 and len({engine.fleet.vm(r).set_name for r in e.resources}) == 1  # type: ignore
               for e in routine)
    across_sets = 0
    for a, b in routine_overlaps(engine.events):
        if a.set_name == b.set_name:
            assert a.fault_domains == b.fault_domains, (a.summary(), b.summary())
        else:
            across_sets += 1
    assert across_sets > 0  # the sets are independent scopes: both may be in maintenance at once
    for ev in routine:
        for group, domains in maintenance_domains(engine.events, ev.started_at).items():  # type: ignore[arg-type]
            assert len(domains) == 1, (group, domains)


def test_platform_walk_runs_in_every_set_on_its_own() -> None:
    engine = engine_for("platform-maintenance", TWO_AVSETS)
    run_until(engine, 2)
    for set_name in engine.fleet.sets:
        walk = sorted((e for e in engine.events if e.set_name == set_name), key=lambda e: e.appeared_at)
        assert [sorted(e.fault_domains) for e in walk] == [[0], [1], [2]]
        assert all(e.outcome == "completed" for e in walk)
        assert all(later.appeared_at > earlier.removed_at for earlier, later in zip(walk, walk[1:]))


def test_unknown_set_in_a_selector_is_refused() -> None:
    engine = Engine(build_fleet(TWO_AVSETS), None, T0)
    with pytest.raises(sc.ScenarioError, match=r"names set 'avset-web-c', which is not a set of this fleet"):
        engine.load(sc.from_event({"key": "x", "type": "Reboot", "resources": {"set": "avset-web-c"}}), T0)
    with pytest.raises(sc.ScenarioError, match=r"names zone '2', but this fleet's VMs are in no zone\.$"):
        engine.load(sc.from_event({"key": "x", "type": "Reboot", "resources": {"zone": "2"}}), T0)


def test_names_of_a_multi_set_fleet_file_are_split_over_its_sets() -> None:
    spec = spec_from_fields({"set_names": ["web", "db"], "names": ["w0", "w1", "d0", "d1"], "fault_domains": 2})
    fleet = build_fleet(spec)
    assert spec.vms == 2
    assert [(v.name, v.availability_set, v.fault_domain) for v in fleet.vms] == \
        [("w0", "web", 0), ("w1", "web", 1), ("d0", "db", 0), ("d1", "db", 1)]


@pytest.mark.parametrize("fields, message", [
    ({"sets": 0}, "a fleet has 1 to 26 sets, not 0."),
    ({"sets": 3, "set_names": ["a", "b"]}, "the fleet lists 2 set names for 3 sets."),
    ({"set_names": ["a", "A"]}, "the fleet lists a set name twice (names are case-insensitive)."),
    ({"set_names": ["_a"]}, "set name '_a' is not a valid Azure set name."),
    ({"set_names": "a,b"}, "fleet field set_names must be a list of set names, not 'a,b'."),
    ({"sets": 20, "vms": 600}, "a fleet needs at most 10000 VMs, not 12000 (600 in each of 20 sets)."),
    ({"vms": 1001}, "a set needs 1 to 1000 VMs, not 1001."),
    ({"sets": 2, "vms": 2, "names": ["a", "b", "c"]}, "the fleet lists 3 names for 4 VMs."),
    ({"set_names": ["x", "x-vm0"], "vms": 1, "names": ["x-vm0", "x-vm0"]},
     "the fleet lists a VM name twice (names are case-insensitive)."),
    ({"zones": ["1", "2"]}, "only a scale_set fleet can span zones (availability sets are never zonal)."),
    ({"kind": "scale_set", "zones": ["1"], "zone": "1"},
     "a fleet sets either zone (all VMs in one zone) or zones (spread), not both."),
    ({"kind": "scale_set", "zones": ["4"]}, "zone '4' is not one of 1, 2, 3."),
    ({"kind": "scale_set", "zones": ["1", "1"]}, "the fleet lists a zone twice."),
    ({"kind": "scale_set", "zones": [1, 2]}, "fleet field zones must be a list of zones, not [1, 2]."),
])
def test_bad_multi_set_or_zonal_fleets_get_one_sentence(fields: Dict[str, Any], message: str) -> None:
    with pytest.raises(FleetError) as info:
        build_fleet(FleetSpec(**fields))
    assert str(info.value) == message


# =========================================================================== zonal fleets

def test_zonal_fleet_spreads_vms_over_zones_in_fault_domain_0() -> None:
    fleet = build_fleet(ZONAL)
    assert fleet.zonal and fleet.zones == ["1", "2", "3"] and fleet.fault_domains == 1
    assert [(v.zone, v.fault_domain) for v in fleet.vms] == [(z, 0) for z in "123123"]
    for vm in fleet.vms:
        compute = vm.compute_document()
        assert (compute["zone"], compute["platformFaultDomain"], compute["vmScaleSetName"]) == \
            (vm.zone, "0", "vmss-zonal")
    assert [v.name for v in fleet.in_zone("2")] == ["vmss-zonal_1", "vmss-zonal_4"]


def test_zonal_platform_walk_takes_one_zone_at_a_time() -> None:
    engine = engine_for("platform-maintenance", ZONAL)
    run_until(engine, 2)
    walk = sorted(engine.events, key=lambda e: e.appeared_at)
    assert [sorted(e.zones) for e in walk] == [["1"], ["2"], ["3"]]
    assert all(set(e.resources) == {v.name for v in engine.fleet.in_zone(next(iter(e.zones)))} for e in walk)
    assert all(later.started_at > earlier.removed_at for earlier, later in zip(walk, walk[1:]))


def test_every_vm_of_a_zonal_scale_set_sees_every_zones_events() -> None:
    engine = engine_for("platform-maintenance", ZONAL)
    at = T0 + timedelta(seconds=10)
    documents = [document(engine, v.name, at) for v in engine.fleet.vms]
    assert all(d == documents[0] for d in documents) and len(documents[0]["Events"]) == 1


@pytest.mark.parametrize("spec", [ZONAL, TWO_ZONAL], ids=["one-set", "two-sets"])
def test_never_two_zones_in_maintenance_at_once_over_a_long_run(spec: FleetSpec) -> None:
    engine = engine_for("fleet-mix", spec, seed=5, record_served=False)
    generate(engine, GenerateOptions(days=20, poll_interval_s=300, approve="all"), io.StringIO(), seed=5)
    routine = [e for e in engine.events if e.routine and e.started_at]
    assert len(routine) > 20 and all(len(e.zones) == 1 for e in routine)
    assert {z for e in routine for z in e.zones} == {"1", "2", "3"}
    for a, b in routine_overlaps(engine.events):
        assert a.zones == b.zones, (a.summary(), b.summary())  # fleet-wide, across sets too
    for ev in routine:
        busy = maintenance_domains(engine.events, ev.started_at)  # type: ignore[arg-type]
        assert all(len(domains) == 1 for domains in busy.values()), busy


def test_zone_selector_hits_one_zone() -> None:
    engine = Engine(build_fleet(ZONAL), None, T0)
    engine.load(sc.from_event({"key": "z2", "type": "Redeploy", "source": "User", "resources": {"zone": "2"}}), T0)
    (ev,) = engine.events
    assert ev.resources == ["vmss-zonal_1", "vmss-zonal_4"] and ev.zones == frozenset({"2"})


# =========================================================================== command line

def _generate(tmp_path: Path, *args: str) -> Tuple[subprocess.CompletedProcess, List[Dict[str, Any]]]:
    out = tmp_path / "h.jsonl"
    result = subprocess.run([sys.executable, "-m", "imds_simulator", "generate", "--days", "0.1",
                             "--poll-interval", "30", "--seed", "2", "--out", str(out), *args],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = [json.loads(line) for line in out.read_text().splitlines()] if result.returncode == 0 else []
    return result, lines


@pytest.mark.parametrize("args, hosts, zones", [
    (["--sets", "2"], {f"avset-web-{s}-vm{i}" for s in "ab" for i in range(6)}, {""}),
    (["--set-names", "web,db", "--vms", "3"], {f"{s}-vm{i}" for s in ("web", "db") for i in range(3)}, {""}),
    (["--kind", "scale_set", "--name", "vmss", "--zones", "1,2,3"], {f"vmss_{i}" for i in range(6)}, {"1", "2", "3"}),
])
def test_cli_builds_multi_set_and_zonal_fleets(tmp_path: Path, args: List[str], hosts: set, zones: set) -> None:
    result, lines = _generate(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert {line["host"] for line in lines} == hosts
    assert {line["vm"]["zone"] for line in lines} == zones


def test_cli_event_id_case_lower(tmp_path: Path) -> None:
    result, lines = _generate(tmp_path, "--event-id-case", "lower", "--approve", "all")
    assert result.returncode == 0, result.stderr
    ids = {e["EventId"] for line in lines for e in line.get("events", [])}
    assert ids and all(LOWER_GUID.match(i) for i in ids)
    assert any(line.get("record") == "approval" for line in lines)


def test_cli_bad_zones_is_one_sentence(tmp_path: Path) -> None:
    result, _ = _generate(tmp_path, "--zones", "1,2")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == ("imds_simulator: only a scale_set fleet can span zones "
                                     "(availability sets are never zonal).")

