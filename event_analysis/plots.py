"""Helpers for the notebooks: draw every poll-derived value as the interval it is, and show tables.
(Selecting and describing a history is views.py's.)

Polls are discrete, so no time or duration in a history is a number: it is an interval
[min, max]. Every figure here draws the interval (a segment from min to max), never a lone
point, so that a reader sees at once how much of a conclusion the polls support. Each
plotting function returns a matplotlib Figure (closed, so that Jupyter shows it once, as the
cell's value), or None after printing one sentence when there is nothing to draw: a small
history must give a sentence, not an empty or broken axis. The table helpers return compact
DataFrames for `show`, which prints a sentence instead of an empty table.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from event_analysis import views
from event_analysis.analyses.domains import domain_overlaps, domain_walk

VERDICT_COLORS: Dict[str, str] = {"below": "tab:red", "maybe below": "tab:orange", "met": "tab:green",
                                  "n/a": "tab:gray"}
_ROW_INCHES = 0.24  # height of one interval row
_MAX_LABELLED_ROWS = 40  # above this, rows get no tick labels (they would overlap)
_WIDTH = 10.0
_EVENT_ID_COLUMNS = ("event_id", "event_a", "event_b")

def _open_handle() -> Line2D:
    """Legend entry for an interval whose upper bound the polls do not give."""
    return Line2D([], [], color="dimgray", linestyle=":", marker=">", label="upper bound unknown")


# ----------------------------------------------------------------- selecting and describing

select, describe = views.select, views.describe  # where the notebooks of earlier releases find them


def overview(lifecycles: pd.DataFrame) -> str:
    """One sentence on what the lifecycles hold, so that an empty history says so instead of failing later."""
    if lifecycles.empty:
        return "no events in this history (or in the selected window and hosts): nothing to analyse."
    outcomes = lifecycles["outcome"].astype(str).value_counts()
    types = lifecycles.groupby("event_type", observed=True)["event_id"].nunique()
    return (f"{len(lifecycles)} lifecycle(s) (one per event and VM) of {lifecycles['event_id'].nunique()} event(s); "
            f"by type: {', '.join(f'{t} {n}' for t, n in types.items())}; "
            f"outcomes: {', '.join(f'{o} {n}' for o, n in outcomes.items() if n)}.")


def show(table: pd.DataFrame, empty: str) -> None:
    """Display a table, or say in a sentence why there is none (an empty frame reads as an error)."""
    if table is None or len(table) == 0:
        print(empty)
        return
    try:
        from IPython.display import display
    except ImportError:  # outside IPython
        print(table.to_string())
        return
    display(table)


def compact(frame: pd.DataFrame, columns: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """A table for reading: chosen columns, times to the second, seconds to 0.1 s, event ids shortened."""
    out = frame.loc[:, list(columns)] if columns is not None else frame.copy()
    for name in out.columns:
        column = out[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(column.dtype):
            out[name] = column.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("?")
        elif pd.api.types.is_float_dtype(column.dtype):
            out[name] = column.round(1)
        elif name in _EVENT_ID_COLUMNS:
            out[name] = column.astype("string").str.slice(0, 8)
    return out.reset_index(drop=True)


# ----------------------------------------------------------------- drawing intervals

def _empty(message: str) -> None:
    """Say why there is no figure (the notebook cell then shows this sentence instead)."""
    print(message)


def _label(rows: pd.DataFrame) -> List[str]:
    """Row labels: the VM and the start of the event id, enough to find the row in the tables."""
    return [f"{vm} {str(ev)[:8]}" for vm, ev in zip(rows["vm"], rows["event_id"])]


def _figure(panel_rows: Sequence[int], title: str) -> Tuple[Figure, List[Axes]]:
    """A column of panels whose heights follow their number of rows (capped, so that a big fleet
    gives a tall figure, not an endless one)."""
    heights = [min(max(n, 2), _MAX_LABELLED_ROWS) for n in panel_rows]
    height = 1.2 + _ROW_INCHES * sum(heights) + 0.6 * len(heights)
    fig, axes = plt.subplots(len(heights), 1, figsize=(_WIDTH, height), squeeze=False, layout="constrained",
                             gridspec_kw={"height_ratios": heights})
    fig.suptitle(title)
    plt.close(fig)  # returned, not auto-shown: Jupyter displays it once, as the cell's value
    return fig, list(axes[:, 0])


def _stamped(fig: Figure, frame: pd.DataFrame) -> Figure:
    """The figure, its title saying SIMULATED when the history it was drawn from is (the frame's `simulated`, from
    the history's sidecar): a figure is shown and shared without the notebook's text around it."""
    if frame.attrs.get("simulated"):
        title = fig.get_suptitle()
        fig.suptitle("SIMULATED data, not Azure's behaviour" + (f"\n{title}" if title else ""), color="tab:red")
    return fig


def _share_x(axes: Sequence[Axes], rows: pd.DataFrame, low: str, high: str) -> None:
    """One x scale and one range for every panel, from all the rows (each panel alone may have chosen its own)."""
    values = pd.concat([rows[low], rows[high]]).astype("float64").dropna()
    if values.empty:
        return
    first, last = float(values.min()), float(values.max())
    wide = first > 0 and last / first > 100
    # a margin on each side, so that no segment starts on the frame (segments are collections: no autoscale)
    lo, hi = (first / 1.5, last * 1.5) if wide else (first - 0.05 * (last - first or 1), last + 0.05 * (last - first or 1))
    for ax in axes:
        ax.set_xscale("log" if wide else "linear")
        ax.set_xlim(lo, hi)


def _log_if_wide(ax: Axes, rows: pd.DataFrame, low: str, high: str) -> None:
    """Log x when values span more than two decades (a days-long Redeploy notice next to 10-minute
    ones would squash them all into one pixel); only possible when every bound is positive."""
    values = pd.concat([rows[low], rows[high]]).astype("float64").dropna()
    if len(values) and values.min() > 0 and values.max() / values.min() > 100:
        ax.set_xscale("log")


def _segments(ax: Axes, rows: pd.DataFrame, low: str, high: str, colors: Sequence[str]) -> None:
    """One horizontal segment [low, high] per row; an unknown `high` is drawn open to the right (>)."""
    y = np.arange(len(rows))
    lo = rows[low].astype("float64").to_numpy()
    hi = rows[high].astype("float64").to_numpy()
    known = ~np.isnan(hi)
    width = 4 if len(rows) <= _MAX_LABELLED_ROWS else 2
    ax.hlines(y[known], lo[known], hi[known], colors=np.asarray(colors)[known], linewidth=width, alpha=0.8)
    ax.scatter(lo, y, c=list(colors), marker="|", s=60, zorder=3)
    if (~known).any():
        right = np.nanmax(np.r_[lo, hi[known]]) * 1.05 + 1
        ax.hlines(y[~known], lo[~known], right, colors=np.asarray(colors)[~known], linewidth=1.5, linestyles=":")
        ax.scatter(np.full((~known).sum(), right), y[~known], c=list(np.asarray(colors)[~known]), marker=">", s=30)


def _rows_axis(ax: Axes, rows: pd.DataFrame, name: str) -> None:
    """One row per lifecycle, top to bottom, labelled while the labels still fit."""
    ax.set_ylim(-0.7, max(len(rows), 2) - 0.3)
    ax.invert_yaxis()
    if len(rows) <= _MAX_LABELLED_ROWS:
        ax.set_yticks(np.arange(len(rows)), _label(rows), fontsize=7)
    else:
        ax.set_yticks([])
    ax.set_ylabel(name)
    ax.grid(axis="x", alpha=0.3)


Panels = List[Tuple[str, pd.DataFrame]]


def _interval_panels(rows: pd.DataFrame, group: str, low: str, high: str, title: str,
                     colors: Callable[[pd.DataFrame], Sequence[str]]) -> Tuple[Figure, List[Axes], Panels]:
    """One panel per value of `group`: each row its [low, high] segment in colors(part), x on a log scale when
    the values span decades; the caller adds what is particular to its figure (lines, legend)."""
    groups = _sorted_groups(rows, group, low)
    fig, axes = _figure([len(part) for _, part in groups], title)
    for ax, (key, part) in zip(axes, groups):
        _segments(ax, part, low, high, list(colors(part)))
        _log_if_wide(ax, part, low, high)
        _rows_axis(ax, part, key)
    axes[-1].set_xlabel("seconds")
    return fig, axes, groups


def _sorted_groups(rows: pd.DataFrame, group: str, low: str) -> List[Tuple[str, pd.DataFrame]]:
    """One panel's rows per group, sorted by the lower bound so that the spread reads as a slope."""
    return [(str(key), part.sort_values([low, "vm"]).reset_index(drop=True))
            for key, part in rows.groupby(group, observed=True, sort=True)]


# ----------------------------------------------------------------- notice

def notice_intervals(checked: pd.DataFrame) -> Optional[Figure]:
    """Per event type, each lifecycle's notice [notice_s_min, notice_s_max] against the documented minimum.

    A segment left of the dashed line is short notice for sure (`below`); one that crosses
    it is `maybe below`: the polls cannot tell. A dotted arrow means the event was already
    there at the first poll, so only the lower bound is known.
    """
    rows = checked[checked["notice_s_min"].notna() & ~checked["first_seen_started"].astype(bool)]
    if rows.empty:
        _empty("no event with a notice time in this history (no Scheduled event, or none with a NotBefore): "
               "nothing to plot.")
        return None
    skipped = int(checked["first_seen_started"].astype(bool).sum())
    fig, axes, groups = _interval_panels(
        rows, "event_type", "notice_s_min", "notice_s_max",
        "Notice per lifecycle: NotBefore minus first appearance, as [min, max] seconds"
        + (f"\n({skipped} lifecycle(s) first seen Started not shown: see no_notice)" if skipped else ""),
        lambda part: [VERDICT_COLORS.get(str(v), "tab:blue") for v in part["notice_verdict"]])
    for ax, (_event_type, part) in zip(axes, groups):
        minimum = part["documented_min_s"].dropna()
        if len(minimum):
            ax.axvline(float(minimum.iloc[0]), color="black", linestyle="--", linewidth=1)
    axes[-1].set_xlabel("notice (seconds)")
    handles = [Line2D([], [], color=c, linewidth=4, label=v) for v, c in VERDICT_COLORS.items()]
    handles += [Line2D([], [], color="black", linestyle="--", label="documented minimum"), _open_handle()]
    axes[0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, checked)


def short_notice(checked: pd.DataFrame, verdicts: Sequence[str] = ("below", "maybe below")) -> pd.DataFrame:
    """The lifecycles whose notice was, or may have been, shorter than documented: the ones to look at."""
    rows = checked[checked["notice_verdict"].astype(str).isin(list(verdicts))]
    rows = rows.sort_values(["notice_verdict", "notice_s_min"])
    return compact(rows, ["notice_verdict", "event_type", "event_source", "vm", "event_id", "first_seen",
                          "not_before_first", "notice_s_min", "notice_s_max", "documented_min_s", "outcome"])


def no_notice(checked: pd.DataFrame) -> pd.DataFrame:
    """Lifecycles first seen already Started, with their notice bounds [0, gap] and the verdict those support:
    no notice (seen, or by the event type), or unknown (a Scheduled phase may have fallen between the polls,
    or before the capture: `appeared_before_capture`)."""
    rows = checked[checked["first_seen_started"].astype(bool)].sort_values(["first_seen", "vm"])
    return compact(rows, ["notice_verdict", "event_type", "event_source", "vm", "event_id", "appeared_before_capture",
                          "appeared_after", "first_seen", "notice_s_min", "notice_s_max", "outcome", "description"])


# ----------------------------------------------------------------- durations

def duration_summary(lifecycles: pd.DataFrame) -> pd.DataFrame:
    """Per event type: how many lifecycles, what Azure declared, and the observed ranges (min of the
    lower bounds, max of the upper bounds) of impact and Started-to-gone, and the typical impact: the medians of
    the lower and of the upper bounds (half of the impacts began to be seen ending within them)."""
    if lifecycles.empty:
        return lifecycles.iloc[0:0]
    declared = lifecycles["duration_s"].astype("float64")
    frame = lifecycles.assign(declared_known=declared.where(declared >= 0))
    table = frame.groupby("event_type", observed=True).agg(
        lifecycles=("event_id", "size"), started=("started_seen", "count"),
        declared_min=("declared_known", "min"), declared_max=("declared_known", "max"),
        impact_s_min=("impact_s_min", "min"), impact_s_max=("impact_s_max", "max"),
        impact_s_median_min=("impact_s_min", "median"), impact_s_median_max=("impact_s_max", "median"),
        started_to_gone_s_min=("started_to_gone_s_min", "min"), started_to_gone_s_max=("started_to_gone_s_max", "max"))
    return table.astype({c: "float64" for c in table.columns if c not in ("lifecycles", "started")}).round(1)


def impact_vs_declared(lifecycles: pd.DataFrame) -> Optional[Figure]:
    """Observed impact [impact_s_min, impact_s_max] per started lifecycle, with the declared
    DurationInSeconds as a black cross: a cross right of the segment means Azure over-declared,
    left of it means the VM was silent longer than declared."""
    rows = lifecycles[lifecycles["impact_s_max"].notna()]
    if rows.empty:
        _empty("no Started event in this history: no impact to plot.")
        return None
    groups = _sorted_groups(rows, "event_type", "impact_s_min")
    fig, axes = _figure([len(part) for _, part in groups],
                        "Impact per lifecycle: longest silence of polls while Started, as [min, max] seconds")
    for ax, (event_type, part) in zip(axes, groups):
        _segments(ax, part, "impact_s_min", "impact_s_max", ["tab:blue"] * len(part))
        declared = part["duration_s"].astype("float64").to_numpy()
        known = declared >= 0
        ax.scatter(declared[known], np.flatnonzero(known), marker="x", color="black", zorder=4)
        if (~known).any():
            ax.set_title(f"{int((~known).sum())} declared unknown (-1): no cross", loc="right", fontsize=8,
                         color="dimgray")
        _rows_axis(ax, part, event_type)
    axes[-1].set_xlabel("seconds")
    handles = [Line2D([], [], color="tab:blue", linewidth=4, label="observed impact [min, max]"),
               Line2D([], [], color="black", marker="x", linestyle="", label="declared DurationInSeconds")]
    axes[0].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, lifecycles)


