"""How well the automation reacted: per (event, VM), seen -> prepared -> approved -> started.

From a history's observations (when each VM saw the event, its NotBefore, when it was seen Started), its
action records (when the maintenance cycle began a VM's prepare or recover) and its approval records.
Like every other time here, the moment an event appeared is an interval (after the previous poll, at
or before the first sighting), so the reaction is one too: `reaction_s_min` from the first sighting,
`reaction_s_max` from the poll before it. With a relay's one-second history the two are a second apart.

The way of running (`trigger`: schedule, event-driven, or watch in histories the retired watch playbook
captured) comes from the action and approval records; a history captured before they carried it, or rebuilt from AWX job events, says `unknown`.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from event_analysis.loading.history import report_of
from event_analysis.analyses.lifecycles import event_lifecycles
from event_analysis.loading.schema import ACTION, APPROVAL

UNKNOWN_TRIGGER = "unknown"
REACTION_COLUMNS = (
    "event_id", "host", "vm", "vm_set", "fault_domain", "event_type", "event_source", "outcome", "trigger",
    "appeared_after", "first_seen", "local_at", "prepared_at", "approved_at", "approved_by", "started_seen",
    "not_before",
    "recovered_at", "prepared", "reaction_s_min", "reaction_s_max", "margin_s", "approval_margin_s", "late",
    "first_seen_started", "started_unprepared", "approval_unneeded",
)


def reaction_table(observations: pd.DataFrame, lifecycles: Optional[pd.DataFrame] = None,
                   time_scale: Optional[float] = None) -> pd.DataFrame:
    """One row per (event, VM that the event lists and that saw it):

    - `local_at`: when the VM's relay ran its local command for the event (its fast path; NaT: never);
    - `prepared_at` / `recovered_at`: when the cycle began that VM's prepare / recover for the event (NaT: never);
    - `reaction_s_min`/`_max`: the event's appearance on that VM -> its prepare began (an interval, see above);
    - `margin_s`: NotBefore - prepare began, the notice left (negative: prepared after NotBefore);
      `approval_margin_s` the same for the event's first approval;
    - `late`: the prepare began after NotBefore or after the VM had seen the event Started;
    - `first_seen_started`: the VM never saw the event Scheduled (a hardware failure; a user's reboot or redeploy
      that the platform's scheduledEventsPolicy auto-approves; one that went by between two polls): there was
      nothing to prepare, only a recover;
    - `started_unprepared`: the VM saw the event Started with no prepare begun, though it had seen it Scheduled (by
      design for events the policy approves without prepare, such as short Freezes: read it by event type);
    - `approval_unneeded`: the event's first approval came at or after its NotBefore or after a VM had seen it
      Started: it would have started anyway (event level, repeated on each of its rows).
    Durations are in the seconds they stand for (the history's time scale); times on the recording's clock.
    """
    scale = float(time_scale if time_scale is not None else report_of(observations).time_scale)
    life = event_lifecycles(observations, time_scale=scale) if lifecycles is None else lifecycles
    if life.empty:
        return no_reaction()
    out = life[["event_id", "host", "vm", "vm_set", "fault_domain", "event_type", "event_source", "outcome",
                "appeared_after", "first_seen", "approved_at", "approved_by", "started_seen", "not_before",
                "first_seen_started"]].copy()
    out = out.merge(_first_action(observations, "prepare"), on=["event_id", "host"], how="left")
    out = out.merge(_first_action(observations, "recover"), on=["event_id", "host"], how="left")
    out = out.merge(_first_action(observations, "local").drop(columns=["local_trigger"]), on=["event_id", "host"],
                    how="left")
    out = out.merge(_approval_trigger(observations), on="event_id", how="left")
    out["trigger"] = (out.pop("prepare_trigger").fillna(out.pop("approval_trigger")).fillna(UNKNOWN_TRIGGER)
                      .astype(str))
    out = out.drop(columns=["recover_trigger"]).rename(columns={"prepare_at": "prepared_at",
                                                                "recover_at": "recovered_at"})
    out["prepared"] = out["prepared_at"].notna()
    out["reaction_s_min"] = _seconds(out["prepared_at"] - out["first_seen"], scale)
    out["reaction_s_max"] = _seconds(out["prepared_at"] - out["appeared_after"], scale)
    out["margin_s"] = _seconds(out["not_before"] - out["prepared_at"], scale)
    out["approval_margin_s"] = _seconds(out["not_before"] - out["approved_at"], scale)
    out["late"] = ((out["prepared_at"] > out["not_before"]) | (out["prepared_at"] >= out["started_seen"])).fillna(False)
    out["first_seen_started"] = out["first_seen_started"].astype(bool)
    out["started_unprepared"] = ~out["prepared"] & out["started_seen"].notna() & ~out["first_seen_started"]
    out["approval_unneeded"] = approvals_unneeded(out)
    table = out[list(REACTION_COLUMNS)].sort_values(["first_seen", "event_id", "host"], kind="stable").reset_index(drop=True)
    table.attrs["simulated"] = bool(life.attrs.get("simulated", False) or report_of(observations).simulated)
    return table


def reaction_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per way of running and event type: events, VMs, prepared VMs, reaction (upper bound: median, p95),
    notice left at prepare (median, smallest), late preparations, VMs started unprepared, approvals sent and
    approvals not needed."""
    if table.empty:
        return pd.DataFrame(columns=["trigger", "event_type", "events", "vms", "prepared", "reaction_s_median",
                                     "reaction_s_p95", "margin_s_median", "margin_s_min", "late",
                                     "started_unprepared", "approvals", "approvals_unneeded"])
    events = table.drop_duplicates("event_id")
    per_event = events.assign(approved=events["approved_at"].notna()).groupby(
        ["trigger", "event_type"], observed=True).agg(approvals=("approved", "sum"),
                                                      approvals_unneeded=("approval_unneeded", "sum"))
    reaction = pd.to_numeric(table["reaction_s_max"], errors="coerce")
    margin = pd.to_numeric(table["margin_s"], errors="coerce")
    grouped = table.assign(reaction=reaction, margin=margin).groupby(["trigger", "event_type"], observed=True)
    summary = grouped.agg(events=("event_id", "nunique"), vms=("host", "size"), prepared=("prepared", "sum"),
                          reaction_s_median=("reaction", "median"),
                          reaction_s_p95=("reaction", lambda s: s.quantile(0.95)),
                          margin_s_median=("margin", "median"), margin_s_min=("margin", "min"),
                          late=("late", "sum"), started_unprepared=("started_unprepared", "sum"))
    return summary.join(per_event).reset_index()


def late_preparations(table: pd.DataFrame) -> pd.DataFrame:
    """The (event, VM) rows whose prepare began after NotBefore or after the VM saw the event Started."""
    return table.loc[table["late"].astype(bool), ["event_id", "vm", "event_type", "trigger", "prepared_at",
                                                   "not_before", "started_seen", "margin_s"]]


def _first_action(observations: pd.DataFrame, kind: str) -> pd.DataFrame:
    rows = observations.loc[(observations["record"] == ACTION) & (observations["action"] == kind),
                            ["event_id", "host", "observed_at", "trigger"]]
    first = rows.sort_values("observed_at", kind="stable").drop_duplicates(["event_id", "host"])
    return pd.DataFrame({"event_id": first["event_id"].astype(str), "host": first["host"].astype(str),
                         f"{kind}_at": first["observed_at"], f"{kind}_trigger": first["trigger"].astype("string")})


def _approval_trigger(observations: pd.DataFrame) -> pd.DataFrame:
    rows = observations.loc[observations["record"] == APPROVAL, ["event_id", "observed_at", "trigger"]]
    first = rows.sort_values("observed_at", kind="stable").drop_duplicates("event_id")
    return pd.DataFrame({"event_id": first["event_id"].astype(str),
                         "approval_trigger": first["trigger"].astype("string")})


def no_reaction() -> pd.DataFrame:
    """A reaction table without rows, with its columns."""
    return pd.DataFrame({c: pd.Series(dtype="object") for c in REACTION_COLUMNS})


def approvals_unneeded(out: pd.DataFrame) -> pd.Series:
    """Per row, whether its event's first approval came at or after NotBefore or after any of the table's VMs
    had seen it Started (event level: computed over the whole table, all VMs of the event)."""
    if out.empty:
        return pd.Series(dtype=bool)
    started_first = out.groupby("event_id")["started_seen"].transform("min")
    unneeded = (out["approved_at"] >= out["not_before"]) | (out["approved_at"] > started_first)
    return unneeded.fillna(False).astype(bool)


def _seconds(delta: pd.Series, scale: float) -> pd.Series:
    return pd.Series(delta.dt.total_seconds().to_numpy(dtype="float64", na_value=np.nan) * scale,
                     index=delta.index, dtype="Float64")
