"""Reaction analysis (event_analysis.analyses.reaction): seen -> prepared -> approved -> started, per event and VM."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import event_analysis as ea
from tests.analysis.histories import action, approval, at, event, observation, write_lines


def history(tmp_path: Path) -> pd.DataFrame:
    """A Reboot of vm0 and vm1 (NotBefore at 900 s) that vm0 prepares 2 s after seeing it and vm1 never
    prepares; a Preempt of vm0 (NotBefore 130 s) prepared late and approved after it was seen Started."""
    reboot = lambda status: event("R", status, ["vm0", "vm1"], not_before=at(900) if status == "Scheduled" else None)
    preempt = lambda status: event("P", status, ["vm0"], event_type="Preempt",
                                   not_before=at(130) if status == "Scheduled" else None)
    lines = [observation(0, "vm0", []), observation(1, "vm1", []),
             observation(10, "vm0", [reboot("Scheduled")]), observation(11, "vm1", [reboot("Scheduled")]),
             action(12, "vm0", "prepare", "R"), dict(approval(20, "vm0", ["R"]), trigger="event-driven"),
             observation(30, "vm0", [reboot("Started")]), observation(31, "vm1", [reboot("Started")]),
             observation(60, "vm0", []), observation(61, "vm1", []), action(62, "vm0", "recover", "R"),
             observation(100, "vm0", [preempt("Scheduled")]), action(135, "vm0", "prepare", "P", "Preempt", "watch"),
             observation(138, "vm0", [preempt("Started")]), approval(140, "vm0", ["P"]),
             observation(170, "vm0", [])]
    return ea.load_history(write_lines(tmp_path / "h.jsonl", lines))


def test_each_vm_of_each_event_gets_its_reaction_margin_and_verdicts(tmp_path: Path) -> None:
    table = ea.reaction_table(history(tmp_path)).set_index(["event_id", "host"])
    vm0 = table.loc[("R", "vm0")]
    assert (vm0["reaction_s_min"], vm0["reaction_s_max"]) == (2.0, 12.0), "from the sighting / the poll before"
    assert (vm0["margin_s"], vm0["approval_margin_s"]) == (888.0, 880.0)
    assert vm0["trigger"] == "event-driven" and vm0["recovered_at"] == pd.Timestamp(at(62))
    assert not vm0["late"] and not vm0["started_unprepared"] and not vm0["approval_unneeded"]
    vm1 = table.loc[("R", "vm1")]
    assert not vm1["prepared"] and vm1["started_unprepared"] and pd.isna(vm1["reaction_s_max"])
    assert vm1["trigger"] == "event-driven", "the event's approval says how it was run"
    late = table.loc[("P", "vm0")]
    assert late["late"] and late["margin_s"] == -5.0 and late["approval_unneeded"] and late["trigger"] == "watch"


def test_the_summary_counts_by_way_of_running_and_event_type(tmp_path: Path) -> None:
    summary = ea.reaction_summary(ea.reaction_table(history(tmp_path))).set_index(["trigger", "event_type"])
    reboot, preempt = summary.loc[("event-driven", "Reboot")], summary.loc[("watch", "Preempt")]
    assert (reboot["events"], reboot["vms"], reboot["prepared"], reboot["started_unprepared"]) == (1, 2, 1, 1)
    assert (reboot["approvals"], reboot["approvals_unneeded"], reboot["late"]) == (1, 0, 0)
    # reaction at most: prepare at 135 s - the poll before the sighting, 60 s
    assert (preempt["late"], preempt["approvals_unneeded"], preempt["reaction_s_median"]) == (1, 1, 75.0)
    assert list(ea.late_preparations(ea.reaction_table(history(tmp_path)))["event_id"]) == ["P"]


def test_an_event_first_seen_started_is_no_missed_prepare_and_still_gets_its_recover(tmp_path: Path) -> None:
    """A user's reboot that the platform's scheduledEventsPolicy auto-approves is never Scheduled (issue 27): nothing
    could be prepared, so it is not counted as started unprepared; its recover is."""
    started = event("U", "Started", ["vm0"], source="User")
    lines = [observation(0, "vm0", []), observation(10, "vm0", [started]), observation(40, "vm0", []),
             action(41, "vm0", "recover", "U")]
    table = ea.reaction_table(ea.load_history(write_lines(tmp_path / "h.jsonl", lines)))
    (row,) = table.to_dict("records")
    assert row["first_seen_started"] and not row["prepared"] and not row["started_unprepared"]
    assert row["recovered_at"] == pd.Timestamp(at(41))
    summary = ea.reaction_summary(table).set_index(["trigger", "event_type"]).iloc[0]
    assert summary["started_unprepared"] == 0


def test_the_relays_local_command_is_a_column_of_its_own(tmp_path: Path) -> None:
    """The fast path (the relay runs the VM's command at first sight of a Preempt) beside the cycle's prepare."""
    preempt = event("P", "Scheduled", ["vm0"], event_type="Preempt", not_before=at(40))
    local = {"record": "action", "observed_at": "2026-01-05T00:00:10.400Z", "host": "vm0", "action": "local",
             "event_ids": ["P"], "event_type": "Preempt", "trigger": "relay"}
    lines = [observation(0, "vm0", []), observation(10, "vm0", [preempt]), local,
             action(13, "vm0", "prepare", "P", "Preempt", "event-driven"), observation(45, "vm0", [])]
    (row,) = ea.reaction_table(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).to_dict("records")
    assert (row["local_at"] - row["first_seen"]).total_seconds() == pytest.approx(0.4)
    assert row["prepared_at"] == pd.Timestamp(at(13)) and row["trigger"] == "event-driven"


def test_a_history_without_action_records_reacts_nowhere_and_says_unknown(tmp_path: Path) -> None:
    ev = event("R", "Scheduled", ["vm0"], not_before=at(900))
    frame = ea.load_history(write_lines(tmp_path / "h.jsonl", [observation(0, "vm0", []), observation(10, "vm0", [ev])]))
    table = ea.reaction_table(frame)
    assert list(table["trigger"]) == ["unknown"] and not table["prepared"].any()
    assert ea.reaction_table(ea.load_history(write_lines(tmp_path / "q.jsonl", [observation(0, "vm0", [])]))).empty


@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_durations_are_in_the_seconds_they_stand_for(tmp_path: Path, scale: float) -> None:
    table = ea.reaction_table(history(tmp_path), time_scale=scale).set_index(["event_id", "host"])
    assert table.loc[("R", "vm0"), "reaction_s_max"] == 12.0 * scale
