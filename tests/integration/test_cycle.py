"""The maintenance_cycle role and the playbooks, run by real ansible-playbook on simulated fleets.

Assertions come from the simulator's ground truth (events, approval log), the
prepare/recover calls the test task files record, and the state files on the "VMs".
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import yaml

from imds_simulator import scenario as sc
from imds_simulator.fleet import FleetSpec
from tests.eda.test_done_report import DoneReceiver
from tests.integration.runner import FILES, CycleBench
from tests.live_fleet import LiveFleet, small_set_for
from tests.history.history_helpers import assert_valid, capture_env, read_history
from tests.timing import epoch, wait_for


REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def bench(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CycleBench]:
    """CycleBench over LiveFleet(*params): parametrise indirectly with (scenario, time_scale[, fleet]); the fleet is
    SMALL_SET by default. The default's 15-minute notices last 180 s: two cycles on a loaded CI machine end well
    within them."""
    scenario, time_scale, *spec = getattr(request, "param", ("platform-maintenance", 5.0))
    loaded = sc.load(scenario) if scenario else None
    fleet = LiveFleet(loaded, time_scale=time_scale, seed=3, fleet=spec[0] if spec else small_set_for(loaded))
    if scenario:
        fleet.wait_for_events(timeout=max(10.0, 10.0 / time_scale))  # scenarios appear 5 scenario seconds in
    yield CycleBench(fleet, tmp_path)
    fleet.close()


def by_event(actions: List[Dict[str, Any]], event_id: str) -> Dict[str, float]:
    return {a["host"]: a["at"] for a in actions if a["event_id"] == event_id}


# Azure withdraws the event once the first cycle has prepared its hosts (the simulator's cancel, not a timer: a
# loaded machine's slow cycle cannot race it): its hosts are recovered, and it is never approved. The same two runs
# prove the history callback's action records against the test tasks' own prepare/recover log: the same hosts and
# event, each begun after the read that showed the event and before the task logged it; the way of running from
# the play (the default, then what a rulebook sets). Time scale 5: 180 s of notice, ample for one cycle.
def test_a_cancelled_event_is_recovered_never_approved_and_the_history_records_each_action_as_it_begins(
        tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=2, fault_domains=1))  # the event lists both
    try:
        bench = CycleBench(fleet, tmp_path)
        history = tmp_path / "history.jsonl"
        textfile = tmp_path / "textfile" / "azure_scheduled_events_controller.prom"
        env = capture_env(history, SCHEDULED_EVENTS_METRICS_PATH=str(textfile))
        (event_id,) = fleet.inject({"key": "cancelled", "type": "Reboot", "source": "Platform", "notice_s": 900,
                                    "resources": {"fault_domain": 0}})
        policy = {"maintenance_cycle_approve_prepared_events": False}
        assert bench.run(extra=policy, env=env).returncode == 0
        (event,) = fleet.truth()
        assert event["status"] == "Scheduled", "the notice ran out during the first cycle: clock too fast?"
        assert len(event["resources"]) == 2, "fault domain 0: a leader and a follower"
        assert set(by_event(bench.actions("prepare"), event_id)) == set(event["resources"])
        fleet.cancel(event_id)
        driven = dict(policy, maintenance_cycle_trigger="event-driven")
        assert bench.run(extra=driven, env=env).returncode == 0
        assert fleet.truth()[0]["outcome"] == "cancelled"
        assert set(by_event(bench.actions("recover"), event_id)) == set(event["resources"])
        assert fleet.approvals() == []
        captured = read_history(history)
        assert_controller_metrics(textfile, len(event["resources"]))
        assert_valid(captured)
        for action, trigger in (("prepare", "schedule"), ("recover", "event-driven")):
            logged = by_event(bench.actions(action), event_id)
            records = captured.actions(action)
            assert sorted(r["host"] for r in records) == sorted(logged) == sorted(event["resources"])
            for record in records:
                assert record["event_ids"] == [event_id] and record["event_type"] == "Reboot"
                assert record["trigger"] == trigger and record["vm"]["name"] == record["host"]
                began = epoch(record["observed_at"])
                seen = [epoch(o["observed_at"]) for o in captured.of_host(record["host"])]
                assert min(seen) <= began <= logged[record["host"]], "begun after the read, before the task ran"
    finally:
        fleet.close()


def assert_controller_metrics(textfile: Path, hosts: int) -> None:
    """The controller's textfile after those two runs, as Prometheus parses it."""
    from prometheus_client.parser import text_string_to_metric_families
    found = {s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items())): s.value
             for family in text_string_to_metric_families(textfile.read_text()) for s in family.samples}
    assert found["azure_scheduled_events_prepares_total{trigger=schedule}"] == hosts
    assert found["azure_scheduled_events_recovers_total{trigger=event-driven}"] == hosts
    assert found["azure_scheduled_events_prepares_total{trigger=event-driven}"] == 0
    assert found["azure_scheduled_events_cycle_runs_total{result=ok}{trigger=schedule}"] == 1
    assert found["azure_scheduled_events_cycle_runs_total{result=ok}{trigger=event-driven}"] == 1
    assert found["azure_scheduled_events_cycles_total{trigger=schedule}"] == 1
    assert found["azure_scheduled_events_recover_failures_total{trigger=event-driven}"] == 0
    assert found["azure_scheduled_events_approvals_total{result=approved}"] == 0
    # each prepare began within the run that first read the event: seconds, counted in the histogram
    assert found["azure_scheduled_events_reaction_seconds_count{trigger=schedule}"] == hosts
    assert found["azure_scheduled_events_reaction_seconds_bucket{le=60}{trigger=schedule}"] == hosts
    assert found["azure_scheduled_events_fault_domains_in_maintenance"] == 1
    assert oct(textfile.stat().st_mode & 0o777) == "0o644"


