"""`make demo`: a 6-VM availability set through platform maintenance, driven by the real cycle playbook on a schedule.

Times one quiet cycle of this machine first, and picks the time scale from it (FASTEST_SCALE on an idle
machine, down to SLOWEST_SCALE on a loaded one: a 15-minute notice must outlast a few cycles, or the events come
and go between two of them). Then starts the IMDS simulator (3 fault domains, platform maintenance) and
runs `ansible-playbook azure_imds.scheduled_events.cycle` against it every PERIOD_S wall seconds,
as cron would (a run that overruns the period is followed at once), with the marker_file example
prepare/recover tasks and the history callback enabled, until the maintenance is over and every
VM recovered; then prints what happened, from the simulator's ground truth and the example
tasks' audit log. The captured history is left at HISTORY.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator import scenario as sc  # noqa: E402
from imds_simulator.engine import Engine  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet  # noqa: E402
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread  # noqa: E402
from tools.stage_collection import stage  # noqa: E402

FASTEST_SCALE = 30.0   # an idle machine: the walk takes under three minutes
SLOWEST_SCALE = 10.0   # a loaded one (quiet cycles of 24 s or more): 90 s of notice, about six minutes
NOTICE_IN_CYCLES = 240.0  # wall seconds of a quiet cycle that a 15-minute notice lasts, over the scale
PERIOD_S = 5.0      # wall seconds from one cycle's start to the next: 2.5 simulated minutes at time scale 30
DEADLINE_S = 480.0  # wall seconds at time scale 30 (longer at a slower scale)
WORK = REPO / "build" / "demo"
LOG = WORK / "cycles.log"  # every run's output, one after the other
HISTORY = Path.home() / ".ansible" / "scheduled_events" / "demo-history.jsonl"


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def time_scale_for(quiet_cycle_s: float) -> float:
    """The fastest scale at which a 15-minute notice still lasts several of this machine's cycles."""
    return max(SLOWEST_SCALE, min(FASTEST_SCALE, NOTICE_IN_CYCLES / max(quiet_cycle_s, 0.1)))


def prepare_work() -> Dict[str, str]:
    if WORK.exists():
        for path in sorted(WORK.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    (WORK / "state").mkdir(parents=True)
    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    HISTORY.write_text("")  # this demo's history only
    collections = WORK / "collections"
    stage(collections)
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
                ANSIBLE_CALLBACKS_ENABLED="azure_imds.scheduled_events.scheduled_events_history",
                SCHEDULED_EVENTS_HISTORY_PATH=str(HISTORY), ANSIBLE_LOCAL_TEMP=str(WORK / "tmp"))


def availability_set(sim: Simulator, vm: Any) -> str:
    """The host variable IMDS cannot give: the VM's availability set ("" for scale-set VMs)."""
    return "" if vm.vm_scale_set_name else sim.engine.fleet.name


def write_inventory(sim: Simulator, work: Path = WORK) -> Path:
    """Every simulated VM as a local host with its own IMDS root, state file and marker folder (what the
    example prepare/recover tasks write; on real VMs each has its own disk). Shared with tools/soak.py."""
    hosts = {}
    for vm in sim.engine.fleet.vms:
        markers = work / "markers" / vm.name
        markers.mkdir(parents=True, exist_ok=True)
        hosts[vm.name] = {"maintenance_cycle_imds_url": sim.vm_url(vm.name),
                          "maintenance_cycle_availability_set": availability_set(sim, vm),
                          "maintenance_cycle_state_path": str(work / "state" / f"{vm.name}.json"),
                          "marker_file_dir": str(markers)}
    inventory = work / "inventory.json"
    inventory.write_text(json.dumps({"azure_vms": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}, indent=1))
    return inventory


