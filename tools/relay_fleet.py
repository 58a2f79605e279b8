"""A simulated fleet run event-driven, as a user would: an event relay process per VM on its VM's IMDS root, and
the real `ansible-rulebook -r azure_imds.scheduled_events.scheduled_events` receiving their pushes.

Shared by `make bench-reaction` (tools/bench_reaction.py), the relay soak (`make soak-relay`) and
`make demo-event-driven`. The relays run on an interpreter without Ansible (they need none on a VM); the
rulebook's cycles log each prepare and recover (tests/integration/files) where CycleBench reads them.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import psutil

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.eda.rulebook_setup import RulebookSetup, listening  # noqa: E402
from tests.integration.runner import CycleBench  # noqa: E402
from tests.history.history_helpers import capture_env  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tools.stage_collection import stage  # noqa: E402
from tools.vm_cpu import VmCpuLog  # noqa: E402

PLAIN_PYTHON = getattr(sys, "_base_executable", sys.executable)  # the relays need no Ansible
TOKEN = b"relay-fleet-token-0123456789abcdef"
RELAY = "ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program"
Wait = Callable[..., Any]  # tests.timing.wait_for(predicate, timeout, what, interval=...)


def environment(work: Path) -> Path:
    """A fresh work folder with the collection staged in it, and this process's Ansible settings and import path
    pointing there (the relays' keys are derived by the collection's own relay_key)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    collections = work / "collections"
    stage(collections)
    cfg = work / "ansible.cfg"
    # Ansible's default forks (5): more forks let the start-up cycles of a big fleet starve the source on 2 cores
    # (pushes time out, hosts go stale, more cycles come): the rulebook's CPU is the fleet's bottleneck here
    # (docs/lab/benchmarks.md).
    cfg.write_text("[defaults]\n")
    os.environ.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_CONFIG=str(cfg), ANSIBLE_NOCOLOR="1")
    if str(collections) not in sys.path:
        sys.path.insert(0, str(collections))
    for name in ("ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CALLBACK_WHITELIST", "SCHEDULED_EVENTS_HISTORY_PATH",
                 "ANSIBLE_STDOUT_CALLBACK"):
        os.environ.pop(name, None)
    return collections


# --- processes -------------------------------------------------------------------------------------

def kill_tree(proc: Optional[subprocess.Popen], grace: float = 15.0) -> None:
    """SIGTERM the process (and its group), then SIGKILL everything of its tree still there."""
    if proc is None or proc.poll() is not None:
        return
    try:
        tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        tree = []
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for extra in list(tree):
        try:
            tree += extra.children(recursive=True)
        except psutil.Error:
            pass
    for member in tree:
        try:
            member.kill()
        except psutil.Error:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def tree_cpu(pid: int) -> float:
    """CPU seconds of a live process tree: each live member's own time plus what it reaped of its children.
    A child's time moves into its parent's children_* when reaped, so nothing is counted twice."""
    try:
        root = psutil.Process(pid)
        members = [root] + root.children(recursive=True)
    except psutil.Error:
        return float("nan")
    total = 0.0
    for member in members:
        try:
            t = member.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def tree_rss_mib(pid: int) -> Optional[float]:
    """Resident memory of a live process tree (the rulebook's JVM, Python and any ansible-playbook)."""
    try:
        root = psutil.Process(pid)
        return sum(m.memory_info().rss for m in [root] + root.children(recursive=True)) / 2 ** 20
    except psutil.Error:
        return None


