"""Fault-domain serialisation: maintenance windows per domain, overlaps across domains, the walk order.

Azure documents that routine (platform) maintenance never has VMs of two fault domains in
maintenance at once; it walks them one after the other. These functions check that on a
history, within each set (`vm_set`, event_analysis/analyses/sets.py: fault domain 0 of two availability
sets are two different racks). A VM is "in maintenance" from the start of a Started event to
its removal; from polls that is known as a certain part [started_seen, last_seen] and a possible
part (started_after, gone_at].
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from event_analysis.loading.timestamps import nanoseconds

CERTAIN, POSSIBLE = "certain", "possible"
_DOMAINS = ("fault_domain", "update_domain")
_WINDOW_MOMENTS = ("start_after", "start", "end_after", "end", "scheduled_after", "scheduled_seen")


def maintenance_intervals(lifecycles: pd.DataFrame, by: str = "fault_domain",
                          sources: Optional[Sequence[str]] = ("Platform",), include_no_notice: bool = False) -> pd.DataFrame:
    """The lifecycles that put a VM in maintenance, with their certain and possible intervals."""
    if by not in _DOMAINS:
        raise ValueError(f"by must be one of {', '.join(_DOMAINS)}, got {by!r}.")
    keep = lifecycles["started_seen"].notna() & lifecycles[by].notna()
    if sources is not None:
        keep &= lifecycles["event_source"].isin(list(sources)).fillna(False)
    if not include_no_notice:  # events first seen Started: hardware failures, not routine maintenance
        keep &= ~lifecycles["first_seen_started"].astype(bool)
    rows = lifecycles.loc[keep].copy()
    if "vm_set" not in rows:  # lifecycles from before sets were told apart: one set
        rows["vm_set"] = ""
    rows["vm_set"] = rows["vm_set"].fillna("").astype(str)
    rows["certain_start"], rows["certain_end"] = rows["started_seen"], rows["last_seen"]
    rows["possible_start"] = rows["started_after"].fillna(rows["started_seen"])
    rows["possible_end"] = rows["gone_at"].fillna(rows["last_seen"])
    return rows.reset_index(drop=True)


def fault_domain_windows(lifecycles: pd.DataFrame, by: str = "fault_domain",
                         sources: Optional[Sequence[str]] = ("Platform",), include_no_notice: bool = False) -> pd.DataFrame:
    """One row per maintenance window of a domain: overlapping in-maintenance intervals of its VMs merged.

    `start`/`end`: first poll that saw a VM of the domain Started / the last of them gone;
    `start_after`/`end_after`: the polls before, so the true start is in (start_after, start]
    and the true end in (end_after, end]. `scheduled_seen`/`scheduled_after` bound when the
    window's first event appeared. By default only platform events that gave notice count
    (routine maintenance); user actions and hardware failures are not serialised. A domain is
    a domain of one set (`vm_set`).
    """
    rows = maintenance_intervals(lifecycles, by, sources, include_no_notice)
    columns = [by, "vm_set", "start_after", "start", "end_after", "end", "scheduled_after", "scheduled_seen", "events", "vms"]
    if rows.empty:
        empty = pd.DataFrame({c: pd.Series(dtype="datetime64[ns, UTC]" if c in _WINDOW_MOMENTS else
                                           "string" if c == "vm_set" else "Int64") for c in columns})
        empty.attrs["time_scale"] = lifecycles.attrs.get("time_scale", 1.0)
        empty.attrs["simulated"] = lifecycles.attrs.get("simulated", False)
        return empty
    rows = rows.sort_values(["vm_set", by, "possible_start"], kind="stable").reset_index(drop=True)
    lo, hi = nanoseconds(rows["possible_start"]), nanoseconds(rows["possible_end"])
    domain = _domain_codes(rows, by)
    reach = pd.Series(hi).groupby(domain).cummax().to_numpy()
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (domain[1:] != domain[:-1]) | (lo[1:] > reach[:-1])
    rows["window"] = np.cumsum(new)
    windows = rows.groupby("window").agg(
        domain=(by, "first"), vm_set=("vm_set", "first"), start_after=("possible_start", "min"),
        start=("started_seen", "min"), end_after=("last_seen", "max"), end=("possible_end", "max"),
        scheduled_after=("appeared_after", "min"), scheduled_seen=("first_seen", "min"),
        events=("event_id", "nunique"), vms=("vm", "nunique"))
    windows = windows.rename(columns={"domain": by}).sort_values("start", kind="stable").reset_index(drop=True)
    windows["vm_set"] = windows["vm_set"].astype("string")
    windows.attrs["time_scale"] = lifecycles.attrs.get("time_scale", 1.0)
    windows.attrs["simulated"] = lifecycles.attrs.get("simulated", False)
    return windows[columns]


def domain_overlaps(lifecycles: pd.DataFrame, by: str = "fault_domain",
                    sources: Optional[Sequence[str]] = ("Platform",), include_no_notice: bool = False) -> pd.DataFrame:
    """Pairs of lifecycles of different domains in maintenance at the same time.

    `kind` is `certain` when both were seen Started at overlapping moments (a violation of
    serialisation), `possible` when only the poll intervals around them overlap (the polls
    are too sparse to tell) or when either lifecycle's id was reused (`id_reused`: it spans two
    events, so its seen interval is not one event's). Only domains of one set (`vm_set`) can overlap.
    """
    rows = maintenance_intervals(lifecycles, by, sources, include_no_notice)
    rows = rows.sort_values("possible_start", kind="stable").reset_index(drop=True)
    first, second = _overlapping_pairs(rows)
    domain = rows[by].to_numpy(dtype=np.int64)
    other = domain[first] != domain[second]
    first, second = first[other], second[other]
    c_lo, c_hi = nanoseconds(rows["certain_start"]), nanoseconds(rows["certain_end"])
    certain = np.maximum(c_lo[first], c_lo[second]) <= np.minimum(c_hi[first], c_hi[second])
    if "id_reused" in rows:  # a lifecycle that spans two events of one id is no evidence of either's interval
        reused = rows["id_reused"].to_numpy(dtype=bool)
        certain &= ~(reused[first] | reused[second])
    needed = rows[["vm_set", by, "vm", "event_id", "possible_start", "possible_end"]]  # not every column, per pair
    a, b = needed.iloc[first].reset_index(drop=True), needed.iloc[second].reset_index(drop=True)
    return pd.DataFrame({
        "kind": pd.Categorical(np.where(certain, CERTAIN, POSSIBLE), categories=(CERTAIN, POSSIBLE)),
        "vm_set": a["vm_set"].astype("string"), f"{by}_a": a[by], "vm_a": a["vm"], "event_a": a["event_id"],
        f"{by}_b": b[by], "vm_b": b["vm"], "event_b": b["event_id"],
        "from": pd.concat([a["possible_start"], b["possible_start"]], axis=1).max(axis=1),
        "until": pd.concat([a["possible_end"], b["possible_end"]], axis=1).min(axis=1),
    })


def _overlapping_pairs(rows: pd.DataFrame) -> Tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j) of rows (sorted by possible_start), i < j, of one set whose possible intervals overlap;
    in (i, j) order. Sweeping each set on its own keeps the candidates to what one set has in maintenance at
    once: a fleet's sets walk their domains at the same time, and pairs across them would be most of it."""
    sets = pd.factorize(rows["vm_set"])[0]
    order = np.lexsort((np.arange(len(rows)), sets))  # by set, then start order (rows are in start order)
    lo, hi = nanoseconds(rows["possible_start"])[order], nanoseconds(rows["possible_end"])[order]
    bounds = np.flatnonzero(np.r_[True, sets[order][1:] != sets[order][:-1], True])
    stop = np.concatenate([begin + np.searchsorted(lo[begin:end], hi[begin:end], side="left")
                           for begin, end in zip(bounds[:-1], bounds[1:])]) if len(rows) else np.zeros(0, np.int64)
    counts = np.maximum(stop - np.arange(len(rows)) - 1, 0)
    first = np.repeat(np.arange(len(rows)), counts)
    second = first + 1 + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    first, second = order[first], order[second]
    ranked = np.lexsort((second, first))
    return first[ranked], second[ranked]


