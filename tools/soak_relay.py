"""`make soak-relay`: the event-driven path (a relay per VM, the real ansible-rulebook) on a big simulated fleet
for a long time, measured.

A 200-VM availability set receives a random `fleet-mix` stream (platform walks one fault domain at a time,
live migrations, user reboots and redeploys, cancellations, hardware failures; --busier times its daily
rates) at time scale 1, so notices, relay polls and reactions are all wall seconds. The cycles run the test
prepare/recover log tasks. Afterwards, from the simulator's ground truth, the relays' change-only histories
and the prepare/recover log, it reports:

- events that appeared during the run, seen in a relay history, missed (must be 0);
- events seen Scheduled that never got prepare; events gone without a recover on every VM they listed that
  was prepared (must be 0), judged after a settle period: new arrivals stop at --minutes, and the run goes on
  (at most --settle-minutes) until every event is gone and every prepared host recovered;
- reaction, simulator appeared -> first prepare start (median, p95);
- memory over time (first vs last 5 minutes, sampled every 10 s): the largest relay, all relays together,
  and the rulebook's process tree (its JVM, Python and the cycles it runs); the controller's CPU per event.

Figures go to docs/lab/soak.md (its relay section) and stdout; exit 1 if anything was missed or left unrecovered.
    python tools/soak_relay.py --minutes 30 --vms 200
"""
from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests import timing  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tools.report import write_section  # noqa: E402
from tools.relay_fleet import CpuParts, RelayFleet, cycles_in, environment, tree_rss_mib  # noqa: E402
from tools.soak import busier_fleet_mix, epoch, percentile  # noqa: E402

WORK = REPO / "build" / "soak-relay"
REPORT = REPO / "docs" / "lab" / "soak.md"
SECTION = "## Event-driven soak (`make soak-relay`)"
SETTLE_S = 120  # events gone this long before the end of the settle period must have had their recover


