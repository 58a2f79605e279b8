"""event_lifecycles: the intervals it reports must contain what really happened.

Truth comes from the simulator engine that generated the history (its record of each event),
never from the code under test; hand-written histories cover the edge cases.
"""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any, Dict

import pandas as pd
import pytest

import event_analysis as ea
from tests.analysis.histories import (Simulated, action, approval, at, event, iso, observation, parse, simulate,
                                      write_lines)

SLACK = timedelta(milliseconds=1)  # observed_at is written with millisecond precision


def expected_outcome(truth: Dict[str, Any]) -> str:
    if truth["event_type"] in ("Preempt", "Terminate") and truth["outcome"] == "completed":
        return "open"  # the VM is deleted: no poll of it ever sees the event gone
    return {"completed": "completed", "cancelled": "cancelled"}.get(truth["outcome"], "open")


def lifecycle_rows(lifecycles: pd.DataFrame, event_id: str) -> pd.DataFrame:
    return lifecycles[lifecycles["event_id"] == event_id]


def within(value: Any, low: Any, high: Any) -> bool:
    """low < value <= high, where a missing low bound means unbounded."""
    above = pd.isna(low) or value > low.to_pydatetime() - SLACK
    return bool(above and value <= high.to_pydatetime() + SLACK)


def in_range(value: float, low: Any, high: Any, slack: float = 0.001) -> bool:
    """low <= value <= high in seconds; a missing bound is unbounded on that side."""
    return (pd.isna(low) or low - slack <= value) and (pd.isna(high) or value <= high + slack)


def check_against_truth(sim: Simulated, lifecycles: pd.DataFrame) -> int:
    checked = 0
    for truth in sim.truth:
        rows = lifecycle_rows(lifecycles, truth["event_id"])
        if truth["event_type"] in ("Preempt", "Terminate"):  # the whole eviction may fall between two polls
            assert set(rows["vm"]) <= set(truth["resources"]), f"rows only for affected VMs for {truth['key']}"
        else:
            assert set(rows["vm"]) == set(truth["resources"]), f"one row per affected VM for {truth['key']}"
        appeared, started, removed = (parse(truth[k]) for k in ("appeared_at", "started_at", "removed_at"))
        for _, row in rows.iterrows():
            # Removed after the history's last poll of the VM (its end, or an eviction that deleted it): open.
            last_poll = min(sim.end - timedelta(seconds=2 * sim.poll_interval_s), sim.deleted.get(row["vm"], sim.end))
            unseen_end = removed is not None and removed > last_poll
            assert row["outcome"] == expected_outcome(truth) or unseen_end and row["outcome"] == "open", truth
            assert row["event_type"] == truth["event_type"] and row["duration_s"] == truth["duration_s"]
            assert row["fault_domain"] == sim.fault_domains[row["vm"]]
            assert within(appeared, row["appeared_after"], row["first_seen"]), (row, truth)
            evicted_unseen = truth["event_type"] in ("Preempt", "Terminate") and pd.isna(row["started_seen"])
            if started and not evicted_unseen:  # an evicted VM may stop answering before a poll sees Started
                assert within(started, row["started_after"], row["started_seen"]), (row, truth)
            if removed and row["outcome"] != "open":
                assert within(removed, row["last_seen"], row["gone_at"]), (row, truth)
            # NotBefore is served with whole seconds; an event that appeared Started had none: no notice.
            served = parse(truth["not_before"]).replace(microsecond=0) if truth["not_before"] else appeared
            notice = (served - appeared).total_seconds()
            assert in_range(notice, row["notice_s_min"], row["notice_s_max"]), (row, truth)
            # First seen Started: it appeared that way, or its Scheduled phase fell between two polls.
            assert row["first_seen_started"] == (truth["start_reason"] == "no_notice") or \
                row["first_seen_started"] and started <= row["first_seen"].to_pydatetime() + SLACK, (row, truth)
            if started and removed and row["outcome"] == "completed":
                length = (removed - started).total_seconds()
                assert in_range(length, row["started_to_gone_s_min"], row["started_to_gone_s_max"]), (row, truth)
                assert in_range(truth["impact_s"], row["impact_s_min"], row["impact_s_max"]), (row, truth)
            checked += 1
    return checked