# ----------------------------------------------------------------- the full walk, on a schedule

# The cycle run again and again, as cron would, proves the walk of the fault domains, one at a time (two are
# enough: each domain waits for the one before it), and that hosts a run misses are back in the next. Fault domain
# 0 has two VMs: one whose IMDS drops (as in its own reboot) is unread in the first run (its read's 5 attempts),
# the other fails its prepare once; both prepare in a later run and the leader approves once both are prepared.
# Time scale 4: each 15-minute notice lasts 225 s, many runs of a loaded CI machine. A fault domain stays in
# maintenance until its hosts recovered (a run after the event left), so the next domain's event waits a run
# before it is prepared. Started events are listed for 20-30 s (not 10 minutes), the next domain's event comes
# 10-20 s after (2.5-5 s here): the walk is the same as the scenario's, in a fraction of the time.
SCHEDULE_PERIOD_S = 2.0  # from one run's start to the next (a run that overruns it is followed at once)


def run_on_schedule(bench: CycleBench, extra: Dict[str, Any], done: Any, timeout: float) -> List[Any]:
    """The cycle every SCHEDULE_PERIOD_S until done() after a run (or timeout); every run, in order."""
    runs = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = time.monotonic()
        runs.append(bench.run(extra=extra))
        if done():
            return runs
        time.sleep(max(0.0, started + SCHEDULE_PERIOD_S - time.monotonic()))
    raise AssertionError(f"not done after {len(runs)} runs:\n{runs[-1].stdout[-3000:] if runs else ''}")


