"""Fault-domain serialisation and notice verdicts, against simulator truth and hand-made violations."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import pandas as pd
import pytest

import event_analysis as ea
from tests.analysis.histories import at, event, observation, parse, simulate, write_lines


def test_a_platform_walk_is_serialised_and_its_windows_bracket_the_truth(tmp_path: Path) -> None:
    sim = simulate(tmp_path, "platform-maintenance", days=0.1, poll=3, seed=6, vms=6, fault_domains=3)
    lifecycles = ea.event_lifecycles(ea.load_history(sim.path))
    windows = ea.fault_domain_windows(lifecycles)
    truth = sorted(sim.truth, key=lambda t: t["appeared_at"])
    assert ea.walk_order(windows) == " -> ".join(str(t["fault_domains"][0]) for t in truth)
    assert ea.domain_overlaps(lifecycles).empty
    for (_, window), real in zip(windows.iterrows(), truth):
        assert window["fault_domain"] == real["fault_domains"][0] and window["vms"] == 2
        assert window["start_after"] < pd.Timestamp(real["started_at"]) <= window["start"]
        assert window["end_after"] < pd.Timestamp(real["removed_at"]) <= window["end"]
    walk = ea.domain_walk(windows)
    for (_, step), before, real in zip(walk.iloc[1:].iterrows(), truth, truth[1:]):
        gap = (parse(real["appeared_at"]) - parse(before["removed_at"])).total_seconds()
        assert step["gap_s_min"] <= gap <= step["gap_s_max"]
        assert step["previous_fault_domain"] == before["fault_domains"][0]


def two_domains(tmp: Path, vm1_polls: List[int], vm1_started: range) -> pd.DataFrame:
    """vm0 (FD 0) Started from 100 to 200; vm1 (FD 1) Started during `vm1_started`."""
    lines = []
    for second in range(0, 400, 10):
        status = "Started" if 100 <= second < 200 else "Scheduled" if second < 100 else None
        lines.append(observation(second, "vm0", [event("A", status, ["vm0"], not_before=at(100))] if status else [],
                                 fault_domain=0))
    for second in vm1_polls:
        status = "Started" if second in vm1_started else "Scheduled" if second < vm1_started.start else None
        lines.append(observation(second, "vm1", [event("B", status, ["vm1"], not_before=at(vm1_started.start))]
                                 if status else [], fault_domain=1))
    return ea.event_lifecycles(ea.load_history(write_lines(tmp / "h.jsonl", lines)))


def test_two_fault_domains_seen_started_together_is_a_certain_overlap(tmp_path: Path) -> None:
    lifecycles = two_domains(tmp_path, list(range(5, 400, 10)), range(185, 300))
    (overlap,) = ea.domain_overlaps(lifecycles).itertuples()
    assert overlap.kind == "certain" and {overlap.vm_a, overlap.vm_b} == {"vm0", "vm1"}
    assert len(ea.fault_domain_windows(lifecycles)) == 2


def test_sparse_polls_make_an_overlap_only_possible(tmp_path: Path) -> None:
    # vm1 polls every 100 s: it was seen Scheduled at 105 and Started at 205, after vm0 was gone.
    lifecycles = two_domains(tmp_path, [5, 105, 205, 305], range(200, 300))
    (overlap,) = ea.domain_overlaps(lifecycles).itertuples()
    assert overlap.kind == "possible"


def test_back_to_back_domains_do_not_overlap(tmp_path: Path) -> None:
    lifecycles = two_domains(tmp_path, list(range(5, 400, 10)), range(215, 300))
    assert ea.domain_overlaps(lifecycles).empty
    assert ea.walk_order(ea.fault_domain_windows(lifecycles)) == "0 -> 1"


def test_user_events_and_hardware_failures_are_not_counted_as_maintenance_windows(tmp_path: Path) -> None:
    lines = []
    for second in range(0, 300, 10):
        user = [event("U", "Started", ["vm0"], source="User")] if 50 <= second < 100 else []
        failure = [event("H", "Started", ["vm1"])] if 60 <= second < 120 else []
        lines += [observation(second, "vm0", user, fault_domain=0), observation(second, "vm1", failure, fault_domain=1)]
    lifecycles = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines)))
    assert ea.fault_domain_windows(lifecycles).empty and ea.domain_overlaps(lifecycles).empty
    everything = ea.domain_overlaps(lifecycles, sources=None, include_no_notice=True)
    assert list(everything["kind"]) == ["certain"]


def test_update_domain_windows_and_a_bad_grouping(tmp_path: Path) -> None:
    sim = simulate(tmp_path, "platform-maintenance", days=0.1, poll=5, seed=2, vms=6, fault_domains=3, update_domains=2)
    lifecycles = ea.event_lifecycles(ea.load_history(sim.path))
    windows = ea.fault_domain_windows(lifecycles, by="update_domain")
    assert set(windows["update_domain"]) <= set(lifecycles["update_domain"]) and len(windows) >= 2
    with pytest.raises(ValueError, match="by must be one of"):
        ea.fault_domain_windows(lifecycles, by="zone")


# ----------------------------------------------------------------- notice against the documented minimum

def notice_history(tmp: Path) -> pd.DataFrame:
    """Each event first seen at 10 s (previous poll at 0 s), so its notice is NotBefore - [0, 10] s."""
    cases: Dict[str, tuple] = {
        "short-reboot": ("Reboot", 10 + 600), "edge-reboot": ("Reboot", 10 + 895), "fine-reboot": ("Reboot", 10 + 950),
        "preempt": ("Preempt", 10 + 40), "short-freeze": ("Freeze", 10 + 100), "terminate": ("Terminate", 10 + 400),
        "mystery": ("Hibernate", 10 + 50),
    }
    events = [event(key, "Scheduled", ["vm0"], event_type=kind, not_before=at(nb)) for key, (kind, nb) in cases.items()]
    lines = [observation(0, "vm0", []), observation(10, "vm0", events + [event("failure", "Started", ["vm0"])]),
             observation(20, "vm0", [])]
    return ea.event_lifecycles(ea.load_history(write_lines(tmp / "h.jsonl", lines)))


def test_notice_verdicts_respect_the_uncertainty(tmp_path: Path) -> None:
    verdicts = ea.notice_check(notice_history(tmp_path)).set_index("event_id")["notice_verdict"].astype(str).to_dict()
    assert verdicts == {"short-reboot": "below", "edge-reboot": "maybe below", "fine-reboot": "met", "preempt": "met",
                        "short-freeze": "below", "terminate": "met", "mystery": "n/a",
                        "failure": "no notice (type)"}  # first seen Started 10 s after a poll: a planned Reboot shows 15 min
    strict = ea.notice_check(notice_history(tmp_path), terminate_notice_s=600).set_index("event_id")
    assert strict.loc["terminate", "notice_verdict"] == "below" and strict.loc["terminate", "documented_min_s"] == 600
    summary = ea.notice_summary(ea.notice_check(notice_history(tmp_path)))
    assert summary.loc["Reboot", "lifecycles"] == 4 and summary.loc["Reboot", "below"] == 1


def test_a_terminate_notice_outside_what_azure_allows_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="between 300 and 900 seconds"):
        ea.notice_check(notice_history(tmp_path), terminate_notice_s=60)
