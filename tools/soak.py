"""`make soak`: the cycle playbook started every minute against a big simulated fleet for a long time, measured.

A 50-VM availability set receives a random `fleet-mix` stream (150 times busier, so that a
30-minute run sees tens of events) at time scale 1: the notices are Azure's own. The real `cycle`
playbook is started every --period wall seconds, as cron's finest schedule would (a run that
overruns the period is followed at once), with the marker_file example prepare/recover tasks and
the history callback on, and no agent on the VMs. Afterwards, from the simulator's ground truth,
the history and the example tasks' audit log, it reports:

- events emitted, seen in the history, missed (must be 0);
- events that affected VMs and got prepare (if seen Scheduled) and recover (once gone);
- reaction latency, simulator `Scheduled` -> first prepare start (median, p95);
- how long the runs took, and how many overran the period;
- the control process's memory (peak RSS of each run's ansible-playbook): first vs last 5 minutes.

Figures go to docs/lab/soak.md (its scheduled-cycle section) and stdout; exit 1 if anything was missed.
    python tools/soak.py --minutes 30 --vms 50
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator import scenario as sc  # noqa: E402
from imds_simulator.engine import Engine  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet  # noqa: E402
from imds_simulator.jsonfile import read_json  # noqa: E402
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread  # noqa: E402
from tools.demo import audit, write_inventory  # noqa: E402
from tools.report import write_section  # noqa: E402
from tools.stage_collection import stage  # noqa: E402

WORK = REPO / "build" / "soak"
REPORT = REPO / "docs" / "lab" / "soak.md"
SECTION = "## Scheduled-cycle soak (`make soak`)"


@dataclass
class Options:
    minutes: float
    vms: int
    time_scale: float
    busier: float
    seed: int
    forks: int
    period: float
    report: Optional[Path]


@dataclass
class MemorySampler:
    """RSS of one process, sampled from /proc every `every` seconds in a thread."""
    pid: int
    every: float = 10.0
    samples: List[tuple] = field(default_factory=list)  # (seconds since start, MiB)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.every):
            rss = rss_mib(self.pid)
            if rss is not None:
                self.samples.append((time.monotonic() - started, rss))


def rss_mib(pid: int) -> Optional[float]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def busier_fleet_mix(factor: float) -> sc.Scenario:
    data = copy.deepcopy(read_json(f"{sc.SCENARIO_DIR}/fleet-mix.json", "scenario", sc.ScenarioError))
    for spec in data["events"]:
        spec["per_day"] = spec["per_day"] * factor
    return sc.parse(data, {})


def epoch(iso: Optional[str]) -> Optional[float]:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def percentile(values: List[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def environment() -> Dict[str, str]:
    if WORK.exists():
        subprocess.run(["rm", "-rf", str(WORK)], check=True)
    (WORK / "state").mkdir(parents=True)
    stage(WORK / "collections")
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(WORK / "collections"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_CALLBACKS_ENABLED="azure_imds.scheduled_events.scheduled_events_history",
                SCHEDULED_EVENTS_HISTORY_PATH=str(WORK / "history.jsonl"), ANSIBLE_LOCAL_TEMP=str(WORK / "tmp"))


@dataclass
class Runs:
    """What the scheduled runs did: each one's exit code, wall seconds and peak RSS (MiB), by start."""
    started: List[float] = field(default_factory=list)   # seconds since the soak began
    exits: List[int] = field(default_factory=list)
    seconds: List[float] = field(default_factory=list)
    peak_mib: List[float] = field(default_factory=list)


def run_scheduled(options: Options, sim: Simulator, env: Dict[str, str]) -> Runs:
    """The cycle every options.period wall seconds (start to start) for options.minutes; each run's figures."""
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "azure_imds.scheduled_events.cycle",
               "-i", str(write_inventory(sim, WORK)), "-f", str(options.forks), "-e", json.dumps({
                   "prepare_tasks": str(REPO / "playbooks/examples/marker_file/prepare.yml"),
                   "recover_tasks": str(REPO / "playbooks/examples/marker_file/recover.yml"),
                   "controller_lock": str(WORK / "run.lock"),  # the soak's runs, not a real cycle's of azure_vms
                   "maintenance_cycle_vm_memory": str(WORK / "vms.json"),  # simulated VMs: not in ~/.ansible
                   "maintenance_cycle_prepare_anyway_seconds": 480 / options.time_scale})]
    runs = Runs()
    began = time.monotonic()
    with open(WORK / "cycles.log", "w") as log:
        while time.monotonic() - began < options.minutes * 60:
            started = time.monotonic()
            log.write(f"\n=== cycle {len(runs.exits) + 1}, {datetime.now(timezone.utc):%H:%M:%S} UTC\n")
            log.flush()
            proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=WORK)
            memory = MemorySampler(proc.pid, every=1.0)
            memory.start()
            runs.exits.append(proc.wait())
            memory.stop()
            runs.started.append(started - began)
            runs.seconds.append(time.monotonic() - started)
            runs.peak_mib.append(max((mib for _, mib in memory.samples), default=float("nan")))
            time.sleep(max(0.0, started + options.period - time.monotonic()))
    return runs