def test_the_cycle_on_a_schedule_walks_the_fault_domains_one_at_a_time_and_takes_back_hosts_a_run_missed(
        tmp_path: Path) -> None:
    """Every event is prepared on every host it lists, approved once by its leader after the last prepare, and
    recovered after it ends; a fault domain is prepared only after the one before it has ended. A VM whose IMDS
    drops and a host whose prepare fails once fail the runs that missed them, naming them, and are prepared by a
    later run."""
    fleet = LiveFleet(None, time_scale=4.0, seed=3, fleet=FleetSpec(vms=3, fault_domains=2))
    try:
        unread, _, failing = fleet.vms  # both in fault domain 0, whose event comes first
        fleet.fault(unread, {"kind": "drop", "count": 5})  # the read's 5 attempts
        fleet.inject({"key": "host-update", "type": "Reboot", "source": "Platform", "duration_s": 7,
                      "notice_s": [900, 1020], "started_for_s": [20, 30], "for_each": "fault_domain",
                      "gap_s": [10, 20]})
        bench = CycleBench(fleet, tmp_path)

        def walked() -> bool:
            events = fleet.truth()
            recovered = {(a["event_id"], a["host"]) for a in bench.actions("recover")}
            return len(events) == 2 and all(e["removed_at"] and all((e["event_id"], vm) in recovered
                                                                     for vm in e["resources"]) for e in events)
        runs = run_on_schedule(bench, {"fail_prepare_once_on": [failing]}, walked, timeout=600)
        events = sorted(fleet.truth(), key=lambda e: e["appeared_at"])
        approvals = fleet.approvals()
    finally:
        fleet.close()
    output = "\n".join(run.stdout for run in runs)
    failed = [run for run in runs if run.returncode != 0]
    assert all(run.returncode == 2 for run in failed) and runs[-1].returncode == 0, [r.returncode for r in runs]
    assert sorted({host for run in failed for host in run.failed_hosts()}) == sorted([unread, failing]), \
        [(r.returncode, r.failed_hosts()) for r in runs]
    unread_run = next(run for run in failed if unread in run.failed_hosts())
    assert "the connection to IMDS at " in unread_run.stdout, unread_run.stdout[-3000:]
    assert "prepare refused once by the test on " + failing in output
    assert sorted(events[0]["resources"]) == sorted([unread, failing]), "fault domain 0's event comes first"
    assert len(events) == 2 and all(e["outcome"] == "completed" for e in events)
    prepares, recovers = bench.actions("prepare"), bench.actions("recover")
    for event in events:
        ids = [a for a in approvals if event["event_id"] in a["event_ids"]]
        assert len(ids) == 1, "approved once, by one run"
        assert event["start_reason"] == "approved", "the notice ran out before a run approved: clock too fast?"
        prepared = by_event(prepares, event["event_id"])
        assert set(prepared) == set(event["resources"]), "every affected host prepares"
        (approval,) = ids
        assert approval["vm"] == event["resources"][0], "approved by the leader"
        assert max(prepared.values()) < epoch(approval["at"]), "prepare finished before approval"
        recovered = by_event(recovers, event["event_id"])
        assert set(recovered) == set(event["resources"]), f"every affected host recovers\n{output[-4000:]}"
        assert min(recovered.values()) >= epoch(event["removed_at"]), "recover only after removal"
    for earlier, later in zip(events, events[1:]):
        assert min(by_event(prepares, later["event_id"]).values()) >= epoch(earlier["removed_at"]), \
            "a second fault domain is never prepared while the first is in maintenance"
    assert all(bench.state(h) and bench.state(h)["events"] == [] for h in bench.hosts)


# ----------------------------------------------------------------- approval policy

def test_regression_group_vars_policies_are_refused_in_one_run_and_honoured_in_a_run_per_group(tmp_path: Path) -> None:
    """Group db leaves Reboots to NotBefore, group web does not, and each has a user Reboot. The plan once took the
    first host's policy for every host: a cycle over both groups, a web VM first, approved db's Reboot early. Now
    that run stops before any read, naming the setting, the hosts and the fix; a cycle per group honours each.
    The runs have no prepare tasks: web's, over three events on three VMs (the rules, one by one, are unit tests of
    cycle/plan.py), approves its User reboot and a 5-second Freeze at once and leaves a Platform reboot to
    NotBefore."""
    # Time scale 2: 450 s of notice, so that three runs on a loaded machine end well within them
    fleet = LiveFleet(None, time_scale=2.0, fleet=FleetSpec(vms=3, fault_domains=3, set_names=["avset-web", "avset-db"]))
    try:
        web, db = fleet.vms[:3], fleet.vms[3:]  # a set per group, as the azure_rm inventory's groups are
        (user_id,) = fleet.inject({"key": "web", "type": "Reboot", "source": "User", "notice_s": 900,
                                   "resources": {"names": [web[0]]}})
        (freeze_id,) = fleet.inject({"key": "freeze", "type": "Freeze", "duration_s": 5, "notice_s": 900,
                                     "resources": {"names": [web[1]]}})
        (platform_id,) = fleet.inject({"key": "platform", "type": "Reboot", "notice_s": 900,
                                       "resources": {"names": [web[2]]}})
        (db_id,) = fleet.inject({"key": "db", "type": "Reboot", "source": "User", "notice_s": 900,
                                 "resources": {"names": [db[0]]}})
        bench = CycleBench(fleet, tmp_path)
        flat = json.loads(bench.inventory.read_text())["azure_vms"]
        groups = {"web": {"hosts": {h: flat["hosts"][h] for h in web}},  # web first: the run_once host had web's vars
                  "db": {"hosts": {h: flat["hosts"][h] for h in db},
                         "vars": {"maintenance_cycle_leave_to_not_before": ["Reboot"]}}}
        bench.inventory.write_text(json.dumps({"azure_vms": {"children": groups, "vars": flat["vars"]}}))
        both = bench.run(prepare=False)
        assert both.returncode != 0, both.stdout[-3000:]
        assert ("maintenance_cycle_leave_to_not_before differs between hosts of this run (%s: [Reboot]; %s: []), and "
                "one run plans every host with one policy" % (", ".join(db), ", ".join(web))) in both.stdout
        assert fleet.approvals() == [] and not (bench.work / "state").exists(), "refused before any VM was read"
        assert "Traceback" not in both.stdout + both.stderr
        db_run = bench.run(prepare=False, extra={"target": "db"})
        assert db_run.returncode == 0, db_run.stdout[-3000:]
        assert "policy leaves Reboot events to NotBefore" in db_run.stdout and fleet.approvals() == []
        run = bench.run(prepare=False, env={"ANSIBLE_SHOW_CUSTOM_STATS": "1"},
                        extra={"target": "web", "maintenance_cycle_max_fault_domains_in_maintenance": 3})
        assert run.returncode == 0, run.stdout[-3000:]
        sent = {(a["vm"], i) for a in fleet.approvals() for i in a["event_ids"]}
        assert sent == {(web[0], user_id), (web[1], freeze_id)}, "each approved once, by the VM it lists; db's left"
        assert "no prepare tasks run for Reboot events, so it is left to NotBefore" in run.stdout
        status = {e["event_id"]: e["status"] for e in fleet.truth()}
        assert status[platform_id] == status[db_id] == "Scheduled"
        stats = run.stdout.split("CUSTOM STATS")[1]
        assert user_id in stats and freeze_id in stats, "set_stats names what was approved"
        assert "[]" not in stats, "only the lists with something in them"
    finally:
        fleet.close()


