"""What a real controller pays per host per module call over SSH, with Ansible's defaults and with pipelining, apart
from what the VM pays (issue 44: the local connection the other benchmarks use puts the module's CPU on the
controller, and has no SSH round trip for pipelining to save).

    python tools/bench_ssh.py [--hosts 20] [--forks 20] [--tasks 4] [--rounds 1] [--report docs/lab/benchmarks.md]

The VMs: --hosts inventory hosts (the quiet fleet of tools/bench_quiet_fleet.py, each with its own
inventory_hostname and simulated IMDS) that are all this machine, reached over real SSH: Debian's openssh-server
(installed with apt-get when /usr/sbin/sshd is missing), started by this tool as its own child with its own
config, a throwaway host key and client key in a temp dir, on a free loopback port; no system service, nothing
in /etc changes (sshd needs its privilege-separation dir /run/sshd: created if missing). Each host gets its own
ControlPath in the temp dir, as distinct VMs would (Ansible's default path hashes ansible_host, which all of
them share). The ssh options are explicit: Ansible's default ssh_args (-C -o ControlMaster=auto
-o ControlPersist=60s), StrictHostKeyChecking=no against a temp known_hosts, the client key only.

Side by side in one run, each round: an empty play, then for each module (`ansible.builtin.ping`, and the
collection's `scheduled_events_info` reading its simulated IMDS), with Ansible's defaults (no pipelining) and with
pipelining on, a play of one call and a play of --tasks calls. A call on a host whose ControlPersist master is up
(every call of a run but its first) costs the --tasks play less the one-call play, over hosts x (tasks - 1); the
first call on a host, with its SSH connection set-up, costs the one-call play less the empty play (which makes no
connection), over hosts.

How the CPU is counted apart:
- The controller is the ansible-playbook process tree and the ssh clients it starts, with their ControlPersist
  masters. The masters daemonize, leaving ansible-playbook's tree; this process is a child subreaper
  (prctl PR_SET_CHILD_SUBREAPER), so they become its children. After each play it ends them (SIGTERM) and reaps
  them: getrusage(RUSAGE_CHILDREN) then holds the whole tree's CPU, masters included.
- The VM side is sshd's tree: the connection processes, the shells, sftp-server, the module's Python. A fresh
  sshd serves each play; once the masters are gone its connections end, sshd reaps them, and when it has no
  child left it is stopped and reaped with os.wait4, whose rusage is sshd's own CPU with all its reaped
  descendants'. sshd is reaped after the play's controller CPU was read, so neither counts the other.
- The simulated IMDS serves from threads of this process: Azure's side, in neither.
- Beside them, the same plays on the same hosts over the local connection, as the other benchmarks run them (no
  pipelining), their Python tools/vm_python.py: the VM side is the module processes it logs, the controller the
  play's tree less them (no sshd runs for these plays).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.bench_quiet_fleet import serve_quiet_fleet  # noqa: E402
from tools.profile_module_floor import Measured, Play, per_host_task, playbook, run_play  # noqa: E402
from tools.relay_fleet import environment  # noqa: E402
from tools.vm_cpu import VmCpuLog  # noqa: E402

SSHD = Path("/usr/sbin/sshd")
PR_SET_CHILD_SUBREAPER = 36
# Ansible's default ssh_args (the ssh connection plugin's documentation), given explicitly so that a user's
# ANSIBLE_SSH_ARGS or ansible.cfg cannot change what is measured.
ANSIBLE_DEFAULT_SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s"
SSH_MODES = [("Ansible's defaults (no pipelining)", {"ANSIBLE_PIPELINING": "False"}),
             ("pipelining on", {"ANSIBLE_PIPELINING": "True"})]
# The same hosts on the local connection, as the other benchmarks run them, with the module's process counted apart
# (tools/vm_python.py): what the controller pays per call there, so that tools/vm_cpu.py can trade it for SSH's.
LOCAL_MODE = "local connection, no pipelining (the other benchmarks')"
MODES = SSH_MODES + [(LOCAL_MODE, {"ANSIBLE_PIPELINING": "False"})]
MODULES = [("ansible.builtin.ping", "ansible.builtin.ping:"),
           ("scheduled_events_info (simulated IMDS)",
            "azure_imds.scheduled_events.scheduled_events_info:\n        imds_url: \"{{{{ maintenance_cycle_imds_url }}}}\"")]


@dataclass(frozen=True)
class Sample:
    """One play: the controller's wall and CPU, and the CPU of the sshd that served it."""
    controller: Measured
    vm_cpu_s: float


