"""Scenarios: what happens to a fleet, as data (JSON files), never as code.

A scenario lists event specs. Each spec becomes one or more events when it is
due: once (`at_s`), after another spec's events (`after`), chained fault domain
by fault domain (`for_each`), or as a random stream (`per_day`). All durations
are in *scenario seconds*; the engine divides them by the time scale.

A replay scenario lists captured documents instead; it is turned into specs
with fixed start and removal times, so that the engine serves it like any
other scenario. See docs/reference/scenarios.md for the format.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .jsonfile import read_json
from .wire import EVENT_SOURCES, SCENARIO_TYPES

SCENARIO_DIR = os.path.join(os.path.dirname(__file__), "scenarios")
Number = Union[int, float]
# A duration is a number or a [low, high] range sampled uniformly (seeded).
Span = Tuple[float, float]

FOR_EACH = (None, "fault_domain", "update_domain", "zone")
APPROVAL_RULES = ("any", "all")
VISIBILITY = ("set", "resources")
SELECTOR_KEYS = ("fault_domain", "update_domain", "set", "zone", "count", "vms", "names")
ID_CASES = ("upper", "lower")  # how EventIds are served: Azure's documents show both
ROUTINE_TYPES = ("Freeze", "Reboot", "Redeploy")


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message is one sentence naming the cause."""


@dataclass(frozen=True)
class After:
    key: str
    on: str  # "started" (first event of that spec started) or "removed" (all gone)
    delay_s: Span


@dataclass(frozen=True)
class EventSpec:
    key: str
    event_type: str
    source: str = "Platform"
    description: str = ""
    duration_s: int = -1           # declared DurationInSeconds (-1 unknown, 0 no impact)
    impact_s: Optional[Span] = None  # actual impact; None: the declared duration, else 7 s
    notice_s: Optional[Span] = (900.0, 900.0)  # None: the event appears already Started
    started_for_s: Span = (600.0, 600.0)
    resources: Any = "all"
    for_each: Optional[str] = None
    order: str = "ascending"       # order a for_each chain walks its domains
    gap_s: Span = (60.0, 180.0)    # for_each: previous domain removed -> next appears
    at_s: Optional[Span] = (0.0, 0.0)
    after: Optional[After] = None
    per_day: Optional[float] = None
    cancel_after_s: Optional[Span] = None
    approval: str = "any"
    visible: str = "set"
    # Replay only: fixed id, literal NotBefore, fixed start/removal (scenario s).
    event_id: Optional[str] = None
    not_before_literal: Optional[str] = None
    fixed_start_s: Optional[float] = None
    fixed_removed_s: Optional[float] = None
    # None: the scenario's event_id_case, else the engine's default (upper).
    event_id_case: Optional[str] = None

    @property
    def routine(self) -> bool:
        """Planned platform maintenance: the kind Azure serialises by fault domain."""
        return self.source == "Platform" and self.notice_s is not None and self.event_type in ROUTINE_TYPES


@dataclass(frozen=True)
class Parameter:
    default: float
    low: float
    high: float
    help: str = ""


@dataclass
class Scenario:
    name: str
    summary: str
    specs: List[EventSpec]
    fleet: Dict[str, Any] = field(default_factory=dict)
    parameters: Dict[str, Parameter] = field(default_factory=dict)
    recorded_start: Optional[datetime] = None  # replay: wall time of scenario second 0
    event_id_case: Optional[str] = None  # for specs that do not set their own; None: the engine's default


def impact_span(spec: EventSpec) -> Span:
    """How long the event takes the VM down or frozen: its impact_s, else its declared duration, else 7 s (the
    typical impact Azure's overview gives a reboot)."""
    if spec.impact_s is not None:
        return spec.impact_s
    seconds = float(spec.duration_s) if spec.duration_s > 0 else 7.0
    return (seconds, seconds)


def sample(span: Span, rng: random.Random) -> float:
    low, high = span
    return low if low == high else rng.uniform(low, high)


# --------------------------------------------------------------------------- loading

def available() -> List[Scenario]:
    names = sorted(f[:-5] for f in os.listdir(SCENARIO_DIR) if f.endswith(".json"))
    return [load(name) for name in names]