def started_to_gone(lifecycles: pd.DataFrame) -> Optional[Figure]:
    """Time from Started to the event's removal, [started_to_gone_s_min, started_to_gone_s_max], per
    lifecycle and event type: how long a VM is 'in maintenance' as far as Scheduled Events says."""
    rows = lifecycles[lifecycles["started_to_gone_s_min"].notna()]
    if rows.empty:
        _empty("no event was seen Started in this history: no Started-to-gone time to plot.")
        return None
    fig, axes, _groups = _interval_panels(
        rows, "event_type", "started_to_gone_s_min", "started_to_gone_s_max", "Started to gone, as [min, max] seconds",
        lambda part: np.where(part["outcome"].astype(str).eq("open").to_numpy(), "tab:purple", "tab:blue"))
    axes[0].legend(handles=[Line2D([], [], color="tab:blue", linewidth=4, label="gone"),
                            Line2D([], [], color="tab:purple", linewidth=4, label="still there (open)"),
                            _open_handle()],
                   loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, lifecycles)


def _with_approval(lifecycles: pd.DataFrame) -> pd.DataFrame:
    """Lifecycles that went from Scheduled to Started, labelled approved / not approved."""
    rows = lifecycles[lifecycles["started_seen"].notna() & ~lifecycles["first_seen_started"].astype(bool)]
    return rows.assign(approval=np.where(rows["approved"].astype(bool), "approved", "not approved"))


