"""`make bench-reaction`: event-driven reaction (relays + ansible-rulebook) at 50 and 200 VMs, and the
watch playbook on the same 50-VM fleet, measured side by side in one run.

Per fleet size N (time scale 1, an availability set of N VMs served by the simulator on 127.0.0.1):
- event-driven: a relay process per VM (poll_interval 1.0 s, heartbeat 30 s) on its VM's IMDS root, the
  real `ansible-rulebook -r azure_imds.scheduled_events.scheduled_events` with --vars (token_file,
  listen_port, expected_hosts, prepare_tasks, recover_tasks: the test log tasks). Events are injected ONE
  AT A TIME: the next one 15 s after the previous one's first prepare (or after its deadline);
- watch (50 VMs only; --no-watch skips it): `azure_imds.scheduled_events.watch` with as many forks as
  hosts; the same event mix injected as a STREAM, one every 10 s (a watch round takes longer than that,
  so one-at-a-time would only make the run longer without changing what a round sees).
Event mix: half Preempt (30 s notice), half Reboot (900 s notice), one VM each, all in fault domain 0
(so that the fault-domain limit never defers a host and each reaction is the path's own).

Figures, from the simulator's ground truth and the prepare log: reaction = event appears in the
simulator (`appeared_at`) -> first prepare start, per event (median, p95); Preempt prepared before
NotBefore (%); missed (never prepared within the run); controller CPU-seconds per event (the rulebook's
process tree: own + reaped children's CPU from /proc, measured from just before the first event to just
after the last one's deadline, heartbeats included); relay max RSS and mean CPU % of one core.

    python tools/bench_reaction.py [--sizes 50,200] [--events 6] [--no-watch] [--report docs/benchmarks.md]
Quick try: python tools/bench_reaction.py --sizes 5 --events 2 --no-watch --report ''
Every wait is bounded; --max-minutes bounds the whole run; processes are killed (whole trees) on any exit.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional


REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests.integration.runner import CycleBench  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tests import timing  # noqa: E402
from tools.report import write_section  # noqa: E402
from tools.soak import epoch, percentile  # noqa: E402
from tools.relay_fleet import RelayFleet, environment, kill_tree, tree_cpu  # noqa: E402
from tests.history.history_helpers import capture_env  # noqa: E402

WORK = REPO / "build" / "bench-reaction"
REPORT = REPO / "docs" / "benchmarks.md"
SECTION = "## Event-driven reaction (`make bench-reaction`)"
NOTICE = {"Preempt": 30, "Reboot": 900}
EDA_GAP_S = 15.0      # after an event's first prepare (event-driven), before the next event
WATCH_GAP_S = 10.0    # between two events of the watch's stream
WAIT_PREPARE_S = 240  # how long an event may wait for its first prepare (a Preempt: until it is gone);
#                      one not prepared by the end of its size's run counts as missed
DEADLINE: List[float] = [0.0]  # the whole run's monotonic deadline
ROUND_STARTS = "TASK [Wait for this host's document to change]"  # the first task of each watch round


class OutOfTime(Exception):
    pass


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """tests.timing.wait_for, also bounded by the whole run's deadline."""
    try:
        return timing.wait_for(predicate, min(timeout, DEADLINE[0] - time.monotonic()), what, interval)
    except AssertionError as exc:
        raise OutOfTime(str(exc))


# --- events ----------------------------------------------------------------------------------------

def event_mix(count: int) -> List[str]:
    """Half Preempt, half Reboot, alternating (Preempt first)."""
    return ["Preempt" if n % 2 == 0 else "Reboot" for n in range(count)]