def load(name_or_path: str, params: Optional[Dict[str, float]] = None) -> Scenario:
    """A bundled scenario by name, or a user's scenario file by path."""
    path = name_or_path
    if os.path.sep not in name_or_path and not name_or_path.endswith(".json"):
        path = os.path.join(SCENARIO_DIR, name_or_path + ".json")
        if not os.path.exists(path):
            known = ", ".join(f[:-5] for f in sorted(os.listdir(SCENARIO_DIR)) if f.endswith(".json"))
            raise ScenarioError(f"no scenario named {name_or_path!r}; known scenarios: {known}.")
    return parse(read_json(path, "scenario", ScenarioError), params or {}, source=path)


def parse(data: Any, params: Dict[str, float], source: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source} must hold a JSON object.")
    _only(data, ("name", "summary", "fleet", "parameters", "events", "replay", "event_id_case"), source)
    name = _text(data, "name", source, required=True)
    parameters = {k: _parameter(k, v, source) for k, v in _dict(data, "parameters", source).items()}
    values = _resolve_params(parameters, params, source)
    if "replay" in data:
        specs, recorded_start = _replay(data["replay"], f"{source}: replay")
    else:
        raw = data.get("events")
        if not isinstance(raw, list):  # [] is a quiet fleet: VMs whose documents never list an event
            raise ScenarioError(f"{source} needs an 'events' list ([] for a quiet fleet) or a 'replay'.")
        specs = [_spec(item, values, f"{source}: event {i}") for i, item in enumerate(raw)]
        recorded_start = None
    _check_references(specs, source)
    return Scenario(name=name, summary=_text(data, "summary", source, required=True), specs=specs,
                    fleet=_dict(data, "fleet", source), parameters=parameters,
                    recorded_start=recorded_start,
                    event_id_case=_choice(data, "event_id_case", (None,) + ID_CASES, source, default=None))


def from_event(data: Any, key: str = "injected") -> Scenario:
    """A one-event scenario from a control-API request body."""
    if isinstance(data, dict) and "key" not in data:
        data = dict(data, key=key)
    spec = _spec(data, {}, "event")
    _check_references([spec], "event")
    return Scenario(name=spec.key, summary="injected event", specs=[spec])


def _parameter(name: str, raw: Any, source: str) -> Parameter:
    where = f"{source}: parameter {name!r}"
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} must be an object with default, min and max.")
    _only(raw, ("default", "min", "max", "help"), where)
    low, high, default = (_number(raw, k, where, required=True) for k in ("min", "max", "default"))
    if not low <= default <= high:
        raise ScenarioError(f"{where} default {default} is outside {low}..{high}.")
    return Parameter(default=default, low=low, high=high, help=str(raw.get("help", "")))


def _resolve_params(parameters: Dict[str, Parameter], given: Dict[str, float], source: str) -> Dict[str, float]:
    unknown = sorted(set(given) - set(parameters))
    if unknown:
        offered = ", ".join(sorted(parameters)) or "none"
        raise ScenarioError(f"{source} has no parameter {unknown[0]!r} (it takes: {offered}).")
    values = {k: p.default for k, p in parameters.items()}
    for key, value in given.items():
        p = parameters[key]
        if not p.low <= value <= p.high:
            raise ScenarioError(f"parameter {key}={value:g} is outside its allowed range {p.low:g}..{p.high:g}.")
        values[key] = value
    return values


def _spec(raw: Any, params: Dict[str, float], where: str) -> EventSpec:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} must be a JSON object.")
    allowed = ("key", "type", "source", "description", "duration_s", "impact_s", "notice_s",
               "started_for_s", "resources", "for_each", "order", "gap_s", "at_s", "after",
               "per_day", "cancel_after_s", "approval", "visible", "event_id_case")
    _only(raw, allowed, where)
    raw = {k: _substitute(v, params, where) for k, v in raw.items()}
    key = _text(raw, "key", where, required=True)
    where = f"{where} ({key})"
    event_type = _choice(raw, "type", SCENARIO_TYPES, where, default=None)
    spec = EventSpec(
        key=key,
        event_type=event_type,
        source=_choice(raw, "source", EVENT_SOURCES, where, default="Platform"),
        description=_text(raw, "description", where),
        duration_s=int(_number(raw, "duration_s", where, default=-1)),
        impact_s=_span(raw, "impact_s", where, default=None),
        notice_s=_span(raw, "notice_s", where, default=(900.0, 900.0), nullable=True),
        started_for_s=_span(raw, "started_for_s", where, default=(600.0, 600.0)),
        resources=_selector(raw.get("resources", "all"), where),
        for_each=_choice(raw, "for_each", FOR_EACH, where, default=None),
        order=_choice(raw, "order", ("ascending", "random"), where, default="ascending"),
        gap_s=_span(raw, "gap_s", where, default=(60.0, 180.0)),
        at_s=_span(raw, "at_s", where, default=None, nullable=True),
        after=_after(raw.get("after"), where),
        per_day=_number(raw, "per_day", where, default=None),
        cancel_after_s=_span(raw, "cancel_after_s", where, default=None, nullable=True),
        approval=_choice(raw, "approval", APPROVAL_RULES, where, default="any"),
        visible=_choice(raw, "visible", VISIBILITY, where, default="set"),
        event_id_case=_choice(raw, "event_id_case", (None,) + ID_CASES, where, default=None),
    )
    triggers = [t for t in ("at_s", "after", "per_day") if raw.get(t) is not None]
    if len(triggers) > 1:
        raise ScenarioError(f"{where} sets {' and '.join(triggers)}; an event has one trigger.")
    if not triggers:
        spec = replace(spec, at_s=(0.0, 0.0))
    if spec.duration_s < -1:
        raise ScenarioError(f"{where} duration_s must be -1 (unknown), 0 (no impact) or positive.")
    if spec.per_day is not None and spec.per_day <= 0:
        raise ScenarioError(f"{where} per_day must be positive.")
    if spec.notice_s is None and spec.cancel_after_s is not None:
        raise ScenarioError(f"{where} appears already Started, so it cannot be cancelled.")
    return spec