# A Preempt is prepared and approved by the cycle that first reads it, and an event first seen Started (a hardware
# failure: no notice) is neither prepared nor approved, but recovered once gone: the plan's rules, unit tests of
# cycle/plan.py; a cycle's prepare, approval and recover, the walk above.

# An advisory (SpotRebalanceRecommendation: third-party mocks serve it, Azure's docs do not list it yet) next to a
# user's Reboot on another VM. Listed in prepare_event_types it runs the prepare tasks and, once it leaves, the
# recover; it is never approved, and the Reboot is approved as ever. Time scale 4: 225 s of notice for the advisory,
# which the simulator then withdraws (only a Scheduled event can be: the first run must end before its NotBefore).
def test_an_advisory_listed_by_the_user_is_prepared_and_recovered_never_approved(tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(kind="scale_set", name="spot", vms=2, fault_domains=1))
    try:  # time scale 4: notices of 225 s, longer than a run on a loaded machine
        bench = CycleBench(fleet, tmp_path)
        spot, other = fleet.vms
        (advisory_id,) = fleet.inject({"key": "rebalance", "type": "SpotRebalanceRecommendation", "notice_s": 900,
                                       "duration_s": 0, "started_for_s": 20, "resources": {"names": [spot]}})
        (reboot_id,) = fleet.inject({"key": "user", "type": "Reboot", "source": "User", "notice_s": 900,
                                     "resources": {"names": [other]}})
        types = {"maintenance_cycle_prepare_event_types": ["Reboot", "SpotRebalanceRecommendation"]}
        first = bench.run(extra=types)
        assert first.returncode == 0, first.stdout[-3000:]
        assert "has unknown EventType 'SpotRebalanceRecommendation'" in first.stdout + first.stderr, "said, not hidden"
        assert set(by_event(bench.actions("prepare"), advisory_id)) == {spot}
        assert [a["event_ids"] for a in fleet.approvals()] == [[reboot_id]], "the advisory is never approved"
        fleet.cancel(advisory_id)  # it leaves the document (its time is over)
        second = bench.run(extra=types)
        assert second.returncode == 0, second.stdout[-3000:]
        assert set(by_event(bench.actions("recover"), advisory_id)) == {spot}, "its recover once it left"
        assert all(advisory_id not in a["event_ids"] for a in fleet.approvals())
    finally:
        fleet.close()


