"""The observation schema (docs/reference/observation-schema.md) as Arrow types (the figures the analysis judges by are in
event_analysis/published.py)."""
from __future__ import annotations

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
    ("source", _S),  # control_plane: a Resource Graph read or a Microsoft.Maintenance acknowledge
])

OBSERVATION, APPROVAL, ACTION = "observation", "approval", "action"
ACTIONS = ("prepare", "recover", "local")  # local: the relay ran the VM's fast-path command