def _substitute(value: Any, params: Dict[str, float], where: str) -> Any:
    """`"$name"` anywhere in a spec stands for the scenario parameter `name`."""
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in params:
            raise ScenarioError(f"{where} uses undefined parameter {value}.")
        return params[value[1:]]
    if isinstance(value, list):
        return [_substitute(v, params, where) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, params, where) for k, v in value.items()}
    return value


def _selector(raw: Any, where: str) -> Any:
    if raw == "all":
        return {}
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} resources must be \"all\" or an object with {', '.join(SELECTOR_KEYS)}.")
    _only(raw, SELECTOR_KEYS, f"{where} resources")
    for key in ("fault_domain", "update_domain"):
        value = raw.get(key)
        if value is not None and value != "random" and not _is_int(value):
            raise ScenarioError(f"{where} resources.{key} must be a number or \"random\".")
    for key in ("set", "zone"):
        if key in raw and not (isinstance(raw[key], str) and raw[key]):
            raise ScenarioError(f"{where} resources.{key} must be a {key} name or \"random\".")
    if "count" in raw and (not _is_int(raw["count"]) or raw["count"] < 1):
        raise ScenarioError(f"{where} resources.count must be a positive whole number.")
    for key in ("vms", "names"):
        if key in raw and not (isinstance(raw[key], list) and raw[key]):
            raise ScenarioError(f"{where} resources.{key} must be a non-empty list.")
    return dict(raw)


def _after(raw: Any, where: str) -> Optional[After]:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} after must be an object with key, on and delay_s.")
    _only(raw, ("key", "on", "delay_s"), f"{where} after")
    return After(key=_text(raw, "key", f"{where} after", required=True),
                 on=_choice(raw, "on", ("started", "removed"), f"{where} after", default="removed"),
                 delay_s=_span(raw, "delay_s", f"{where} after", default=(0.0, 0.0)))


def _check_references(specs: Sequence[EventSpec], source: str) -> None:
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ScenarioError(f"{source} uses an event key twice.")
    for spec in specs:
        if spec.after and spec.after.key not in keys:
            raise ScenarioError(f"{source}: event {spec.key!r} waits for unknown event {spec.after.key!r}.")
        if spec.after and spec.after.key == spec.key:
            raise ScenarioError(f"{source}: event {spec.key!r} waits for itself.")


# --------------------------------------------------------------------------- replay