def victims(fleet: LiveFleet, count: int) -> List[str]:
    """`count` distinct VMs of fault domain 0 (the fault-domain limit then never defers one)."""
    fd0 = [v.name for v in fleet.engine.fleet.vms if v.fault_domain == 0]
    if len(fd0) < count:
        raise SystemExit(f"{count} events need {count} VMs in fault domain 0; the fleet has {len(fd0)}")
    step = max(1, len(fd0) // count)  # spread over the fleet
    return fd0[::step][:count]


def inject(fleet: LiveFleet, kind: str, vm: str, n: int) -> str:
    (event_id,) = fleet.inject({"key": f"bench-{n}", "type": kind, "notice_s": NOTICE[kind],
                                "resources": {"names": [vm]}})
    return event_id


def first_prepare(bench: CycleBench, event_id: str) -> Optional[float]:
    times = [a["at"] for a in bench.actions("prepare") if str(a["event_id"]).upper() == event_id.upper()]
    return min(times) if times else None


def settled(fleet: LiveFleet, bench: CycleBench, event_id: str) -> bool:
    """Prepared, or gone (a Preempt that ran out), or past its NotBefore: waiting longer would not help."""
    if first_prepare(bench, event_id) is not None:
        return True
    for event in fleet.truth():
        if event["event_id"] == event_id:
            return event["removed_at"] is not None or (epoch(event["not_before"]) or 0) + 10 < time.time()
    return False


def outcomes(fleet: LiveFleet, bench: CycleBench, ids: List[str]) -> Dict[str, Any]:
    truth = {e["event_id"]: e for e in fleet.truth()}
    reactions, preempts, preempt_in_time, missed = [], 0, 0, []
    rows = []
    for event_id in ids:
        event = truth[event_id]
        prepared = first_prepare(bench, event_id)
        appeared, not_before = epoch(event["appeared_at"]), epoch(event["not_before"])
        if prepared is None:
            missed.append(f"{event_id[:8]} ({event['event_type']})")
        else:
            reactions.append(prepared - appeared)
        if event["event_type"] == "Preempt":
            preempts += 1
            preempt_in_time += prepared is not None and not_before is not None and prepared < not_before
        rows.append({"event_id": event_id, "type": event["event_type"], "appeared_at": appeared,
                     "not_before": not_before, "prepared_at": prepared, "start_reason": event["start_reason"]})
    return {"reactions": reactions, "preempts": preempts, "preempt_in_time": preempt_in_time,
            "missed": missed, "events": rows}


# --- runs ------------------------------------------------------------------------------------------

@dataclass
class Result:
    way: str
    size: int
    found: Dict[str, Any]
    controller_cpu_s: Optional[float] = None
    relay_rss_mib: Optional[float] = None
    relay_cpu_pct: Optional[float] = None
    notes: List[str] = field(default_factory=list)
    histories: List[Path] = field(default_factory=list)   # what the run recorded (cycles' callback, relays)


def run_eda(size: int, events: int, collections: Path) -> Result:
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name=f"avset-eda-{size}", vms=size, fault_domains=3))
    run = RelayFleet(WORK / f"eda-{size}", fleet, collections, wait_for, capture=True)
    try:
        run.start()
        bench = run.bench
        print(f"  event-driven, {size} VMs: rulebook and {len(run.relays)} relays up; injecting {events} events",
              flush=True)
        relay_cpu0 = run.relay_cpu()
        cpu0, wall0 = run.controller_cpu(), time.monotonic()
        max_rss = 0.0
        ids: List[str] = []
        for n, (kind, vm) in enumerate(zip(event_mix(events), victims(fleet, events))):
            event_id = inject(fleet, kind, vm, n)
            ids.append(event_id)
            try:  # an event still unprepared after WAIT_PREPARE_S is reported as such; the next one comes
                wait_for(lambda: settled(fleet, bench, event_id), WAIT_PREPARE_S, f"event {n} to settle",
                         interval=0.5)
            except OutOfTime:
                if time.monotonic() > DEADLINE[0]:
                    raise
                print(f"  event {n} ({kind}) not prepared within {WAIT_PREPARE_S} s", flush=True)
            max_rss = max(max_rss, run.relay_max_rss())
            time.sleep(EDA_GAP_S)
            run.check_alive()
        cpu1, wall1 = run.controller_cpu(), time.monotonic()
        relay_cpu1 = run.relay_cpu()
        relay_cpu = [(relay_cpu1[vm] or 0.0) - (relay_cpu0[vm] or 0.0) for vm in relay_cpu0]
        found = outcomes(fleet, bench, ids)
        return Result("event-driven", size, found, controller_cpu_s=(cpu1 - cpu0) / events,
                      relay_rss_mib=max_rss, relay_cpu_pct=100 * statistics.mean(relay_cpu) / (wall1 - wall0),
                      notes=[f"{wall1 - wall0:.0f} s of events"], histories=run.histories())
    finally:
        run.close()
        fleet.close()