def test_a_scale_sets_terminates_are_approved_together_never_one_alone(tmp_path: Path) -> None:
    """Issue 27: Azure deletes no approved Terminate while another of its set waits unapproved, so one sent alone
    shortens nothing. A prepare failing on one VM fails the job on that VM, keeps its state (the prepare began: a
    recover is owed) and its set's other Terminate unapproved; the next cycle approves both, and the simulator
    (which holds a lone approved Terminate, as Azure does) starts both early."""
    # Time scale 4: 225 s of notice for two runs on a loaded machine (at 10, 90 s ran out in CI).
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(kind="scale_set", name="web", vms=2, fault_domains=1))
    try:  # one fault domain: Terminates in two would wait for the fault-domain limit as well
        bench = CycleBench(fleet, tmp_path)
        first, second = fleet.vms
        ids = [fleet.inject({"key": f"scale-in-{vm}", "type": "Terminate", "source": "User", "notice_s": 900,
                             "started_for_s": 60, "resources": {"names": [vm]}})[0] for vm in (first, second)]
        failing = bench.run(extra={"fail_prepare_on": [second]})
        assert failing.returncode != 0 and failing.failed_hosts() == [second], failing.stdout[-3000:]
        assert "Prepare failed on %s" % second in failing.stdout
        assert fleet.approvals() == [], "the first VM's Terminate is not sent alone"
        assert all(e["status"] == "Scheduled" for e in fleet.truth())
        remembered = bench.state(second)  # the prepare began: a recover is owed, and it is prepared again
        assert {e["event_id"]: e["prepare"] for e in remembered["events"]} == {ids[0]: None, ids[1]: "started"}
        assert remembered["approved"] == []
        run = bench.run()
        assert run.returncode == 0, run.stdout[-3000:]
        assert sorted(i for a in fleet.approvals() for i in a["event_ids"]) == sorted(ids), run.stdout[-6000:]
        wait_for(lambda: all(e["status"] != "Scheduled" for e in fleet.truth()), 30, "both Terminates to start")
        assert {e["start_reason"] for e in fleet.truth()} == {"approved"}, "both went before their NotBefore"
    finally:
        fleet.close()


def test_the_serialisation_unit_can_be_the_update_domain(tmp_path: Path) -> None:
    """Issue 27: one fault domain, two update domains. Counted by update domain (an availability set's reboot
    maintenance walks update domains), the limit of 1 keeps the second event waiting."""
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(vms=2, fault_domains=1, update_domains=2))  # 225 s
    try:
        by_domain = {vm.update_domain: vm.name for vm in fleet.engine.fleet.vms}
        for update_domain, vm in sorted(by_domain.items()):
            fleet.inject({"key": f"ud{update_domain}", "type": "Reboot", "notice_s": 900, "resources": {"names": [vm]}})
        bench = CycleBench(fleet, tmp_path)
        run = bench.run(extra={"maintenance_cycle_serialisation_unit": "update_domain",
                               "maintenance_cycle_max_fault_domains_in_maintenance": 1})
        assert run.returncode == 0, run.stdout[-3000:]
        prepared = {a["event_id"] for a in bench.actions("prepare")}
        assert len(prepared) == 1 and {i for a in fleet.approvals() for i in a["event_ids"]} == prepared
        assert re.search(r"update domain \d waits: .*update domain \d .* in maintenance \(limit 1\)", run.stdout), (
            run.stdout[-3000:])
    finally:
        fleet.close()


def test_a_vm_deleted_by_its_own_preempt_frees_its_fault_domain(tmp_path: Path) -> None:
    """Issue 27: an evicted VM that stays in the inventory held its fault domain, and every other domain's event
    waited for its NotBefore. A cycle's read of vm1 shows vm0's own Preempt Started (vm0, being evicted, does not
    answer); the simulator then deletes vm0 (it never answers again); two minutes later (the memory's sighting moved back in time) the next cycle takes it as
    deleted: vm1's Reboot in the other fault domain is prepared and approved at once under a limit of 1, and
    the event source is told to leave vm0 out of its runs."""
    fleet = LiveFleet(None, time_scale=10.0, fleet=FleetSpec(kind="scale_set", name="spot", vms=2, fault_domains=2))
    receiver = DoneReceiver()
    try:
        bench = CycleBench(fleet, tmp_path)
        evicted, other = fleet.vms
        limit = {"maintenance_cycle_max_fault_domains_in_maintenance": 1, "done_url": receiver.url}
        assert bench.run(extra=limit).returncode == 0  # a quiet cycle: the control node learns both VMs
        # Started for 45 s: the next cycle must read it Started, even after one slow cycle on a loaded machine
        (preempt,) = fleet.inject({"key": "evict", "type": "Preempt", "notice_s": 5, "started_for_s": 450,
                                   "resources": {"names": [evicted]}})
        wait_for(lambda: fleet.truth()[0]["status"] == "Started", 10, "the eviction to start")
        bench.run(extra=limit)  # the evicted VM does not answer; the other's read shows its Preempt Started
        memory = json.loads((tmp_path / "vms.json").read_text())
        assert memory["vms"][evicted]["deleting"]["event_id"] == preempt, "the sighting is remembered"
        wait_for(lambda: all(e["status"] == "Removed" for e in fleet.truth() if e["event_id"] == preempt), 60,
                 "the evicted VM to be deleted")  # truth() moves the engine on; the Preempt's end deletes the VM
        assert fleet.engine.vm_state(evicted).deleted_at is not None
        sighting = memory["vms"][evicted]["deleting"]
        sighting["started_seen_at"] = (datetime.fromisoformat(sighting["started_seen_at"]) - timedelta(minutes=3)).isoformat()
        (tmp_path / "vms.json").write_text(json.dumps(memory))
        # 45 minutes of notice, 270 s at time scale 10: the Preempt's pace sets the scale, the run must beat this
        (reboot,) = fleet.inject({"key": "update", "type": "Reboot", "notice_s": 2700, "resources": {"names": [other]}})
        run = bench.run(extra=limit)
        assert f"{evicted} is taken as deleted: its own Preempt {preempt} was seen Started" in run.stdout, run.stdout[-4000:]
        assert {a["event_id"] for a in bench.actions("prepare")} >= {reboot}
        assert reboot in {i for a in fleet.approvals() for i in a["event_ids"]}, "approved at once, limit 1"
        assert receiver.bodies[-1]["deleted"] == [evicted]
    finally:
        receiver.close()
        fleet.close()


