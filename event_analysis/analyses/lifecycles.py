"""event_lifecycles: one row per (event, VM), every poll-derived time carried as an interval.

A host's polls are a series t[0] < t[1] < ...; an event first seen at poll k appeared after
t[k-1] and at or before t[k]. So every moment gets two columns: the poll that saw it (upper
bound) and the poll before (`*_after`, lower bound), and every duration a `_min` and a `_max`.
Polls that got an empty document (IMDS answered 200 without a body) say nothing about which
events exist, so they are not part of the series.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from event_analysis.loading.history import report_of
from event_analysis.loading.schema import APPROVAL, OBSERVATION
from event_analysis.analyses.sets import vm_sets
from event_analysis.loading.timestamps import nanoseconds

COMPLETED, CANCELLED, OPEN = "completed", "cancelled", "open"
OUTCOMES = (COMPLETED, CANCELLED, OPEN)
# The statuses only the control plane shows (Resource Graph reads: source control_plane); IMDS stops listing an
# event instead. A row of one is no sighting of the event, and it tells the outcome outright.
ENDED_STATUSES = {"Completed": COMPLETED, "Canceled": CANCELLED}
_NS = 1e9
LIFECYCLE_COLUMNS = (
    "event_id", "host", "vm", "fault_domain", "update_domain", "vm_set", "event_type", "event_source", "resource_type",
    "resources", "description", "duration_s", "outcome", "appeared_before_capture", "first_seen_started", "polls",
    "id_reused",
    "appeared_after", "first_seen", "not_before_first", "not_before", "last_scheduled",
    "started_after", "started_seen", "last_seen", "gone_at",
    "notice_s_min", "notice_s_max", "scheduled_s_min", "scheduled_s_max",
    "started_to_gone_s_min", "started_to_gone_s_max", "poll_interval_s", "impact_s_min", "impact_s_max",
    "approved", "approved_at", "approved_by",
)


class _Polls:
    """The informative polls of every host, sorted by host then time, with each poll's neighbours."""

    def __init__(self, observations: pd.DataFrame):
        informative = (observations["record"] == OBSERVATION).to_numpy() & observations["document_incarnation"].notna().to_numpy()
        rows = observations.loc[informative, ["host", "observed_at", "reconstructed", "poll_interval_s"]]
        host = rows["host"].cat.codes.to_numpy() if hasattr(rows["host"], "cat") else pd.factorize(rows["host"])[0]
        time = nanoseconds(rows["observed_at"])
        new = np.ones(len(rows), dtype=bool)
        new[1:] = (host[1:] != host[:-1]) | (time[1:] != time[:-1])
        self.row_poll = np.full(len(observations), -1, dtype=np.int64)
        self.row_poll[np.flatnonzero(informative)] = np.cumsum(new) - 1
        self.time, self.host = time[new], host[new]
        same_prev = np.zeros(len(self.time), dtype=bool)
        same_prev[1:] = self.host[1:] == self.host[:-1]
        self.prev = np.where(same_prev, np.roll(self.time, 1), np.iinfo(np.int64).min)
        same_next = np.zeros(len(self.time), dtype=bool)
        same_next[:-1] = same_prev[1:]
        self.next = np.where(same_next, np.roll(self.time, -1), np.iinfo(np.int64).min)
        # A reconstructed poll (change-only history) ends a stretch the relay kept polling: no silence.
        reconstructed = rows["reconstructed"].to_numpy(dtype=bool)[new]
        self.gap = np.where(same_prev & ~reconstructed, self.time - self.prev, 0)
        self.interval = _median_interval(self.host, self.gap, same_prev & ~reconstructed)
        # A change-only series has few gaps, outages among them: the relay's own poll interval is the truth.
        recorded = pd.Series(rows["poll_interval_s"].to_numpy(dtype="float64", na_value=np.nan) * _NS).groupby(host).max()
        known = recorded.dropna()
        self.interval[known.index.to_numpy()] = known.to_numpy()
        # The retired watch long-polled: a round kept only its last document, so a gap between two of its records
        # says nothing of how long the VM was silent within it (a 7 s reboot read as 46 to 389 s "certain"). Its
        # hosts are known by the watch's trigger on their action and approval records.
        watched = observations.loc[observations["trigger"].astype("string").eq("watch").fillna(False).to_numpy(
            dtype=bool), "host"].astype(str).unique() if "trigger" in observations.columns else []
        self.long_polled = np.zeros(len(self.interval), dtype=bool)
        codes = pd.Series(np.arange(len(rows)), index=rows["host"].astype(str).to_numpy())
        for name in watched:
            if name in codes.index:
                self.long_polled[host[int(np.atleast_1d(codes.loc[name])[0])]] = True

    def stamp(self, values: np.ndarray) -> pd.Series:
        """int64 ns (min int = unknown) -> UTC timestamps (NaT)."""
        return pd.Series(pd.to_datetime(np.where(values == np.iinfo(np.int64).min, np.datetime64("NaT"),
                                                 values.view("datetime64[ns]")), utc=True))


