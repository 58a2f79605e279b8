"""Change-only histories (the event relay's): rebuild the poll each record vouches for.

The relay polls every second but writes a record only when the document changes, with
`previous_observed_at`: the last poll that still saw the previous document. A per-poll history
has that poll as a line of its own. Adding it back (a copy of the host's previous record, at
`previous_observed_at`, marked `reconstructed`) gives every later step the same series a per-poll
history gives: an event first seen at a record appeared after `previous_observed_at`, one poll
wide. Between a record and the next reconstructed poll the relay kept polling (unchanged
document), so that stretch is not a silence: `reconstructed` polls carry no gap.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
import pandas as pd

from event_analysis.loading.schema import OBSERVATION
from event_analysis.loading.timestamps import UNKNOWN_NS, nanoseconds

CHANGE_ONLY, PER_POLL = "change-only", "per-poll"


def reconstruct_polls(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (sorted by host, then time) plus the polls its change-only records vouch for, sorted again."""
    if "previous_observed_at" not in frame or not frame["previous_observed_at"].notna().any():
        return frame
    rows = np.flatnonzero((frame["record"] == OBSERVATION).to_numpy())
    host = pd.factorize(frame["host"].to_numpy()[rows])[0]
    time = nanoseconds(frame["observed_at"].iloc[rows])
    starts = np.flatnonzero(np.r_[True, (host[1:] != host[:-1]) | (time[1:] != time[:-1])])
    ends = np.r_[starts[1:], len(rows)]
    rec_host, rec_time = host[starts], time[starts]
    rec_prev = nanoseconds(frame["previous_observed_at"].iloc[rows[starts]])
    follows = np.r_[False, rec_host[1:] == rec_host[:-1]]
    before = np.r_[UNKNOWN_NS, rec_time[:-1]]
    need = np.flatnonzero(follows & (rec_prev != UNKNOWN_NS) & (rec_prev > before) & (rec_prev < rec_time))
    if not len(need):
        return frame
    source = need - 1  # the host's previous record: the document that poll still saw
    counts = ends[source] - starts[source]
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    copies = frame.iloc[rows[np.repeat(starts[source], counts) + offsets]].copy()
    copies["observed_at"] = pd.to_datetime(np.repeat(rec_prev[need], counts), utc=True).as_unit(
        frame["observed_at"].dt.unit)
    copies["previous_observed_at"] = pd.NaT
    copies["reconstructed"] = True
    merged = pd.concat([frame, copies], ignore_index=True)
    return merged.sort_values(["host", "observed_at"], kind="stable").reset_index(drop=True)


def series_resolution(frame: pd.DataFrame) -> Dict[str, str]:
    """Each host's series: `change-only` (a relay's records, rebuilt per poll) or `per-poll`."""
    observations = frame[frame["record"] == OBSERVATION]
    change_only = observations.groupby("host", observed=True)["previous_observed_at"].agg(lambda s: s.notna().any())
    return {str(host): CHANGE_ONLY if flag else PER_POLL for host, flag in change_only.items()}
