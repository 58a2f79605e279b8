"""`make demo`: a 6-VM availability set through platform maintenance, driven by the real cycle playbook.

Starts the IMDS simulator (6 VMs in 3 fault domains) and runs `ansible-playbook azure_imds.scheduled_events.cycle`
against it, with the marker_file example prepare/recover tasks and the history callback enabled. The first cycle,
before any event, is timed: it picks the time scale (FASTEST_SCALE on an idle machine, down to SLOWEST_SCALE on a
loaded one: a 15-minute notice must outlast a few cycles, or events start at NotBefore before a cycle approves them).
Then the platform maintenance starts, and a cycle runs whenever the simulator has news for the VMs (an event
scheduled, started or gone) or a cycle still has work (an event to approve, a VM to recover), as the event-driven
path runs it: so the number of cycles follows the walk, not the machine's load (on a fixed wall-clock period, the
slower clock a loaded machine needs meant more cycles, most of them finding nothing new). It stops
when the maintenance is over and every VM recovered, then prints what happened, from the simulator's ground truth
and the example tasks' audit log. The captured history is left at HISTORY.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Tuple

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
NEWS_POLL_S = 0.2   # wall seconds between two looks at the simulator (in this process: a dictionary, no request)
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
    events = event_summaries(sim)
    with sim.lock:
        pending = sim.engine.next_change() is not None
    return (bool(events) and not pending and all(ev["status"] == "Removed" for ev in events)
            and not left_drained(audit(work)))


def event_summaries(sim: Simulator) -> List[Dict[str, Any]]:
    """The simulator's ground truth now: every event so far, with its status."""
    with sim.lock:
        sim.engine.advance_to(sim.clock.now())
        return sim.engine.event_summaries()


def statuses(events: List[Dict[str, Any]]) -> Dict[str, str]:
    return {ev["event_id"]: ev["status"] for ev in events}


def reason_to_cycle(seen: Dict[str, str], events: List[Dict[str, Any]], actions: List[Dict[str, Any]]) -> str:
    """Why a cycle should run now ("" if none would find anything to do): news since the last cycle began (`seen`:
    each event's status then), else work a cycle left (an event nobody approved yet, whose approval may have waited
    for the fault domain a VM was being recovered in; a VM still drained for an event that is gone). Judged from
    when the last cycle began, not ended: what changed while it ran may have come after its read."""
    news = []
    for ev in events:
        short, status = ev["event_id"][:8], "gone" if ev["status"] == "Removed" else ev["status"]
        if ev["event_id"] not in seen:
            news.append(f"{ev['event_type']} {short} for FD {ev['fault_domains'][0]} {status}")
        elif seen[ev["event_id"]] != ev["status"]:
            news.append(f"{short} {status}")
    if news:
        return "news: " + ", ".join(news)
    unapproved = [ev["event_id"][:8] for ev in events if ev["status"] == "Scheduled" and not ev["approved_by"]]
    if unapproved:
        return f"{', '.join(unapproved)} still to approve"
    gone = {ev["event_id"] for ev in events if ev["status"] == "Removed"}
    drained = sorted(host for host, event_id in left_drained(actions) if event_id in gone)
    return f"{', '.join(drained)} still to recover" if drained else ""


def run_on_news(command: List[str], env: Dict[str, str], sim: Simulator, runs: List[int]) -> List[int]:
    """A cycle whenever reason_to_cycle() gives one, until over() or the deadline (DEADLINE_S at time scale 30,
    longer at a slower one); each run's exit code, after those already in `runs`."""
    deadline = time.monotonic() + DEADLINE_S * FASTEST_SCALE / sim.engine.time_scale
    seen: Dict[str, str] = {}
    while time.monotonic() < deadline and not over(sim):
        events = event_summaries(sim)
        why = reason_to_cycle(seen, events, audit())
        if not why:
            time.sleep(NEWS_POLL_S)
            continue
        seen = statuses(events)
        runs.append(run_cycle(command, env, why, len(runs) + 1)[0])
    return runs


def run_cycle(command: List[str], env: Dict[str, str], why: str, number: int) -> Tuple[int, float]:
    """One cycle, its output appended to LOG; its exit code and wall seconds."""
    started = time.monotonic()
    with open(LOG, "a") as log:
        log.write(f"\n=== cycle {number} ({why}), {datetime.now(timezone.utc):%H:%M:%S} UTC\n")
        log.flush()
        code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=WORK,
                              check=False).returncode
    took = time.monotonic() - started
    print(f"  cycle {number} ({why}): exit {code}, {took:.0f} s", flush=True)
    return code, took


def engine(scenario: Any, time_scale: float) -> Engine:
    fleet = build_fleet(FleetSpec(kind="availability_set", name="avset-web", vms=6, fault_domains=3))
    return Engine(fleet, scenario, datetime.now(timezone.utc), time_scale=time_scale, seed=11)


def main() -> int:
    env = prepare_work()
    sim = Simulator(engine(None, FASTEST_SCALE), ServerOptions(rate_limit=5.0), scenario_name="quiet")
    server, _thread = serve_in_thread(sim)
    try:
        inventory = write_inventory(sim)
        print(f"Simulated IMDS at {sim.base_url}: availability set avset-web, 6 VMs in 3 fault domains. The first "
              f"cycle, before any event, is timed to pick the time scale ...", flush=True)
        LOG.write_text("")
        code, quiet_s = run_cycle(cycle_command(inventory, FASTEST_SCALE), env, "a first look: no event yet", 1)
        time_scale = time_scale_for(quiet_s)
        write_sidecar(time_scale)
        with sim.lock:  # the same VMs' IMDS roots, now serving the maintenance at this machine's scale
            sim.engine, sim.scenario_name = engine(sc.load("platform-maintenance"), time_scale), "platform-maintenance"
        started = time.time()
        print(f"Platform maintenance at time scale {time_scale:g} (1 s here = {time_scale / 60:.1f} simulated "
              f"minutes: a 15-minute notice lasts {900 / time_scale:.0f} s).")
        command = cycle_command(inventory, time_scale)
        print(f"Running: {' '.join(command[1:4])} ... whenever the VMs' Scheduled Events change (an event scheduled, "
              f"started or gone) or a cycle has work left, as the event-driven path runs it, until the maintenance is "
              f"over and every VM recovered", flush=True)
        return report(sim, started, run_on_news(command, env, sim, [code]))
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