# ----------------------------------------------------------------- failure, check mode, idempotence

# Time scale 6: the 15-minute notice lasts 150 s (the failing cycle ends well within it, even on a loaded
# machine), and the Started event is listed for 10 s. The set is the event's two VMs: a leader and a follower.
@pytest.mark.parametrize("bench", [(None, 6.0, FleetSpec(vms=2, fault_domains=1))], indirect=True)
def test_regression_a_host_that_fails_after_prepare_still_gets_its_recover(bench: CycleBench) -> None:
    """The approval POST breaks after prepare (it may or may not have reached IMDS): the leader fails. The event
    then runs and is gone before the next cycle, which must still recover the leader: what was prepared was
    saved before the POST. (Before, the state was saved only at the end, and the recover was lost.)"""
    bench.fleet.inject({"key": "host-update", "type": "Reboot", "source": "Platform", "duration_s": 7,
                        "notice_s": 900, "started_for_s": 60, "resources": {"fault_domain": 0}})
    (event,) = bench.fleet.truth()
    leader = event["resources"][0]
    bench.fleet.fault(leader, {"kind": "drop", "method": "POST", "count": -1})
    failed = bench.run()
    assert failed.returncode != 0 and failed.failed_hosts() == [leader], failed.stdout[-3000:]
    assert "may or may not have reached IMDS" in failed.stdout
    saved = bench.state(leader)
    assert [(e["event_id"], e["prepare"]) for e in saved["events"]] == [(event["event_id"], "done")]
    assert saved["approved"] == [event["event_id"]], "a POST that may have reached IMDS is never sent again"
    wait_for(lambda: bench.fleet.truth()[0]["outcome"] == "completed", 300, "Azure to run the event at NotBefore")
    bench.fleet.sim.faults.clear(leader)
    again = bench.run()
    assert again.returncode == 0, again.stdout[-3000:]
    assert leader in by_event(bench.actions("recover"), event["event_id"]), "the leader's recover was lost"
    assert bench.fleet.approvals() == [] and bench.fleet.truth()[0]["start_reason"] == "not_before"


def test_the_role_on_its_own_ends_quiet_hosts_and_leaves_no_lock(tmp_path: Path) -> None:
    """Imported on its own (no cheap read first), the role takes each VM's lock before the read it plans from;
    a quiet host releases it at once and ends, writing nothing."""
    fleet = LiveFleet(None, time_scale=20.0, fleet=FleetSpec(vms=2, fault_domains=2))
    try:
        bench = CycleBench(fleet, tmp_path)
        run = bench.run(str(FILES / "role_alone.yml"))
        assert run.returncode == 0, run.stdout[-3000:]
        assert run.changed() == 0 and all(bench.state(h) is None for h in bench.hosts)
        guards = sorted(p.name for p in (bench.work / "state").glob("*.lock.guard"))
        assert guards == sorted(f"{h}.json.lock.guard" for h in bench.hosts), "each VM's lock was taken"
        assert not list((bench.work / "state").glob("*.lock")), "and released"
    finally:
        fleet.close()