def scheduled_by_approval(lifecycles: pd.DataFrame) -> Optional[Figure]:
    """Time in Scheduled [scheduled_s_min, scheduled_s_max] of the lifecycles that started, per event
    type, approved (green) vs not approved (blue) on one axis.

    Without approval an event starts at NotBefore, so this is the notice; approval
    (StartRequests) starts it early: the distance between green and blue is what approval bought.
    """
    rows = _with_approval(lifecycles)
    if rows.empty:
        _empty("no event went from Scheduled to Started in this history: no time in Scheduled to compare.")
        return None
    groups = [(event_type, part.sort_values(["approval", "scheduled_s_min", "vm"]).reset_index(drop=True))
              for event_type, part in rows.groupby("event_type", observed=True, sort=True)]
    fig, axes = _figure([len(part) for _, part in groups], "Time in Scheduled before Started, as [min, max] seconds")
    for ax, (event_type, part) in zip(axes, groups):
        colors = np.where(part["approval"] == "approved", "tab:green", "tab:blue")
        _segments(ax, part, "scheduled_s_min", "scheduled_s_max", list(colors))
        _log_if_wide(ax, part, "scheduled_s_min", "scheduled_s_max")
        _rows_axis(ax, part, str(event_type))
    axes[-1].set_xlabel("seconds")
    axes[0].legend(handles=[Line2D([], [], color="tab:green", linewidth=4, label="approved"),
                            Line2D([], [], color="tab:blue", linewidth=4, label="not approved"), _open_handle()],
                   loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, lifecycles)


