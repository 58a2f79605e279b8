"""The controller's CPU apart from the simulated VMs' module CPU, for the benchmarks (issue 44): the simulated VMs
are local-connection hosts, so every module process a cycle starts on them counts in the controller's process
tree, although on a real VM it runs on the VM. Their inventory names tools/vm_python.py as their Python, which
logs each module process's CPU; the controller alone is the tree's CPU less that log's sum.

What a real controller would pay over SSH with pipelining is then estimated from the controller alone, whose
share of each module call (the worker's templating, the module's assembly, starting it, reading its result) is
the local connection's, by trading that share for what the same call costs a controller over SSH with
pipelining. Adding the SSH cost without taking the local share out would count each call's controller work twice.
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

from tools.vm_python import LOG_VARIABLE

WRAPPER = Path(__file__).resolve().parent / "vm_python.py"
# The controller's CPU-s per host per module call, the connection up, the module's process left out: over SSH with
# pipelining on, and on the local connection without pipelining (what `make bench-reaction` runs), both from one
# `make bench-ssh` run, the collection's scheduled_events_info (the cycles call the collection's modules):
# docs/lab/benchmarks.md, "Over SSH, with and without pipelining", its second run.
SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL = 0.108
LOCAL_CONTROLLER_CPU_S_PER_CALL = 0.130


@dataclass(frozen=True)
class ModuleCalls:
    """Module processes the simulated VMs ran: how many, and their CPU-s (the wrapper's own start-up included)."""
    calls: int
    cpu_s: float


def parse_log(text: str) -> ModuleCalls:
    """The wrapper's log ("<module CPU-s> <wrapper CPU-s>" a line); a last line not yet ended is left out."""
    lines = text.split("\n")[:-1]
    return ModuleCalls(len(lines), sum(float(part) for line in lines for part in line.split()))


def over_ssh_with_pipelining(controller_s: float, calls: float,
                             ssh_per_call_s: float = SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL,
                             local_per_call_s: float = LOCAL_CONTROLLER_CPU_S_PER_CALL) -> float:
    """What a real controller would pay for the same work over SSH with pipelining: the controller alone as
    measured on the local connection, each module call's local share traded for its share over SSH."""
    return controller_s + calls * (ssh_per_call_s - local_per_call_s)


@dataclass(frozen=True)
class CpuSplit:
    """CPU-s over some events, or per event: `raw`, the controller's whole process tree as measured (the simulated
    VMs' module processes in it); `vm`, those module processes; `calls`, how many there were. vm and calls are
    None where they were not counted apart."""
    raw: float
    vm: Optional[float] = None
    calls: Optional[float] = None

    @property
    def controller(self) -> Optional[float]:
        """The controller alone."""
        return None if self.vm is None else self.raw - self.vm

    @property
    def over_ssh(self) -> Optional[float]:
        """A real controller over SSH with pipelining, estimated."""
        if self.controller is None or self.calls is None:
            return None
        return over_ssh_with_pipelining(self.controller, self.calls)

    def per_event(self, events: int) -> "CpuSplit":
        n = max(events, 1)
        return CpuSplit(self.raw / n, None if self.vm is None else self.vm / n,
                        None if self.calls is None else self.calls / n)


# --- I/O: the launcher and the log -------------------------------------------------------------------

@dataclass
class VmCpuLog:
    """In `folder`: the launcher an inventory names as `ansible_python_interpreter` (tools/vm_python.py run by this
    interpreter with -S) and the log it appends to, named by `env`."""
    folder: Path
    python: str = sys.executable

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.interpreter.write_text(
            "#!/bin/sh\n"
            f"exec {shlex.quote(self.python)} -S {shlex.quote(str(WRAPPER))} \"$@\"\n")
        self.interpreter.chmod(0o755)
        self.path.touch()

    @property
    def interpreter(self) -> Path:
        return self.folder / "vm-python"

    @property
    def path(self) -> Path:
        return self.folder / "vm-cpu.log"

    @property
    def env(self) -> Dict[str, str]:
        return {LOG_VARIABLE: str(self.path)}

    def mark(self) -> int:
        """Where the log ends now: since(mark()) counts what comes after."""
        return self.path.stat().st_size

    def since(self, offset: int) -> ModuleCalls:
        with self.path.open("rb") as log:
            log.seek(offset)
            return parse_log(log.read().decode())