def figures(sim: Simulator, started: float, ended: float, period: float) -> Dict[str, Any]:
    with sim.lock:
        sim.engine.advance_to(datetime.now(timezone.utc))
        events = sim.engine.event_summaries()
    history = [json.loads(line) for line in (WORK / "history.jsonl").read_text().splitlines() if line.strip()]
    seen = {e["EventId"].upper() for r in history if r.get("record", "observation") == "observation"
            for e in (r.get("events") or [])}
    actions = audit(WORK)
    (WORK / "truth.json").write_text(json.dumps(events, indent=1))  # for a closer look afterwards
    # Only events that appeared while the cycles ran, at least two periods before the end, can be expected.
    due = [e for e in events if started <= epoch(e["appeared_at"]) <= ended - 2 * period]
    missed = ["%s (%s, %s, visible %.0f s)" % (e["event_id"][:8], e["event_type"], e["outcome"],
                                               (epoch(e["removed_at"]) or ended) - epoch(e["appeared_at"]))
              for e in due if e["event_id"] not in seen]
    latencies, unprepared, unrecovered = [], [], []
    for event in due:
        prepares = [epoch(a["at"]) for a in actions if a["event_id"] == event["event_id"] and a["phase"] == "prepare"]
        recovered = {a["host"] for a in actions if a["event_id"] == event["event_id"] and a["phase"] == "recover"}
        if prepares:
            latencies.append(min(prepares) - epoch(event["appeared_at"]))
        elif event["start_reason"] != "no_notice" and event["outcome"] != "cancelled":
            unprepared.append(event["event_id"])  # e.g. deferred by the fault-domain limit until NotBefore
        removed = epoch(event["removed_at"])
        if removed is not None and removed <= ended - 2 * period and set(event["resources"]) - recovered:
            unrecovered.append(event["event_id"])
    return {"emitted": len(due), "seen": len(due) - len(missed), "missed": missed, "unprepared": unprepared,
            "unrecovered": unrecovered, "latencies": latencies, "observations": len(history)}


def render(options: Options, found: Dict[str, Any], runs: Runs, wall: float) -> str:
    latencies = found["latencies"]
    early = [mib for at, mib in zip(runs.started, runs.peak_mib) if at <= 300 and mib == mib]
    late = [mib for at, mib in zip(runs.started, runs.peak_mib) if at >= runs.started[-1] - 300 and mib == mib] \
        if runs.started else []
    failed = sum(1 for code in runs.exits if code != 0)
    overran = sum(1 for seconds in runs.seconds if seconds > options.period)
    lines = [
        SECTION, "",
        f"Command: `python tools/soak.py --minutes {options.minutes:g} --vms {options.vms} --time-scale "
        f"{options.time_scale:g} --busier {options.busier:g} --seed {options.seed} --period {options.period:g}` "
        f"(`make soak` runs the 30-minute, 50-VM default).", "",
        f"- Run: {wall / 60:.1f} wall minutes, the cycle playbook started every {options.period:g} s: "
        f"{len(runs.exits)} runs, {failed} failed; {options.vms} VMs, `fleet-mix` x{options.busier:g} at time scale "
        f"{options.time_scale:g}, {options.forks} forks.",
        f"- Events emitted (appeared during the run): {found['emitted']}; seen in the history: {found['seen']}; "
        f"**missed: {len(found['missed'])}** {', '.join(found['missed'])}".rstrip() + ".",
        f"- A run took {fmt_median(runs.seconds)} wall s (median; longest {max(runs.seconds, default=0):.0f}); "
        f"{overran} overran the {options.period:g} s period (the next then started at once).",
        f"- Events seen Scheduled that never got prepare: {len(found['unprepared'])}; "
        f"gone events without recover on every VM they listed: {len(found['unrecovered'])}.",
        f"- Observations captured: {found['observations']}.",
    ]
    if latencies:
        lines.append(f"- Reaction latency, simulator Scheduled -> first prepare start: median "
                     f"{statistics.median(latencies):.1f} s, p95 {percentile(latencies, 0.95):.1f} s "
                     f"(wall seconds; {len(latencies)} events).")
    if early and late:
        lines.append(f"- ansible-playbook peak RSS per run: {statistics.mean(early):.0f} MiB over the first 5 "
                     f"minutes, {statistics.mean(late):.0f} MiB over the last 5 ({len(runs.peak_mib)} runs).")
    return "\n".join(lines) + "\n"


def fmt_median(values: List[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "n/a"


def parse_args(argv: Optional[List[str]] = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--vms", type=int, default=50)
    # Time scale 1: the period is a real minute against Azure's own notices (a faster clock would shorten the
    # notices, not the runs, and measure a longer period than the one named).
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--busier", type=float, default=150.0, help="multiply fleet-mix's per-day rates")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--period", type=float, default=60.0,
                        help="wall seconds from one run's start to the next (cron's finest is 60)")
    parser.add_argument("--report", default=str(REPORT), help="where to write the figures ('' for none)")
    args = parser.parse_args(argv)
    return Options(args.minutes, args.vms, args.time_scale, args.busier, args.seed, args.forks, args.period,
                   Path(args.report) if args.report else None)


def main(argv: Optional[List[str]] = None) -> int:
    options = parse_args(argv)
    env = environment()
    fleet = build_fleet(FleetSpec(kind="availability_set", name="avset-soak", vms=options.vms, fault_domains=3))
    sim = Simulator(Engine(fleet, busier_fleet_mix(options.busier), datetime.now(timezone.utc),
                           time_scale=options.time_scale, seed=options.seed), ServerOptions(rate_limit=5.0))
    server, _thread = serve_in_thread(sim)
    print(f"Soak: {options.vms} VMs at {sim.base_url}, {options.minutes:g} minutes; log in {WORK / 'cycles.log'}",
          flush=True)
    started = time.time()
    try:
        runs = run_scheduled(options, sim, env)
        ended = time.time()
        found = figures(sim, started, ended, options.period)
    finally:
        server.shutdown()
    text = render(options, found, runs, ended - started)
    print(text)
    if options.report:
        write_section(options.report, SECTION, text)
    return 0 if not found["missed"] and not found["unrecovered"] else 1


if __name__ == "__main__":
    sys.exit(main())