def scheduled_summary(lifecycles: pd.DataFrame) -> pd.DataFrame:
    """Per event type and approval: lifecycles and the range of time in Scheduled and of notice."""
    rows = _with_approval(lifecycles)
    if rows.empty:
        return rows
    table = rows.groupby(["event_type", "approval"], observed=True).agg(
        lifecycles=("event_id", "size"), scheduled_s_min=("scheduled_s_min", "min"),
        scheduled_s_max=("scheduled_s_max", "max"), notice_s_min=("notice_s_min", "min"),
        notice_s_max=("notice_s_max", "max"))
    return table.astype({c: "float64" for c in table.columns if c != "lifecycles"}).round(1)


# ----------------------------------------------------------------- fault domains

def walk_of(windows: pd.DataFrame, by: str = "fault_domain") -> pd.DataFrame:
    """domain_walk, with the columns worth reading."""
    walk = domain_walk(windows, by=by)
    return compact(walk, [by, f"previous_{by}", "scheduled_seen", "start_after", "start", "end_after", "end",
                          "vms", "gap_s_min", "gap_s_max"])


def overlaps_of(lifecycles: pd.DataFrame, by: str = "fault_domain") -> pd.DataFrame:
    """domain_overlaps with the library's default scope (platform events that gave notice)."""
    return domain_overlaps(lifecycles, by=by)


