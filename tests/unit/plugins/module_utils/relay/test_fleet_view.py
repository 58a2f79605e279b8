"""When the controller starts a cycle from relay pushes, and on which hosts (fleet_view.py)."""
from __future__ import annotations

from typing import Any, Dict

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.fleet_view import FleetView, ViewSettings

T0 = 1_800_000_000.0
REBOOT = {"EventId": "A", "EventType": "Reboot", "EventStatus": "Scheduled", "Resources": ["vm0"]}


def push(host: str, seq: int, kind: str = "heartbeat", quiet: bool = True, incarnation: int = 1, events=(),
         relay_id: str = "r-" + "x") -> Dict[str, Any]:
    message = {"version": 1, "kind": kind, "host": host, "relay_id": relay_id, "seq": seq, "quiet": quiet,
               "document_available": True}
    if kind == "change":
        message["record"] = {"document_incarnation": incarnation, "events": list(events)}
    return message


HOSTS = ["vm0", "vm1", "vm2"]


def view(**settings: Any) -> FleetView:
    """Three quiet hosts that the cycle their first pushes started read quiet; news starts a cycle at once unless
    a test sets gather_seconds (which hosts a cycle covers is what most tests here are about; gathering has tests
    of its own)."""
    fleet = FleetView(ViewSettings(**dict({"expected_hosts": HOSTS, "gather_seconds": 0}, **settings)))
    for host in HOSTS:
        fleet.accept(push(host, 1, "change", relay_id=host), T0 - 0.2)
    # a tick after the pushes: a push in the tick a run begins may be newer than its read (still owed)
    first = fleet.next_run(T0 - 0.2 + max(fleet.settings.gather_seconds, 0.1))
    assert first is not None and first.hosts == HOSTS
    fleet.done(first.number, read_quiet=HOSTS)
    return fleet


def test_quiet_hosts_start_nothing() -> None:
    fleet = view()
    assert fleet.next_run(T0 + 1) is None


def test_a_new_event_starts_one_run_on_every_host_with_work() -> None:
    fleet = view()
    for host in ("vm0", "vm1"):  # both VMs of the set see the event
        assert fleet.accept(push(host, 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id=host), T0 + 1)
    run = fleet.next_run(T0 + 1)
    assert run is not None and run.hosts == ["vm0", "vm1"] and run.changed == ["vm0", "vm1"]
    assert fleet.next_run(T0 + 2) is None, "one run for the news"


