"""Fault-domain serialisation and notice verdicts, against simulator truth and hand-made violations."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pandas as pd
import pytest

import event_analysis as ea
from event_analysis.__main__ import summary_of
from tests.analysis.histories import at, event, observation, parse, simulate, vm, write_lines


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
    """vm0 (FD 0) Started from 100 to 200; vm1 (FD 1) Started during `vm1_started`. One availability set:
    each VM sees both events (Resources lists only the VM an event is for)."""
    def document(second: int) -> List[Dict[str, Any]]:
        a = "Started" if 100 <= second < 200 else "Scheduled" if second < 100 else None
        b = "Started" if second in vm1_started else "Scheduled" if second < vm1_started.start else None
        return ([event("A", a, ["vm0"], not_before=at(100))] if a else []) + \
            ([event("B", b, ["vm1"], not_before=at(vm1_started.start))] if b else [])
    lines = [observation(second, "vm0", document(second), fault_domain=0) for second in range(0, 400, 10)]
    lines += [observation(second, "vm1", document(second), fault_domain=1) for second in vm1_polls]
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


def test_two_runs_reusing_event_ids_are_never_a_certain_overlap(tmp_path: Path) -> None:
    """Two rehearsals appended to one history, each walking fault domain 0 then 1 without overlap, under the same
    EventIds (one simulator seed): merged by id, each lifecycle spans both runs, which is no evidence of an overlap."""
    def one_run(offset: int) -> List[Dict[str, Any]]:
        def document(second: int) -> List[Dict[str, Any]]:  # one availability set: each VM sees both events
            a = "Started" if 100 <= second < 200 else "Scheduled" if 50 <= second < 100 else None
            b = "Started" if 250 <= second < 350 else "Scheduled" if 210 <= second < 250 else None
            return ([event("A", a, ["vm0"], not_before=at(offset + 100))] if a else []) + \
                ([event("B", b, ["vm1"], not_before=at(offset + 250))] if b else [])
        return [observation(offset + second, name, document(second), fault_domain=domain)
                for second in range(0, 400, 10) for name, domain in (("vm0", 0), ("vm1", 1))]
    path = write_lines(tmp_path / "h.jsonl", one_run(0) + one_run(1000))
    lifecycles = ea.event_lifecycles(ea.load_history(path))
    assert set(ea.domain_overlaps(lifecycles)["kind"].astype(str)) == {"possible"}
    assert lifecycles["id_reused"].all()
    summary = summary_of([str(path)])
    assert "0 certain" in summary and "2 lifecycle(s) reuse an EventId" in summary
    one = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "one.jsonl", one_run(0))))
    assert not one["id_reused"].any() and ea.domain_overlaps(one).empty


def test_two_availability_sets_walking_at_once_are_no_overlap(tmp_path: Path) -> None:
    # Fault domain 0 of set a and fault domain 1 of set b in maintenance together: different racks. Each set's
    # VMs see only their own set's events, which is how the library tells the sets apart.
    lines = []
    for second in range(0, 400, 10):
        for name, fault_domain, ident in (("a-vm0", 0, "A0"), ("a-vm1", 1, "A1"), ("b-vm0", 0, "B0"), ("b-vm1", 1, "B1")):
            walk = {"A0": range(100, 200), "A1": range(220, 300), "B0": range(220, 300), "B1": range(100, 200)}
            mine = [e for e in ("A0", "A1") if name.startswith("a")] or ["B0", "B1"]
            events = [event(e, "Started" if second in walk[e] else "Scheduled", [e[0].lower() + "-vm" + e[1]],
                            not_before=at(walk[e].start)) for e in mine if second < walk[e].stop]
            lines.append(observation(second, name, events, fault_domain=fault_domain))
    lifecycles = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines)))
    assert dict(zip(lifecycles["vm"], lifecycles["vm_set"])) == {
        "a-vm0": "a-vm0's set", "a-vm1": "a-vm0's set", "b-vm0": "b-vm0's set", "b-vm1": "b-vm0's set"}
    assert ea.domain_overlaps(lifecycles).empty, "two sets' domains are different racks"
    windows = ea.fault_domain_windows(lifecycles)
    assert len(windows) == 4 and set(windows["vm_set"]) == {"a-vm0's set", "b-vm0's set"}
    assert ea.walk_order(windows) == "a-vm0's set: 0 -> 1; b-vm0's set: 1 -> 0"
    walk = ea.domain_walk(windows)
    assert list(walk.loc[walk["vm_set"] == "a-vm0's set", "previous_fault_domain"].astype(object)) == [pd.NA, 0]


def test_a_scale_set_named_by_imds_is_one_set_even_without_a_common_event(tmp_path: Path) -> None:
    lines = [dict(observation(s, host, [event(f"E{host[-1]}", "Scheduled", [host], not_before=at(900))]),
                  vm=dict(vm(host), vm_scale_set_name="ss-web")) for s in (0, 10) for host in ("vm0", "vm1")]
    lifecycles = ea.event_lifecycles(ea.load_history(write_lines(tmp_path / "h.jsonl", lines)))
    assert set(lifecycles["vm_set"]) == {"ss-web"}


def test_user_events_and_hardware_failures_are_not_counted_as_maintenance_windows(tmp_path: Path) -> None:
    lines = []
    for second in range(0, 300, 10):
        user = [event("U", "Started", ["vm0"], source="User")] if 50 <= second < 100 else []
        failure = [event("H", "Started", ["vm1"])] if 60 <= second < 120 else []
        both = user + failure  # one set: each VM sees the other's events too
        lines += [observation(second, "vm0", both, fault_domain=0), observation(second, "vm1", both, fault_domain=1)]
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


def _two_sets_lifecycles(tmp: Path) -> pd.DataFrame:
    """Sets a and b each walk FD 0 then FD 1, at the same time (see the test above)."""
    lines = []
    walk = {"A0": range(100, 200), "A1": range(220, 300), "B0": range(100, 200), "B1": range(220, 300)}
    for second in range(0, 400, 10):
        for name, fault_domain in (("a-vm0", 0), ("a-vm1", 1), ("b-vm0", 0), ("b-vm1", 1)):
            mine = ["A0", "A1"] if name.startswith("a") else ["B0", "B1"]
            events = [event(e, "Started" if second in walk[e] else "Scheduled", [e[0].lower() + "-vm" + e[1]],
                            not_before=at(walk[e].start)) for e in mine if second < walk[e].stop]
            lines.append(observation(second, name, events, fault_domain=fault_domain))
    return ea.event_lifecycles(ea.load_history(write_lines(tmp / "h.jsonl", lines)))


def test_the_timeline_gives_each_set_its_own_domain_rows(tmp_path: Path) -> None:
    """Fault domain 0 of set a and of set b are two racks: one row each, never one shared row."""
    import event_analysis.plots as plots

    windows = ea.fault_domain_windows(_two_sets_lifecycles(tmp_path))
    figure = plots.domain_timeline(windows)
    labels = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert labels == ["a-vm0's set 0", "a-vm0's set 1", "b-vm0's set 0", "b-vm0's set 1"]
    from matplotlib.collections import PolyCollection

    bars = [c for c in figure.axes[0].collections if isinstance(c, PolyCollection)]
    rows = sorted(round(float(path.vertices[:, 1].min() + path.vertices[:, 1].max()) / 2, 3)
                  for bar in bars for path in bar.get_paths())
    assert rows == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]  # each window on its own set's row, light and dark
    narrow = plots.domain_timeline(windows, max_sets=1)
    assert [t.get_text() for t in narrow.axes[0].get_yticklabels()] == ["a-vm0's set 0", "a-vm0's set 1"]
    assert "(first 1 of 2 sets)" in narrow._suptitle.get_text()


def test_overlap_pairs_are_every_same_set_pair_whose_possible_intervals_meet() -> None:
    """The per-set sweep against a brute-force check of every pair, on random intervals of 4 sets."""
    import numpy as np

    rng = np.random.default_rng(3)
    count = 300
    start = pd.Timestamp("2026-01-05", tz="UTC") + pd.to_timedelta(rng.integers(0, 20000, count), unit="s")
    end = start + pd.to_timedelta(rng.integers(1, 900, count), unit="s")
    rows = pd.DataFrame({"vm_set": rng.choice(["a", "b", "c", "d"], count), "fault_domain": rng.integers(0, 3, count),
                         "vm": [f"vm{i}" for i in range(count)], "event_id": [f"E{i}" for i in range(count)],
                         "started_seen": start, "started_after": start, "last_seen": end, "gone_at": end,
                         "event_source": "Platform", "first_seen_started": False, "update_domain": 0})
    found = ea.domain_overlaps(rows)
    rank = {row: position for position, row in enumerate(sorted(range(count), key=lambda r: (start[r], r)))}
    expected = sorted(((a, b) for a in range(count) for b in range(count)
                       if rank[a] < rank[b] and rows.vm_set[a] == rows.vm_set[b]
                       and rows.fault_domain[a] != rows.fault_domain[b]
                       and max(start[a], start[b]) < min(end[a], end[b])), key=lambda p: (rank[p[0]], rank[p[1]]))
    got = [(int(x[2:]), int(y[2:])) for x, y in zip(found["vm_a"], found["vm_b"])]
    assert len(got) > 50 and got == expected  # every pair once, earlier start first, in start order
    assert set(found["kind"]) == {"certain"}  # seen Started throughout: every meeting is certain