def overlap_sentence(overlaps: pd.DataFrame, windows: pd.DataFrame, by: str = "fault_domain") -> str:
    """The verdict in one sentence: certain overlaps break serialisation, possible ones need denser polls,
    and a history with maintenance in fewer than two domains cannot say anything either way."""
    name = by.replace("_", " ") + "s"
    domains = sorted(int(d) for d in windows[by].dropna().unique()) if not windows.empty else []
    if overlaps.empty and not domains:
        return f"no platform maintenance window in this history: serialisation by {name} cannot be judged."
    if overlaps.empty and len(domains) == 1:
        return (f"only {by.replace('_', ' ')} {domains[0]} was in maintenance: no overlap was possible, "
                f"so serialisation by {name} is not tested by this history.")
    sets = windows["vm_set"].nunique() if "vm_set" in windows else 1
    scope = f" of one set ({sets} sets, each judged on its own)" if sets > 1 else ""
    if overlaps.empty:
        return f"no overlap between {name}: never were VMs of two {name}{scope} in maintenance at the same time."
    kinds = overlaps["kind"].astype(str).value_counts()
    certain, possible = int(kinds.get("certain", 0)), int(kinds.get("possible", 0))
    text = f"{certain} certain and {possible} possible overlap(s) between {name}"
    if certain:
        return text + ": VMs of different domains were seen Started at the same time."
    return text + ": only the poll intervals overlap; denser polls would tell."