def domain_walk(windows: pd.DataFrame, by: str = "fault_domain") -> pd.DataFrame:
    """The windows in time order, each with the domain of its set before it and the gap from that
    domain's end to this window's first Scheduled sighting, as [gap_s_min, gap_s_max] (negative =
    this domain was already scheduled while the previous one was in maintenance)."""
    walk = windows.sort_values("start", kind="stable").reset_index(drop=True)
    scale = float(windows.attrs.get("time_scale", 1.0))
    previous = walk.groupby(_sets_of(walk), sort=False).shift(1)
    walk.insert(1, f"previous_{by}", previous[by].astype("Int64"))
    walk["gap_s_min"] = ((walk["scheduled_after"] - previous["end"]).dt.total_seconds() * scale).astype("Float64")
    walk["gap_s_max"] = ((walk["scheduled_seen"] - previous["end_after"]).dt.total_seconds() * scale).astype("Float64")
    return walk


def walk_order(windows: pd.DataFrame, by: str = "fault_domain") -> str:
    """The domains in the order they were walked, e.g. `0 -> 1 -> 2 -> 0`; with several sets, one walk per
    set: `avset-a-vm0's set: 0 -> 1; avset-b-vm0's set: 0`."""
    ordered = windows.sort_values("start", kind="stable")
    walks = dict((name, " -> ".join(str(int(d)) for d in group[by]))
                 for name, group in ordered.groupby(_sets_of(ordered), sort=False))
    if len(walks) <= 1:
        return next(iter(walks.values()), "")
    return "; ".join(f"{name}: {walk}" for name, walk in sorted(walks.items()))


def _sets_of(frame: pd.DataFrame) -> pd.Series:
    return frame["vm_set"].fillna("").astype(str) if "vm_set" in frame else pd.Series("", index=frame.index)


def _domain_codes(rows: pd.DataFrame, by: str) -> np.ndarray:
    """One code per (set, domain): a domain is a domain of one set."""
    return pd.factorize(rows["vm_set"] + "\x00" + rows[by].astype(str))[0].astype(np.int64)
