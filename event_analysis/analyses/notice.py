"""Notice time against what Azure documents per event type."""
from __future__ import annotations

import numpy as np
import pandas as pd

from event_analysis.published import TERMINATE_NOTICE_RANGE_S, documented_min_notice

BELOW, MAYBE_BELOW, MET, NOT_APPLICABLE = "below", "maybe below", "met", "n/a"
# For events first seen Started. "No notice" is a claim about a Scheduled phase nobody saw, so it says what
# supports it: a history fine enough to have seen one (seen), or the event type (a planned event of this type
# gets at least its documented notice, longer than the gap: this one skipped Scheduled). Otherwise unknown.
NO_NOTICE_SEEN, NO_NOTICE_BY_TYPE, UNKNOWN = "no notice (seen)", "no notice (type)", "unknown"
VERDICTS = (BELOW, MAYBE_BELOW, MET, NO_NOTICE_SEEN, NO_NOTICE_BY_TYPE, UNKNOWN, NOT_APPLICABLE)
# A gap this short (in the history's seconds) between the last poll without the event and the first with it
# Started leaves no room for a Scheduled phase worth the name: the relay's one-second polls.
SEEN_RESOLUTION_S = 5.0


def notice_check(lifecycles: pd.DataFrame, terminate_notice_s: float = TERMINATE_NOTICE_RANGE_S[0]) -> pd.DataFrame:
    """Lifecycles plus `documented_min_s` and `notice_verdict`.

    The notice is only known as an interval [notice_s_min, notice_s_max], so the verdict is:
    `below` when even the longest possible notice is short of the minimum, `maybe below` when
    only the shortest is, `met` otherwise, `n/a` for types without a documented minimum or events whose
    NotBefore was never served. An event first seen Started had [0, gap] of notice: `no notice (seen)` when
    the gap is at most SEEN_RESOLUTION_S, `no notice (type)` when it is shorter than the type's documented
    minimum, `unknown` otherwise (a 30 s Preempt between polls a minute apart) or before the capture began.
    """
    minimums = documented_min_notice(terminate_notice_s)
    out = lifecycles.copy()
    out["documented_min_s"] = out["event_type"].map(minimums).astype("Float64")
    low, high = out["notice_s_min"].astype("Float64"), out["notice_s_max"].astype("Float64")
    minimum = out["documented_min_s"]
    between = out["first_seen_started"].to_numpy(dtype=bool)
    verdict = np.select(
        [between & (high <= SEEN_RESOLUTION_S).fillna(False).to_numpy(dtype=bool),
         between & (high < minimum).fillna(False).to_numpy(dtype=bool),
         between,
         (minimum.isna() | low.isna()).to_numpy(),
         (high < minimum).fillna(False).to_numpy(dtype=bool),
         (low < minimum).fillna(False).to_numpy(dtype=bool)],
        [NO_NOTICE_SEEN, NO_NOTICE_BY_TYPE, UNKNOWN, NOT_APPLICABLE, BELOW, MAYBE_BELOW], default=MET)
    out["notice_verdict"] = pd.Categorical(verdict, categories=VERDICTS)
    return out


def notice_summary(checked: pd.DataFrame) -> pd.DataFrame:
    """Per event type: how many events, the notice range of those seen Scheduled, the documented minimum,
    verdict counts."""
    with_notice = checked[checked["notice_s_min"].notna() & ~checked["first_seen_started"].astype(bool)]
    ranges = with_notice.groupby("event_type", observed=True).agg(
        notice_s_min=("notice_s_min", "min"), notice_s_min_median=("notice_s_min", "median"),
        notice_s_max=("notice_s_max", "max"))
    counts = pd.crosstab(checked["event_type"], checked["notice_verdict"]).reindex(columns=list(VERDICTS), fill_value=0)
    minimum = checked.groupby("event_type", observed=True)["documented_min_s"].first()
    return pd.concat([checked.groupby("event_type", observed=True).size().rename("lifecycles"), minimum, ranges, counts],
                     axis=1)