def _median_interval(host: np.ndarray, gap: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each host's median gap between polls, in ns, indexed by host code."""
    medians = pd.Series(gap[valid]).groupby(host[valid]).median()
    out = np.zeros(host.max() + 1 if len(host) else 0, dtype=np.float64)
    out[medians.index.to_numpy()] = medians.to_numpy()
    return out


def _ordered(observations: pd.DataFrame) -> pd.DataFrame:
    host = observations["host"].astype("category")
    codes = host.cat.codes.to_numpy()
    time = nanoseconds(observations["observed_at"])
    if len(codes) > 1 and not np.all((codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (time[1:] >= time[:-1]))):
        observations = observations.sort_values(["host", "observed_at"], kind="stable")
    return observations.assign(host=observations["host"].astype("category")).reset_index(drop=True)


def event_lifecycles(observations: pd.DataFrame, *, time_scale: Optional[float] = None,
                     affected_only: bool = True) -> pd.DataFrame:
    """One row per (event, VM that observed it): what was seen when, as intervals, and the outcome.

    `time_scale` turns durations measured on a time-compressed simulator back into the
    seconds they stand for (default: what the history's sidecar says, else 1).
    With `affected_only` (default), a VM's row exists only for events whose `Resources` list it.
    """
    scale = float(time_scale if time_scale is not None else report_of(observations).time_scale)
    observations = _ordered(observations)
    polls = _Polls(observations)
    seen = (observations["record"] == OBSERVATION).to_numpy() & observations["event_id"].notna().to_numpy()
    seen &= polls.row_poll >= 0
    ended = seen & observations["event_status"].isin(list(ENDED_STATUSES)).to_numpy()
    seen &= ~ended
    if affected_only:
        seen &= observations["affects_vm"].to_numpy(dtype=bool)
    rows = observations.loc[seen].reset_index(drop=True)
    if rows.empty:
        return no_lifecycles(scale)
    poll = polls.row_poll[seen]
    event_code = rows["event_id"].astype("category").cat.codes.to_numpy().astype(np.int64)
    key = pd.factorize(event_code * (len(rows["host"].cat.categories) + 1) + rows["host"].cat.codes.to_numpy())[0]
    order = np.lexsort((poll, key))
    key, poll, rows = key[order], poll[order], rows.iloc[order].reset_index(drop=True)
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    last = np.r_[first[1:] - 1, len(key) - 1]
    status = rows["event_status"].astype(str).to_numpy()
    started = _first_per_group(key, poll, status == "Started", len(first), np.min)
    scheduled = _first_per_group(key, poll, status == "Scheduled", len(first), np.max)
    sched_row = _first_per_group(key, np.arange(len(key)), status == "Scheduled", len(first), np.max)

    head = rows.iloc[first].reset_index(drop=True)
    out = pd.DataFrame({
        "event_id": head["event_id"].astype(str), "host": head["host"].astype(str), "vm": head["vm"].astype(str),
        "event_type": head["event_type"].astype(str), "event_source": head["event_source"].astype("string"),
        "resource_type": head["resource_type"].astype("string"), "resources": head["resources"].astype("string"),
        "description": head["description"].astype("string"),
        "fault_domain": head["fault_domain"], "update_domain": head["update_domain"],
        "duration_s": head["duration_s"].astype("Float64"),
        "polls": last - first + 1,
    })
    first_poll, last_poll = poll[first], poll[last]
    # IMDS never lists an event again once it has left a VM's document: polls between its first and last sighting
    # that did not list it mean two events under one id (separate simulator runs with one seed, appended).
    distinct_polls = np.add.reduceat(np.r_[True, (poll[1:] != poll[:-1]) | (key[1:] != key[:-1])], first)
    out["id_reused"] = last_poll - first_poll + 1 > distinct_polls
    has_started, has_scheduled = started >= 0, scheduled >= 0
    unknown = np.iinfo(np.int64).min
    at = {
        "appeared_after": polls.prev[first_poll], "first_seen": polls.time[first_poll],
        "last_scheduled": np.where(has_scheduled, polls.time[np.maximum(scheduled, 0)], unknown),
        "started_after": np.where(has_started, polls.prev[np.maximum(started, 0)], unknown),
        "started_seen": np.where(has_started, polls.time[np.maximum(started, 0)], unknown),
        "last_seen": polls.time[last_poll], "gone_at": polls.next[last_poll],
    }
    for name, values in at.items():
        out[name] = polls.stamp(values)
    not_before = rows["not_before"]
    out["not_before_first"] = not_before.iloc[first].reset_index(drop=True)
    last_declared = rows["not_before"].iloc[np.maximum(sched_row, 0)].reset_index(drop=True)
    out["not_before"] = last_declared.where(pd.Series(has_scheduled))
    out["vm_set"] = out["vm"].map(vm_sets(observations)).astype("string")  # fault domains mean something per set
    out["appeared_before_capture"] = out["appeared_after"].isna()
    # Already Started at the first poll that listed it: any Scheduled phase fell between two polls (or before
    # the capture). What that says about its notice is notice_check's verdict, not an outcome.
    out["first_seen_started"] = started == first_poll
    out["outcome"] = _outcomes(has_started, out["gone_at"].notna().to_numpy())
    told = _told_outcomes(observations.loc[ended], out)
    out["outcome"] = pd.Categorical(told.fillna(out["outcome"].astype(str)), categories=OUTCOMES)
    _add_durations(out, polls, started, first_poll, last_poll, has_started, scale)
    result = _bound_unseen_notice(_add_approvals(out, observations))[list(LIFECYCLE_COLUMNS)]
    result.attrs["time_scale"] = scale
    result.attrs["simulated"] = report_of(observations).simulated  # every figure drawn from it says so
    return result


def _first_per_group(key: np.ndarray, values: np.ndarray, mask: np.ndarray, groups: int, reduce) -> np.ndarray:
    """Per group (keys 0..groups-1), min or max of `values` where `mask`; -1 where none."""
    out = np.full(groups, -1, dtype=np.int64)
    if mask.any():
        series = pd.Series(values[mask]).groupby(key[mask])
        agg = series.min() if reduce is np.min else series.max()
        out[agg.index.to_numpy()] = agg.to_numpy()
    return out


def _told_outcomes(ended_rows: pd.DataFrame, out: pd.DataFrame) -> pd.Series:
    """The outcome the control plane told (Completed or Canceled) per row of `out`, else missing: it knows an event
    that started and ended between two reads, which the poll series alone takes for a cancellation."""
    first = ended_rows.drop_duplicates(["event_id", "host"])
    told = pd.Series(first["event_status"].astype(str).to_numpy(), index=pd.MultiIndex.from_arrays(
        [first["event_id"].astype(str).to_numpy(), first["host"].astype(str).to_numpy()]))
    keys = pd.MultiIndex.from_arrays([out["event_id"], out["host"]])
    return pd.Series(told.reindex(keys).map(ENDED_STATUSES).to_numpy(), index=out.index, dtype="object")


def _outcomes(has_started: np.ndarray, gone: np.ndarray) -> pd.Categorical:
    """What happened: gone after Started (completed), gone while Scheduled (cancelled), still there (open)."""
    outcome = np.where(~gone, OPEN, np.where(has_started, COMPLETED, CANCELLED))
    return pd.Categorical(outcome, categories=OUTCOMES)


def _seconds(later: pd.Series, earlier: pd.Series, scale: float) -> pd.Series:
    return ((later - earlier).dt.total_seconds() * scale).astype("Float64")


def _add_durations(out: pd.DataFrame, polls: _Polls, started: np.ndarray, first_poll: np.ndarray,
                   last_poll: np.ndarray, has_started: np.ndarray, scale: float) -> None:
    """Notice, time in Scheduled, Started-to-gone and impact, each as [min, max] seconds."""
    out["notice_s_min"] = _seconds(out["not_before_first"], out["first_seen"], scale)
    out["notice_s_max"] = _seconds(out["not_before_first"], out["appeared_after"], scale)
    # Scheduled until it started, or (cancelled) until it was gone.
    end_lo = out["started_after"].where(pd.Series(has_started), out["last_seen"])
    end_hi = out["started_seen"].where(pd.Series(has_started), out["gone_at"])
    out["scheduled_s_min"] = _seconds(end_lo, out["first_seen"], scale).clip(lower=0)
    out["scheduled_s_max"] = _seconds(end_hi, out["appeared_after"], scale)

    out["started_to_gone_s_min"] = _seconds(out["last_seen"], out["started_seen"], scale).clip(lower=0)
    out["started_to_gone_s_max"] = _seconds(out["gone_at"], out["started_after"], scale)
    _add_impact(out, polls, started, first_poll, last_poll, has_started, scale)


def _add_impact(out: pd.DataFrame, polls: _Polls, started: np.ndarray, first_poll: np.ndarray,
                last_poll: np.ndarray, has_started: np.ndarray, scale: float) -> None:
    """The longest silence (gap between answered polls) while Started, as impact bounds.

    With polls every p seconds, an outage of d seconds leaves a gap g with d <= g < d + 2p,
    so d lies in (g - 2p, g]; p is the host's median gap. No outage at all leaves g = p.
    """
    begin = np.maximum(started, 0)
    end = np.minimum(last_poll + 2, len(polls.gap))  # through the poll that saw it gone
    gaps = np.zeros(len(begin))
    valid = has_started & (end > begin)
    if valid.any():
        padded = np.append(polls.gap, 0)
        bounds = np.ravel(np.column_stack((begin[valid], end[valid])))
        gaps[valid] = np.maximum.reduceat(padded, bounds)[::2]
    interval = polls.interval[polls.host[first_poll]]
    silence = pd.Series(np.where(valid, gaps, np.nan) / _NS * scale, dtype="Float64")
    out["poll_interval_s"] = pd.Series(interval / _NS * scale, dtype="Float64")
    out["impact_s_min"] = (silence - 2 * out["poll_interval_s"]).clip(lower=0)
    # A long poll's host: no lower bound can be drawn from its gaps (the upper one still holds).
    out.loc[pd.Series(polls.long_polled[polls.host[first_poll]]) & silence.notna(), "impact_s_min"] = 0.0
    out["impact_s_max"] = silence


def _add_approvals(out: pd.DataFrame, observations: pd.DataFrame) -> pd.DataFrame:
    """When each event was first approved, and by whom, from approval records."""
    approvals = observations.loc[observations["record"] == APPROVAL, ["event_id", "observed_at", "host"]]
    first = approvals.sort_values("observed_at", kind="stable").drop_duplicates("event_id")
    first = first.rename(columns={"observed_at": "approved_at", "host": "approved_by"})
    first = first.assign(event_id=first["event_id"].astype(str), approved_by=first["approved_by"].astype("string"))
    merged = out.merge(first, on="event_id", how="left")
    merged.insert(merged.columns.get_loc("approved_at"), "approved", merged["approved_at"].notna())
    return merged


def _bound_unseen_notice(out: pd.DataFrame) -> pd.DataFrame:
    """Notice bounds of the events first seen Started, which served no NotBefore to the history.

    Such an event appeared and started between two polls: it was Scheduled for [0, gap] seconds, and that is
    its notice if it started at NotBefore. An approval before it was seen may have started it early, so its
    notice is then only known to be >= 0. Before the capture began, the gap is unbounded too.
    """
    first_started = out["first_seen_started"].to_numpy(dtype=bool)
    approved_early = (out["approved_at"] <= out["first_seen"]).fillna(False).to_numpy(dtype=bool)
    out.loc[first_started, "notice_s_min"] = 0.0
    out.loc[first_started, "notice_s_max"] = out.loc[first_started, "scheduled_s_max"]
    out.loc[first_started & approved_early, "notice_s_max"] = pd.NA
    return out


_MOMENTS = ("appeared_after", "first_seen", "not_before_first", "not_before", "last_scheduled", "started_after",
            "started_seen", "last_seen", "gone_at", "approved_at")


def no_lifecycles(scale: float) -> pd.DataFrame:
    """No lifecycles, with the column types a non-empty result has, so that callers need no special case."""
    def dtype(name: str) -> str:
        if name in _MOMENTS:
            return "datetime64[ns, UTC]"
        if name.endswith("_s") or "_s_" in name or name.endswith("_domain"):
            return "Float64"
        return "bool" if name in ("approved", "appeared_before_capture", "first_seen_started", "id_reused") else "object"
    frame = pd.DataFrame({name: pd.Series(dtype=dtype(name)) for name in LIFECYCLE_COLUMNS})
    frame.attrs["time_scale"] = scale
    return frame
