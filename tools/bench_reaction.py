"""`make bench-reaction`: event-driven reaction (relays + ansible-rulebook) at 50 and 200 VMs by the size and
shape of what happens, and the cycle playbook started every minute on 50 VMs without agents, side by side in one run.

Per fleet size N (time scale 1, an availability set of N VMs in 3 fault domains, served by the simulator on
127.0.0.1), event-driven: a relay process per VM (poll_interval 1.0 s, heartbeat 30 s) on its VM's IMDS root, the
real `ansible-rulebook -r azure_imds.scheduled_events.scheduled_events` with --vars (token_file, listen_port,
expected_hosts, prepare_tasks, recover_tasks: the test log tasks), forks = the rulebook's default. Shapes, in this
order on the same relays and rulebook (each wave's events are gone, their recovers run, no cycle has run under the
rulebook for 5 s, and 15 s more pass, before the next wave):
- fault-domain: a Platform Reboot (900 s notice) of every VM of fault domain 0 (a third of the set), one at a time;
- one-vm: half Preempt (30 s notice), half Reboot (900 s), one VM of fault domain 0 each, one at a time (the
  fault-domain limit never defers one: each reaction is the path's own);
- burst: a mass Spot eviction, --burst one-VM Preempts injected within one second, 30 s notice each, on VMs no
  earlier shape used, of every fault domain;
- burst-short: the same with notices drawn from 5 to 30 s (Spot often goes sooner than its nominal 30 s).
The scheduled cycle (--scheduled-size VMs, 50 by default; --no-scheduled skips it): `azure_imds.scheduled_events.cycle`
over IMDS started every --scheduled-period s (60: cron's finest), as cron would (a run that overruns the period is
followed at once), no agent on the VMs; the one-vm mix injected as a STREAM, one every 10 s (a period is longer than
that, so one-at-a-time would only make the run longer without changing what a run sees).
Over Azure's control plane (--control-plane-size VMs, every host on the control-plane transport; --graph-lag, Resource
Graph's lag, is an assumption): the cycle started every --control-plane-period s (--no-control-plane skips it), and
the Event Grid rulebook with each status change delivered --event-grid-delivery s after it (an assumption;
--no-event-grid skips it), through a TEST DOUBLE of the Service Bus source; both with the same stream.

Figures, from the simulator's ground truth and the prepare log, per event: first prepare = the event appears in the
simulator (`appeared_at`) -> the first of its VMs' prepares starts; last prepare = -> the last of its listed VMs'
prepares starts (all prepared, else n/a); Preempt prepared before NotBefore (%, its eviction); missed (never
prepared within the run); controller CPU-seconds per event (the rulebook's process tree: own + reaped children's
CPU from /proc, over the shape's events, heartbeats included), raw and split (tools/vm_cpu.py): the simulated VMs'
module processes, logged by their Python (tools/vm_python.py), apart from the controller alone, the module calls,
and what a real controller over SSH with pipelining would pay (an estimate); relay max RSS and mean CPU % of one
core.

    python tools/bench_reaction.py [--sizes 50,200] [--events 6] [--shapes fault-domain,one-vm,burst,burst-short]
                                   [--burst N] [--scheduled-size 50] [--report docs/lab/benchmarks.md]
The relay path beside the scheduled cycle, both at 50 VMs, one event at a time (and nothing else):
    python tools/bench_reaction.py --sizes 50 --shapes one-vm --no-control-plane --no-event-grid
Quick try: python tools/bench_reaction.py --sizes 6 --shapes one-vm --events 1 --scheduled-size 6 --no-control-plane \
    --no-event-grid --report ''
Every wait is bounded; --max-minutes bounds the whole run; processes are killed (whole trees) on any exit.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple


REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator import control_plane  # noqa: E402
from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests.integration.runner import CycleBench  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tests import timing  # noqa: E402
from tools.report import write_section  # noqa: E402
from tools.soak import epoch, percentile  # noqa: E402
from tools.relay_fleet import RelayFleet, environment, kill_tree, tree_cpu  # noqa: E402
from tools.vm_cpu import LOCAL_CONTROLLER_CPU_S_PER_CALL, SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL  # noqa: E402
from tools.vm_cpu import CpuSplit, VmCpuLog  # noqa: E402
from tests.history.history_helpers import capture_env  # noqa: E402
from tests.certificates import certificate_chain  # noqa: E402
from tests.eda.rulebook_setup import event_grid_env, event_grid_files  # noqa: E402

WORK = REPO / "build" / "bench-reaction"
REPORT = REPO / "docs" / "lab" / "benchmarks.md"
SECTION = "## Event-driven reaction (`make bench-reaction`)"
NOTICE = {"Preempt": 30, "Reboot": 900}
SHAPES = ("fault-domain", "one-vm", "burst", "burst-short")  # the order they run in on one fleet
BURST_SHORT_NOTICE_S = (5, 30)
Wave = List[Dict[str, Any]]  # event specs injected together
EDA_GAP_S = 15.0      # after an event's first prepare (event-driven), before the next event
STREAM_GAP_S = 10.0   # between two events of a stream (the scheduled and control-plane runs)
WAIT_PREPARE_S = 240  # how long an event may wait for its first prepare (a Preempt: until it is gone);
#                      one not prepared by the end of its size's run counts as missed
DEADLINE: List[float] = [0.0]  # the whole run's monotonic deadline
EDA_FORKS = "forks 5 (Ansible's default: the bench's ANSIBLE_CONFIG sets none, as the README's rulebook command)"


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


def waves(shape: str, fleet: LiveFleet, events: int, burst: int, used: List[str], seed: int = 7) -> List[Wave]:
    """One shape's events, as waves: the events of a wave are injected together, and a wave settles before the
    next. `used`: VMs an earlier shape evicted or listed one-VM events on (a burst takes none of them)."""
    if shape == "fault-domain":
        return [[{"type": "Reboot", "source": "Platform", "notice_s": NOTICE["Reboot"],
                  "resources": {"fault_domain": 0}}] for _ in range(events)]
    if shape == "one-vm":
        return [[{"type": kind, "notice_s": NOTICE[kind], "resources": {"names": [vm]}}]
                for kind, vm in zip(event_mix(events), victims(fleet, events))]
    by_domain: Dict[int, List[str]] = {}
    for vm in fleet.engine.fleet.vms:
        if vm.name not in used:
            by_domain.setdefault(vm.fault_domain, []).append(vm.name)
    # round robin over the fault domains, as an eviction takes VMs of every one
    free = [vm for group in itertools.zip_longest(*by_domain.values()) for vm in group if vm]
    if len(free) < burst:
        raise SystemExit(f"a burst of {burst} needs {burst} VMs no earlier shape used; the fleet has {len(free)}")
    rng = random.Random(seed)
    notices = [NOTICE["Preempt"] if shape == "burst" else rng.randint(*BURST_SHORT_NOTICE_S) for _ in range(burst)]
    return [[{"type": "Preempt", "notice_s": notice, "resources": {"names": [vm]}}
             for notice, vm in zip(notices, free[:burst])]]


def default_burst(size: int, shapes: List[str], events: int) -> int:
    """50 Preempts a burst (issue 28's mass eviction), or as many as the fleet leaves for each burst shape."""
    bursts = max(1, sum(1 for shape in shapes if shape.startswith("burst")))
    return max(1, min(50, (size - (events if "one-vm" in shapes else 0)) // bursts))


def infeasible(size: int, shapes: List[str], events: int, burst: int) -> Optional[str]:
    """Why these shapes cannot all run on a fleet of `size` VMs (3 fault domains), in one sentence; else None."""
    domain0 = len(range(0, size, 3))
    if "one-vm" in shapes and events > domain0:
        return f"--events {events} one-VM events need {events} VMs in fault domain 0; {size} VMs have {domain0}."
    bursts = sum(1 for shape in shapes if shape.startswith("burst"))
    free = size - (events if "one-vm" in shapes else 0)
    if bursts * burst > free:
        return (f"{bursts} burst(s) of --burst {burst} need {bursts * burst} VMs besides the one-VM events'; {size} "
                f"VMs leave {free}: lower --burst or drop a burst shape.")
    return None


STARTED_FOR_S = 20  # how long a Started event stays listed (the simulator's default, 600 s, would make each wave
#                     wait ten minutes for its events to go before the next, on a quiet fleet)


def inject(fleet: LiveFleet, spec: Dict[str, Any], n: int) -> str:
    (event_id,) = fleet.inject(dict(spec, key=f"bench-{n}", started_for_s=STARTED_FOR_S))
    return event_id


def prepares_of(bench: CycleBench, event_id: str) -> Dict[str, float]:
    """Each host's first prepare start for this event."""
    found: Dict[str, float] = {}
    for action in bench.actions("prepare"):
        if str(action["event_id"]).upper() == event_id.upper():
            found[action["host"]] = min(found.get(action["host"], action["at"]), action["at"])
    return found


def done_pairs(bench: CycleBench, kind: str) -> Set[Tuple[str, str]]:
    """(EVENT ID, host) for each prepare or recover the log shows: one read of it."""
    return {(str(a["event_id"]).upper(), a["host"]) for a in bench.actions(kind)}


def settled(fleet: LiveFleet, bench: CycleBench, event_ids: List[str]) -> bool:
    """For every event: every listed VM prepared, or the event gone (a Preempt that ran out), or past its NotBefore:
    waiting longer would not help. One read of the simulator and of the prepare log per call (a burst polls it)."""
    truth = {e["event_id"].upper(): e for e in fleet.truth()}
    prepared = done_pairs(bench, "prepare")
    for event_id in event_ids:
        event = truth.get(event_id.upper())
        if event is None:
            return False
        if all((event_id.upper(), vm) in prepared for vm in event["resources"]):
            continue
        if event["removed_at"] is None and (epoch(event["not_before"]) or 0) + 10 >= time.time():
            return False
    return True


def over(fleet: LiveFleet, bench: CycleBench, event_ids: List[str]) -> bool:
    """Every event gone, and every VM prepared for one that is still there (not deleted by it) recovered. One read
    of the simulator and of each log per call, as settled()."""
    truth = {e["event_id"].upper(): e for e in fleet.truth()}
    owed = done_pairs(bench, "prepare") - done_pairs(bench, "recover")
    for event_id in event_ids:
        event = truth.get(event_id.upper())
        if event is None or event["removed_at"] is None:
            return False
        if event["event_type"] not in ("Preempt", "Terminate") and any(key == event_id.upper() for key, _ in owed):
            return False
    return True


def event_row(event: Dict[str, Any], prepares: Dict[str, float]) -> Dict[str, Any]:
    """One event's figures from the simulator's summary of it and its hosts' first prepare starts (epoch s)."""
    appeared, not_before = epoch(event["appeared_at"]), epoch(event["not_before"])
    listed = [prepares[vm] for vm in event["resources"] if vm in prepares]
    complete = len(listed) == len(event["resources"]) and bool(listed)
    return {"event_id": event["event_id"], "type": event["event_type"], "vms": len(event["resources"]),
            "prepared_vms": len(listed), "appeared_at": appeared, "not_before": not_before,
            "first_s": min(listed) - appeared if listed else None,
            "last_s": max(listed) - appeared if complete else None,
            "before_not_before": complete and not_before is not None and max(listed) < not_before,
            "start_reason": event["start_reason"]}


def figures(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A shape's figures: first and last prepare (median, p95), Preempts prepared before their eviction, missed."""
    first = [r["first_s"] for r in rows if r["first_s"] is not None]
    last = [r["last_s"] for r in rows if r["last_s"] is not None]
    preempts = [r for r in rows if r["type"] == "Preempt"]
    return {"events": len(rows), "vms": sum(r["vms"] for r in rows),
            "first_median": statistics.median(first) if first else None,
            "first_p95": percentile(first, 0.95) if first else None,
            "last_median": statistics.median(last) if last else None,
            "last_p95": percentile(last, 0.95) if last else None,
            "preempts": len(preempts), "preempt_in_time": sum(1 for r in preempts if r["before_not_before"]),
            "missed": [f"{r['event_id'][:8]} ({r['type']})" for r in rows if r["prepared_vms"] < r["vms"]]}


def outcomes(fleet: LiveFleet, bench: CycleBench, ids: List[str]) -> Dict[str, Any]:
    truth = {e["event_id"]: e for e in fleet.truth()}
    rows = [event_row(truth[event_id], prepares_of(bench, event_id)) for event_id in ids]
    return dict(figures(rows), rows=rows)


# --- runs ------------------------------------------------------------------------------------------

@dataclass
class Result:
    way: str
    size: int
    shape: str
    found: Dict[str, Any]
    cpu: Optional[CpuSplit] = None   # per event
    relay_rss_mib: Optional[float] = None
    relay_cpu_pct: Optional[float] = None
    notes: List[str] = field(default_factory=list)
    histories: List[Path] = field(default_factory=list)   # what the run recorded (cycles' callback, relays)


def bounded(wait: Callable[[], Any], late: str) -> None:
    """Run a bounded wait; past its bound, say `late` and go on, unless the whole run is out of time."""
    try:
        wait()
    except OutOfTime:
        if time.monotonic() > DEADLINE[0]:
            raise
        print(f"  {late}", flush=True)


def run_eda(size: int, shapes: List[str], events: int, burst: int, collections: Path,
            results: List[Result]) -> None:
    """Each shape on one fleet of `size` VMs, its Result appended to `results` as it ends (kept if a later one
    runs out of time)."""
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name=f"avset-eda-{size}", vms=size, fault_domains=3))
    vm_cpu = VmCpuLog(WORK / f"eda-{size}" / "vm-cpu")
    run = RelayFleet(WORK / f"eda-{size}", fleet, collections, wait_for, capture=True, vm_cpu=vm_cpu)
    mine: List[Result] = []
    used: List[str] = []
    n = 0
    try:
        run.start(settle=False)
        # A fleet whose start-up never settles (on 2 cores, 200 relays outpace the simulator: their polls time
        # out, so VMs are left alone and stay owed) is still measured, its figures read with that note.
        bounded(lambda: run.wait_idle(run.settle_seconds(), "the start-up cycles to end"),
                f"the start-up cycles had not ended after {run.settle_seconds():.0f} s: the events are measured "
                "anyway, behind them")
        bench = run.bench
        print(f"  event-driven, {size} VMs: rulebook and {len(run.relays)} relays up", flush=True)
        for shape in shapes:
            planned = waves(shape, fleet, events, burst, used)
            print(f"  {shape}: {sum(len(w) for w in planned)} event(s) in {len(planned)} wave(s)", flush=True)
            relay_cpu0, cpu0, vm_mark, wall0 = run.relay_cpu(), run.controller_cpu(), vm_cpu.mark(), time.monotonic()
            max_rss = 0.0
            ids: List[str] = []
            for wave in planned:
                wave_ids = [inject(fleet, spec, n + i) for i, spec in enumerate(wave)]
                n += len(wave)
                ids += wave_ids
                used += [vm for spec in wave for vm in spec["resources"].get("names", [])]
                # an event still unprepared after WAIT_PREPARE_S is reported as such; the next wave comes
                bounded(lambda: wait_for(lambda: settled(fleet, bench, wave_ids), WAIT_PREPARE_S,
                                         f"{shape} wave to settle", interval=0.5),
                        f"a {shape} wave was not prepared within {WAIT_PREPARE_S} s")
                max_rss = max(max_rss, run.relay_max_rss())
                # each wave on a quiet fleet: its events gone and their recovers run
                bounded(lambda: wait_for(lambda: over(fleet, bench, wave_ids), WAIT_PREPARE_S,
                                         f"{shape} wave to end", interval=1.0),
                        f"a {shape} wave did not end within {WAIT_PREPARE_S} s")
                # and its last cycle over: the next wave's news would otherwise wait behind it and time that cycle,
                # not the wave's own reaction (docs/lab/benchmarks.md, what the runs show)
                bounded(lambda: run.wait_idle(WAIT_PREPARE_S, f"the {shape} wave's last cycle to end"),
                        f"a cycle of the {shape} wave still ran after {WAIT_PREPARE_S} s")
                time.sleep(EDA_GAP_S)
                run.check_alive()
            cpu1, vm_calls, wall1, relay_cpu1 = run.controller_cpu(), vm_cpu.since(vm_mark), time.monotonic(), \
                run.relay_cpu()
            relay_cpu = [relay_cpu1[vm] - relay_cpu0[vm] for vm in relay_cpu0  # a relay gone is left out
                         if relay_cpu0[vm] is not None and relay_cpu1.get(vm) is not None] or [float("nan")]
            mine.append(Result("event-driven", size, shape, outcomes(fleet, bench, ids),
                               cpu=CpuSplit(cpu1 - cpu0, vm_calls.cpu_s, vm_calls.calls).per_event(len(ids)),
                               relay_rss_mib=max_rss,
                               relay_cpu_pct=100 * statistics.mean(relay_cpu) / (wall1 - wall0),
                               notes=[f"{wall1 - wall0:.0f} s of events"]))
            results.append(mine[-1])
    finally:
        if mine:
            mine[-1].histories = run.histories()
        run.close()
        fleet.close()


def run_scheduled(size: int, events: int, period_s: float) -> Result:
    """The cycle over IMDS on a schedule, without agents: started every `period_s` (a run that overruns it starts the
    next at once), the bench's forks (CycleBench.run); the one-vm mix as a stream."""
    work = WORK / f"scheduled-{size}"
    work.mkdir()
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name=f"avset-scheduled-{size}", vms=size, fault_domains=3))
    vm_cpu = VmCpuLog(work / "vm-cpu")
    try:
        bench = CycleBench(fleet, work, interpreter=str(vm_cpu.interpreter))
        return on_schedule(f"cycle every {period_s:g} s", fleet, bench,
                           dict(capture_env(work / "cycles.jsonl"), **vm_cpu.env), events, period_s, [],
                           work / "cycles.jsonl", vm_cpu)
    finally:
        fleet.close()