def test_check_mode_approves_nothing_writes_no_state_and_prints_what_it_would_do(bench: CycleBench) -> None:
    run = bench.run(check=True)
    assert run.returncode == 0, run.stdout[-3000:]
    assert bench.fleet.approvals() == []
    assert all(bench.state(h) is None for h in bench.hosts)
    assert bench.actions() == []  # the recording task itself honours check mode
    # the plan, once, host by host: each listed VM would prepare, its leader (the first listed) would approve
    (event,) = bench.fleet.truth()
    short = event["event_id"][:8]
    assert run.stdout.count("Check mode: nothing is prepared, approved, recovered or saved") == 1
    listed = list(event["resources"])
    cells = [line.strip().strip('",').split() for line in run.stdout.splitlines() if line.strip().startswith('"')]
    rows = {row[0]: row for row in cells if row and row[0] in bench.hosts}
    assert sorted(rows) == sorted(listed), "a row for each host with news, none for the quiet ones"
    leader = listed[0]
    for vm in listed:
        cells = rows[vm]
        assert cells[-4:-1] == [short, short, short if vm == leader else "-"], cells
    assert f"{len(bench.hosts) - len(listed)} quiet hosts not shown" in run.stdout


@pytest.mark.parametrize("bench", [(None, 4.0, FleetSpec(vms=2, fault_domains=2))], indirect=True)
def test_regression_a_damaged_state_file_is_kept_and_its_host_counts_as_busy(bench: CycleBench) -> None:
    """It may owe recovers: overwriting it as a first cycle (as before) lost them. Its fault domain counts as in
    maintenance, so the other domain's event waits (limit 1)."""
    damaged, other = bench.fleet.vms[1], bench.fleet.vms[0]
    bench.fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 900, "resources": {"names": [other]}})
    path = bench.state_path(damaged)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    run = bench.run()
    assert run.returncode == 0, run.stdout[-3000:]
    assert "the state file is not JSON" in run.stdout + run.stderr
    assert "counts this VM as busy" in run.stdout + run.stderr and f"mv {path} {path}.damaged" in run.stdout
    assert path.read_text() == "{not json", "kept for a person to move aside"
    assert bench.fleet.engine.approvals == [], "no event that lists it is approved"


# ----------------------------------------------------------------- leaders, inventory, fault domains

@pytest.mark.parametrize("bench", [(None, 4.0, FleetSpec(vms=2, fault_domains=1))], indirect=True)
def test_a_set_with_vms_outside_the_target_is_refused_loudly_unless_allowed(bench: CycleBench, tmp_path: Path) -> None:
    """Another run may drain the VMs outside the target (a set split over two runs), unseen: nothing is prepared
    or approved in the set, every run warns, and the host whose event was refused fails, in one sentence."""
    bench.fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 900, "resources": {"fault_domain": 0}})
    (event,) = bench.fleet.truth()
    leader, follower = event["resources"]
    partial = CycleBench(bench.fleet, tmp_path / "partial", hosts=[h for h in bench.hosts if h != leader])
    run = partial.run()
    sentence = "has VMs outside this target (%s)" % leader
    assert run.returncode != 0 and bench.fleet.approvals() == [] and partial.actions("prepare") == []
    assert "[WARNING]" in run.stdout + run.stderr and sentence in run.stdout + run.stderr
    assert "fatal: [%s]" % follower in run.stdout and sentence in run.stdout.split("fatal: [%s]" % follower)[1]
    assert "Traceback" not in run.stdout + run.stderr
    assert partial.run(extra={"maintenance_cycle_approve_outside_inventory": True}).returncode == 0
    (approval,) = bench.fleet.approvals()
    assert approval["vm"] == follower  # the first listed VM that is a host of this play


# The fault-domain limit deferring a second domain, and saying why: one proof over both transports,
# tests/integration/test_control_plane_cycle.py (other limits: the unit tests of cycle/plan.py).


def test_a_host_left_alone_is_not_contacted_and_holds_its_remembered_fault_domain(tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=4.0, fleet=FleetSpec(vms=2, fault_domains=1))  # 225 s of notice
    try:
        bench = CycleBench(fleet, tmp_path)
        assert bench.run().returncode == 0  # quiet: every VM read once, and remembered on the control node
        away, neighbour = fleet.vms  # both in fault domain 0
        fleet.fault(away, {"kind": "drop", "count": -1, "path": "any", "method": "any"})  # any request breaks
        fleet.inject({"key": "fd0", "type": "Reboot", "notice_s": 900, "resources": {"names": [neighbour]}})
        # (Not remembered, it would hold every fault domain of its set, its own too: test_plan.py.)
        run = bench.run(extra={"maintenance_cycle_leave_alone": [away]})
        assert run.returncode == 0 and "broke" not in run.stdout, "not contacted at all: " + run.stdout[-3000:]
        assert f"{away} was left alone" in run.stdout and "its last known fault domain (availability set" in run.stdout
        assert [a["host"] for a in bench.actions("prepare")] == [neighbour], "its own fault domain may go on"
        assert len(fleet.approvals()) == 1
    finally:
        fleet.close()


