"""tools/demo.py's decisions, without a run: the clock it picks for this machine, what counts as drained, and when a
cycle is due."""
from __future__ import annotations

from tools.demo import FASTEST_SCALE, SLOWEST_SCALE, left_drained, reason_to_cycle, time_scale_for


def test_the_clock_slows_with_the_machine_within_its_bounds() -> None:
    assert time_scale_for(2.0) == FASTEST_SCALE  # an idle machine keeps the two-minute walk
    assert time_scale_for(12.0) == 20.0  # a 15-minute notice lasts 45 s: several 12 s cycles
    assert time_scale_for(100.0) == SLOWEST_SCALE  # a very loaded machine: never slower than this
    assert time_scale_for(0.0) == FASTEST_SCALE


def test_only_a_prepare_without_its_recover_is_left_drained() -> None:
    def line(phase: str, host: str, event: str) -> dict:
        return {"phase": phase, "host": host, "event_id": event}
    actions = [line("prepare", "vm0", "A"), line("recover", "vm0", "A"), line("prepare", "vm1", "B"),
               line("recover", "vm2", "B")]  # vm2 saw B Started, never prepared: it is not drained
    assert left_drained(actions) == [("vm1", "B")]
    assert left_drained([]) == [], "an event that came and went between two cycles drained nothing"


def _event(event_id: str, status: str, approved_by: tuple = ()) -> dict:
    return {"event_id": event_id, "event_type": "Reboot", "fault_domains": [0], "status": status,
            "approved_by": list(approved_by)}


def test_a_cycle_runs_on_news_or_on_work_left_and_not_otherwise() -> None:
    """News is judged against the statuses the last cycle began with: what changed while it ran may have come after
    its read. Without news, an unapproved event (its approval may have waited for a recover) or a VM drained for a
    gone event still calls for a cycle; an approved event waiting for its start, or one Started, does not."""
    prepared = [{"phase": "prepare", "host": "vm0", "event_id": "AAAAAAAA-1"}]
    recovered = prepared + [{"phase": "recover", "host": "vm0", "event_id": "AAAAAAAA-1"}]
    assert reason_to_cycle({}, [], []) == ""
    assert reason_to_cycle({}, [_event("AAAAAAAA-1", "Scheduled")], []) == "news: Reboot AAAAAAAA for FD 0 Scheduled"
    assert reason_to_cycle({"AAAAAAAA-1": "Scheduled"}, [_event("AAAAAAAA-1", "Started", ["vm0"])],
                           prepared) == "news: AAAAAAAA Started"
    assert reason_to_cycle({"AAAAAAAA-1": "Started"}, [_event("AAAAAAAA-1", "Removed", ["vm0"])],
                           prepared) == "news: AAAAAAAA gone"
    assert reason_to_cycle({"AAAAAAAA-1": "Scheduled"}, [_event("AAAAAAAA-1", "Scheduled")], []) == \
        "AAAAAAAA still to approve"
    assert reason_to_cycle({"AAAAAAAA-1": "Scheduled"}, [_event("AAAAAAAA-1", "Scheduled", ["vm0"])], prepared) == "", \
        "approved, held for another fault domain: its start is news"
    assert reason_to_cycle({"AAAAAAAA-1": "Started"}, [_event("AAAAAAAA-1", "Started", ["vm0"])], prepared) == ""
    assert reason_to_cycle({"AAAAAAAA-1": "Removed"}, [_event("AAAAAAAA-1", "Removed", ["vm0"])], prepared) == \
        "vm0 still to recover"
    assert reason_to_cycle({"AAAAAAAA-1": "Removed"}, [_event("AAAAAAAA-1", "Removed", ["vm0"])], recovered) == ""