@dataclass(frozen=True)
class Row:
    mode: str
    module: str
    controller_s: float        # CPU-s per host per call, the connection up
    vm_s: float                # the same on the VM
    wall_s: float              # per task, all hosts
    first_controller_s: float  # CPU-s per host of its first call, connection set-up included
    first_vm_s: float


Key = Tuple[str, str, int]  # (mode, module, calls per play)


# --- pure: /proc, the sshd config, the arithmetic, the report ---------------------------------------------------

def stat_parent(stat: str) -> Tuple[int, int]:
    """(pid, parent pid) from the text of /proc/<pid>/stat, whose command name may hold spaces and parentheses."""
    pid, rest = stat.split(" ", 1)
    return int(pid), int(rest[rest.rindex(")") + 2:].split()[1])


def children_of(parent: int, stats: Iterable[str]) -> List[int]:
    return sorted(pid for pid, ppid in map(stat_parent, stats) if ppid == parent)


def sshd_config(temp: Path, max_startups: int) -> str:
    """An sshd config that lets root in with the temp key only, nothing from /etc."""
    return "\n".join([
        "ListenAddress 127.0.0.1",
        f"HostKey {temp / 'host_ed25519'}",
        f"AuthorizedKeysFile {temp / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # The temp dir's modes are not a home's: the key's owner is what matters here.
        "StrictModes no",
        "PidFile none",
        # The login shell (root's bash, run by sshd for every command) reads ~/.bashrc; this machine's runs pyenv's
        # set-up, which a VM's does not (Debian's and Ubuntu's skeleton returns at once when not interactive), so
        # the VM's home is an empty temp dir. Ansible's remote_tmp (~/.ansible/tmp) is there too.
        f"SetEnv HOME={temp / 'home'}",
        # Every fork opens its connection at once; sshd's default (10:30:100) drops some beyond 10 unauthenticated.
        f"MaxStartups {max_startups}",
        # Debian's default subsystem: without pipelining, Ansible puts each module's file through sftp.
        "Subsystem sftp /usr/lib/openssh/sftp-server",
        "LogLevel ERROR",
    ]) + "\n"


def row_of(mode: str, module: str, rounds: Sequence[Tuple[Sample, Dict[Key, Sample]]], hosts: int,
           tasks: int) -> Row:
    """One (mode, module)'s costs per host, each the median over rounds of its plays less their base play."""
    figures = []
    for empty, samples in rounds:
        one, many = samples[mode, module, 1], samples[mode, module, tasks]
        figures.append((per_host_task(many.controller, one.controller, hosts, tasks - 1),
                        max(many.vm_cpu_s - one.vm_cpu_s, 0.0) / (hosts * (tasks - 1)),
                        (many.controller.wall_s - one.controller.wall_s) / (tasks - 1),
                        per_host_task(one.controller, empty.controller, hosts, 1),
                        max(one.vm_cpu_s - empty.vm_cpu_s, 0.0) / hosts))
    return Row(mode, module, *(statistics.median(f[i] for f in figures) for i in range(5)))


def rows_of(rounds: Sequence[Tuple[Sample, Dict[Key, Sample]]], hosts: int, tasks: int) -> List[Row]:
    return [row_of(mode, module, rounds, hosts, tasks) for module, _ in MODULES for mode, _ in MODES]