def _rounds(windows: pd.DataFrame, gap: pd.Timedelta) -> List[pd.DataFrame]:
    """Windows grouped into maintenance rounds: a new round after `gap` without any window."""
    ordered = windows.sort_values("start_after").reset_index(drop=True)
    reach = ordered["end"].cummax().shift(1)
    new = np.array(ordered["start_after"] - reach > gap, dtype=bool)
    new[:1] = True
    return [part for _, part in ordered.groupby(np.cumsum(new))]


def _num(times: pd.Series) -> np.ndarray:
    """UTC timestamps as matplotlib date numbers (broken_barh needs numbers, not datetimes)."""
    return mdates.date2num(pd.to_datetime(times, utc=True).dt.tz_localize(None).to_numpy())


def _draw_round(ax: Axes, part: pd.DataFrame, by: str, row_of: Dict[Tuple[str, int], int],
                labels: List[str]) -> None:
    """One round: bars per window; waiting lines reaching back further than the round's own length
    are cut at the left edge (marked <), so that a days-long notice does not squash the round. Each kind of
    mark is one collection for the whole round: a fleet's month has thousands of windows."""
    y = np.array([row_of[key] for key in zip(_sets_of_windows(part), part[by].astype(int))], dtype=float)
    lo, dark_lo, dark_hi, hi = (_num(part[column]) for column in ("start_after", "start", "end_after", "end"))
    first, last = lo.min(), hi.max()
    span = max(last - first, 1 / 1440)
    left = first - max(span, 20 / 1440)
    waiting = part["scheduled_seen"].notna().to_numpy()
    if waiting.any():
        seen = _num(part.loc[waiting, "scheduled_seen"])
        shown = np.maximum(seen, left)
        ax.hlines(y[waiting], shown, lo[waiting], color="gray", linewidth=1)
        for marker, kept in (("o", seen >= left), ("<", seen < left)):
            ax.plot(shown[kept], y[waiting][kept], linestyle="none", marker=marker, color="gray", markersize=3)
    ax.add_collection(PolyCollection(_bars(lo, hi, y), facecolors="tab:orange", alpha=0.35))
    dark = dark_hi > dark_lo
    ax.add_collection(PolyCollection(_bars(dark_lo[dark], dark_hi[dark], y[dark]), facecolors="tab:red"))
    seen_first = _num(part["scheduled_seen"].dropna()).min() if waiting.any() else first
    ax.set_xlim(max(min(seen_first, first), left) - span * 0.02, last + span * 0.03)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.4, -0.6)
    locator = mdates.AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    start = pd.Timestamp(part["start_after"].min())
    ax.set_title(f"maintenance round of {start:%Y-%m-%d}, first start {start:%H:%M} UTC", fontsize=9, loc="left")
    ax.grid(axis="x", alpha=0.3)


