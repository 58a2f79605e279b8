"""event_endings: how events ended, where Azure's control plane says it (Resource Graph reads, source control_plane).

IMDS only stops listing an event, so a history of IMDS reads infers an ending (event_lifecycles' `outcome`); a host
read through the control plane also sees `Completed` or `Canceled`. One row per (event, host) whose reads showed
the end: when the host first saw the event, when a read first showed its end, and the seconds between (the
notice and the maintenance together, as far as the reads tell).
"""
from __future__ import annotations

from typing import Optional

import pandas as pd

from event_analysis.loading.history import report_of
from event_analysis.loading.schema import OBSERVATION
from event_analysis.analyses.lifecycles import ENDED_STATUSES

ENDING_COLUMNS = ("event_id", "host", "event_type", "ended_status", "first_seen", "ended_seen", "first_seen_to_end_s")


def event_endings(observations: pd.DataFrame, *, time_scale: Optional[float] = None) -> pd.DataFrame:
    """One row per (event, host) a read showed ended, with the time from the host's first sight of the event."""
    scale = float(time_scale if time_scale is not None else report_of(observations).time_scale)
    reads = observations[(observations["record"] == OBSERVATION) & observations["event_id"].notna()]
    reads = reads.assign(event_id=reads["event_id"].astype(str), host=reads["host"].astype(str),
                         event_status=reads["event_status"].astype(str)).sort_values("observed_at", kind="stable")
    ended = reads[reads["event_status"].isin(list(ENDED_STATUSES))].drop_duplicates(["event_id", "host"])
    if ended.empty:
        return no_endings()
    first = reads.drop_duplicates(["event_id", "host"]).set_index(["event_id", "host"])["observed_at"]
    out = pd.DataFrame({
        "event_id": ended["event_id"].to_numpy(), "host": ended["host"].to_numpy(),
        "event_type": ended["event_type"].astype(str).to_numpy(), "ended_status": ended["event_status"].to_numpy(),
        "first_seen": first.reindex(pd.MultiIndex.from_frame(ended[["event_id", "host"]])).to_numpy(),
        "ended_seen": ended["observed_at"].to_numpy(),
    })
    out["first_seen_to_end_s"] = (out["ended_seen"] - out["first_seen"]).dt.total_seconds() * scale
    return out[list(ENDING_COLUMNS)]


def no_endings() -> pd.DataFrame:
    """The endings of a history without control-plane reads: none."""
    return pd.DataFrame({name: pd.Series(dtype="object") for name in ENDING_COLUMNS})


def endings_summary(endings: pd.DataFrame) -> pd.DataFrame:
    """Per ending (Completed, Canceled): how many events, their share, and the seconds from first sight to the end."""
    if not len(endings):
        return pd.DataFrame()
    per_event = endings.sort_values("first_seen_to_end_s").drop_duplicates("event_id")
    grouped = per_event.groupby("ended_status")["first_seen_to_end_s"]
    summary = pd.DataFrame({"events": grouped.size(), "share": grouped.size() / len(per_event),
                            "first_seen_to_end_s_min": grouped.min(), "first_seen_to_end_s_median": grouped.median(),
                            "first_seen_to_end_s_max": grouped.max()})
    return summary.round({"share": 3, "first_seen_to_end_s_median": 1})


def cancellation_rate(endings: pd.DataFrame) -> float:
    """The share of ended events (each counted once, whatever host saw it) that were cancelled; NaN for none."""
    per_event = endings.drop_duplicates("event_id")["ended_status"]
    return float((per_event == "Canceled").mean()) if len(per_event) else float("nan")