def audit(work: Path = WORK) -> List[Dict[str, Any]]:
    """The example tasks' audit lines of every VM."""
    lines: List[Dict[str, Any]] = []
    for path in sorted((work / "markers").glob("*/maintenance-audit.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def write_sidecar(time_scale: float) -> None:
    """Tells event_analysis (and the notebooks) that the history is simulated, its seconds compressed."""
    source = "make demo: the cycle playbook on a schedule against the IMDS simulator (platform-maintenance)"
    Path(str(HISTORY) + ".meta.json").write_text(
        json.dumps({"simulated": True, "time_scale": time_scale, "source": source}) + "\n")


def report(sim: Simulator, started: float, runs: List[int]) -> int:
    with sim.lock:
        events = sorted(sim.engine.event_summaries(), key=lambda e: e["appeared_at"])
        approvals = list(sim.engine.approvals)
        time_scale = sim.engine.time_scale
    actions = audit()
    minute = time_scale / 60

    def at(iso: str) -> str:
        return f"+{epoch(iso) - started:5.1f}s" if iso else "(not yet)"

    print("\nWhat happened (wall seconds since start; 1 s here = %.1f simulated minutes):" % minute)
    for ev in events:
        prepared = sorted({a["host"] for a in actions if a["event_id"] == ev["event_id"] and a["phase"] == "prepare"})
        recovered = sorted({a["host"] for a in actions if a["event_id"] == ev["event_id"] and a["phase"] == "recover"})
        approved = [a for a in approvals if ev["event_id"] in a["event_ids"]]
        print(f"  FD {ev['fault_domains'][0]}  {ev['event_type']} {ev['event_id'][:8]} for {', '.join(ev['resources'])}")
        print(f"        scheduled {at(ev['appeared_at'])}, NotBefore {at(ev['not_before'])}; prepared: {', '.join(prepared) or 'none'}")
        if approved:
            early = (epoch(ev["not_before"]) - epoch(approved[0]["at"])) * minute
            print(f"        approved by {approved[0]['vm']} {at(approved[0]['at'])} ({early:.0f} simulated min before NotBefore)")
        print(f"        started {at(ev['started_at'])} ({ev['start_reason']}), done {at(ev['removed_at'])}; "
              f"recovered: {', '.join(recovered) or 'none'}")
    order = [ev["fault_domains"][0] for ev in sorted(events, key=lambda e: e["started_at"] or "")]
    overlap = any(a["started_at"] < (b["removed_at"] or "~") and b["started_at"] < (a["removed_at"] or "~")
                  for a in events for b in events if a is not b and a["started_at"] and b["started_at"])
    lines = HISTORY.read_text().splitlines()
    print(f"Fault domains walked {' -> '.join(map(str, order))}, "
          f"{'never two in maintenance at once' if not overlap else 'OVERLAPPING (unexpected)'}; "
          f"{len(approvals)} approval(s), one per event, each from its leader.")
    print(f"History: {len(lines)} records captured in {HISTORY} ({len(runs)} cycles, their log: {LOG}).")
    done = bool(events) and all(ev["status"] == "Removed" for ev in events)
    ok = bool(runs) and runs[-1] == 0 and done and not overlap and not left_drained(actions)
    early = [ev for ev in events if ev["start_reason"] == "approved"]
    analyse(time_scale)
    if not ok:
        print(f"Demo did not finish cleanly (ansible-playbook exits {runs}); see the log.")
    elif len(early) == len(events):
        print("Demo finished: every event prepared, approved, completed and recovered.")
    else:  # safe, but slower than the compressed notices on this machine: say so rather than claim it
        print(f"Demo finished: no VM left drained, one fault domain at a time; {len(early)} of {len(events)} events "
              f"prepared and approved early, the others started at NotBefore (the cycles were slower than the "
              f"demo's compressed notices on this machine).")
    return 0 if ok else 1


def left_drained(actions: List[Dict[str, Any]]) -> List[Any]:
    """(host, event) pairs prepared and never recovered."""
    done = {(a["host"], a["event_id"]) for a in actions if a["phase"] == "recover"}
    return sorted({(a["host"], a["event_id"]) for a in actions if a["phase"] == "prepare"} - done)


def analyse(time_scale: float) -> None:
    """What event_analysis (the notebooks' library) reads from the history just captured."""
    import event_analysis as ea
    frame = ea.load_history(HISTORY, warn=False)
    lifecycles = ea.event_lifecycles(frame)
    checked = ea.notice_check(lifecycles)
    windows = ea.fault_domain_windows(lifecycles)
    print(f"\nAnalysis of the captured history ({ea.report_of(frame).summary()[:-1]}; "
          f"seconds below are simulated seconds, time scale {time_scale:g}):")
    for row in checked.itertuples():
        print(f"  {row.vm}: notice {_span(row.notice_s_min, row.notice_s_max)} s ({row.notice_verdict}), "
              f"Started to gone {_span(row.started_to_gone_s_min, row.started_to_gone_s_max)} s, {row.outcome}")
    overlaps = ea.domain_overlaps(lifecycles)
    print(f"  fault domains walked {ea.walk_order(windows)}; {len(overlaps)} overlap(s) between fault domains.")
    print("Explore it in JupyterLab (notice times, durations, fault-domain serialisation, reaction): make notebooks")


def _span(low: Any, high: Any) -> str:
    """An interval read from polls; an open end (no earlier poll) shows as '?'."""
    import pandas as pd

    def show(value: Any) -> str:
        return "?" if pd.isna(value) else f"{value:.0f}"
    return f"{show(low)}..{show(high)}"


def over(sim: Simulator, work: Path = WORK) -> bool:
    """The scenario has nothing left to do, its events are gone, and every VM a cycle prepared for one ran its
    recover (an event that came and went between two cycles drained nothing)."""
    with sim.lock:
        sim.engine.advance_to(sim.clock.now())
        events = sim.engine.event_summaries()
        pending = sim.engine.next_change() is not None
    return (bool(events) and not pending and all(ev["status"] == "Removed" for ev in events)
            and not left_drained(audit(work)))


def run_on_schedule(command: List[str], env: Dict[str, str], sim: Simulator) -> List[int]:
    """The cycle every PERIOD_S wall seconds (start to start, as cron), until over() or the deadline (DEADLINE_S at
    time scale 30, longer at a slower one); each run's exit code."""
    runs: List[int] = []
    deadline = time.monotonic() + DEADLINE_S * FASTEST_SCALE / sim.engine.time_scale
    with open(LOG, "w") as log:
        while time.monotonic() < deadline:
            started = time.monotonic()
            log.write(f"\n=== cycle {len(runs) + 1}, {datetime.now(timezone.utc):%H:%M:%S} UTC\n")
            log.flush()
            runs.append(subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=WORK,
                                       check=False).returncode)
            print(f"  cycle {len(runs)}: exit {runs[-1]}, {time.monotonic() - started:.0f} s", flush=True)
            if over(sim):
                break
            time.sleep(max(0.0, started + PERIOD_S - time.monotonic()))
    return runs


def simulator(scenario: Any, time_scale: float) -> Simulator:
    fleet = build_fleet(FleetSpec(kind="availability_set", name="avset-web", vms=6, fault_domains=3))
    return Simulator(Engine(fleet, scenario, datetime.now(timezone.utc), time_scale=time_scale, seed=11),
                     ServerOptions(rate_limit=5.0), scenario_name="platform-maintenance" if scenario else "quiet")


def quiet_cycle_seconds(env: Dict[str, str]) -> float:
    """One cycle over the same VMs with no event yet: how long this machine takes, now."""
    sim = simulator(None, FASTEST_SCALE)
    server, _thread = serve_in_thread(sim)
    try:
        started = time.monotonic()
        quiet_env = {k: v for k, v in env.items() if k != "ANSIBLE_CALLBACKS_ENABLED"}  # not the demo's history
        subprocess.run(cycle_command(write_inventory(sim), FASTEST_SCALE), env=quiet_env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, cwd=WORK, check=False)
        return time.monotonic() - started
    finally:
        server.shutdown()


def main() -> int:
    env = prepare_work()
    print("Timing one quiet cycle of this machine, to pick the time scale ...", flush=True)
    quiet_s = quiet_cycle_seconds(env)
    time_scale = time_scale_for(quiet_s)
    write_sidecar(time_scale)
    sim = simulator(sc.load("platform-maintenance"), time_scale)
    server, _thread = serve_in_thread(sim)
    inventory = write_inventory(sim)
    started = time.time()
    print(f"Simulated IMDS at {sim.base_url}: availability set avset-web, 6 VMs in 3 fault domains, "
          f"platform maintenance at time scale {time_scale:g} (a quiet cycle took {quiet_s:.0f} s here).")
    command = cycle_command(inventory, time_scale)
    print(f"Running: {' '.join(command[1:4])} ... every {PERIOD_S:g} s ({PERIOD_S * time_scale / 60:g} simulated "
          f"minutes), as cron would, until the maintenance is over and every VM recovered", flush=True)
    try:
        return report(sim, started, run_on_schedule(command, env, sim))
    finally:
        server.shutdown()


def cycle_command(inventory: Path, time_scale: float) -> List[str]:
    settings = {
        # the documented examples, opted into (without prepare tasks only user events and short freezes would be
        # approved early)
        "prepare_tasks": str(REPO / "playbooks/examples/marker_file/prepare.yml"),
        "recover_tasks": str(REPO / "playbooks/examples/marker_file/recover.yml"),
        "controller_lock": str(WORK / "run.lock"),  # this demo's runs, not a real cycle's of azure_vms
        "maintenance_cycle_vm_memory": str(WORK / "vms.json"),  # simulated VMs: not in ~/.ansible
        "maintenance_cycle_prepare_anyway_seconds": 480 / time_scale}  # the compressed clock
    return [str(Path(sys.executable).parent / "ansible-playbook"), "azure_imds.scheduled_events.cycle",
            "-i", str(inventory), "-f", "10", "-e", json.dumps(settings)]


if __name__ == "__main__":
    sys.exit(main())
