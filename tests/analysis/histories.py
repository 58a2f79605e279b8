"""Histories with known answers for the event_analysis tests.

Two kinds: simulated ones, where the simulator engine's own record of every event
(appeared, NotBefore, started, removed, impact) is the truth the analysis must bracket;
and hand-written ones, line by line, for the edge cases.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from imds_simulator import scenario as sc
from imds_simulator.engine import Engine, EngineOptions
from imds_simulator.fleet import FleetSpec, build_fleet
from imds_simulator.offline import GenerateOptions, generate, open_output

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)


@dataclass
class Simulated:
    path: Path
    truth: List[Dict[str, Any]]  # SimEvent.summary() of every event the engine ran
    fault_domains: Dict[str, int]  # VM name -> fault domain
    poll_interval_s: float
    end: datetime  # when the history ends: an event removed in its last poll interval may look open
    deleted: Dict[str, datetime]  # VM name -> when an eviction deleted it (no poll of it after)


def simulate(tmp: Path, scenario: str, *, days: float, poll: float, seed: int = 1, approve: str = "none",
             name: str = "history.jsonl", change_only: bool = False, **fleet: Any) -> Simulated:
    engine = Engine(build_fleet(FleetSpec(**fleet)), sc.load(scenario), T0, seed=seed,
                    options=EngineOptions(record_served=False))
    path = tmp / name
    with open_output(str(path)) as out:
        generate(engine, GenerateOptions(days=days, poll_interval_s=poll, approve=approve, change_only=change_only),
                 out, seed=seed)
    domains = {vm.name: vm.fault_domain for vm in engine.fleet.vms}
    deleted = {state.vm.name: state.deleted_at for state in engine.vms.values() if state.deleted_at}
    return Simulated(path, [ev.summary() for ev in engine.events], domains, poll, T0 + timedelta(days=days), deleted)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def rfc1123(moment: datetime) -> str:
    return moment.strftime("%a, %d %b %Y %H:%M:%S GMT")


def vm(name: str, fault_domain: int = 0, update_domain: int = 0) -> Dict[str, Any]:
    return {"name": name, "resource_id": f"/subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/"
            f"virtualMachines/{name}", "vm_scale_set_name": "", "fault_domain": fault_domain,
            "update_domain": update_domain, "zone": "", "location": "westeurope"}


def event(event_id: str, status: str, resources: Sequence[str], *, event_type: str = "Reboot",
          not_before: Optional[datetime] = None, source: str = "Platform", duration: int = 7) -> Dict[str, Any]:
    return {"EventId": event_id, "EventStatus": status, "EventType": event_type, "ResourceType": "VirtualMachine",
            "Resources": list(resources), "NotBefore": rfc1123(not_before) if not_before else "",
            "Description": "test", "EventSource": source, "DurationInSeconds": duration}


def observation(seconds: float, host: str, events: Sequence[Dict[str, Any]], *, incarnation: Optional[int] = 1,
                fault_domain: int = 0, update_domain: int = 0) -> Dict[str, Any]:
    return {"observed_at": iso(at(seconds)), "host": host, "vm": vm(host, fault_domain, update_domain),
            "document_incarnation": incarnation, "events": list(events)}


def approval(seconds: float, host: str, event_ids: Sequence[str]) -> Dict[str, Any]:
    return {"record": "approval", "observed_at": iso(at(seconds)), "host": host, "event_ids": list(event_ids),
            "results": {i: "started" for i in event_ids}, "vm": vm(host)}


def action(seconds: float, host: str, kind: str, event_id: str, event_type: str = "Reboot",
           trigger: str = "event-driven") -> Dict[str, Any]:
    """What the history callback writes when the cycle begins a host's prepare or recover for an event."""
    return {"record": "action", "observed_at": iso(at(seconds)), "host": host, "action": kind,
            "event_ids": [event_id], "event_type": event_type, "trigger": trigger, "vm": vm(host)}


def write_lines(path: Path, records: Sequence[Any]) -> Path:
    """Records as JSON lines; a str record is written verbatim (for broken lines)."""
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")
    return path


def parse(text: Optional[str]) -> Optional[datetime]:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