# ----------------------------------------------------------------- approve.yml and collect.yml

def test_approve_playbook_sends_each_id_once_from_a_listed_host(bench: CycleBench) -> None:
    (event,) = bench.fleet.truth()
    run = bench.run("approve", extra={"event_ids": event["event_id"].lower()})
    assert run.returncode == 0, run.stdout[-3000:]
    (approval,) = bench.fleet.approvals()
    assert approval["vm"] in event["resources"] and approval["event_ids"] == [event["event_id"]]
    assert "it runs no prepare tasks, checks no fault-domain limit and takes no VM lock" in run.stdout
    assert f"{approval['vm']} approved {event['event_id']}" in run.stdout, run.stdout[-3000:]


def test_approve_playbook_refuses_unknown_ids(bench: CycleBench) -> None:
    run = bench.run("approve", extra={"event_ids": "00000000-0000-0000-0000-000000000000"})
    assert run.returncode != 0
    assert "are not events of any target host that could be read, so nothing was approved" in run.stdout
    assert bench.fleet.approvals() == []


def test_collect_playbook_only_reads(bench: CycleBench) -> None:
    run = bench.run("collect")
    assert run.returncode == 0 and run.changed() == 0
    assert bench.fleet.approvals() == [] and all(bench.state(h) is None for h in bench.hosts)
    served = [len(bench.fleet.engine.vm_state(h).served) for h in bench.hosts]
    assert all(n == 1 for n in served)


def test_role_documentation_renders_every_entry_point() -> None:
    import subprocess
    import sys
    from pathlib import Path as P
    doc = subprocess.run([str(P(sys.executable).parent / "ansible-doc"), "-t", "role", "--json",
                          "azure_imds.scheduled_events.maintenance_cycle"], capture_output=True, text=True, timeout=120)
    assert doc.returncode == 0, doc.stderr
    entry_points = json.loads(doc.stdout)["azure_imds.scheduled_events.maintenance_cycle"]["entry_points"]
    assert set(entry_points) == {"main", "query", "recover", "prepare", "approve", "finish"}
    assert "maintenance_cycle_max_fault_domains_in_maintenance" in entry_points["main"]["options"]


TARGET_PLAYBOOKS = ["cycle", "approve", "collect"]


def test_each_playbook_on_a_target_checks_it_first() -> None:
    """The real run below proves the check on the cycle; each playbook on a target imports the same play first,
    naming itself for the transport check (only the cycle reads control-plane hosts yet)."""
    for name in TARGET_PLAYBOOKS:
        first = yaml.safe_load((REPO / "playbooks" / f"{name}.yml").read_text())[0]
        named = {} if name == "cycle" else {"vars": {"target_check_playbook": name}}
        assert first == {"name": "Stop here when the target matches no host",
                         "ansible.builtin.import_playbook": "target_check.yml", **named}, name


def test_a_target_that_matches_no_host_fails_the_run_in_one_sentence(bench: CycleBench) -> None:
    """Ansible skips a play whose pattern matches nothing and exits 0: a scheduled run with a mistyped target
    would do nothing for ever and say it succeeded."""
    run = bench.run("cycle", extra={"target": "azure_vmz"})
    assert run.returncode != 0, run.stdout
    assert ("The target 'azure_vmz' matches no host of the inventory (its groups: azure_vms), so nothing was read, "
            "prepared or approved; pass -e target= a group, host or pattern of the inventory.") in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert bench.fleet.approvals() == [] and bench.actions() == []
    assert not (bench.work / "state").exists(), "no VM was contacted"


def test_a_bad_setting_fails_the_cycle_in_one_sentence_without_the_roles_specification(bench: CycleBench) -> None:
    run = bench.run(extra={"maintenance_cycle_max_fault_domains_in_maintenance": "two"})
    assert run.returncode != 0
    assert ("A setting of the maintenance_cycle role is not valid, so nothing was read or approved: argument "
            "'maintenance_cycle_max_fault_domains_in_maintenance' is of type str") in run.stdout
    assert "argument_spec_data" not in run.stdout and "Traceback" not in run.stdout + run.stderr
    assert len(run.stdout) < 3000 * len(bench.hosts), "the error, not the 38 KB specification"
    assert bench.fleet.approvals() == [] and not (bench.work / "state").exists()