def run_watch(size: int, events: int) -> Result:
    work = WORK / f"watch-{size}"
    work.mkdir()
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name=f"avset-watch-{size}", vms=size, fault_domains=3))
    bench = CycleBench(fleet, work)
    window = events * WATCH_GAP_S + WAIT_PREPARE_S + 120
    command, env = bench.command("watch", False, True, True, {
        "watch_seconds": window + 120, "watch_poll_interval": 1, "watch_round_seconds": 10}, size,
        capture_env(work / "cycles.jsonl"))
    proc: Optional[subprocess.Popen] = None
    try:
        with (work / "watch.log").open("w") as log:
            proc = subprocess.Popen(command, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        # Start the events once the first round is over: its hosts (quiet ones save no state) wait for changes.
        log_path = work / "watch.log"
        wait_for(lambda: log_path.read_text().count(ROUND_STARTS) >= 2 or proc.poll() is not None, 600,
                 "the watch's first round")
        if proc.poll() is not None:
            raise SystemExit("the watch ended:\n" + (work / "watch.log").read_text()[-3000:])
        print(f"  watch, {size} VMs: first round over; injecting {events} events as a stream", flush=True)
        cpu0 = tree_cpu(proc.pid)
        ids = []
        for n, (kind, vm) in enumerate(zip(event_mix(events), victims(fleet, events))):
            ids.append(inject(fleet, kind, vm, n))
            time.sleep(WATCH_GAP_S)
        wait_for(lambda: all(settled(fleet, bench, i) for i in ids), WAIT_PREPARE_S + 120, "the events to settle",
                 interval=1.0)
        cpu1 = tree_cpu(proc.pid)
        return Result("watch", size, outcomes(fleet, bench, ids), controller_cpu_s=(cpu1 - cpu0) / events,
                      histories=[work / "cycles.jsonl"])
    finally:
        kill_tree(proc)
        fleet.close()


def write_history(results: List[Result], destination: Path) -> Path:
    """Every run's histories in one gzip file the notebooks read (fleets have names of their own per run), with
    the sidecar that says it is simulated."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(destination, "wb") as out:
        for result in results:
            for path in result.histories:
                if path.exists():
                    out.write(path.read_bytes())
    destination.with_name(destination.name + ".meta.json").write_text(json.dumps({
        "simulated": True, "time_scale": 1.0,
        "source": "make bench-reaction: " + ", ".join(f"{r.way} {r.size} VMs" for r in results)}) + "\n")
    return destination


# --- report ----------------------------------------------------------------------------------------

def fmt(value: Optional[float], digits: int = 1) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def render(results: List[Result], argv: List[str], wall: float) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    command = "python tools/bench_reaction.py " + " ".join(argv) if argv else "python tools/bench_reaction.py"
    lines = [
        SECTION, "",
        f"Command: `{command}` (`make bench-reaction` runs `--sizes 50,200 --events 6` and the watch); "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, head {head}{' with uncommitted changes' if dirty else ''}, "
        f"{wall / 60:.1f} wall minutes, this project's 2-core machine (shared and noisy).", "",
        "Time scale 1; events on one VM each, half Preempt (30 s notice), half Reboot (900 s); reaction = the "
        "event appears in the simulator -> first prepare starts (the prepare log). Event-driven: a relay process "
        "per VM (poll 1 s, heartbeat 30 s), the real ansible-rulebook with the collection's rulebook, events one "
        f"at a time ({EDA_GAP_S:g} s after the previous one's first prepare). Watch: `azure_imds.scheduled_events.watch`, "
        f"forks = VMs, the same mix as a stream (one every {WATCH_GAP_S:g} s). Controller CPU: the rulebook's (or the "
        "watch's) process tree, children included, over the events phase, per event.", "",
        "| way | VMs | events | reaction median | reaction p95 | Preempt prepared before NotBefore | missed "
        "| controller CPU-s / event | relay max RSS | relay mean CPU (one core) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    p95 = {}
    for r in results:
        f = r.found
        med = statistics.median(f["reactions"]) if f["reactions"] else None
        high = percentile(f["reactions"], 0.95) if f["reactions"] else None
        p95[(r.way, r.size)] = high
        preempt = f"{100 * f['preempt_in_time'] / f['preempts']:.0f} % ({f['preempt_in_time']}/{f['preempts']})" \
            if f["preempts"] else "n/a"
        lines.append(
            f"| {r.way} | {r.size} | {len(f['events'])} | {fmt(med)} s | {fmt(high)} s | {preempt} | "
            f"{len(f['missed'])}{' (' + ', '.join(f['missed']) + ')' if f['missed'] else ''} | "
            f"{fmt(r.controller_cpu_s)} | {fmt(r.relay_rss_mib)} MiB | {fmt(r.relay_cpu_pct, 2)} % |"
            .replace("n/a MiB", "n/a").replace("n/a %", "n/a"))
    lines.append("")
    sizes = sorted(s for w, s in p95 if w == "event-driven")
    if len(sizes) >= 2 and p95[("event-driven", sizes[0])] and p95[("event-driven", sizes[-1])] is not None:
        lines.append(f"- Event-driven p95({sizes[-1]}) / p95({sizes[0]}) = "
                     f"{p95[('event-driven', sizes[-1])] / p95[('event-driven', sizes[0])]:.2f}.")
    lines.append("- Per event (s from appearing): " + "; ".join(
        f"{r.way} {r.size}: " + ", ".join(
            f"{e['type'][0]} {fmt(e['prepared_at'] - e['appeared_at']) if e['prepared_at'] else 'missed'}"
            for e in r.found["events"]) for r in results) + " (P = Preempt, R = Reboot).")
    return "\n".join(lines) + "\n"


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200", help="fleet sizes for the event-driven runs")
    parser.add_argument("--events", type=int, default=6, help="events per size (half Preempt, half Reboot)")
    parser.add_argument("--no-watch", action="store_true", help="skip the watch comparison")
    parser.add_argument("--watch-size", type=int, default=50)
    parser.add_argument("--max-minutes", type=float, default=60.0, help="the whole run stops after this")
    parser.add_argument("--report", default=str(REPORT), help="markdown file to append to ('' for none)")
    parser.add_argument("--history", default=str(WORK / "reaction-history.jsonl.gz"),
                        help="one history of every run (the cycles' callback and the relays), gzip, with a "
                             ".meta.json sidecar ('' for none)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if not shutil.which("java"):
        raise SystemExit("ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless")
    DEADLINE[0] = time.monotonic() + args.max_minutes * 60
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.monotonic()
    collections = environment(WORK)
    print(f"bench-reaction: sizes {sizes}, {args.events} events each, watch "
          f"{'off' if args.no_watch else args.watch_size}; work in {WORK}", flush=True)
    results: List[Result] = []
    try:
        for size in sizes:
            results.append(run_eda(size, args.events, collections))
        if not args.no_watch:
            results.append(run_watch(args.watch_size, args.events))
    except (OutOfTime, KeyboardInterrupt, SystemExit) as exc:  # keep the figures of the runs that ended
        print(f"bench-reaction stopped early: {exc!r}", file=sys.stderr)
        if not results:
            return 1
    text = render(results, argv, time.monotonic() - started)
    print(text)
    history = write_history(results, Path(args.history)) if args.history else None
    if history:
        print(f"the runs' histories (cycles and relays, for the reaction notebook): {history}")
    report = Path(args.report) if args.report else None
    if report:
        write_section(report, SECTION, text)
        print(f"written to {report}")
    return 0 if all(not r.found["missed"] for r in results if r.way == "event-driven") else 1


if __name__ == "__main__":
    sys.exit(main())