def _replay(raw: Any, where: str) -> Tuple[List[EventSpec], datetime]:
    """Turn captured documents into specs with fixed times (ids and NotBefore kept)."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where} must be an object with recorded_start and documents.")
    _only(raw, ("recorded_start", "documents"), where)
    recorded_start = _datetime(_text(raw, "recorded_start", where, required=True), where)
    documents = raw.get("documents")
    if not isinstance(documents, list) or not documents:
        raise ScenarioError(f"{where} needs a non-empty documents list.")
    seen: Dict[str, Dict[str, Any]] = {}
    order: List[str] = []
    previous_at = -1.0
    for index, doc in enumerate(documents):
        at = _replay_step(doc, f"{where} document {index}", previous_at)
        previous_at = at
        present = set()
        for event in doc["Events"]:
            event_id = event["EventId"]
            present.add(event_id)
            record = seen.setdefault(event_id, {"event": event, "appear": at, "start": None, "removed": None})
            if event_id not in order:
                order.append(event_id)
            if event.get("EventStatus") == "Started" and record["start"] is None:
                record["start"] = at
        for event_id, record in seen.items():
            if event_id not in present and record["removed"] is None:
                record["removed"] = at
    return [_replay_spec(seen[i], i, where) for i in order], recorded_start


def _replay_step(doc: Any, where: str, previous_at: float) -> float:
    if not isinstance(doc, dict) or not isinstance(doc.get("Events"), list):
        raise ScenarioError(f"{where} must be an object with at_s and an Events list.")
    at = _number(doc, "at_s", where, required=True)
    if at <= previous_at:
        raise ScenarioError(f"{where} at_s must grow from one document to the next.")
    for event in doc["Events"]:
        if not isinstance(event, dict) or not isinstance(event.get("EventId"), str):
            raise ScenarioError(f"{where} has an event without an EventId.")
    return at


def _replay_spec(record: Dict[str, Any], event_id: str, where: str) -> EventSpec:
    event = record["event"]
    where = f"{where} event {event_id}"
    resources = event.get("Resources")
    if not isinstance(resources, list) or not resources:
        raise ScenarioError(f"{where} has no Resources.")
    started_first = event.get("EventStatus") == "Started"
    return EventSpec(
        key=event_id,
        event_type=_choice(event, "EventType", SCENARIO_TYPES, where, default=None),
        source=_choice(event, "EventSource", EVENT_SOURCES, where, default="Platform"),
        description=str(event.get("Description", "")),
        duration_s=int(event.get("DurationInSeconds", -1)),
        notice_s=None if started_first else (0.0, 0.0),
        resources={"names": list(resources)},
        at_s=(record["appear"], record["appear"]),
        event_id=event_id.upper(),
        not_before_literal=None if started_first else event.get("NotBefore", ""),
        fixed_start_s=record["start"],
        fixed_removed_s=record["removed"],
    )


def _datetime(text: str, where: str) -> datetime:
    try:
        if text.endswith("GMT"):
            return parsedate_to_datetime(text)
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except (TypeError, ValueError):
        raise ScenarioError(f"{where} date {text!r} is neither RFC 1123 nor ISO 8601.") from None


# --------------------------------------------------------------------------- field readers

def _only(raw: Dict[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ScenarioError(f"{where} has unknown field {unknown[0]!r} (allowed: {', '.join(allowed)}).")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(raw: Dict[str, Any], key: str, where: str, default: Any = None, required: bool = False) -> Any:
    if key not in raw or raw[key] is None:
        if required:
            raise ScenarioError(f"{where} needs {key}.")
        return default
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{where} {key} must be a number, not {value!r}.")
    return float(value)


def _span(raw: Dict[str, Any], key: str, where: str, default: Any, nullable: bool = False) -> Any:
    if key not in raw:
        return default
    value = raw[key]
    if value is None:
        if nullable:
            return None
        raise ScenarioError(f"{where} {key} cannot be null.")
    if isinstance(value, list) and len(value) == 2 and all(_plain_number(v) for v in value):
        low, high = float(value[0]), float(value[1])
    elif _plain_number(value):
        low = high = float(value)
    else:
        raise ScenarioError(f"{where} {key} must be a number of seconds or a [low, high] pair.")
    if low < 0 or high < low:
        raise ScenarioError(f"{where} {key} must be non-negative with low <= high.")
    return (low, high)


def _plain_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(raw: Dict[str, Any], key: str, where: str, required: bool = False) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise ScenarioError(f"{where} needs {key}.")
        return ""
    if not isinstance(value, str):
        raise ScenarioError(f"{where} {key} must be text.")
    return value


def _choice(raw: Dict[str, Any], key: str, allowed: Sequence[Any], where: str, default: Any) -> Any:
    value = raw.get(key, default)
    if value is None and default is None and None not in allowed:
        raise ScenarioError(f"{where} needs {key} (one of {', '.join(map(str, allowed))}).")
    if value not in allowed:
        shown = ", ".join(str(a) for a in allowed if a is not None)
        raise ScenarioError(f"{where} {key} {value!r} is not one of {shown}.")
    return value


def _dict(raw: Dict[str, Any], key: str, where: str) -> Dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise ScenarioError(f"{where} {key} must be an object.")
    return value