def control_plane_fleet(work: Path, size: int, lag_s: float) -> Tuple[LiveFleet, CycleBench, Dict[str, str]]:
    """A fleet of `size` VMs whose hosts all have the control-plane transport, the simulator's control-plane face
    over HTTPS with Resource Graph lagging `lag_s`, and the environment of a run's Azure credentials."""
    work.mkdir()
    ca, cert, key = certificate_chain(work)
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name=f"avset-{work.name}", vms=size, fault_domains=3),
                      certfile=str(cert), keyfile=str(key), graph_lag_s=lag_s,
                      control_plane_tokens={"t-bench": ["Scheduled Events Contributor"]},
                      control_plane_clients={"bench-app": {"secret": "bench-secret", "token": "t-bench"}})
    bench = CycleBench(fleet, work, control_plane=fleet.vms)
    env = dict(capture_env(work / "cycles.jsonl"), AZURE_CLIENT_ID="bench-app", AZURE_SECRET="bench-secret",
               AZURE_TENANT="bench", AZURE_SUBSCRIPTION_ID=fleet.engine.fleet.vms[0].resource_id.split("/")[2],
               AZURE_CLOUD_ENVIRONMENT=fleet.sim.base_url, REQUESTS_CA_BUNDLE=str(ca), SSL_CERT_FILE=str(ca))
    return fleet, bench, env


