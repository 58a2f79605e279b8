"""The observation schema (docs/observation-schema.md) as Arrow types, and the facts the analysis judges by."""
from __future__ import annotations

from typing import Dict

import pyarrow as pa

_S = pa.string()

EVENT = pa.struct([
    ("EventId", _S), ("EventStatus", _S), ("EventType", _S), ("ResourceType", _S),
    ("Resources", pa.list_(_S)), ("NotBefore", _S), ("Description", _S), ("EventSource", _S),
    ("DurationInSeconds", pa.int64()),
])
VM = pa.struct([
    ("name", _S), ("resource_id", _S), ("vm_scale_set_name", _S), ("fault_domain", pa.int64()),
    ("update_domain", pa.int64()), ("zone", _S), ("location", _S),
])
# One record per line. `results` of approval records is an object keyed by event id,
# which Arrow's JSON reader cannot type; it is left out (ignored like any unknown field).
LINE = pa.schema([
    ("record", _S), ("observed_at", _S), ("host", _S), ("vm", VM),
    ("document_incarnation", pa.int64()), ("events", pa.list_(EVENT)), ("event_ids", pa.list_(_S)),
    ("previous_observed_at", _S), ("poll_interval_s", pa.float64()),
    ("action", _S), ("event_type", _S), ("trigger", _S),   # action records (and trigger on approvals)
])

OBSERVATION, APPROVAL, ACTION = "observation", "approval", "action"
ACTIONS = ("prepare", "recover", "local")  # local: the relay ran the VM's fast-path command

# Minimum notice (NotBefore - first appearance) Azure documents per EventType, in seconds.
# Terminate's is what the scale set's terminate notification profile sets (5 to 15 minutes).
DOCUMENTED_MIN_NOTICE_S: Dict[str, float] = {
    "Freeze": 15 * 60, "Reboot": 15 * 60, "Redeploy": 10 * 60, "Preempt": 30,
}
TERMINATE_NOTICE_RANGE_S = (5 * 60, 15 * 60)


def documented_min_notice(terminate_notice_s: float = TERMINATE_NOTICE_RANGE_S[0]) -> Dict[str, float]:
    """Documented minimum notice per EventType, with Terminate as configured on the scale set."""
    low, high = TERMINATE_NOTICE_RANGE_S
    if not low <= terminate_notice_s <= high:
        raise ValueError(f"terminate_notice_s must be between {low} and {high} seconds, got {terminate_notice_s}")
    return dict(DOCUMENTED_MIN_NOTICE_S, Terminate=float(terminate_notice_s))
