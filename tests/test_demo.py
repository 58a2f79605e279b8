"""tools/demo.py's decisions, without a run: the clock it picks for this machine, and what counts as drained."""
from __future__ import annotations

from tools.demo import FASTEST_SCALE, SLOWEST_SCALE, left_drained, time_scale_for


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