def run_control_plane(size: int, events: int, lag_s: float, period_s: float) -> Result:
    """The cycle on a schedule with every host on the control-plane transport: one Resource Graph read per run (the
    simulator's, lagging `lag_s`, an assumption: Azure documents none for this table), every `period_s` (a run
    that overruns it starts the next at once), the VMs never contacted; the one-vm mix as a stream."""
    work = WORK / f"control-plane-{size}"
    fleet, bench, env = control_plane_fleet(work, size, lag_s)
    try:
        return on_schedule("control plane, cycle every %g s" % period_s, fleet, bench, env, events, period_s,
                           [f"Resource Graph lag {lag_s:g} s (assumed)"], work / "cycles.jsonl")
    finally:
        fleet.close()


def on_schedule(way: str, fleet: LiveFleet, bench: CycleBench, env: Dict[str, str], events: int, period_s: float,
                notes: List[str], history: Path, vm_cpu: Optional[VmCpuLog] = None) -> Result:
    """The cycle started every `period_s` (start to start, as cron; a run that overruns it starts the next at once)
    while the one-vm mix arrives as a stream, one event every STREAM_GAP_S, until every event settled; controller
    CPU: the runs' processes, per event, the VMs' module processes apart when `vm_cpu` logs them (else every
    host's calls are the controller's: the control-plane transport contacts no VM)."""
    ids: List[str] = []
    cpu = 0.0
    vm_mark = vm_cpu.mark() if vm_cpu else 0
    pending = list(waves("one-vm", fleet, events, 0, []))
    next_event = next_run = time.monotonic()
    print(f"  {way}, {len(fleet.vms)} VMs: {len(pending)} event(s) as a stream", flush=True)
    while pending or not settled(fleet, bench, ids):
        if time.monotonic() > DEADLINE[0] or (not pending and time.monotonic() > next_event + WAIT_PREPARE_S):
            break
        if pending and time.monotonic() >= next_event:
            ids.append(inject(fleet, pending.pop(0)[0], len(ids)))
            next_event = time.monotonic() + STREAM_GAP_S
        if time.monotonic() >= next_run:
            next_run = time.monotonic() + period_s
            before = _children_cpu()
            bench.run(env=env, timeout=600)
            cpu += _children_cpu() - before
        time.sleep(0.2)
    vm_calls = vm_cpu.since(vm_mark) if vm_cpu else None
    split = CpuSplit(cpu, vm_calls.cpu_s, vm_calls.calls) if vm_calls else CpuSplit(cpu, 0.0, 0)
    return Result(way, len(fleet.vms), "one-vm", outcomes(fleet, bench, ids), cpu=split.per_event(len(ids)),
                  histories=[history], notes=notes)