def _bars(lo: np.ndarray, hi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rectangles [lo, hi] x [y - 0.3, y + 0.3] as PolyCollection vertices."""
    return np.stack([np.column_stack((lo, y - 0.3)), np.column_stack((hi, y - 0.3)),
                     np.column_stack((hi, y + 0.3)), np.column_stack((lo, y + 0.3))], axis=1)


def _sets_of_windows(windows: pd.DataFrame) -> pd.Series:
    return windows["vm_set"].fillna("").astype(str) if "vm_set" in windows else pd.Series("", index=windows.index)


def domain_timeline(windows: pd.DataFrame, by: str = "fault_domain", round_gap_hours: float = 2,
                    max_rounds: int = 8, max_sets: int = 6) -> Optional[Figure]:
    """Maintenance windows per domain over time, one panel per maintenance round.

    Dark: certain (start..end_after, some VM of the domain was seen Started throughout);
    light: possible (start_after..end, the polls around it); gray line: from the first
    Scheduled sighting to the start (cut at the left edge, marked <, when it reaches back
    further than the round lasts). Serialised maintenance is a staircase whose bars never
    share an x position. Rounds more than `round_gap_hours` apart get their own panel,
    since windows of minutes would be invisible on an axis of days. A domain is a domain of
    one set: with several sets, each (set, domain) has its row, for the first `max_sets` sets.
    """
    if windows.empty:
        _empty(f"no platform maintenance window in this history (no Platform event seen Started on a VM with a "
               f"known {by.replace('_', ' ')}): nothing to plot.")
        return None
    all_sets = sorted(_sets_of_windows(windows).unique())
    windows = windows[_sets_of_windows(windows).isin(all_sets[:max_sets]).to_numpy()]
    keys = sorted(set(zip(_sets_of_windows(windows), windows[by].astype(int))))
    row_of = {key: i for i, key in enumerate(keys)}
    labels = [f"{vm_set} {domain}" if len(all_sets) > 1 else str(domain) for vm_set, domain in keys]
    rounds = _rounds(windows, pd.Timedelta(hours=round_gap_hours))
    shown = rounds[:max_rounds]
    extra = f" (first {len(shown)} of {len(rounds)} rounds)" if len(rounds) > len(shown) else ""
    extra += f" (first {max_sets} of {len(all_sets)} sets)" if len(all_sets) > max_sets else ""
    rows = max(len(keys), 2)
    fig, axes = plt.subplots(len(shown), 1, figsize=(_WIDTH, 0.8 + len(shown) * (0.9 + 0.3 * rows)), squeeze=False,
                             layout="constrained")
    plt.close(fig)  # returned, not auto-shown
    fig.suptitle(f"Maintenance windows per {by.replace('_', ' ')}{extra}")
    for ax, part in zip(axes[:, 0], shown):
        _draw_round(ax, part, by, row_of, labels)
        ax.set_ylabel(by.replace("_", " "))
    axes[-1, 0].set_xlabel("time (UTC, the history's clock)")
    axes[0, 0].legend(handles=[Patch(color="tab:red", label="certain: seen Started"),
                               Patch(color="tab:orange", alpha=0.35, label="possible: between polls"),
                               Line2D([], [], color="gray", marker="o", markersize=3, label="scheduled, waiting")],
                      loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, windows)


# ----------------------------------------------------------------- reaction

def reaction_intervals(table: pd.DataFrame) -> Optional[Figure]:
    """One panel per way of running: each prepared (event, VM) as its reaction interval [reaction_s_min,
    reaction_s_max] (appeared -> prepare began); red rows were late (after NotBefore or once Started)."""
    rows = table[table["prepared"].astype(bool)]
    if rows.empty:
        _empty("no prepare in this history: nothing reacted (capture with the history callback to see actions).")
        return None
    fig, axes, _groups = _interval_panels(
        rows, "trigger", "reaction_s_min", "reaction_s_max", "Reaction: event appeared -> prepare began (seconds)",
        lambda part: np.where(part["late"].astype(bool).to_numpy(), "tab:red", "tab:blue"))
    _share_x(axes, rows, "reaction_s_min", "reaction_s_max")  # ways of running compared on one scale
    # beside the panels, never over a bar
    axes[0].legend(handles=[Patch(color="tab:blue", label="in time"), Patch(color="tab:red", label="late")],
                   loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return _stamped(fig, table)