@pytest.mark.parametrize("scenario, poll, seed", [
    ("platform-maintenance", 1.0, 1), ("platform-maintenance", 7.0, 2), ("live-migration", 3.0, 3),
    ("cancelled-maintenance", 5.0, 4), ("hardware-failure", 2.0, 5), ("user-redeploy", 10.0, 6),
])
def test_intervals_contain_the_simulator_truth(tmp_path: Path, scenario: str, poll: float, seed: int) -> None:
    sim = simulate(tmp_path, scenario, days=0.1, poll=poll, seed=seed, vms=6, fault_domains=3)
    lifecycles = ea.event_lifecycles(ea.load_history(sim.path))
    assert check_against_truth(sim, lifecycles) >= 1


# ----------------------------------------------------------------- change-only histories (the event relay's)

@pytest.mark.parametrize("scenario, poll, seed", [
    ("platform-maintenance", 1.0, 11), ("hardware-failure", 1.0, 12), ("fleet-mix", 20.0, 13),
])
def test_a_change_only_history_gives_the_lifecycles_of_the_per_poll_one(tmp_path: Path, scenario: str, poll: float,
                                                                          seed: int) -> None:
    """The same run written both ways (same seed, same polls): every lifecycle column but the number of polls
    must match for events that ended, and both must contain the truth."""
    days = 2.0 if scenario == "fleet-mix" else 0.1
    plain = simulate(tmp_path, scenario, days=days, poll=poll, seed=seed, vms=6, fault_domains=3, name="plain.jsonl")
    relay = simulate(tmp_path, scenario, days=days, poll=poll, seed=seed, vms=6, fault_domains=3, name="relay.jsonl",
                     change_only=True)
    lines = [len(p.path.read_text().splitlines()) for p in (plain, relay)]
    assert lines[1] * 5 < lines[0], f"change-only writes far fewer lines: {lines}"
    frames = [ea.load_history(p.path) for p in (plain, relay)]
    assert set(ea.report_of(frames[1]).resolution.values()) == {"change-only"}
    assert set(ea.report_of(frames[0]).resolution.values()) == {"per-poll"}
    by_poll, by_change = (ea.event_lifecycles(f).sort_values(["event_id", "vm"]).reset_index(drop=True) for f in frames)
    assert check_against_truth(relay, by_change) >= 2
    assert list(by_poll["event_id"]) == list(by_change["event_id"]) and list(by_poll["outcome"]) == list(by_change["outcome"])
    # Still there when the history ends: a change-only history cannot know the polls after its last line.
    done = (by_poll["outcome"] != "open").to_numpy()
    pd.testing.assert_frame_equal(by_poll[done].drop(columns="polls"), by_change[done].drop(columns="polls"))


def test_a_change_only_record_after_an_outage_bounds_the_silence(tmp_path: Path) -> None:
    """The relay records the same document again when IMDS answers after failures: that is the silence."""
    started = [event("R", "Started", ["vm0"])]
    lines = [dict(observation(0, "vm0", [])),
             dict(observation(100, "vm0", started), previous_observed_at=iso(at(99))),
             dict(observation(160, "vm0", started), previous_observed_at=iso(at(130))),  # no answer (130, 160)
             dict(observation(400, "vm0", []), previous_observed_at=iso(at(399)))]
    frame = ea.load_history(write_lines(tmp_path / "relay.jsonl", lines))
    (row,) = ea.event_lifecycles(frame).itertuples()
    assert (row.started_after, row.started_seen) == (at(99), at(100)), "one poll wide"
    assert (row.last_seen, row.gone_at) == (at(399), at(400))
    assert row.poll_interval_s == 1 and row.impact_s_max == 30 and row.impact_s_min == 28
    assert ea.report_of(frame).records == 4 and "1 host(s) change-only" in ea.report_of(frame).summary()


def test_a_mixed_week_with_approvals(tmp_path: Path) -> None:
    sim = simulate(tmp_path, "fleet-mix", days=3, poll=30, seed=8, approve="user", vms=6, fault_domains=3,
                   name="mix.jsonl.gz")
    lifecycles = ea.event_lifecycles(ea.load_history(sim.path))
    assert check_against_truth(sim, lifecycles) > 20
    assert {"completed", "cancelled"} <= set(lifecycles["outcome"]) and lifecycles["first_seen_started"].any()
    for truth in sim.truth:
        rows = lifecycle_rows(lifecycles, truth["event_id"])
        assert set(rows["approved"]) == {bool(truth["approved_by"])}
        if truth["approved_by"]:
            assert set(rows["approved_by"]) == {truth["approved_by"][0]}
            assert abs((rows["approved_at"].iloc[0].to_pydatetime() - parse(truth["first_approved_at"])).total_seconds()) < 0.01


