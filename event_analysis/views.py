"""What a notebook (or `python -m event_analysis summary`) works on: a history opened, sliced, described.

`open_history` takes a history file, glob or list, or a partitioned folder (partitioned.py), applies the
notebooks' parameters (start, end, hosts) and returns the description and the lifecycles (and, if asked,
the reaction table). A partitioned folder is read one part at a time, so its memory is one part's; whatever
was opened, the results and the description are the same (tests/analysis/test_partitioned.py).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Set, Union

import numpy as np
import pandas as pd

from event_analysis.loading import partitioned
from event_analysis.analyses import sets
from event_analysis.loading.history import LoadReport, load_history, report_of
from event_analysis.analyses.endings import event_endings, no_endings
from event_analysis.analyses.lifecycles import event_lifecycles, no_lifecycles
from event_analysis.analyses.reaction import approvals_unneeded, no_reaction, reaction_table
from event_analysis.loading.sources import DEMO_HISTORY

TimeLike = Union[str, pd.Timestamp, None]
Hosts = Optional[Union[str, Iterable[str]]]


def _utc(value: TimeLike) -> Optional[pd.Timestamp]:
    """An ISO 8601 string (or Timestamp) as UTC; a time without a zone is taken to be UTC already."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    stamp = pd.Timestamp(value)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _host_list(hosts: Hosts) -> Optional[List[str]]:
    return None if hosts is None else ([hosts] if isinstance(hosts, str) else [str(h) for h in hosts])


def select(obs: pd.DataFrame, start: TimeLike = None, end: TimeLike = None, hosts: Hosts = None) -> pd.DataFrame:
    """The rows of an observations frame with `start <= observed_at < end`, polled by `hosts`.

    The notebooks' parameters are applied here so that every analysis sees the same slice.
    Approval records are kept when they approve an event the selected hosts saw, whoever
    sent them: a VM's event was approved even if its approver is not selected. `attrs` (the
    LoadReport, hence the time scale) are copied, because the lifecycles need them.
    Note that a window cuts events at its edges: an event under way at `start` looks as if
    it appeared before the capture, and one under way at `end` looks open.
    """
    low, high = _utc(start), _utc(end)
    if low is not None and high is not None and high <= low:
        raise ValueError(f"end ({high}) must be after start ({low}).")
    keep = np.ones(len(obs), dtype=bool)
    if low is not None:
        keep &= (obs["observed_at"] >= low).to_numpy(dtype=bool)
    if high is not None:
        keep &= (obs["observed_at"] < high).to_numpy(dtype=bool)
    wanted = _host_list(hosts)
    if wanted is not None:
        unknown = sorted(set(wanted) - set(obs["host"].astype(str).unique()))
        if unknown:
            warnings.warn(f"no observations from host(s) {', '.join(unknown)} in this history.", stacklevel=2)
        approval = (obs["record"] != "observation").to_numpy(dtype=bool)   # approvals and actions
        polled = keep & ~approval & obs["host"].isin(wanted).to_numpy(dtype=bool)
        seen = set(obs.loc[polled, "event_id"].dropna().astype(str))
        keep &= polled | (approval & obs["event_id"].astype(str).isin(seen).to_numpy(dtype=bool))
    out = obs.loc[keep].reset_index(drop=True)
    out.attrs = dict(obs.attrs)
    return out


def describe(obs: pd.DataFrame) -> str:
    """What the analysis is looking at: the load report, whether it is SIMULATED, and the span selected.

    A simulated history must never be mistaken for Azure's behaviour, and a time-compressed
    one must be read in the seconds it stands for, so both are said first.
    """
    lines = _report_lines(report_of(obs))
    return "\n".join(lines + [Span.of(obs).sentence()])


@dataclass
class Span:
    """What a selection holds: polls, hosts, first and last poll, distinct events; parts of one add up."""
    polls: int = 0
    hosts: int = 0
    first: Optional[pd.Timestamp] = None
    last: Optional[pd.Timestamp] = None
    events: Set[str] = field(default_factory=set)

    @classmethod
    def of(cls, obs: pd.DataFrame) -> "Span":
        polls = obs[obs["record"] == "observation"]
        if polls.empty:
            return cls()
        return cls(len(polls.drop_duplicates(["host", "observed_at"])), polls["host"].nunique(),
                   polls["observed_at"].min(), polls["observed_at"].max(), set(obs["event_id"].dropna().astype(str)))

    def add(self, other: "Span") -> None:
        """Add a span of other hosts (a part of a partitioned history holds each host whole)."""
        if not other.polls:
            return
        self.polls += other.polls
        self.hosts += other.hosts
        self.first = other.first if self.first is None else min(self.first, other.first)
        self.last = other.last if self.last is None else max(self.last, other.last)
        self.events |= other.events

    def sentence(self) -> str:
        if not self.polls:
            return "no observations in the selected window and hosts."
        return (f"selected: {self.polls} polls by {self.hosts} host(s) from {self.first:%Y-%m-%d %H:%M:%S} to "
                f"{self.last:%Y-%m-%d %H:%M:%S} UTC, {len(self.events)} distinct event(s).")


