"""`make demo-event-driven`: a 6-VM availability set handled event-driven, as in production.

Starts the IMDS simulator (3 fault domains, real time), an event relay process per VM and the real
`ansible-rulebook -r azure_imds.scheduled_events.scheduled_events` (Java 17+), then announces a platform
Reboot of fault domain 0 (15 minutes' notice) and, a little later, a Preempt of a VM in fault domain 1
(30 seconds' notice). It prints what happened, in wall seconds from each event's appearance: when a relay
saw it, when the rulebook's cycle prepared each VM, when the event was approved and started, when it was
gone and each VM recovered (a preempted VM is deleted: nothing to recover). Takes about two minutes; exit 1
if an event was not prepared before it started or a prepared VM was not recovered.
"""
from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests import timing  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tools.relay_fleet import RelayFleet, environment  # noqa: E402
from tools.soak import epoch  # noqa: E402

WORK = REPO / "build" / "demo-event-driven"
EVENTS = [  # short Started phases, so that the demo sees the recovers
    {"key": "platform-reboot", "type": "Reboot", "source": "Platform", "notice_s": 900, "duration_s": 7,
     "started_for_s": 20, "resources": {"fault_domain": 0}},
    {"key": "spot-eviction", "type": "Preempt", "notice_s": 30, "duration_s": -1, "started_for_s": 20,
     "resources": {"fault_domain": 1, "count": 1}},
]


def timeline(run: RelayFleet, event: Dict[str, Any]) -> List[str]:
    """One line per step of an event, in seconds since it appeared."""
    key, t0 = event["event_id"].upper(), epoch(event["appeared_at"])
    steps = []
    seen = sorted(epoch(records[0]["observed_at"]) for records in (
        [r for r in relay.records() if any(str(e.get("EventId", "")).upper() == key for e in r["events"])]
        for relay in run.relays) if records)
    if seen:  # every VM of the set sees every event of the set
        steps.append((seen[0], f"the relays see it and push ({len(seen)} VMs, the last {seen[-1] - seen[0]:.1f} s "
                               "after the first)"))
    for phase in ("prepare", "recover"):
        for action in run.bench.actions(phase):
            if str(action["event_id"]).upper() == key:
                steps.append((action["at"], f"{phase} runs on {action['host']}"))
    for name, what in (("first_approved_at", "approved by the cycle (%s)" % ", ".join(event["approved_by"])),
                       ("started_at", "started"), ("removed_at", "gone from the document")):
        if event.get(name):
            steps.append((epoch(event[name]), what))
    return [f"  +{at - t0:6.1f} s  {what}" for at, what in sorted(steps)]


GONE_FOR_GOOD = ("Preempt", "Terminate")  # the VM is deleted: nothing comes back to recover


def done(run: RelayFleet, ids: List[str]) -> bool:
    truth = {e["event_id"]: e for e in run.fleet.truth()}
    recovered = {str(a["event_id"]).upper() for a in run.bench.actions("recover")}
    return all(truth[i]["removed_at"] and (i.upper() in recovered or truth[i]["event_type"] in GONE_FOR_GOOD)
               for i in ids)


def verdict(run: RelayFleet, event: Dict[str, Any]) -> Optional[str]:
    key = event["event_id"].upper()
    prepared = {a["host"]: a["at"] for a in run.bench.actions("prepare") if str(a["event_id"]).upper() == key}
    recovered = {a["host"] for a in run.bench.actions("recover") if str(a["event_id"]).upper() == key}
    if not prepared or (event["started_at"] and max(prepared.values()) > epoch(event["started_at"])):
        return "not prepared before it started"
    if set(prepared) - recovered and event["event_type"] not in GONE_FOR_GOOD:
        return "prepared VMs not recovered: " + ", ".join(sorted(set(prepared) - recovered))
    return None


def main() -> int:
    if not shutil.which("java"):
        raise SystemExit("ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless")
    collections = environment(WORK)
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name="avset-web", vms=6, fault_domains=3))
    run = RelayFleet(WORK / "run", fleet, collections, timing.wait_for)
    try:
        print(f"Simulated IMDS at {fleet.sim.base_url}: availability set avset-web, 6 VMs in 3 fault domains.")
        print("Starting ansible-rulebook (azure_imds.scheduled_events.scheduled_events) and a relay per VM ...",
              flush=True)
        run.start()
        ids = fleet.inject(EVENTS[0])
        print("A platform Reboot of fault domain 0 is announced (15 minutes' notice).", flush=True)
        time.sleep(20)
        ids += fleet.inject(EVENTS[1])
        print("A Preempt (spot eviction, 30 s notice) of a VM in fault domain 1 is announced.", flush=True)
        failures = []
        try:
            timing.wait_for(lambda: done(run, ids), 180, "both events to end and their VMs to recover", interval=1)
        except AssertionError as exc:
            failures.append(str(exc))
        truth = {e["event_id"]: e for e in fleet.truth()}
        for event_id in ids:
            event = truth[event_id]
            print(f"\n{event['event_type']} {event_id[:8]} on {', '.join(event['resources'])}:")
            print("\n".join(timeline(run, event)))
            if event["event_type"] in GONE_FOR_GOOD:
                print("  (the VM is deleted: nothing to recover; it counts as busy until it leaves the inventory)")
            problem = verdict(run, event)
            if problem:
                failures.append(f"{event['event_type']} {event_id[:8]}: {problem}")
    finally:
        run.close()
        fleet.close()
    print(f"\nRelay histories, the rulebook's log and the cycles' prepare/recover log: {WORK / 'run'}")
    if failures:
        print("Demo did not go as it should: " + "; ".join(failures))
        return 1
    print("Every event was prepared before it started and every prepared VM recovered.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