def test_time_scale_turns_compressed_seconds_back(tmp_path: Path) -> None:
    sim = simulate(tmp_path, "platform-maintenance", days=0.05, poll=2, seed=3, vms=2, fault_domains=2)
    plain = ea.event_lifecycles(ea.load_history(sim.path))
    (tmp_path / "history.jsonl.meta.json").write_text('{"simulated": true, "time_scale": 60}')
    frame = ea.load_history(sim.path)
    assert ea.report_of(frame).simulated and ea.report_of(frame).time_scale == 60
    scaled = ea.event_lifecycles(frame)
    assert (scaled["notice_s_min"] / plain["notice_s_min"]).round(6).eq(60).all()
    assert (scaled["first_seen"] == plain["first_seen"]).all()  # moments stay on the recorded clock


# ----------------------------------------------------------------- hand-written edge cases

def test_an_event_first_seen_started_had_between_zero_and_the_gap_of_notice(tmp_path: Path) -> None:
    lines = [observation(0, "vm0", []), observation(10, "vm0", [event("E", "Started", ["vm0"])]),
             observation(20, "vm0", [event("E", "Started", ["vm0"])]), observation(30, "vm0", [])]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.outcome == "completed" and row.first_seen_started
    assert (row.notice_s_min, row.notice_s_max) == (0, 10), "it appeared and started between the two polls"
    assert row.started_to_gone_s_min == 10 and row.started_to_gone_s_max == 30
    assert row.scheduled_s_min == 0 and row.scheduled_s_max == 10


def test_an_approval_before_an_event_was_seen_leaves_its_notice_unbounded_above(tmp_path: Path) -> None:
    lines = [observation(0, "vm0", []), approval(5, "vm1", ["E"]), observation(10, "vm0", [event("E", "Started", ["vm0"])]),
             observation(20, "vm0", [])]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.first_seen_started and row.notice_s_min == 0 and pd.isna(row.notice_s_max), \
        "approved, it may have started long before its NotBefore"


def test_a_cancelled_event_never_started(tmp_path: Path) -> None:
    nb = at(900)
    scheduled = event("C", "Scheduled", ["vm0"], not_before=nb)
    lines = [observation(0, "vm0", []), observation(10, "vm0", [scheduled]), observation(20, "vm0", [scheduled]),
             observation(30, "vm0", [])]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.outcome == "cancelled" and pd.isna(row.started_seen)
    assert (row.notice_s_min, row.notice_s_max) == (890, 900)
    assert (row.scheduled_s_min, row.scheduled_s_max) == (10, 30)
    assert row.gone_at == pd.Timestamp(at(30))


def test_an_empty_document_after_the_24h_disable_is_not_a_removal(tmp_path: Path) -> None:
    """IMDS re-enabling answers 200 with no body (null incarnation), then restarts incarnations."""
    scheduled = event("R", "Scheduled", ["vm0"], not_before=at(5000))
    lines = [observation(0, "vm0", [scheduled], incarnation=7),
             observation(100, "vm0", [], incarnation=None),  # "no document yet"
             observation(200, "vm0", [scheduled], incarnation=1),  # incarnation went backwards
             observation(300, "vm0", [event("R", "Started", ["vm0"])], incarnation=2),
             observation(400, "vm0", [], incarnation=3)]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.outcome == "completed" and row.polls == 3
    assert row.last_scheduled == pd.Timestamp(at(200)) and row.started_after == pd.Timestamp(at(200))
    assert row.appeared_before_capture


