"""What one task costs per host on this machine, whatever the collection does in it: the floor under every cycle
(issue 28: a fault domain's first prepare waits for two module calls on each of its hosts).

    python tools/profile_module_floor.py [--hosts 67] [--forks 5] [--tasks 3] [--runs 20]

Side by side in one run, on --hosts local hosts (the connection the benchmarks use, the interpreter of this venv):
a play of --tasks `ansible.builtin.set_fact` tasks (controller only), of `ansible.builtin.ping` tasks, of the
collection's `scheduled_events_state` saving a small file (its cheapest module with I/O), and of pings again with
pipelining on. Each play's CPU (its process tree, reaped) less an empty play's, over hosts x tasks, is the cost of
one task on one host. Then the module process alone: the AnsiballZ file of one ping, kept and run --runs times, and
how much of it is importing `ansible.module_utils.basic` (python -X importtime), which every module pays.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.bench_busy_cycle import children_cpu  # noqa: E402
from tools.relay_fleet import environment  # noqa: E402

PLAYBOOK_BIN = Path(sys.executable).parent / "ansible-playbook"


@dataclass(frozen=True)
class Play:
    name: str        # as the report shows it
    task: str        # one task's YAML body, {host} and {n} filled in per host and task
    env: Dict[str, str]


PLAYS = [
    Play("set_fact (controller only)", "ansible.builtin.set_fact:\n        floor_{n}: 1", {}),
    Play("ansible.builtin.ping (a module on the host)", "ansible.builtin.ping:", {}),
    Play("scheduled_events_state (the collection's save)",
         "azure_imds.scheduled_events.scheduled_events_state:\n        path: \"{state_dir}/{{{{ inventory_hostname }}}}"
         "-{n}.json\"\n        content: '{{\"version\": 2, \"document_incarnation\": {n}, \"events\": [], \"approved\": []}}'", {}),
    Play("ansible.builtin.ping, pipelining on", "ansible.builtin.ping:", {"ANSIBLE_PIPELINING": "True"}),
]


@dataclass(frozen=True)
class Measured:
    name: str
    wall_s: float
    cpu_s: float


def inventory(hosts: int) -> str:
    return "[floor]\n" + "".join(f"vm{i} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
                                 for i in range(hosts))


def playbook(play: Optional[Play], tasks: int, state_dir: Path, hosts: str = "floor") -> str:
    body = "" if play is None else "".join(
        f"    - {play.task.format(n=n, state_dir=state_dir)}\n" for n in range(tasks))
    return f"- hosts: {hosts}\n  gather_facts: false\n  tasks:\n" + (body or "    []\n")


def run_play(work: Path, name: str, text: str, forks: int, env: Dict[str, str], inventory: Optional[Path] = None,
             settle: Callable[[], None] = lambda: None) -> Measured:
    """The play's wall and CPU (its process tree, reaped); `settle` ends what the play leaves running (SSH's
    ControlPersist masters) before the CPU is read, so that it counts too."""
    path = work / f"{re.sub(r'[^a-z0-9]+', '-', name.lower())}.yml"
    path.write_text(text)
    cpu0, wall0 = children_cpu(), time.monotonic()
    done = subprocess.run([str(PLAYBOOK_BIN), "-i", str(inventory or work / "inventory"), "-f", str(forks),
                           str(path)], capture_output=True, text=True, env={**os.environ, **env}, timeout=3600)
    wall = time.monotonic() - wall0
    settle()
    cpu = children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"the play {name!r} failed (rc {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-1000:]}")
    return Measured(name, wall, cpu)


def module_process(work: Path, runs: int) -> Dict[str, float]:
    """CPU-s of one ping's module process run alone, and the share of it that importing basic takes."""
    keep = work / "keep"
    keep.mkdir()
    play = work / "keep.yml"
    play.write_text("- hosts: vm0\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n")
    subprocess.run([str(PLAYBOOK_BIN), "-i", str(work / "inventory"), str(play)], capture_output=True, check=True,
                   env={**os.environ, "ANSIBLE_KEEP_REMOTE_FILES": "1", "ANSIBLE_REMOTE_TMP": str(keep)})
    (wrapper,) = keep.glob("*/AnsiballZ_ping.py")
    cpu0 = children_cpu()
    for _ in range(runs):
        subprocess.run([sys.executable, str(wrapper)], capture_output=True, check=True)
    per_run = (children_cpu() - cpu0) / runs
    traced = subprocess.run([sys.executable, "-X", "importtime", str(wrapper)], capture_output=True, text=True,
                            check=True)
    return {"module_process_s": per_run, "import_basic_s": import_seconds(traced.stderr, "ansible.module_utils.basic")}


def import_seconds(importtime: str, module: str) -> float:
    """The cumulative import time python -X importtime gives a module (the first line that names it)."""
    for line in importtime.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1e6
    raise SystemExit(f"python -X importtime did not list {module}")


def per_host_task(measured: Measured, empty: Measured, hosts: int, tasks: int) -> float:
    return max(measured.cpu_s - empty.cpu_s, 0.0) / (hosts * tasks)


def report(rows: List[Measured], empty: Measured, alone: Dict[str, float], hosts: int, forks: int, tasks: int,
           command: str) -> str:
    lines = [f"Command: `{command}`", "",
             f"{hosts} local hosts, forks {forks}, {tasks} tasks of each kind per play; an empty play took "
             f"{empty.cpu_s:.1f} CPU-s ({empty.wall_s:.1f} s wall).", "",
             "| play | wall | CPU-s | CPU-s per host per task | wall per task |", "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.name} | {row.wall_s:.1f} s | {row.cpu_s:.1f} | "
                     f"{per_host_task(row, empty, hosts, tasks):.3f} | {(row.wall_s - empty.wall_s) / tasks:.1f} s |")
    share = alone["import_basic_s"] / max(alone["module_process_s"], 1e-9)
    lines += ["", f"One ping's module process run alone: {alone['module_process_s']:.3f} CPU-s, of which importing "
              f"ansible.module_utils.basic {alone['import_basic_s']:.3f} s ({share:.0%}, python -X importtime)."]
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=67)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="module-floor-") as scratch:
        work = Path(scratch)
        environment(work / "env")
        (work / "inventory").write_text(inventory(args.hosts))
        (work / "state").mkdir()
        empty = run_play(work, "empty play", playbook(None, 0, work / "state"), args.forks, {})
        rows = [run_play(work, play.name, playbook(play, args.tasks, work / "state"), args.forks, play.env)
                for play in PLAYS]
        alone = module_process(work, args.runs)
    given = argv if argv is not None else sys.argv[1:]
    print(report(rows, empty, alone, args.hosts, args.forks, args.tasks,
                 " ".join(["python tools/profile_module_floor.py"] + given)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