@dataclass
class Samples:
    """Every `every` seconds, in a thread: (seconds since start, largest relay, all relays, rulebook tree) MiB."""
    run: RelayFleet
    every: float = 10.0
    rows: List[Tuple[float, float, float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._loop, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.every):
            relays = [r for r in (tree_rss_mib(r.process.pid) for r in self.run.relays if r.process) if r]
            rulebook = tree_rss_mib(self.run.rulebook.pid) if self.run.rulebook else None
            if relays and rulebook:
                self.rows.append((time.monotonic() - started, max(relays), sum(relays), rulebook))

    def window(self, first: bool) -> List[Tuple[float, float, float, float]]:
        if not self.rows:
            return []
        end = self.rows[-1][0]
        return [r for r in self.rows if (r[0] <= 300 if first else r[0] >= end - 300)]


def figures(run: RelayFleet, started: float, arrivals_end: float, ended: float) -> Dict[str, Any]:
    events = run.fleet.truth()
    seen = {str(e.get("EventId", "")).upper() for relay in run.relays for record in relay.records()
            for e in record.get("events") or [] if isinstance(e, dict)}
    prepares = run.bench.actions("prepare")
    recovers = run.bench.actions("recover")
    due = [e for e in events if started <= (epoch(e["appeared_at"]) or 0) <= arrivals_end]
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import (  # staged in main
        DEFAULT_POLICY, prepare_wanted)
    missed = [f"{e['event_id'][:8]} ({e['event_type']}, {e['outcome']})" for e in due
              if e["event_id"].upper() not in seen]
    reactions, unprepared, unrecovered = [], [], []
    for event in due:
        key = event["event_id"].upper()
        prepared = {a["host"]: a["at"] for a in prepares if str(a["event_id"]).upper() == key}
        recovered = {a["host"] for a in recovers if str(a["event_id"]).upper() == key}
        if prepared:
            reactions.append(min(prepared.values()) - epoch(event["appeared_at"]))
        elif event["start_reason"] != "no_notice" and event["outcome"] != "cancelled" and \
                (epoch(event["not_before"]) or ended) < ended and prepare_wanted(
                    {"event_type": event["event_type"], "duration_in_seconds": event["duration_s"]}, DEFAULT_POLICY):
            # (a short Freeze is approved without prepare by the role's default policy: nothing is owed)
            unprepared.append(f"{key[:8]} ({event['event_type']})")
        removed = epoch(event["removed_at"])
        if removed is not None and removed <= ended - SETTLE_S and set(prepared) - recovered:
            unrecovered.append(f"{key[:8]} ({event['event_type']}: {len(set(prepared) - recovered)} hosts)")
    return {"due": len(due), "seen": len(due) - len(missed), "missed": missed, "unprepared": unprepared,
            "open": [e["event_id"][:8] for e in due if e["status"] != "Removed"],
            "unrecovered": unrecovered, "reactions": reactions, "prepared_hosts": len(prepares),
            "recovered_hosts": len(recovers), "records": sum(len(r.records()) for r in run.relays)}


def settled(run: RelayFleet, started: float, arrivals_end: float) -> bool:
    """Every event of the run gone, and every prepared host recovered."""
    found = figures(run, started, arrivals_end, time.time() + SETTLE_S)
    return not found["open"] and not found["unrecovered"]


def render(args: argparse.Namespace, found: Dict[str, Any], samples: Samples, cpu: CpuParts, wall: float,
           cycles: Dict[str, int]) -> str:
    reactions = found["reactions"]
    lines = [
        SECTION, "",
        f"Command: `python tools/soak_relay.py --minutes {args.minutes:g} --vms {args.vms} --busier {args.busier:g} "
        f"--settle-minutes {args.settle_minutes:g} --seed {args.seed}` (`make soak-relay` runs the 30-minute, 200-VM default).", "",
        f"- Run: {wall / 60:.1f} wall minutes ({args.minutes:g} of arrivals, then a settle period until every event "
        f"was gone and recovered, {args.settle_minutes:g} at most; still open at the end: {len(found['open'])}), {args.vms} VMs (one availability set, 3 fault domains), a relay "
        f"process per VM (poll 1 s, heartbeat 30 s), the real ansible-rulebook; `fleet-mix` x{args.busier:g} at "
        "time scale 1.",
        f"- Events that appeared during the run: {found['due']}; seen in a relay history: {found['seen']}; "
        f"**missed: {len(found['missed'])}** {', '.join(found['missed'])}".rstrip() + ".",
        f"- Prepares: {found['prepared_hosts']} (host, event) pairs, recovers: {found['recovered_hosts']}; events gone "
        f"{SETTLE_S} s before the end with a prepared host not recovered: **{len(found['unrecovered'])}** "
        f"{', '.join(found['unrecovered'])}".rstrip() + f"; events past NotBefore never prepared: "
        f"{len(found['unprepared'])} {', '.join(found['unprepared'])}".rstrip() + ".",
        f"- Relay history records (change-only): {found['records']}.",
    ]
    if reactions:
        lines.append(f"- Reaction, event appears -> first prepare starts: median {statistics.median(reactions):.1f} s, "
                     f"p95 {percentile(reactions, 0.95):.1f} s ({len(reactions)} prepared events).")
    if found["due"]:
        lines.append(f"- Controller CPU (the rulebook's process tree, its cycles included): {cpu.controller:.0f} CPU-s "
                     f"over the run, {cpu.controller / found['due']:.1f} per event; {cycles['cycles']} cycles, "
                     f"{cycles['host_plays']} VM plays in them ({cycles['host_plays'] / max(cycles['cycles'], 1):.0f} "
                     "VMs per cycle on average).")
    cores = (psutil.cpu_count() or 1) * wall
    lines.append(f"- CPU by part over the run (share of this machine's {psutil.cpu_count()} cores): controller "
                 f"{cpu.controller:.0f} CPU-s ({100 * cpu.controller / cores:.0f} %), relays {cpu.relays:.0f} "
                 f"({100 * cpu.relays / cores:.0f} %), simulated IMDS of every VM (the harness process) "
                 f"{cpu.simulator:.0f} ({100 * cpu.simulator / cores:.0f} %); the whole machine busy "
                 f"{100 * cpu.machine / cores:.0f} %.")
    first, last = samples.window(True), samples.window(False)
    if first and last:
        def mean(rows: List[Tuple[float, float, float, float]], i: int) -> float:
            return statistics.mean(r[i] for r in rows)
        lines.append(f"- Memory, first 5 minutes -> last 5 ({len(samples.rows)} samples): largest relay "
                     f"{mean(first, 1):.1f} -> {mean(last, 1):.1f} MiB; all relays {mean(first, 2):.0f} -> "
                     f"{mean(last, 2):.0f} MiB; rulebook tree {mean(first, 3):.0f} -> {mean(last, 3):.0f} MiB "
                     f"(max {max(r[3] for r in samples.rows):.0f}).")
    return "\n".join(lines) + "\n"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--vms", type=int, default=200)
    parser.add_argument("--settle-minutes", type=float, default=15.0,
                        help="after --minutes: no new arrivals, run on until every event is gone and recovered")
    parser.add_argument("--busier", type=float, default=150.0, help="multiply fleet-mix's per-day rates")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--report", default=str(REPORT), help="markdown file to write the section to ('' for none)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if not shutil.which("java"):
        raise SystemExit("ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    collections = environment(WORK)
    # The stream starts once the relays and the rulebook are up (a busy stream never lets the start-up settle).
    fleet = LiveFleet(None, time_scale=1.0, seed=args.seed, rate_limit=5.0,
                      fleet=FleetSpec(kind="availability_set", name="avset-soak", vms=args.vms, fault_domains=3))
    run = RelayFleet(WORK / "run", fleet, collections, timing.wait_for)
    samples = Samples(run)
    try:
        run.start()
        print(f"Relay soak: {args.vms} VMs, {args.minutes:g} minutes; rulebook log in {run.log}", flush=True)
        fleet.load(busier_fleet_mix(args.busier))
        started, cpu0, log_from = time.time(), run.cpu(), run.log.stat().st_size
        samples.start()
        while time.time() - started < args.minutes * 60:
            time.sleep(5)
            run.check_alive()
        arrivals_end = time.time()
        fleet.stop_arrivals()
        while time.time() < arrivals_end + args.settle_minutes * 60 and not settled(run, started, arrivals_end):
            time.sleep(5)
            run.check_alive()
        ended, cpu1 = time.time(), run.cpu()
        samples.stop()
        found = figures(run, started, arrivals_end, ended)
    finally:
        samples.stop()
        run.close()
        fleet.close()
    text = render(args, found, samples, cpu1 - cpu0, ended - started, cycles_in(run.log, log_from))
    print(text)
    if args.report:
        write_section(Path(args.report), SECTION, text)
    return 0 if not found["missed"] and not found["unrecovered"] else 1


if __name__ == "__main__":
    sys.exit(main())