def test_gaps_widen_the_interval_and_hosts_keep_their_own_rate(tmp_path: Path) -> None:
    ev = event("G", "Scheduled", ["fast", "slow"], not_before=at(2000))
    started = event("G", "Started", ["fast", "slow"])
    lines = [observation(s, "fast", [ev] if 100 <= s < 1000 else [started] if 1000 <= s < 1500 else [])
             for s in range(0, 2000, 10) if not 1200 <= s < 1400]  # a 200 s hole while Started
    lines += [observation(s, "slow", [ev] if 100 <= s < 1000 else [started] if 1000 <= s < 1500 else [])
              for s in range(5, 2000, 60)]
    frame = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).set_index("host")
    fast, slow = frame.loc["fast"], frame.loc["slow"]
    assert (fast.notice_s_min, fast.notice_s_max) == (1900, 1910)
    assert (slow.notice_s_min, slow.notice_s_max) == (1875, 1935)
    assert fast.poll_interval_s == 10 and slow.poll_interval_s == 60
    assert (fast.impact_s_min, fast.impact_s_max) == (190, 210)  # the 210 s silence
    assert slow.started_after == pd.Timestamp(at(965)) and slow.started_seen == pd.Timestamp(at(1025))


def test_only_listed_vms_get_a_row_and_names_match_exactly(tmp_path: Path) -> None:
    ev = event("M", "Scheduled", ["_VM1", "vm2"], not_before=at(900))
    lines = [observation(s, host, [ev]) for s in (0, 10) for host in ("vm1", "vm10", "vm2", "vm3")]
    lifecycles = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines)))
    assert sorted(lifecycles["vm"]) == ["vm1", "vm2"]  # legacy "_", case-insensitive; vm10 is not vm1
    everyone = ea.event_lifecycles(ea.load_history(tmp_path / "h.jsonl"), affected_only=False)
    assert len(everyone) == 4


def test_duplicate_lines_count_once(tmp_path: Path) -> None:
    ev = event("D", "Scheduled", ["vm0"], not_before=at(900))
    lines = [observation(0, "vm0", []), observation(10, "vm0", [ev]), observation(10, "vm0", [ev]),
             observation(20, "vm0", [ev]), approval(21, "vm0", ["D"]), approval(21, "vm0", ["D"]),
             observation(30, "vm0", [])]
    with pytest.warns(ea.HistoryWarning, match="2 duplicate"):
        frame = ea.load_history(write_lines(tmp_path / "h.jsonl", lines))
    assert ea.report_of(frame).duplicates == 2 and ea.report_of(frame).records == 7 - 2
    (row,) = ea.event_lifecycles(frame).itertuples()
    assert row.polls == 2 and row.approved and row.approved_by == "vm0"


def test_unsorted_lines_from_several_files_are_put_in_order(tmp_path: Path) -> None:
    ev = event("U", "Scheduled", ["vm0"], not_before=at(900))
    write_lines(tmp_path / "b.jsonl", [observation(30, "vm0", []), observation(20, "vm0", [ev])])
    write_lines(tmp_path / "a.jsonl", [observation(10, "vm0", [ev]), observation(0, "vm0", [])])
    (row,) = ea.event_lifecycles(ea.load_history(tmp_path / "*.jsonl")).itertuples()
    assert (row.first_seen, row.gone_at) == (pd.Timestamp(at(10)), pd.Timestamp(at(30)))
    assert row.outcome == "cancelled"


def test_a_history_without_events_gives_no_lifecycles_and_every_step_after_copes(tmp_path: Path) -> None:
    frame = ea.load_history(write_lines(tmp_path / "h.jsonl", [observation(s, "vm0", []) for s in (0, 10)]))
    lifecycles = ea.event_lifecycles(frame, time_scale=60)
    assert lifecycles.empty and list(lifecycles.columns) == list(ea.analyses.lifecycles.LIFECYCLE_COLUMNS)
    assert lifecycles.attrs["time_scale"] == 60
    windows = ea.fault_domain_windows(lifecycles)
    assert windows.empty and ea.domain_walk(windows).empty and ea.walk_order(windows) == ""
    assert ea.domain_overlaps(lifecycles).empty
    assert ea.notice_summary(ea.notice_check(lifecycles)).empty


def test_an_event_already_started_when_the_capture_began_is_not_called_no_notice(tmp_path: Path) -> None:
    lines = [observation(0, "vm0", [event("X", "Started", ["vm0"])]), observation(10, "vm0", [])]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.appeared_before_capture and row.outcome == "completed"


def test_a_lifecycle_uses_its_own_hosts_poll_interval(tmp_path: Path) -> None:
    cancelled = event("C", "Scheduled", ["slow"], not_before=at(5000))
    lines = [observation(s, "fast", []) for s in range(0, 600, 5)]
    lines += [observation(s, "slow", [cancelled] if 60 <= s < 300 else []) for s in range(0, 600, 30)]
    (row,) = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).itertuples()
    assert row.outcome == "cancelled" and row.poll_interval_s == 30



