"""`make soak`: the watch playbook against a big simulated fleet for a long time, measured.

A 50-VM availability set receives a random `fleet-mix` stream (60 times busier, so that a
30-minute run sees tens of events) at time scale 5, which keeps every notice several watch
rounds long. The real `watch` playbook runs with the marker_file example prepare/recover tasks
and the history callback on. Afterwards, from the simulator's ground truth, the history and
the example tasks' audit log, it reports:

- events emitted, seen in the history, missed (must be 0);
- events that affected VMs and got prepare (if seen Scheduled) and recover (once gone);
- reaction latency, simulator `Scheduled` -> first prepare start (median, p95);
- the control process's memory (RSS of ansible-playbook, sampled every 10 s): first vs last 5 minutes.

Figures go to docs/soak.md (its watch section) and stdout; exit 1 if anything was missed.
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
REPORT = REPO / "docs" / "soak.md"
SECTION = "## Watch soak (`make soak`)"


@dataclass
class Options:
    minutes: float
    vms: int
    time_scale: float
    busier: float
    seed: int
    forks: int
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


def run_watch(options: Options, sim: Simulator, env: Dict[str, str]) -> tuple:
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "azure_imds.scheduled_events.watch",
               "-i", str(write_inventory(sim, WORK)), "-f", str(options.forks), "-e", json.dumps({
                   "watch_seconds": options.minutes * 60, "watch_poll_interval": 1, "watch_round_seconds": 10,
                   "prepare_tasks": str(REPO / "playbooks/examples/marker_file/prepare.yml"),
                   "recover_tasks": str(REPO / "playbooks/examples/marker_file/recover.yml"),
                   "maintenance_cycle_vm_memory": str(WORK / "vms.json"),  # simulated VMs: not in ~/.ansible
                   "maintenance_cycle_prepare_anyway_seconds": 480 / options.time_scale})]
    with open(WORK / "watch.log", "w") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=WORK)
        memory = MemorySampler(proc.pid)
        memory.start()
        returncode = proc.wait()
        memory.stop()
    return returncode, memory


def round_seconds(history: List[Dict[str, Any]]) -> float:
    """How long a watch round took: per host, the longest gap between two reads; the median over hosts."""
    by_host: Dict[str, List[float]] = {}
    for record in history:
        if record.get("record", "observation") == "observation":
            by_host.setdefault(record["host"], []).append(epoch(record["observed_at"]))
    gaps = [max(b - a for a, b in zip(sorted(t), sorted(t)[1:])) for t in by_host.values() if len(t) > 1]
    return statistics.median(gaps) if gaps else 60.0


def figures(sim: Simulator, started: float, ended: float) -> Dict[str, Any]:
    with sim.lock:
        sim.engine.advance_to(datetime.now(timezone.utc))
        events = sim.engine.event_summaries()
    history = [json.loads(line) for line in (WORK / "history.jsonl").read_text().splitlines() if line.strip()]
    seen = {e["EventId"].upper() for r in history if r.get("record", "observation") == "observation"
            for e in (r.get("events") or [])}
    actions = audit(WORK)
    (WORK / "truth.json").write_text(json.dumps(events, indent=1))  # for a closer look afterwards
    round_s = round_seconds(history)
    # Only events that appeared while the watch ran, at least two rounds before its end, can be expected.
    due = [e for e in events if started <= epoch(e["appeared_at"]) <= ended - 2 * round_s]
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
        if removed is not None and removed <= ended - 2 * round_s and set(event["resources"]) - recovered:
            unrecovered.append(event["event_id"])
    return {"emitted": len(due), "seen": len(due) - len(missed), "missed": missed, "unprepared": unprepared,
            "unrecovered": unrecovered, "latencies": latencies, "observations": len(history), "round_s": round_s}


def render(options: Options, found: Dict[str, Any], memory: MemorySampler, returncode: int, wall: float) -> str:
    latencies = found["latencies"]
    early = [mib for at, mib in memory.samples if at <= 300]
    late = [mib for at, mib in memory.samples if at >= memory.samples[-1][0] - 300] if memory.samples else []
    lines = [
        SECTION, "",
        f"Command: `python tools/soak.py --minutes {options.minutes:g} --vms {options.vms} --time-scale "
        f"{options.time_scale:g} --busier {options.busier:g} --seed {options.seed}` "
        f"(`make soak` runs the 30-minute, 50-VM default).", "",
        f"- Run: {wall / 60:.1f} wall minutes, watch playbook exit {returncode}, {options.vms} VMs, "
        f"`fleet-mix` x{options.busier:g} at time scale {options.time_scale:g}, {options.forks} forks.",
        f"- Events emitted (appeared during the run): {found['emitted']}; seen in the history: {found['seen']}; "
        f"**missed: {len(found['missed'])}** {', '.join(found['missed'])}".rstrip() + ".",
        f"- A watch round took about {found['round_s']:.0f} wall s (the longest gap between two reads of a host, "
        f"median over hosts).",
        f"- Events seen Scheduled that never got prepare: {len(found['unprepared'])}; "
        f"gone events without recover on every VM they listed: {len(found['unrecovered'])}.",
        f"- Observations captured: {found['observations']}.",
    ]
    if latencies:
        lines.append(f"- Reaction latency, simulator Scheduled -> first prepare start: median "
                     f"{statistics.median(latencies):.1f} s, p95 {percentile(latencies, 0.95):.1f} s "
                     f"(wall seconds; {len(latencies)} events).")
    if early and late:
        lines.append(f"- ansible-playbook RSS: {statistics.mean(early):.0f} MiB over the first 5 minutes, "
                     f"{statistics.mean(late):.0f} MiB over the last 5 ({len(memory.samples)} samples).")
    return "\n".join(lines) + "\n"


def parse_args(argv: Optional[List[str]] = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--vms", type=int, default=50)
    # Time scale 5: a 15-minute notice lasts 180 wall seconds, several watch rounds of 50 hosts on a
    # 2-core machine (a round takes ~40 s there); faster clocks would let notices run out unprepared.
    parser.add_argument("--time-scale", type=float, default=5.0)
    parser.add_argument("--busier", type=float, default=60.0, help="multiply fleet-mix's per-day rates")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--report", type=Path, default=REPORT, help="where to write the figures ('' for none)")
    args = parser.parse_args(argv)
    return Options(args.minutes, args.vms, args.time_scale, args.busier, args.seed, args.forks,
                   args.report if str(args.report) else None)


def main(argv: Optional[List[str]] = None) -> int:
    options = parse_args(argv)
    env = environment()
    fleet = build_fleet(FleetSpec(kind="availability_set", name="avset-soak", vms=options.vms, fault_domains=3))
    sim = Simulator(Engine(fleet, busier_fleet_mix(options.busier), datetime.now(timezone.utc),
                           time_scale=options.time_scale, seed=options.seed), ServerOptions(rate_limit=5.0))
    server, _thread = serve_in_thread(sim)
    print(f"Soak: {options.vms} VMs at {sim.base_url}, {options.minutes:g} minutes; log in {WORK / 'watch.log'}",
          flush=True)
    started = time.time()
    try:
        returncode, memory = run_watch(options, sim, env)
        ended = time.time()
        found = figures(sim, started, ended)
    finally:
        server.shutdown()
    text = render(options, found, memory, returncode, ended - started)
    print(text)
    if options.report:
        write_section(options.report, SECTION, text)
    return 0 if returncode == 0 and not found["missed"] and not found["unrecovered"] else 1


if __name__ == "__main__":
    sys.exit(main())