def report(rows: List[Row], empties: Sequence[Sample], hosts: int, forks: int, tasks: int, command: str) -> str:
    empty = empties[0].controller
    lines = [f"Command: `{command}`", "",
             f"{hosts} inventory hosts over SSH to this machine (sshd on loopback), forks {forks}, plays of 1 and "
             f"{tasks} calls of each module, {len(empties)} round(s), medians; an empty play took "
             f"{empty.cpu_s:.1f} controller CPU-s ({empty.wall_s:.1f} s wall).", "",
             "| mode | module | controller CPU-s per host per call | VM-side CPU-s per host per call | wall per task "
             "| first call on a host, connection set-up included: controller / VM CPU-s |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r.mode} | {r.module} | {r.controller_s:.3f} | {r.vm_s:.3f} | {r.wall_s:.1f} s | "
              f"{r.first_controller_s:.3f} / {r.first_vm_s:.3f} |" for r in rows]
    lines.append("")
    for module in dict.fromkeys(r.module for r in rows):
        default, piped = (next(r for r in rows if r.module == module and r.mode == m) for m, _ in SSH_MODES)
        saved = default.controller_s - piped.controller_s
        lines.append(f"- {module}: pipelining saves the controller {saved:.3f} CPU-s per host per call "
                     f"({saved / max(default.controller_s, 1e-9):.0%}), the VM {default.vm_s - piped.vm_s:.3f}.")
        local = next((r for r in rows if r.module == module and r.mode == LOCAL_MODE), None)
        if local:
            lines.append(f"- {module}: the local connection's controller pays {local.controller_s:.3f} CPU-s per "
                         f"host per call, the module's process left out; over SSH with pipelining "
                         f"{piped.controller_s:.3f}.")
    return "\n".join(lines) + "\n"


# --- I/O: sshd, its keys, the ControlPersist masters ------------------------------------------------------------

def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit(f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}; the ssh "
                         "masters' CPU could not be counted (this benchmark needs Linux)")


def ensure_sshd() -> None:
    if SSHD.exists():
        return
    print("bench_ssh: /usr/sbin/sshd is missing: apt-get install -y openssh-server", flush=True)
    done = subprocess.run(["apt-get", "install", "-y", "openssh-server"], capture_output=True, text=True)
    if done.returncode != 0 or not SSHD.exists():
        raise SystemExit("apt-get install -y openssh-server failed (run it as root on Debian/Ubuntu, or install "
                         f"OpenSSH's server yourself):\n{done.stderr[-1500:]}")


def make_keys(temp: Path) -> Path:
    """The throwaway host key and client key; the client key is the only one authorized. Returns the client key."""
    for name in ("host_ed25519", "client_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"bench-ssh {name}", "-f",
                        str(temp / name)], check=True, capture_output=True)
    shutil.copy(temp / "client_ed25519.pub", temp / "authorized_keys")
    return temp / "client_ed25519"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def proc_stats() -> List[str]:
    stats = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stats.append(Path("/proc", entry, "stat").read_text())
            except OSError:  # ended while listed
                pass
    return stats


class Sshd:
    """One sshd -D serving one play; stop() returns its tree's CPU-s (os.wait4)."""

    def __init__(self, config: Path, port: int):
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
        self.log = config.with_name("sshd.log")  # a file, not a pipe nobody reads while the play runs
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config), "-p", str(port)],
                                         stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise SystemExit(f"sshd did not start: {self.log.read_text()[-1000:]}")
            time.sleep(0.05)

    def stop(self, grace: float = 30.0) -> float:
        """Once its connections have ended (or after `grace`), SIGTERM sshd and reap it."""
        deadline = time.monotonic() + grace
        while children_of(self.proc.pid, proc_stats()) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.proc.send_signal(signal.SIGTERM)
        _pid, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = status  # reaped here, not by Popen
        return usage.ru_utime + usage.ru_stime


def end_orphans(keep: Iterable[int], grace: float = 15.0) -> None:
    """SIGTERM this process's children other than `keep` (the ssh masters that ansible-playbook left behind,
    reparented here) and reap each, so that their CPU is in RUSAGE_CHILDREN."""
    orphans = [pid for pid in children_of(os.getpid(), proc_stats()) if pid not in set(keep)]
    for pid in orphans:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for pid in orphans:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.02)


def local_inventory(inventory: Dict[str, Any], python: str) -> Dict[str, Any]:
    """The same hosts with their own variables, each reached over the local connection with `python`."""
    group = inventory["azure_vms"]
    return {"azure_vms": dict(group, hosts={
        vm: dict({k: v for k, v in hostvars.items() if not k.startswith("ansible_")},
                 ansible_connection="local", ansible_python_interpreter=python)
        for vm, hostvars in group["hosts"].items()})}


