"""Notice time against what Azure documents per event type."""
from __future__ import annotations

import numpy as np
import pandas as pd

from event_analysis.lifecycles import NO_NOTICE
from event_analysis.schema import TERMINATE_NOTICE_RANGE_S, documented_min_notice

BELOW, MAYBE_BELOW, MET, NOT_APPLICABLE = "below", "maybe below", "met", "n/a"
VERDICTS = (BELOW, MAYBE_BELOW, MET, NO_NOTICE, NOT_APPLICABLE)


def notice_check(lifecycles: pd.DataFrame, terminate_notice_s: float = TERMINATE_NOTICE_RANGE_S[0]) -> pd.DataFrame:
    """Lifecycles plus `documented_min_s` and `notice_verdict`.

    The notice is only known as an interval [notice_s_min, notice_s_max], so the verdict is:
    `below` when even the longest possible notice is short of the minimum, `maybe below` when
    only the shortest is, `met` otherwise; `no-notice` for events first seen Started, `n/a`
    for types without a documented minimum or events whose NotBefore was never served.
    """
    minimums = documented_min_notice(terminate_notice_s)
    out = lifecycles.copy()
    out["documented_min_s"] = out["event_type"].map(minimums).astype("Float64")
    low, high = out["notice_s_min"].astype("Float64"), out["notice_s_max"].astype("Float64")
    minimum = out["documented_min_s"]
    verdict = np.select(
        [(out["outcome"] == NO_NOTICE).to_numpy(),
         (minimum.isna() | low.isna()).to_numpy(),
         (high < minimum).fillna(False).to_numpy(dtype=bool),
         (low < minimum).fillna(False).to_numpy(dtype=bool)],
        [NO_NOTICE, NOT_APPLICABLE, BELOW, MAYBE_BELOW], default=MET)
    out["notice_verdict"] = pd.Categorical(verdict, categories=VERDICTS)
    return out


def notice_summary(checked: pd.DataFrame) -> pd.DataFrame:
    """Per event type: how many events, the notice range seen, the documented minimum, verdict counts."""
    with_notice = checked[checked["notice_s_min"].notna()]
    ranges = with_notice.groupby("event_type", observed=True).agg(
        notice_s_min=("notice_s_min", "min"), notice_s_min_median=("notice_s_min", "median"),
        notice_s_max=("notice_s_max", "max"))
    counts = pd.crosstab(checked["event_type"], checked["notice_verdict"]).reindex(columns=list(VERDICTS), fill_value=0)
    minimum = checked.groupby("event_type", observed=True)["documented_min_s"].first()
    return pd.concat([checked.groupby("event_type", observed=True).size().rename("lifecycles"), minimum, ranges, counts],
                     axis=1)