def _report_lines(report: LoadReport) -> List[str]:
    lines = [f"history: {', '.join(report.files) or '(not from a file)'}", f"load report: {report.summary()}"]
    for bad in report.examples[:3]:
        lines.append(f"  e.g. {bad.file}:{bad.line} ({bad.reason}): {bad.text[:80]}")
    if report.simulated:
        lines.append("SIMULATED data: generated by the IMDS simulator, not captured from Azure; it shows the "
                     "simulator's model of Scheduled Events, not Azure's behaviour.")
    if report.time_scale != 1:
        lines.append(f"time scale {report.time_scale:g}: durations are shown in the seconds they stand for "
                     f"(measured seconds x {report.time_scale:g}); timestamps are the recording's own clock.")
    if str(DEMO_HISTORY) in report.files and not report.simulated:
        lines.append("note: this is the `make demo` capture, which is SIMULATED and time-compressed, but it has no "
                     ".meta.json sidecar: its durations are in compressed seconds (scale unknown here).")
    return lines


# ----------------------------------------------------------------- opening a history

@dataclass
class HistoryView:
    """A history as the notebooks use it: what was read (description, report), its lifecycles, and its
    reaction table when asked for (None otherwise)."""
    description: str
    report: LoadReport
    lifecycles: pd.DataFrame
    reaction: Optional[pd.DataFrame] = None
    endings: Optional[pd.DataFrame] = None  # how events ended, where control-plane reads told it (endings.py)


def open_history(history: Union[str, Sequence[str]], start: TimeLike = None, end: TimeLike = None,
                 hosts: Hosts = None, *, reaction: bool = False) -> HistoryView:
    """Load a history (or a partitioned folder, part by part), select [start, end) and `hosts` as `select`
    does, and compute its lifecycles (and reaction table)."""
    if isinstance(history, str) and partitioned.is_partitioned(history):
        return _open_partitioned(partitioned.open_partitioned(history), start, end, _host_list(hosts), reaction)
    obs = select(load_history(history), start, end, hosts)
    lifecycles = event_lifecycles(obs)
    return HistoryView(describe(obs), report_of(obs), lifecycles, reaction_table(obs, lifecycles) if reaction else None,
                       event_endings(obs))


def _open_partitioned(target: partitioned.Partitioned, start: TimeLike, end: TimeLike, wanted: Optional[List[str]],
                      reaction: bool) -> HistoryView:
    report, span, seen_hosts = target.report, Span(), set()
    lifecycles: List[pd.DataFrame] = []
    reactions: List[pd.DataFrame] = []
    endings: List[pd.DataFrame] = []
    evidence: List[pd.DataFrame] = []
    for frame in partitioned.read_parts(target, wanted):
        part_hosts = set(frame["host"].dropna().astype(str).unique())
        seen_hosts |= part_hosts
        chosen = None if wanted is None else [h for h in wanted if h in part_hosts]
        if chosen == []:
            continue
        obs = select(frame, start, end, chosen)
        span.add(Span.of(obs))
        evidence.append(sets.set_evidence(obs))
        lifecycles.append(event_lifecycles(obs))
        endings.append(event_endings(obs))
        if reaction:
            reactions.append(reaction_table(obs, lifecycles[-1]))
    missing = sorted(set(wanted or ()) - seen_hosts)
    if missing:
        warnings.warn(f"no observations from host(s) {', '.join(missing)} in this history.", stacklevel=3)
    labels = sets.sets_from_evidence(pd.concat(evidence, ignore_index=True)) if evidence else {}
    description = "\n".join(_report_lines(report) + [f"read part by part: {target.parts} parts of {target.folder}",
                                                      span.sentence()])
    life = _whole(lifecycles, ["host"], labels) if lifecycles else no_lifecycles(report.time_scale)
    table = None
    if reaction:
        table = _whole(reactions, ["first_seen", "event_id", "host"], labels) if reactions else no_reaction()
        table["approval_unneeded"] = approvals_unneeded(table)  # event level: across every part's VMs
    ended = pd.concat([e for e in endings if len(e)], ignore_index=True) if any(len(e) for e in endings) else None
    return HistoryView(description, report, _marked(life, report), _marked(table, report),
                       _marked(ended if ended is not None else no_endings(), report))


def _marked(frame: Optional[pd.DataFrame], report: LoadReport) -> Optional[pd.DataFrame]:
    """The frame, carrying whether its history is simulated: every figure drawn from it then says so (the parts of a
    partitioned history do not carry the sidecar's word; the whole's report does)."""
    if frame is not None:
        frame.attrs["simulated"] = report.simulated
    return frame


def _whole(frames: List[pd.DataFrame], order: List[str], labels: dict) -> pd.DataFrame:
    """Parts' tables as one, in the order one table of the whole history has, with the sets of the whole."""
    filled = [f for f in frames if len(f)]  # an empty part's columns have no string dtypes
    if not filled:
        return frames[0]
    whole = pd.concat(filled, ignore_index=True).sort_values(order, kind="stable").reset_index(drop=True)
    whole["vm_set"] = whole["vm"].map(labels).astype("string")
    whole.attrs = dict(frames[0].attrs)
    return whole