def ssh_host(temp: Path, port: int, key: Path, python: str):
    def connection(vm: str) -> Dict[str, str]:
        return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": str(port),
                "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_common_args": f"-o ControlPath={temp / 'cp'}/{vm} -o StrictHostKeyChecking=no "
                                           f"-o UserKnownHostsFile={temp / 'known_hosts'} -o IdentitiesOnly=yes",
                "ansible_python_interpreter": python}
    return connection


# --- the run ----------------------------------------------------------------------------------------------------

def one_play(work: Path, inventory: Path, config: Path, port: int, name: str, text: str, forks: int,
             env: Dict[str, str]) -> Sample:
    sshd = Sshd(config, port)
    try:
        measured = run_play(work, name, text, forks, {"ANSIBLE_SSH_ARGS": ANSIBLE_DEFAULT_SSH_ARGS, **env},
                            inventory=inventory, settle=lambda: end_orphans(keep=[sshd.proc.pid]))
    finally:
        end_orphans(keep=[sshd.proc.pid])
        vm_cpu = sshd.stop()
    return Sample(measured, vm_cpu)


def local_play(work: Path, vm_cpu: VmCpuLog, name: str, text: str, forks: int, env: Dict[str, str]) -> Sample:
    """A play on the local inventory: the controller is its tree less the module processes vm_cpu logs."""
    mark = vm_cpu.mark()
    measured = run_play(work, name, text, forks, {**vm_cpu.env, **env}, inventory=work / "local-inventory.json")
    calls = vm_cpu.since(mark)
    return Sample(Measured(measured.name, measured.wall_s, measured.cpu_s - calls.cpu_s), calls.cpu_s)


def one_round(work: Path, inventory: Path, config: Path, port: int, forks: int,
              tasks: int, vm_cpu: VmCpuLog) -> Tuple[Sample, Dict[Key, Sample]]:
    empty = one_play(work, inventory, config, port, "empty play", playbook(None, 0, work, "azure_vms"), forks, {})
    samples = {}
    for module, task in MODULES:
        for mode, env in MODES:
            for calls in (1, tasks):
                name, text = f"{module} {mode} {calls}", playbook(Play(module, task, env), calls, work, "azure_vms")
                samples[mode, module, calls] = local_play(work, vm_cpu, name, text, forks, env) \
                    if mode == LOCAL_MODE else one_play(work, inventory, config, port, name, text, forks, env)
    return empty, samples


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--vm-python", default="/usr/bin/python3", help="the interpreter the VMs run modules with")
    parser.add_argument("--report", default="", help="append the figures to this markdown file (default: none)")
    args = parser.parse_args(argv)
    if args.tasks < 2:
        parser.error("--tasks must be 2 or more: a call with the connection up is told from the first call by them")
    become_subreaper()
    ensure_sshd()
    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as scratch:
        work = Path(scratch)
        environment(work / "env")
        (work / "cp").mkdir()
        (work / "state").mkdir()
        (work / "home").mkdir()
        port, key = free_port(), make_keys(work)
        config = work / "sshd_config"
        config.write_text(sshd_config(work, max_startups=2 * args.forks + 10))
        fleet = serve_quiet_fleet(args.hosts, work, ssh_host(work, port, key, args.vm_python))
        vm_cpu = VmCpuLog(work / "vm-cpu")
        (work / "local-inventory.json").write_text(json.dumps(local_inventory(
            json.loads(fleet.inventory.read_text()), str(vm_cpu.interpreter))))
        try:
            measured = [one_round(work, fleet.inventory, config, port, args.forks, args.tasks, vm_cpu)
                        for _ in range(args.rounds)]
        finally:
            fleet.close()
    given = argv if argv is not None else sys.argv[1:]
    text = report(rows_of(measured, args.hosts, args.tasks), [e for e, _ in measured], args.hosts, args.forks,
                  args.tasks, " ".join(["python tools/bench_ssh.py"] + list(given)))
    print(text)
    if args.report:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        with open(args.report, "a") as out:
            out.write(f"\n## Over SSH, with and without pipelining (`make bench-ssh`)\n\n"
                      f"{datetime.now(timezone.utc):%Y-%m-%d}, at {commit or 'an unknown commit'}:\n\n{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
