"""Check parsed records against the observation schema and flatten them: one row per event seen.

All of it is Arrow compute over whole columns; no Python loop touches a row.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from event_analysis.loading.schema import ACTION, ACTIONS, APPROVAL, LINE, OBSERVATION

_UTC = pa.timestamp("ns", tz="UTC")
_ISO_UTC = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"
_ISO_ANY = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$"
_RFC1123 = "%a, %d %b %Y %H:%M:%S GMT"

# The columns of an observations frame, in order (see docs/guide/analysis.md).
COLUMNS = ("record", "observed_at", "host", "vm", "fault_domain", "update_domain", "scale_set", "zone",
           "location", "document_incarnation", "event_id", "event_status", "event_type", "event_source",
           "resource_type", "resources", "not_before", "duration_s", "description", "affects_vm",
           "previous_observed_at", "poll_interval_s", "reconstructed", "action", "trigger", "source")
# Columns a Parquet file written before change-only histories (or action records, or the control plane) lacks:
# read as missing, and "recorded".
LATER_COLUMNS = ("previous_observed_at", "poll_interval_s", "reconstructed", "action", "trigger", "source")


def parse_utc(strings: pa.Array, pattern: str = _ISO_UTC) -> pa.Array:
    """ISO 8601 strings to UTC timestamps; anything that does not match `pattern` becomes null."""
    valid = pc.fill_null(pc.match_substring_regex(strings, pattern), False)
    return pc.cast(pc.if_else(valid, strings, pa.scalar(None, pa.string())), _UTC)


def parse_not_before(strings: pa.Array) -> pa.Array:
    """NotBefore as IMDS serves it: RFC 1123 (`Mon, 05 Jan 2026 00:15:12 GMT`) or ISO 8601; "" = none.

    An event repeats its NotBefore in every poll, so the distinct values are parsed once each.
    """
    encoded = pc.dictionary_encode(strings)
    return pc.take(_parse_not_before_values(encoded.dictionary), encoded.indices)


def _parse_not_before_values(strings: pa.Array) -> pa.Array:
    rfc = pc.cast(pc.strptime(strings, format=_RFC1123, unit="s", error_is_null=True), pa.timestamp("ns"))
    rfc = pc.assume_timezone(rfc, "UTC")
    return pc.coalesce(rfc, parse_utc(strings, _ISO_ANY))


def _present(strings: pa.Array) -> pa.Array:
    return pc.fill_null(pc.greater(pc.utf8_length(strings), 0), False)


def valid_rows(table: pa.Table) -> Tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray]:
    """Which rows are records we understand, their parsed `observed_at`, which are approvals and which are
    actions (a prepare or recover begun: one event id, a known action)."""
    n = table.num_rows
    record = table.column("record").combine_chunks()
    kind_obs = pc.fill_null(pc.equal(record, OBSERVATION), True)  # absent record = observation
    kind_appr = pc.fill_null(pc.equal(record, APPROVAL), False)
    observed_at = parse_utc(table.column("observed_at").combine_chunks())
    common = pc.and_(pc.is_valid(observed_at), _present(table.column("host").combine_chunks()))

    vm = table.column("vm").combine_chunks()
    events = table.column("events").combine_chunks()
    flat = pc.list_flatten(events)
    parents = np.asarray(pc.list_parent_indices(events))
    event_ok = pc.and_(pc.and_(_present(pc.struct_field(flat, "EventId")), pc.is_valid(pc.struct_field(flat, "EventStatus"))),
                       pc.and_(pc.is_valid(pc.struct_field(flat, "EventType")), pc.is_valid(pc.struct_field(flat, "Resources"))))
    bad_event = np.bincount(parents[~np.asarray(event_ok, dtype=bool)], minlength=n) > 0
    obs_ok = pc.and_(pc.and_(pc.is_valid(vm), _present(pc.struct_field(vm, "name"))), pc.is_valid(events))

    ids = table.column("event_ids").combine_chunks()
    id_parents = np.asarray(pc.list_parent_indices(ids))
    bad_id = np.bincount(id_parents[~np.asarray(_present(pc.list_flatten(ids)), dtype=bool)], minlength=n) > 0
    appr_ok = pc.fill_null(pc.greater(pc.list_value_length(ids), 0), False)
    kind_act = pc.fill_null(pc.equal(record, ACTION), False)
    act_ok = pc.and_(pc.fill_null(pc.equal(pc.list_value_length(ids), 1), False),
                     pc.fill_null(pc.is_in(table.column("action").combine_chunks(), pa.array(ACTIONS)), False))
    ok = np.asarray(pc.and_(common, pc.or_(pc.or_(pc.and_(kind_obs, obs_ok), pc.and_(kind_appr, appr_ok)),
                                           pc.and_(kind_act, act_ok))), dtype=bool)
    listing = np.asarray(pc.or_(kind_appr, kind_act), dtype=bool)
    ok &= ~(np.asarray(kind_obs, dtype=bool) & bad_event) & ~(listing & bad_id)
    return ok, observed_at, np.asarray(kind_appr, dtype=bool), np.asarray(kind_act, dtype=bool)


def flatten(table: pa.Table, observed_at: pa.Array) -> pa.Table:
    """Good records -> one row per event per observation (an observation without events keeps one
    row with null event columns), plus one row per event id of each approval and action record."""
    record = pc.fill_null(table.column("record").combine_chunks(), OBSERVATION)
    is_appr = np.asarray(pc.or_(pc.equal(record, APPROVAL), pc.equal(record, ACTION)), dtype=bool)
    events = table.column("events").combine_chunks()
    event_rows = np.asarray(pc.list_parent_indices(events))
    flat = pc.list_flatten(events)
    no_events = np.flatnonzero(~is_appr & (np.asarray(pc.fill_null(pc.list_value_length(events), 0)) == 0))
    ids = table.column("event_ids").combine_chunks()
    id_rows = np.asarray(pc.list_parent_indices(ids))
    id_keep = is_appr[id_rows]  # event_ids only mean something on approval records
    approval_rows = id_rows[id_keep]
    rows = pa.array(np.concatenate((event_rows, no_events, approval_rows)))
    padding = len(no_events)

    def event_field(name: str) -> pa.Array:
        values = pc.struct_field(flat, name)
        return pa.concat_arrays([values, pa.nulls(padding + len(approval_rows), values.type)])

    def listing_field(column: str) -> pa.Array:
        """A top-level field of approval and action records (null on observation rows)."""
        values = table.column(column).combine_chunks()
        return pa.concat_arrays([pa.nulls(len(event_rows) + padding, values.type),
                                 pc.take(values, pa.array(approval_rows))])

    def row_field(column: str, sub: str = "") -> pa.Array:
        values = table.column(column).combine_chunks()
        return pc.take(pc.struct_field(values, sub) if sub else values, rows)

    event_vm = pc.take(pc.struct_field(table.column("vm").combine_chunks(), "name"), pa.array(event_rows))
    affects = np.zeros(len(rows), dtype=bool)
    affects[:len(event_rows)] = affected(pc.struct_field(flat, "Resources"), event_vm)
    approved_ids = pc.list_flatten(ids).filter(pa.array(id_keep))
    return pa.table({
        "record": pc.take(record, rows),
        "observed_at": pc.take(observed_at, rows),
        "host": row_field("host"),
        "vm": row_field("vm", "name"),
        "fault_domain": row_field("vm", "fault_domain"),
        "update_domain": row_field("vm", "update_domain"),
        "scale_set": row_field("vm", "vm_scale_set_name"),
        "zone": row_field("vm", "zone"),
        "location": row_field("vm", "location"),
        "document_incarnation": row_field("document_incarnation"),
        "event_id": pa.concat_arrays([pc.struct_field(flat, "EventId"), pa.nulls(padding, pa.string()),
                                      approved_ids]),
        "event_status": event_field("EventStatus"),
        "event_type": pc.coalesce(event_field("EventType"), listing_field("event_type")),
        "event_source": event_field("EventSource"),
        "resource_type": event_field("ResourceType"),
        "resources": pc.binary_join(event_field("Resources"), ","),
        "not_before": parse_not_before(event_field("NotBefore")),
        "duration_s": event_field("DurationInSeconds"),
        "description": event_field("Description"),
        "affects_vm": pa.array(affects),
        # Change-only histories (the relay): the last poll that still saw the previous document.
        "previous_observed_at": pc.take(parse_utc(table.column("previous_observed_at").combine_chunks()), rows),
        "poll_interval_s": row_field("poll_interval_s"),
        # A poll rebuilt from the next record's previous_observed_at (see history.reconstruct_polls).
        "reconstructed": pa.array(np.zeros(len(rows), dtype=bool)),
        # Action records: prepare or recover (begun); approval and action records: the way of running.
        "action": listing_field("action"),
        "trigger": listing_field("trigger"),
        # Where the record came from: null for IMDS, control_plane for Resource Graph reads and acknowledges.
        "source": row_field("source"),
    })


def affected(resources: pa.Array, vm_names: pa.Array) -> np.ndarray:
    """Per event: is the observing VM listed in `Resources`?

    The same rule as module_utils.document.events.affects, over whole columns: exact, case-insensitive,
    tolerating the legacy leading `_`; never a substring match (vm1 is not vm10).
    """
    flat = _resource_key(pc.list_flatten(resources))
    parents = np.asarray(pc.list_parent_indices(resources))
    own = pc.take(_resource_key(vm_names), pa.array(parents))
    hit = np.asarray(pc.fill_null(pc.equal(flat, own), False), dtype=bool)
    return np.bincount(parents[hit], minlength=len(resources)) > 0


def _resource_key(names: pa.Array) -> pa.Array:
    return pc.utf8_lower(pc.replace_substring_regex(names, pattern="^_", replacement="", max_replacements=1))


def long_type(name: str) -> pa.DataType:
    """The Arrow type of one column of the flattened table."""
    return empty_long_table().schema.field(name).type


def empty_long_table() -> pa.Table:
    """A flattened table with no rows (what an empty history gives)."""
    empty = LINE.empty_table()
    return flatten(empty, pa.array([], _UTC))