def cycling(pid: int) -> bool:
    """Whether an ansible-playbook runs under the rulebook now."""
    try:
        return any("ansible-playbook" in " ".join(c.cmdline()) for c in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return False


def own_cpu(pid: int) -> Optional[float]:
    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except psutil.Error:
        return None


def rss_mib(pid: int) -> Optional[float]:
    try:
        return psutil.Process(pid).memory_info().rss / 2 ** 20
    except psutil.Error:
        return None


@dataclass
class CpuParts:
    """CPU seconds so far of each part of a simulated event-driven fleet on this one machine: the controller (the
    rulebook's tree, its cycles included), the relays together, the simulator (this process: its HTTP threads
    serve every VM's IMDS), and the whole machine (every process, non-idle)."""
    controller: float
    relays: float
    simulator: float
    machine: float

    def __sub__(self, other: "CpuParts") -> "CpuParts":
        return CpuParts(self.controller - other.controller, self.relays - other.relays,
                        self.simulator - other.simulator, self.machine - other.machine)


def machine_busy_cpu() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def cycles_in(log: Path, offset: int = 0) -> Dict[str, int]:
    """The maintenance cycles a rulebook log shows from byte `offset` on: how many ran, and the VMs they played
    on together."""
    cycles = hosts = 0
    in_recap = False
    with log.open("rb") as stream:
        stream.seek(offset)
        text = stream.read().decode(errors="replace")
    for line in text.splitlines():
        if line.startswith("PLAY [Azure Scheduled Events maintenance cycle]"):
            cycles += 1
        elif line.startswith("PLAY RECAP"):
            in_recap = True
        elif in_recap and " : ok=" in line:
            hosts += not line.startswith("localhost ")
        else:
            in_recap = False
    return {"cycles": cycles, "host_plays": hosts}


# --- the relays and the rulebook ---------------------------------------------------------------------

@dataclass
class Relay:
    vm: str
    config: Path
    history: Path
    log: Path
    process: Optional[subprocess.Popen] = None

    def start(self, collections: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(collections))
        with self.log.open("w") as log:
            self.process = subprocess.Popen([PLAIN_PYTHON, "-m", RELAY, str(self.config)], env=env,
                                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def recorded(self) -> bool:
        return self.history.exists() and self.history.stat().st_size > 0

    def records(self) -> List[Dict[str, Any]]:
        """The relay's change-only history (complete lines only)."""
        if not self.history.exists():
            return []
        return [json.loads(line) for line in self.history.read_text().splitlines() if line.strip().endswith("}")]


def make_relay(work: Path, fleet: LiveFleet, bench: CycleBench, vm: str, port: int) -> Relay:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import relay_key  # staged by now
    base = work / "relays" / vm
    base.mkdir(parents=True, exist_ok=True)
    token = base / "token"
    token.write_bytes(relay_key(TOKEN, vm))  # the relay's own key, as the event_relay role installs it
    token.chmod(0o600)
    config = base / "relay.json"
    config.write_text(json.dumps({
        "host": vm, "controller_url": f"http://127.0.0.1:{port}/push", "token_file": str(token),
        "state_dir": str(base / "state"), "imds_url": fleet.url(vm), "poll_interval": 1.0,
        "heartbeat_seconds": 30.0, "history_path": str(base / "history.jsonl"),
        "cycle_state_path": str(bench.state_path(vm))}))
    return Relay(vm, config, base / "history.jsonl", base / "relay.log")


@dataclass
class RelayFleet:
    """`fleet` run event-driven in `work`: start() brings the rulebook and a relay per VM up and waits until the
    start-up cycles are over; close() stops every process (whole trees)."""
    work: Path
    fleet: LiveFleet
    collections: Path
    wait: Wait
    bench: CycleBench = field(init=False)
    setup: RulebookSetup = field(init=False)
    relays: List[Relay] = field(default_factory=list)
    rulebook: Optional[subprocess.Popen] = None
    capture: bool = False   # the cycles' history callback on, writing cycles.jsonl (reads, approvals, actions)
    vm_cpu: Optional[VmCpuLog] = None  # the VMs' Python logs their module processes' CPU there

    def __post_init__(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self.bench = CycleBench(self.fleet, self.work,
                                interpreter=str(self.vm_cpu.interpreter) if self.vm_cpu else None)
        self.setup = RulebookSetup(self.work, TOKEN, self.fleet.vms)
        if self.capture:
            self.setup.env.update(capture_env(self.cycles_history))
        if self.vm_cpu:
            self.setup.env.update(self.vm_cpu.env)

    @property
    def cycles_history(self) -> Path:
        return self.work / "cycles.jsonl"

    def histories(self) -> List[Path]:
        """What this run recorded: the cycles' history (when captured) and each relay's change-only history."""
        found = [self.cycles_history] if self.cycles_history.exists() else []
        return found + [r.history for r in self.relays if r.history.exists()]

    @property
    def log(self) -> Path:
        return self.work / "rulebook.log"

    def start(self, settle: bool = True) -> None:
        """The rulebook, then a relay per VM; with `settle`, until the start-up cycles are over (else the caller
        waits for them with `settle_seconds()`, as it sees fit)."""
        size = len(self.fleet.vms)
        with self.log.open("w") as log:
            self.rulebook = self.setup.start(self.bench.inventory, log)
        self.wait(lambda: listening(self.setup.port) or self.rulebook.poll() is not None, 120, "the source to listen")
        self.check_alive()
        for vm in self.fleet.vms:
            relay = make_relay(self.work, self.fleet, self.bench, vm, self.setup.port)
            relay.start(self.collections)
            self.relays.append(relay)
        self.wait(lambda: all(r.recorded() for r in self.relays), 60 + size, "every relay's first document")
        time.sleep(10)
        if settle:
            self.wait_idle(self.settle_seconds(), "the start-up cycles to end")

    def settle_seconds(self) -> float:
        """How long the start-up cycles may take: any cycle the relays' first pushes ask for must be over (and none
        for 5 s), so that the first event does not wait behind start-up work; a first look at every VM, whose
        claims cost about a CPU-second each on 2 cores beside the relays (200 VMs outlasted 380 s)."""
        return 180 + 4 * len(self.fleet.vms)

    def wait_idle(self, timeout: float, what: str, quiet_s: float = 5.0) -> None:
        """Until no cycle has run under the rulebook for `quiet_s`: news on a VM a running cycle already read waits
        for that cycle's end, so a measurement started earlier would time the cycle before it, not its own."""
        quiet_since = [time.monotonic()]

        def settled_down() -> bool:
            if cycling(self.rulebook.pid):
                quiet_since[0] = time.monotonic()
            return time.monotonic() - quiet_since[0] >= quiet_s

        self.wait(settled_down, timeout, what, interval=0.5)

    def check_alive(self) -> None:
        if self.rulebook is None or self.rulebook.poll() is not None:
            raise SystemExit("ansible-rulebook ended:\n" + self.log.read_text()[-3000:])

    def controller_cpu(self) -> float:
        return tree_cpu(self.rulebook.pid) if self.rulebook else float("nan")

    def relay_cpu(self) -> Dict[str, Optional[float]]:
        return {r.vm: own_cpu(r.process.pid) for r in self.relays if r.process}

    def cpu(self) -> CpuParts:
        return CpuParts(self.controller_cpu(), sum(c or 0.0 for c in self.relay_cpu().values()), time.process_time(),
                        machine_busy_cpu())

    def relay_max_rss(self) -> float:
        return max([0.0] + [rss_mib(r.process.pid) or 0.0 for r in self.relays if r.process])

    def close(self) -> None:
        for relay in self.relays:
            if relay.process and relay.process.poll() is None:
                relay.process.terminate()
        for relay in self.relays:
            kill_tree(relay.process, grace=5)
        kill_tree(self.rulebook)