# ----------------------------------------------------------------- events first seen Started, at several poll rates

SHORT_NOTICE = {"name": "short-notice", "summary": "spot evictions (30 s) and hardware failures among planned reboots",
                "fleet": {"kind": "scale_set", "name": "vmss-mix", "vms": 12, "fault_domains": 5},
                "events": [
                    {"key": "eviction", "type": "Preempt", "source": "Platform", "description": "evicted",
                     "duration_s": -1, "notice_s": 30, "started_for_s": 30, "resources": {"count": 1}, "per_day": 48},
                    {"key": "failure", "type": "Reboot", "source": "Platform", "description": "repair",
                     "duration_s": -1, "notice_s": None, "started_for_s": [300, 600], "resources": {"count": 2},
                     "per_day": 40},
                    {"key": "planned", "type": "Reboot", "source": "Platform", "description": "maintenance",
                     "duration_s": 7, "notice_s": 900, "started_for_s": [300, 600], "resources": {"count": 2},
                     "per_day": 40}]}


@pytest.mark.parametrize("poll", [1.0, 20.0, 60.0, 120.0])
def test_events_between_polls_get_zero_to_gap_notice_and_a_verdict_only_the_data_supports(
        tmp_path: Path, poll: float) -> None:
    scenario = tmp_path / "short-notice.json"
    scenario.write_text(json.dumps(SHORT_NOTICE))
    sim = simulate(tmp_path, str(scenario), days=0.1, poll=poll, seed=int(poll), vms=12, fault_domains=5,
                   kind="scale_set")
    frame = ea.load_history(sim.path)
    checked = ea.notice_check(ea.event_lifecycles(frame))
    assert check_against_truth(sim, checked) >= 10
    # Every VM of a scale set sees every event: the ones it does not list kept answering through it.
    everyone = ea.notice_check(ea.event_lifecycles(frame, affected_only=False))
    truth = {t["event_id"]: t for t in sim.truth}
    verdicts: Dict[str, set] = {}
    for row in everyone.itertuples():
        appeared_started = truth[row.event_id]["start_reason"] == "no_notice"
        verdicts.setdefault("failure" if appeared_started else row.event_type, set()).add(str(row.notice_verdict))
        if not appeared_started:  # a Scheduled phase existed: never called "no notice"
            assert not str(row.notice_verdict).startswith("no notice"), (row, truth[row.event_id])
    # A failure is a Reboot: a planned one gives 15 minutes, so any gap shorter would have shown it Scheduled.
    assert verdicts["failure"] <= {"no notice (seen)", "no notice (type)"}
    if poll <= ea.analyses.notice.SEEN_RESOLUTION_S:  # seen by the VMs it did not take down
        assert "no notice (seen)" in verdicts["failure"] and "unknown" not in verdicts.get("Preempt", set())
    else:
        assert verdicts["failure"] == {"no notice (type)"}
    if poll > 30:  # a 30 s Preempt falls between polls: its notice cannot be told from none
        assert "unknown" in verdicts["Preempt"]


def test_regression_a_long_polled_history_draws_no_lower_bound_of_impact_from_its_gaps(tmp_path: Path) -> None:
    """The retired watch long-polled every VM and kept only each round's last document: the gap between two of its
    records said nothing of how long the VM was silent, and a 7 s reboot read as certainly 46 to 389 s. Such a
    host's lower bound is 0; its upper bound and a host polled plainly are as before."""
    started = [event("R", "Started", ["vm0", "vm1"])]
    lines = []
    for host in ("vm0", "vm1"):
        lines += [observation(s, host, events) for s, events in ((0, []), (30, []), (60, started), (300, started),
                                                                 (330, []))]
    lines.append(action(10, "vm0", "prepare", "R", trigger="watch"))  # the watch's own record of vm0
    lines.append(action(10, "vm1", "prepare", "R", trigger="schedule"))
    frame = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines))).set_index("host")
    assert (frame.loc["vm0"].impact_s_min, frame.loc["vm0"].impact_s_max) == (0, 240)
    assert (frame.loc["vm1"].impact_s_min, frame.loc["vm1"].impact_s_max) == (180, 240), "a plain poll: as before"
