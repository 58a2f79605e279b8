"""A Freeze's observed pause against the published figures (event_analysis/analyses/impact.py)."""
from __future__ import annotations

import pandas as pd

from event_analysis.analyses.impact import impact_check, impact_summary


def lifecycles(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame([{"event_type": t, "impact_s_min": low, "impact_s_max": high} for t, low, high in rows])


def test_each_verdict_says_what_the_impact_interval_allows() -> None:
    checked = impact_check(lifecycles(
        ("Freeze", 2.0, 4.0),     # all of it under 10 s
        ("Freeze", 8.0, 12.0),    # the polls cannot tell
        ("Freeze", 11.0, 13.0),   # all of it over 10 s
        ("Freeze", 31.0, 33.0),   # over the longest pause Azure reports
        ("Freeze", None, None),   # never seen Started
        ("Reboot", 40.0, 42.0),   # no published figure for a restart
    ))
    assert list(checked["impact_verdict"]) == ["typical", "maybe above typical", "above typical", "beyond published",
                                               "n/a", "n/a"]
    assert list(checked["published_longest_s"].fillna(-1)) == [30.0] * 5 + [-1]


def test_the_summary_counts_verdicts_per_type() -> None:
    summary = impact_summary(impact_check(lifecycles(("Freeze", 2.0, 4.0), ("Freeze", 31.0, 40.0), ("Reboot", 1, 2))))
    assert summary.loc["Freeze", "lifecycles"] == 2 and summary.loc["Freeze", "beyond published"] == 1
    assert summary.loc["Freeze", "impact_s_max"] == 40.0 and summary.loc["Reboot", "n/a"] == 1
