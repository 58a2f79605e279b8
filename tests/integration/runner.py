"""Run the collection's playbooks (by FQCN, as users do) on simulated VMs and read what happened."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tests.live_fleet import LiveFleet

FILES = Path(__file__).resolve().parent / "files"
WINDOWS_DOUBLE = Path(__file__).resolve().parent.parent / "windows" / "connection_plugins"
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass
class PlaybookRun:
    returncode: int
    stdout: str
    stderr: str
    recap: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def changed(self) -> int:
        return sum(r["changed"] for r in self.recap.values())

    def failed_hosts(self) -> List[str]:
        return sorted(h for h, r in self.recap.items() if r["failed"])


class CycleBench:
    """A fleet, its inventory, per-host state files and a log of prepare/recover calls."""

    def __init__(self, fleet: LiveFleet, work: Path, hosts: Optional[List[str]] = None,
                 windows: Sequence[str] = (), control_plane: Sequence[str] = (), interpreter: Optional[str] = None):
        """`windows` hosts connect through the Windows test double and keep the role's default state path.
        `control_plane` hosts are read and approved through the simulator's control plane; their IMDS URL is a
        closed port, so that any request to the VM fails the run. `interpreter`: the hosts' Python (this one's by
        default; the benchmarks' tools/vm_python.py counts the modules' CPU apart)."""
        self.fleet = fleet
        self.work = work
        self.hosts = hosts or fleet.vms
        self.windows = set(windows)
        self.control_plane = set(control_plane)
        self.controller_lock = work / "controller.lock"  # the playbooks' control-node lock, per bench
        self.actions_dir = work / "actions"
        self.actions_dir.mkdir(parents=True, exist_ok=True)
        self.inventory = work / "inventory.json"
        self.inventory.write_text(json.dumps({"azure_vms": {
            "hosts": {h: self._host_vars(h) for h in self.hosts},
            "vars": {"ansible_python_interpreter": interpreter or sys.executable, "actions_dir": str(self.actions_dir)}}}))

    def _host_vars(self, host: str) -> Dict[str, Any]:
        url = {"maintenance_cycle_imds_url": self.fleet.url(host),
               "maintenance_cycle_availability_set": self.fleet.availability_set(host)}
        if host in self.windows:  # nothing Windows-specific beyond the connection's own variables
            return dict(url, ansible_connection="windows_double", ansible_windows_double_root=str(self.disk(host)))
        if host in self.control_plane:
            vm = next(v for v in self.fleet.engine.fleet.vms if v.name == host)
            url.update(maintenance_cycle_imds_url="http://127.0.0.1:9", maintenance_cycle_transport="control_plane",
                       maintenance_cycle_vm_id=vm.resource_id, maintenance_cycle_fault_domain=vm.fault_domain,
                       maintenance_cycle_control_plane_state_dir=str(self.work / "control-plane"))
        return dict(url, ansible_connection="local", maintenance_cycle_state_path=str(self.work / "state" / f"{host}.json"))

    def disk(self, host: str) -> Path:
        return self.work / "windows" / host

    def state_path(self, host: str) -> Path:
        if host in self.windows:  # the role's default, ~/.ansible/..., on the double's disk
            return self.disk(host) / "C" / "Users" / "ansible" / ".ansible" / "azure_imds_scheduled_events" / "state.json"
        if host in self.control_plane:  # kept on the controller, <state dir>/<host>/<file name>
            return self.work / "control-plane" / host / f"{host}.json"
        return self.work / "state" / f"{host}.json"

    def state(self, host: str) -> Optional[Dict[str, Any]]:
        path = self.state_path(host)
        return json.loads(path.read_text()) if path.exists() else None

    def windows_calls(self) -> List[Dict[str, Any]]:
        """The module calls the Windows double answered, from its log."""
        calls: List[Dict[str, Any]] = []
        for path in sorted((self.work / "windows").glob("*.jsonl")):
            calls += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return calls

    def actions(self, phase: Optional[str] = None) -> List[Dict[str, Any]]:
        found = []
        for path in sorted(self.actions_dir.glob("*.jsonl")):
            found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return sorted((a for a in found if phase in (None, a["phase"])), key=lambda a: a["at"])

    def run(self, playbook: str = "cycle", check: bool = False, prepare: bool = True, recover: bool = True,
            extra: Optional[Dict[str, Any]] = None, forks: int = 10, env: Optional[Dict[str, str]] = None,
            timeout: float = 300) -> PlaybookRun:
        command, environment = self.command(playbook, check, prepare, recover, extra, forks, env)
        proc = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout,
                              cwd=self.work)
        recap = {m[0]: {"ok": int(m[1]), "changed": int(m[2]), "unreachable": int(m[3]), "failed": int(m[4])}
                 for m in RECAP.findall(proc.stdout)}
        return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, recap)

    def start(self, playbook: str = "cycle", extra: Optional[Dict[str, Any]] = None,
              env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
        """The playbook in its own process group (so that a test can kill all of it), output discarded."""
        command, environment = self.command(playbook, False, True, True, extra, 10, env)
        return subprocess.Popen(command, env=environment, cwd=self.work, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def command(self, playbook: str, check: bool, prepare: bool, recover: bool, extra: Optional[Dict[str, Any]],
                forks: int, env: Optional[Dict[str, str]]) -> Tuple[List[str], Dict[str, str]]:
        extra_vars: Dict[str, Any] = {"prepare_tasks": str(FILES / "prepare_log.yml") if prepare else "",
                                      "recover_tasks": str(FILES / "recover_log.yml") if recover else "",
                                      "controller_lock": str(self.controller_lock),
                                      # fleets of other tests reuse these VM names: remember per bench
                                      "maintenance_cycle_vm_memory": str(self.work / "vms.json"),
                                      # the simulated clock runs faster: so does "NotBefore is near"
                                      "maintenance_cycle_prepare_anyway_seconds": 480 / self.fleet.engine.time_scale}
        extra_vars.update(extra or {})
        # A name is one of the collection's playbooks; a path ending in .yml is a playbook of the test's own.
        name = playbook if playbook.endswith(".yml") else f"azure_imds.scheduled_events.{playbook}"
        command = [str(Path(sys.executable).parent / "ansible-playbook"), name,
                   "-i", str(self.inventory), "-f", str(forks), "-e", json.dumps(extra_vars)]
        if check:
            command.append("--check")
        environment = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
                           ANSIBLE_LOCAL_TEMP=str(self.work / "ansible-tmp"), **(env or {}))
        if self.windows:
            environment["ANSIBLE_CONNECTION_PLUGINS"] = str(WINDOWS_DOUBLE)
        return command, environment