def run_event_grid(size: int, events: int, lag_s: float, delivery_s: float, collections: Path) -> Result:
    """The Event Grid rulebook over control-plane hosts: each status change of an event delivered `delivery_s`
    after it happens (Event Grid and Service Bus; an assumption: Azure publishes no figure), through the TEST
    DOUBLE of azure.azcollection's Service Bus source (tests/eda/service_bus_double: no Service Bus is reachable
    here), the real ansible-rulebook and the cycles it starts, which read Resource Graph (lagging `lag_s`) and
    acknowledge; the one-vm mix as a stream."""
    work = WORK / f"event-grid-{size}"
    fleet, bench, env = control_plane_fleet(work, size, lag_s)
    queue = event_grid_files(work, bench.inventory, {vm.name: vm.resource_id for vm in fleet.engine.fleet.vms})
    env.update(event_grid_env(collections),
               PYTHONUNBUFFERED="1", ANSIBLE_LOCAL_TEMP=str(work / "ansible-tmp"), HOME=str(work))
    command = [str(Path(sys.executable).parent / "ansible-rulebook"), "-r",
               "azure_imds.scheduled_events.scheduled_events_event_grid", "-i", "inventory/", "--vars",
               "rulebook_vars.yml"]
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc: Optional[subprocess.Popen] = None
    ids: List[str] = []
    sent: Set[str] = set()
    try:
        with (work / "rulebook.log").open("w") as log:
            proc = subprocess.Popen(command, cwd=work, env=dict(os.environ, **env), stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(10)  # the rulebook's start (Java); a delivery before it would only wait in the queue
        cpu0 = tree_cpu(proc.pid)
        pending = list(waves("one-vm", fleet, events, 0, []))
        next_event = time.monotonic()
        while pending or not settled(fleet, bench, ids):
            if proc.poll() is not None:
                raise SystemExit("the Event Grid rulebook ended:\n" + (work / "rulebook.log").read_text()[-3000:])
            if time.monotonic() > DEADLINE[0] or (not pending and time.monotonic() > next_event + WAIT_PREPARE_S):
                break
            if pending and time.monotonic() >= next_event:
                ids.append(inject(fleet, pending.pop(0)[0], len(ids)))
                next_event = time.monotonic() + STREAM_GAP_S
            due = fleet.sim.clock.now() - timedelta(seconds=delivery_s)
            with fleet.sim.lock:
                fresh = [d for d in control_plane.deliveries(fleet.engine, due) if d["id"] not in sent]
            if fresh:
                with queue.open("a") as out:
                    out.writelines(json.dumps(d) + "\n" for d in fresh)
                sent.update(d["id"] for d in fresh)
            time.sleep(0.2)
        cpu1 = tree_cpu(proc.pid)
        return Result("Event Grid rulebook, control plane", size, "one-vm", outcomes(fleet, bench, ids),
                      cpu=CpuSplit(cpu1 - cpu0, 0.0, 0).per_event(len(ids)), histories=[work / "cycles.jsonl"],
                      notes=[f"Resource Graph lag {lag_s:g} s and Event Grid delivery {delivery_s:g} s (assumed)"])
    finally:
        kill_tree(proc)
        fleet.close()


def _children_cpu() -> float:
    """CPU-seconds of this process's reaped children (each ansible-playbook run, its workers included)."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
        "source": "make bench-reaction: " + ", ".join(dict.fromkeys(f"{r.way} {r.size} VMs" for r in results))})
        + "\n")
    return destination


# --- report ----------------------------------------------------------------------------------------

def fmt(value: Optional[float], digits: int = 1) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def render(results: List[Result], argv: List[str], wall: float) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    command = " ".join(["python tools/bench_reaction.py"] + ([shlex.join(argv)] if argv else []))
    lines = [
        SECTION, "",
        f"Command: `{command}` (`make bench-reaction` runs the defaults: `--sizes 50,200 --events 6`, bursts of 50 "
        f"or as many as a size leaves, every shape, the scheduled cycle at 50 VMs, the control plane and Event Grid); "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"head {head}{' with uncommitted changes' if dirty else ''}, {wall / 60:.1f} wall minutes, this project's "
        "2-core machine (shared and noisy).", "",
        "Time scale 1. Event-driven: a relay process per VM (poll 1 s, heartbeat 30 s), the real ansible-rulebook with "
        "the collection's rulebook, " + EDA_FORKS + "; shapes one after the other on the same fleet, each wave "
        f"over (its events gone, {STARTED_FOR_S} s after they start, their recovers run, and no cycle under the "
        f"rulebook for 5 s) and {EDA_GAP_S:g} s apart: fault-domain (a Platform Reboot of every VM of fault domain 0, 900 s "
        "notice), one-vm (half Preempt with 30 s notice, half Reboot with 900 s, one VM each), burst (one-VM Preempts "
        "within one second, 30 s notice, VMs of every fault domain), burst-short (the same, notices drawn from "
        f"{BURST_SHORT_NOTICE_S[0]} to {BURST_SHORT_NOTICE_S[1]} s). Scheduled cycle: "
        "`azure_imds.scheduled_events.cycle` over IMDS started every period (start to start, as cron; a run that "
        "overruns it is followed at once), forks 10, no agent on the VMs, the one-vm mix as a stream (one every "
        f"{STREAM_GAP_S:g} s). First / last prepare = the event "
        "appears in the simulator -> the first / last of its VMs' prepares starts (the prepare log). Controller "
        "CPU: the rulebook's process tree, children included, over the shape's events, per event (scheduled: the "
        "runs' processes), raw; the simulated VMs are local-connection hosts whose Python is tools/vm_python.py, "
        "which logs each module process's CPU (its own start-up included): the controller alone is the raw figure "
        "less those; a real controller over SSH with pipelining is estimated as the controller alone with each "
        f"module call's local share ({LOCAL_CONTROLLER_CPU_S_PER_CALL:g} CPU-s) traded for its cost over SSH with "
        f"pipelining ({SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL:g}; both `make bench-ssh`, tools/vm_cpu.py). "
        "Tasks delegated to localhost (the bench's prepare and recover log) are the controller's.",
        "",
    ] + [f"Control plane ({'; '.join(r.notes)}): `azure_imds.scheduled_events.cycle` started every period on a fleet "
         "whose hosts all have `maintenance_cycle_transport: control_plane` (one Resource Graph read per run, "
         "acknowledge for approvals, the VMs not contacted), against the simulator's control-plane face over HTTPS; "
         "the one-vm mix as a stream; controller CPU: the runs' processes, per event (all of it the controller's: "
         "no VM is contacted).\n"
         for r in results if r.way.startswith("control plane")] + [
        f"Event Grid ({'; '.join(r.notes)}): the rulebook `scheduled_events_event_grid` over the same kind of fleet, "
        "each status change of an event written to the queue of a TEST DOUBLE of azure.azcollection's Service Bus "
        "source once its delivery time has passed (no Service Bus is reachable here); each notification starts "
        "the cycle on the VMs it lists, whose Resource Graph read waits until it shows the notified event; "
        "controller CPU: the rulebook's process tree, per event (all of it the controller's).\n"
        for r in results if r.way.startswith("Event Grid")] + table(results)
    return "\n".join(lines) + "\n"


CPU_COLUMNS = ("controller CPU-s / event, raw (the tree, the simulated VMs' modules in it)",
               "controller alone", "simulated VMs' module processes", "module calls on the VMs / event",
               "a real controller over SSH with pipelining (estimate)")


def cpu_cells(cpu: Optional[CpuSplit]) -> List[str]:
    """The CPU columns of a row, per event."""
    if cpu is None:
        return ["n/a"] * len(CPU_COLUMNS)
    return [fmt(cpu.raw), fmt(cpu.controller), fmt(cpu.vm), fmt(cpu.calls), fmt(cpu.over_ssh)]


def table(results: List[Result]) -> List[str]:
    """The report's table and the per-event line."""
    lines = ["| way | VMs | shape | events (VMs) | first prepare median / p95 | last prepare median / p95 "
             "| Preempt prepared before NotBefore | missed | " + " | ".join(CPU_COLUMNS) + " | relay max RSS "
             "| relay mean CPU (one core) |",
             "|---|---|---|---|---|---|---|---|" + "---|" * len(CPU_COLUMNS) + "---|---|"]
    for r in results:
        f = r.found
        preempt = f"{100 * f['preempt_in_time'] / f['preempts']:.0f} % ({f['preempt_in_time']}/{f['preempts']})" \
            if f["preempts"] else "n/a"
        missed = f"{len(f['missed'])}{' (' + ', '.join(f['missed'][:5]) + ')' if f['missed'] else ''}"
        lines.append(
            f"| {r.way} | {r.size} | {r.shape} | {f['events']} ({f['vms']}) | {fmt(f['first_median'])} / "
            f"{fmt(f['first_p95'])} s | {fmt(f['last_median'])} / {fmt(f['last_p95'])} s | {preempt} | {missed} | "
            f"{' | '.join(cpu_cells(r.cpu))} | {fmt(r.relay_rss_mib)} MiB | {fmt(r.relay_cpu_pct, 2)} % |"
            .replace("n/a MiB", "n/a").replace("n/a %", "n/a"))
    lines.append("")
    lines.append("- Per event, first prepare (last, when it listed more than one VM), s from appearing: " + "; ".join(
        f"{r.way} {r.size} {r.shape}: " + ", ".join(
            f"{e['type'][0]} {fmt(e['first_s']) if e['first_s'] is not None else 'missed'}"
            + (f"-{fmt(e['last_s'])}" if e["vms"] > 1 else "")
            for e in r.found["rows"][:12]) + (" ..." if len(r.found["rows"]) > 12 else "")
        for r in results) + " (P = Preempt, R = Reboot).")
    return lines


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200", help="fleet sizes for the event-driven runs")
    parser.add_argument("--events", type=int, default=6,
                        help="events of the fault-domain and one-vm shapes, per size (one-vm: half Preempt)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="which shapes, of " + ", ".join(SHAPES))
    parser.add_argument("--burst", type=int, default=0,
                        help="Preempts in each burst (default: 50, or as many as the fleet leaves for each burst)")
    parser.add_argument("--no-scheduled", action="store_true", help="skip the scheduled cycle over IMDS")
    parser.add_argument("--scheduled-size", type=int, default=50)
    parser.add_argument("--scheduled-period", type=float, default=60.0,
                        help="seconds between two starts of the scheduled cycle (cron's finest is 60)")
    parser.add_argument("--no-control-plane", action="store_true", help="skip the control-plane poll")
    parser.add_argument("--control-plane-size", type=int, default=50)
    parser.add_argument("--graph-lag", type=float, default=30.0,
                        help="Resource Graph's lag in the simulator, s (an assumption: Azure documents none)")
    parser.add_argument("--control-plane-period", type=float, default=60.0,
                        help="seconds between two starts of the control-plane cycle (cron's finest is 60)")
    parser.add_argument("--no-event-grid", action="store_true", help="skip the Event Grid rulebook")
    parser.add_argument("--event-grid-delivery", type=float, default=5.0,
                        help="seconds from a status change to its delivery on the Service Bus queue (an assumption: "
                             "Azure publishes no figure)")
    parser.add_argument("--max-minutes", type=float, default=90.0, help="the whole run stops after this")
    parser.add_argument("--report", default=str(REPORT), help="markdown file to append to ('' for none)")
    parser.add_argument("--history", default=str(WORK / "reaction-history.jsonl.gz"),
                        help="one history of every run (the cycles' callback and the relays), gzip, with a "
                             ".meta.json sidecar ('' for none)")
    args = parser.parse_args(argv)
    unknown = sorted(set(shape_list(args.shapes)) - set(SHAPES))
    if unknown:
        parser.error(f"--shapes names {', '.join(unknown)}, which is no shape; the shapes are {', '.join(SHAPES)}.")
    return args


def shape_list(text: str) -> List[str]:
    named = [name.strip() for name in text.split(",") if name.strip()]
    return [shape for shape in SHAPES if shape in named] + [name for name in named if name not in SHAPES]


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if (args.sizes.strip() or not args.no_event_grid) and not shutil.which("java"):
        raise SystemExit("ansible-rulebook needs Java 17+: apt-get install openjdk-17-jre-headless")
    DEADLINE[0] = time.monotonic() + args.max_minutes * 60
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    shapes = shape_list(args.shapes)
    bursts = {size: args.burst or default_burst(size, shapes, args.events) for size in sizes}
    for size in sizes:
        why = infeasible(size, shapes, args.events, bursts[size])
        if why:
            raise SystemExit(f"bench_reaction: at {size} VMs, {why}")
    started = time.monotonic()
    collections = environment(WORK)
    print(f"bench-reaction: sizes {sizes}, shapes {shapes} ({args.events} events, bursts of {bursts}), scheduled "
          f"cycle {'off' if args.no_scheduled else args.scheduled_size}; work in {WORK}", flush=True)
    results: List[Result] = []
    stopped = False
    try:
        for size in sizes:
            run_eda(size, shapes, args.events, bursts[size], collections, results)
        if not args.no_scheduled:
            results.append(run_scheduled(args.scheduled_size, args.events, args.scheduled_period))
        if not args.no_control_plane:
            results.append(run_control_plane(args.control_plane_size, args.events, args.graph_lag,
                                             args.control_plane_period))
        if not args.no_event_grid:
            results.append(run_event_grid(args.control_plane_size, args.events, args.graph_lag,
                                          args.event_grid_delivery, collections))
    except (OutOfTime, KeyboardInterrupt, SystemExit) as exc:  # keep the figures of the runs that ended
        print(f"bench-reaction stopped early: {exc!r}", file=sys.stderr)
        stopped = True
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
    if stopped:
        return 1  # the figures of the runs that ended are printed and written, but the run is not whole
    return 0 if all(not r.found["missed"] for r in results if r.way == "event-driven" and r.shape != "burst-short") \
        else 1


if __name__ == "__main__":
    sys.exit(main())
