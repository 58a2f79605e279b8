"""The fast-path benchmark's arithmetic (tools/bench_fast_path.py): what counts as started before eviction."""
from __future__ import annotations

from tools.bench_fast_path import TARGET_P95_S, report, summary


def test_a_command_that_never_ran_counts_against_the_share_and_not_in_the_latencies() -> None:
    rows = [{"vm": "vm%d" % i, "notice_s": 10.0, "reaction_s": 0.5 + i / 10, "before_eviction": True} for i in range(9)]
    rows.append({"vm": "vm9", "notice_s": 2.0, "reaction_s": None, "before_eviction": False})
    figures = summary({"rows": rows})
    assert (figures["preempts"], figures["ran"], figures["before_eviction"]) == (10, 9, 9)
    assert figures["share"] == 0.9
    assert figures["median_s"] == 0.9 and figures["max_s"] == 1.3
    assert figures["shortest_notice_s"] == 2.0
    text = report({"vms": 10, "window_s": 60.0}, figures, "python tools/bench_fast_path.py --vms 10")
    assert "9 (90.0%)" in text and "(MISSES)" in text  # the share misses 99 %
    assert figures["p95_s"] <= TARGET_P95_S and "p95 <= 1.5 s (meets)" in text