def test_duplicates_and_replays_are_dropped() -> None:
    fleet = view()
    change = push("vm0", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0")
    assert fleet.accept(change, T0 + 1) is True
    assert fleet.accept(change, T0 + 2) is False and fleet.accept(dict(change, seq=1), T0 + 2) is False
    assert fleet.duplicates == 2


def test_the_same_document_again_is_no_news_after_a_relay_restart() -> None:
    fleet = view()
    fleet.accept(push("vm0", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0"), T0 + 1)
    fleet.done(fleet.next_run(T0 + 1).number)
    # restarted relay: a new first poll of the same document
    fleet.accept(push("vm0", 3, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0"), T0 + 5)
    assert fleet.next_run(T0 + 5) is None


def change(host: str, seq: int, quiet: bool = False) -> Dict[str, Any]:
    return push(host, seq, "change", quiet=quiet, incarnation=seq, events=[] if quiet else [REBOOT], relay_id=host)


def test_news_on_hosts_a_running_cycle_covers_is_coalesced_into_one_run_after_it() -> None:
    fleet = view()
    fleet.accept(change("vm0", 2), T0 + 1)
    first = fleet.next_run(T0 + 1)
    for seq in range(3, 10):  # a flood of changes on the host the first run works on (its own approval, ...)
        fleet.accept(change("vm0", seq), T0 + 2)
    assert fleet.next_run(T0 + 3) is None, "the running cycle covers vm0: its news waits for it"
    assert fleet.done(first.number) is True
    second = fleet.next_run(T0 + 4)
    assert second is not None and second.changed == ["vm0"] and second.hosts == ["vm0"]
    assert fleet.next_run(T0 + 5) is None


def test_news_on_a_host_no_running_cycle_covers_starts_a_cycle_at_once_that_covers_all_work() -> None:
    fleet = view()
    fleet.accept(change("vm0", 2), T0 + 1)
    first = fleet.next_run(T0 + 1)
    fleet.accept(change("vm1", 2), T0 + 2)
    second = fleet.next_run(T0 + 2)
    assert second is not None and second.changed == ["vm1"]
    assert second.hosts == ["vm0", "vm1"], "the first cycle's hosts too: held by it, they block their domains"
    fleet.accept(change("vm0", 3), T0 + 3)
    assert fleet.done(first.number) is True
    assert fleet.next_run(T0 + 4) is None, "vm0's news came after the second cycle began: it waits for it"
    fleet.done(second.number)
    assert fleet.next_run(T0 + 5).changed == ["vm0"]


def test_at_most_max_parallel_runs_and_a_run_over_the_whole_target_covers_everything() -> None:
    fleet = view(max_parallel_runs=2)
    runs = []
    for n, host in enumerate(HOSTS):
        fleet.accept(change(host, 2), T0 + n)
        runs.append(fleet.next_run(T0 + n))
    assert runs[0] and runs[1] and runs[2] is None and len(fleet.running) == 2
    fleet.done(runs[0].number)
    assert fleet.next_run(T0 + 5).changed == ["vm2"]
    whole = FleetView(ViewSettings(gather_seconds=0))
    whole.accept(change("vm0", 2), T0)
    assert whole.next_run(T0).hosts == []
    whole.accept(change("vm1", 2), T0 + 1)
    assert whole.next_run(T0 + 1) is None, "a cycle over the whole target already looks at vm1"


def test_a_flood_of_pushes_starts_a_bounded_number_of_runs() -> None:
    fleet = view(max_parallel_runs=3)
    started = []
    for second in range(600):  # ten minutes of a change a second on every host, cycles of 20 s
        for host in HOSTS:
            fleet.accept(change(host, second + 2), T0 + second)
        started += [r for r in [fleet.next_run(T0 + second)] if r]
        for run in [r for r in list(fleet.running.values()) if second - (r.started_at - T0) >= 20]:
            fleet.done(run.number)
    assert len(fleet.running) <= 3 and len(fleet.pending) <= len(HOSTS)
    assert len(started) <= 600 // 20 + 1, "news a running cycle covers is coalesced, not one run per push"


def test_a_run_never_reported_done_stops_holding_back_the_next() -> None:
    fleet = view(max_run_seconds=60)
    fleet.accept(change("vm0", 2), T0)
    fleet.next_run(T0)
    fleet.accept(change("vm0", 3), T0 + 1)
    assert fleet.next_run(T0 + 30) is None
    late = fleet.next_run(T0 + 61)
    assert late is not None and late.changed == ["vm0"], "the silent run's news comes back with the new"
    assert list(fleet.running) == [late.number]


def test_a_silent_host_is_stale_and_counts_as_busy_once() -> None:
    fleet = view(stale_seconds=90)
    for second in (30, 60, 90):
        for host in ("vm0", "vm1"):
            fleet.accept(push(host, second, relay_id=host), T0 + second)
    run = fleet.next_run(T0 + 91)
    assert run is not None and run.stale == ["vm2"] and run.hosts == ["vm2"]
    fleet.done(run.number)
    assert fleet.next_run(T0 + 95) is None, "a stale host starts one run, not one a second"
    assert fleet.with_work(T0 + 95) == ["vm2"]
    fleet.accept(push("vm2", 5, relay_id="vm2"), T0 + 96)  # heard again, quiet
    assert fleet.next_run(T0 + 96) is None, "a quiet push is no news"
    assert fleet.with_work(T0 + 96) == ["vm2"], "but the run that covered it did not read it quiet: still owed"
    again = fleet.next_run(T0 + 91 + 60)   # rerun_seconds after that run
    assert again is not None and again.hosts == ["vm2"]
    fleet.done(again.number, read_quiet=["vm2"])
    assert fleet.with_work(T0 + 152) == []


def test_a_host_no_longer_quiet_is_news() -> None:
    fleet = view()
    fleet.accept(push("vm2", 2, quiet=False, relay_id="vm2"), T0 + 1)  # a heartbeat: saved work appeared
    assert fleet.next_run(T0 + 1).hosts == ["vm2"]


def test_without_the_expected_hosts_every_run_covers_the_whole_target() -> None:
    fleet = FleetView(ViewSettings(gather_seconds=0))
    fleet.accept(push("vm0", 1, "change", quiet=False, events=[REBOOT], relay_id="vm0"), T0)
    run = fleet.next_run(T0)
    assert run is not None and run.hosts == [], "a VM whose relay never pushed may be in maintenance"


def test_an_expected_host_never_heard_from_is_in_every_run_and_starts_one_once_stale() -> None:
    fleet = FleetView(ViewSettings(expected_hosts=HOSTS, stale_seconds=90, gather_seconds=0))
    assert fleet.next_run(T0) is None, "relays get stale_seconds to be heard from after a (re)start"
    fleet.accept(push("vm0", 1, "change", quiet=False, events=[REBOOT], relay_id="vm0"), T0 + 1)
    run = fleet.next_run(T0 + 1)
    assert run is not None and run.hosts == HOSTS, "never heard from: counted as busy"
    fleet.done(run.number)
    fleet.accept(push("vm0", 2, "change", quiet=True, relay_id="vm0"), T0 + 2)
    late = fleet.next_run(T0 + 91)
    assert late is not None and late.stale == ["vm1", "vm2"]
    assert fleet.knows("vm1") and not fleet.knows("vm9")


def test_a_vm_whose_imds_does_not_answer_is_busy_in_every_cycle_and_starts_none_until_it_answers() -> None:
    fleet = view(rerun_seconds=60, stale_seconds=1000)
    fleet.accept(dict(push("vm2", 2, quiet=True, relay_id="vm2"), imds_ok=False), T0 + 1)
    assert fleet.with_work(T0 + 1) == ["vm2"], "not quiet: what cannot be seen counts as busy"
    assert fleet.next_run(T0 + 1) is None and fleet.next_run(T0 + 120) is None, \
        "regression: every VM whose IMDS stalled started a cycle that could only leave it alone"
    fleet.accept(push("vm0", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0"), T0 + 121)
    run = fleet.next_run(T0 + 121)
    assert run.hosts == ["vm0", "vm2"] and run.leave_alone == ["vm2"], "in another cycle it is busy, not contacted"
    fleet.done(run.number)
    fleet.accept(dict(push("vm2", 3, quiet=True, relay_id="vm2"), imds_ok=True), T0 + 122)
    assert fleet.next_run(T0 + 122) is None, "back and quiet: nothing to do"


def test_while_a_host_has_work_a_cycle_runs_every_rerun_seconds_without_news() -> None:
    fleet = view(rerun_seconds=60, stale_seconds=1000)
    fleet.accept(push("vm0", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0"), T0)
    fleet.done(fleet.next_run(T0).number)
    assert fleet.next_run(T0 + 59) is None
    again = fleet.next_run(T0 + 60)
    assert again is not None and again.hosts == ["vm0"] and again.changed == [], "deferred hosts get their cycle"
    fleet.done(again.number)   # its read found work on vm0: no read_quiet
    fleet.accept(push("vm0", 3, "change", quiet=True, incarnation=3, relay_id="vm0"), T0 + 61)
    last = fleet.next_run(T0 + 120)
    assert last is not None and last.hosts == ["vm0"], "the relay's word 'quiet' takes no host out of the runs"
    fleet.done(last.number, read_quiet=["vm0"])
    assert fleet.next_run(T0 + 200) is None, "a cycle's own read found it quiet: no work, no cycle"


def test_a_host_leaves_the_runs_only_when_a_cycles_own_read_found_it_quiet_never_on_a_push() -> None:
    fleet = view()
    fleet.accept(change("vm0", 2), T0 + 1)
    run = fleet.next_run(T0 + 1)
    assert run.hosts == ["vm0"]
    # A forged push (signed with vm0's key) says quiet, with a sequence number far above the relay's.
    assert fleet.accept(dict(change("vm0", 10 ** 15, quiet=True)), T0 + 2) is True
    fleet.done(run.number)   # the cycle read vm0 with work (an event lists it): it reports no read_quiet
    assert "vm0" in fleet.with_work(T0 + 3), "still owed a look: a push cannot take it out"
    later = fleet.next_run(T0 + 70)
    assert later is not None and later.hosts == ["vm0"], "the next cycles cover it"
    # The real relay goes on with its own sequence: not dropped as older than the forged one.
    assert fleet.accept(change("vm0", 3), T0 + 71) is True
    fleet.done(later.number, read_quiet=["vm0"])   # read quiet, but by a cycle begun before that push
    assert "vm0" in fleet.with_work(T0 + 72), "a push newer than the read keeps it owed"
    last = fleet.next_run(T0 + 72)
    assert last is not None and "vm0" in last.hosts and last.changed == ["vm0"]
    fleet.done(last.number, read_quiet=["vm0", "vm1"])   # vm1: not in that run, so not its read
    assert fleet.with_work(T0 + 73) == []
    fleet.accept(change("vm0", 4), T0 + 74)
    assert fleet.next_run(T0 + 74).hosts == ["vm0"], "a push can always widen a run"


def test_a_host_a_cycle_covered_stays_in_the_runs_until_a_later_read_finds_it_quiet_whatever_its_relay_says() -> None:
    """Found by the fault model: a relay that lies (or reads another state file) says quiet all along; a cycle
    covered its VM (stale, or a whole-target run), drained it and died, or ended with work left. The VM must
    stay owed a look: no push said it had work, but the cycle may have left it drained."""
    fleet = view(rerun_seconds=60)
    fleet.accept(push("vm0", 2, quiet=True, relay_id="vm0"), T0 + 1)   # the lie: quiet, while an event lists it
    covering = fleet.next_run(T0 + 100)   # vm0 silent for a while (stale_seconds 90): a cycle covers it
    assert covering is not None and "vm0" in covering.hosts
    # The cycle drains vm0 and is killed: no done report. A later run must still cover vm0.
    fleet.running.clear()
    fleet.accept(push("vm0", 3, quiet=True, relay_id="vm0"), T0 + 101)
    assert "vm0" in fleet.with_work(T0 + 102), "a cycle covered it and no later read found it quiet"
    again = fleet.next_run(T0 + 200)
    assert again is not None and "vm0" in again.hosts
    fleet.done(again.number)   # its read found the recover owed: not quiet
    assert "vm0" in fleet.with_work(T0 + 201)
    last = fleet.next_run(T0 + 300)
    fleet.done(last.number, read_quiet=["vm0"])
    assert "vm0" not in fleet.owed(), "a cycle's own read found it quiet"


def test_hosts_first_heard_of_are_looked_at_at_once_so_that_the_first_event_covers_only_its_host() -> None:
    # Regression (issue 44): quiet first pushes started nothing, so the first event's cycle covered every host
    # still owed its first look: the whole fleet's reads before the first prepare.
    fleet = FleetView(ViewSettings(expected_hosts=HOSTS, gather_seconds=1, rerun_seconds=60, stale_seconds=1000))
    for host in HOSTS:
        fleet.accept(push(host, 1, "change", relay_id=host), T0)
    assert fleet.next_run(T0 + 0.5) is None, "gathered like any news"
    first = fleet.next_run(T0 + 1)
    assert first is not None and first.hosts == HOSTS, \
        "quiet or not, a host first heard of is looked at at once: nothing is known of it yet"
    assert fleet.next_run(T0 + 2) is None, "one cycle for them"
    fleet.done(first.number, read_quiet=["vm1", "vm2"])
    fleet.accept(change("vm2", 2), T0 + 10)
    event = fleet.next_run(T0 + 11)
    assert event is not None and event.hosts == ["vm0", "vm2"], "its host, and vm0, which the look did not find quiet"


def test_relays_that_start_over_seconds_get_their_first_look_one_cycle_at_a_time() -> None:
    # A first look is a cycle started when none runs; one begun before a host's first push does not count.
    fleet = FleetView(ViewSettings(expected_hosts=HOSTS, gather_seconds=1, stale_seconds=1000))
    fleet.accept(push("vm0", 1, "change", relay_id="vm0"), T0)
    first = fleet.next_run(T0 + 1)
    assert first is not None and first.hosts == HOSTS, "the hosts not heard from yet are covered too"
    fleet.accept(push("vm1", 1, "change", relay_id="vm1"), T0 + 2)
    fleet.accept(push("vm2", 1, "change", relay_id="vm2"), T0 + 2)
    assert fleet.next_run(T0 + 4) is None, "no second look beside the first"
    fleet.done(first.number, read_quiet=HOSTS)   # vm1 and vm2 were read before their first push came
    second = fleet.next_run(T0 + 5)
    assert second is not None and second.hosts == ["vm1", "vm2"], \
        "a cycle begun before their first push does not count: their own look, once the first cycle ended"
    assert fleet.next_run(T0 + 6) is None
    fleet.done(second.number, read_quiet=["vm1", "vm2"])
    assert fleet.next_run(T0 + 30) is None, "every host looked at"
    fleet.accept(change("vm1", 2), T0 + 31)
    assert fleet.next_run(T0 + 32) is not None, "news still starts a cycle"


def test_a_host_heard_of_again_by_a_restarted_source_is_looked_at_again() -> None:
    fleet = view()
    restarted = FleetView(fleet.settings)   # a new source knows nothing of what the old one's cycles read
    restarted.accept(push("vm1", 7, relay_id="vm1"), T0 + 5)
    run = restarted.next_run(T0 + 5)
    assert run is not None and "vm1" in run.hosts


def test_a_host_is_left_alone_only_while_its_relay_says_imds_does_not_answer_not_for_a_started_event() -> None:
    fleet = view(stale_seconds=90)
    started = dict(REBOOT, EventStatus="Started")   # a 5 s Freeze stays Started for minutes; IMDS answers
    fleet.accept(dict(change("vm0", 2), in_started_event=True, record={"events": [started]}), T0 + 1)
    fleet.accept(dict(push("vm1", 2, quiet=False, relay_id="vm1"), imds_ok=False), T0 + 1)
    fleet.accept(change("vm2", 2), T0 + 1)
    run = fleet.next_run(T0 + 1)
    assert run.hosts == HOSTS and run.leave_alone == ["vm1"], "in the play (busy), never contacted"
    fleet.done(run.number)
    fleet.accept(dict(push("vm1", 3, quiet=False, relay_id="vm1"), imds_ok=True), T0 + 2)
    back = fleet.next_run(T0 + 2)
    assert back is not None and back.changed == ["vm1"], "IMDS back on a host with work is news"
    assert back.leave_alone == []
    fleet.done(back.number)
    fleet.accept(dict(push("vm0", 3, quiet=False, relay_id="vm0"), imds_ok=False), T0 + 3)
    for second in (30, 60, 94):  # vm0's relay falls silent (rebooted): a stale host is contacted again
        for host in ("vm1", "vm2"):
            fleet.accept(push(host, second, quiet=False, relay_id=host), T0 + second)
    assert fleet.leave_alone(HOSTS, T0 + 95) == []


def ticks(fleet: FleetView, pushes: Dict[float, str], until: float, tick: float = 0.25) -> list:
    """Drive the view like the source does: pushes at their times (seconds after T0), next_run every tick."""
    runs, now, seq = [], 0.0, 2
    while now <= until:
        for at in [a for a in sorted(pushes) if now - tick < a <= now]:
            fleet.accept(change(pushes[at], seq), T0 + at)
            seq += 1
        runs += [(now, r) for r in [fleet.next_run(T0 + now)] if r]
        now = round(now + tick, 6)
    return runs


def test_one_events_news_spread_over_a_second_starts_one_cycle_on_all_of_its_vms() -> None:
    fleet = view(gather_seconds=1.0)
    runs = ticks(fleet, {0.0: "vm0", 0.4: "vm1", 0.9: "vm2"}, until=3)
    assert [r.hosts for _at, r in runs] == [HOSTS], \
        "regression: the first push started a cycle on one VM and the next pushes more cycles (one per event now)"
    assert runs[0][0] == 1.0, "the cycle starts gather_seconds after the first news, not later"


def test_a_steady_trickle_of_news_cannot_hold_a_cycle_back_past_gather_seconds() -> None:
    fleet = view(gather_seconds=1.0)
    runs = ticks(fleet, {0.0: "vm0", 0.75: "vm1", 1.5: "vm2"}, until=1.0)
    assert [(at, r.changed) for at, r in runs] == [(1.0, ["vm0", "vm1"])]


def test_news_given_back_by_a_silent_cycle_is_not_gathered_again() -> None:
    fleet = view(gather_seconds=1.0, max_run_seconds=60)
    fleet.accept(change("vm0", 2), T0)
    first = fleet.next_run(T0 + 1)
    assert first is not None and fleet.next_run(T0 + 30) is None
    again = fleet.next_run(T0 + 61)
    assert again is not None and again.changed == ["vm0"], "old news starts its cycle at once"


def test_a_host_its_cycle_took_as_deleted_leaves_the_runs_until_its_relay_is_heard_again() -> None:
    """Issue 27: an evicted VM stays in the inventory; its relay is gone, so it went stale and was put into every
    run. Once a cycle's plan takes it as deleted (cycle/deleted.py), it leaves them; a push brings it back."""
    fleet = view()
    fleet.accept(push("vm0", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm0"), T0 + 1)
    run = fleet.next_run(T0 + 2)  # its last push came before the run began
    assert run is not None and "vm0" in run.hosts
    later = T0 + 2 + fleet.settings.stale_seconds + 10
    assert "vm0" in fleet.stale(later) and "vm0" in fleet.with_work(later)
    fleet.done(run.number, read_quiet=[], deleted=["vm0"])
    assert "vm0" not in fleet.stale(later) and "vm0" not in fleet.with_work(later)
    fleet.accept(push("vm0", 3, relay_id="vm0"), later + 1)  # a Deallocated Spot VM started again
    assert "vm0" not in fleet.gone


def test_a_deleted_report_older_than_a_push_is_ignored() -> None:
    fleet = view()
    fleet.accept(push("vm1", 2, "change", quiet=False, incarnation=2, events=[REBOOT], relay_id="vm1"), T0 + 1)
    run = fleet.next_run(T0 + 1)
    fleet.accept(push("vm1", 3, relay_id="vm1"), T0 + 2)  # heard after the run began: it answers
    fleet.done(run.number, deleted=["vm1", "vm7"])  # vm7: not a host of the target
    assert fleet.gone == set()


def test_regression_a_host_whose_relay_alone_sees_imds_fail_is_left_alone_for_a_bounded_time() -> None:
    """A lasting IMDS failure only the relay sees kept its VM left alone (busy, never contacted) indefinitely: the
    cycles never failed on it, so no operator was told. Past away_seconds the cycles contact it again."""
    fleet = view(stale_seconds=10_000, away_seconds=900)
    for second in range(0, 1000, 30):  # the relay keeps saying so, heartbeat after heartbeat
        fleet.accept(dict(push("vm1", 2 + second, quiet=False, relay_id="vm1"), imds_ok=False), T0 + second)
    assert fleet.leave_alone(HOSTS, T0 + 900) == ["vm1"] and fleet.away_too_long(T0 + 900) == []
    assert fleet.leave_alone(HOSTS, T0 + 990) == [] and fleet.away_too_long(T0 + 990) == ["vm1"]
    fleet.accept(dict(push("vm1", 5000, quiet=False, relay_id="vm1"), imds_ok=True), T0 + 995)
    fleet.accept(dict(push("vm1", 5001, quiet=False, relay_id="vm1"), imds_ok=False), T0 + 996)
    assert fleet.leave_alone(HOSTS, T0 + 997) == ["vm1"], "IMDS answered in between: a new absence, counted anew"
