"""Observed impact against what Azure publishes about pauses (event_analysis/published.py).

Azure publishes figures for one kind of impact only, the pause of a Freeze (a live migration or a
memory-preserving update): "almost always" under 10 s, about 30 s at most. Reboots and redeploys have no such
figure (a restart's length is the guest's), so their verdict is `n/a`. The impact is known as an interval
[impact_s_min, impact_s_max] (the VM's longest silence while Started, less two polls at the low end), so each
verdict says what that interval allows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from event_analysis.published import PAUSE_ALMOST_ALWAYS_UNDER_S, PAUSE_LONGEST_S

TYPICAL, MAYBE_ABOVE, ABOVE_TYPICAL, BEYOND_PUBLISHED, NOT_APPLICABLE = (
    "typical", "maybe above typical", "above typical", "beyond published", "n/a")
VERDICTS = (TYPICAL, MAYBE_ABOVE, ABOVE_TYPICAL, BEYOND_PUBLISHED, NOT_APPLICABLE)
JUDGED_TYPES = ("Freeze",)


def impact_check(lifecycles: pd.DataFrame) -> pd.DataFrame:
    """Lifecycles plus `published_typical_s`, `published_longest_s` and `impact_verdict`: `typical` when the
    whole interval is under the typical pause, `above typical` when all of it is over, `beyond published` when
    all of it is over the longest pause Azure reports, `maybe above typical` when the polls cannot tell, `n/a`
    for types without a published pause or an impact never observed (the event was never seen Started)."""
    out = lifecycles.copy()
    judged = out["event_type"].isin(JUDGED_TYPES).to_numpy(dtype=bool)
    out["published_typical_s"] = pd.Series(np.where(judged, PAUSE_ALMOST_ALWAYS_UNDER_S, np.nan),
                                           index=out.index).astype("Float64")
    out["published_longest_s"] = pd.Series(np.where(judged, PAUSE_LONGEST_S, np.nan), index=out.index).astype("Float64")
    low = out["impact_s_min"].astype("Float64")
    high = out["impact_s_max"].astype("Float64")
    known = judged & low.notna().to_numpy(dtype=bool) & high.notna().to_numpy(dtype=bool)
    verdict = np.select(
        [~known,
         (low > PAUSE_LONGEST_S).fillna(False).to_numpy(dtype=bool),
         (low > PAUSE_ALMOST_ALWAYS_UNDER_S).fillna(False).to_numpy(dtype=bool),
         (high < PAUSE_ALMOST_ALWAYS_UNDER_S).fillna(False).to_numpy(dtype=bool)],
        [NOT_APPLICABLE, BEYOND_PUBLISHED, ABOVE_TYPICAL, TYPICAL], default=MAYBE_ABOVE)
    out["impact_verdict"] = pd.Categorical(verdict, categories=VERDICTS)
    return out


def impact_summary(checked: pd.DataFrame) -> pd.DataFrame:
    """Per event type: lifecycles, the longest observed impact, the published figures, verdict counts."""
    grouped = checked.groupby("event_type", observed=True)
    counts = pd.crosstab(checked["event_type"], checked["impact_verdict"]).reindex(columns=list(VERDICTS),
                                                                                     fill_value=0)
    return pd.concat([grouped.size().rename("lifecycles"), grouped["impact_s_max"].max().rename("impact_s_max"),
                      grouped["published_typical_s"].first(), grouped["published_longest_s"].first(), counts], axis=1)
