"""Run real ansible-playbook against an in-process simulator and read each task's result per host."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tests.live_fleet import LiveFleet

FQCN = "azure_imds.scheduled_events"


@dataclass
class Run:
    returncode: int
    results: Dict[str, Dict[str, Any]]  # host -> task name -> registered result
    stdout: str
    stderr: str

    def of(self, host: str, task: str) -> Dict[str, Any]:
        return self.results[host][task]


WINDOWS_DOUBLE = Path(__file__).resolve().parent.parent / "windows" / "connection_plugins"


@dataclass
class Case:
    """One case of a shared run: its hosts (inventory name -> IMDS URL), its tasks, and vars for its hosts."""
    hosts: Dict[str, str]
    tasks: Sequence[Tuple[str, Dict[str, Any]]]
    host_vars: Optional[Dict[str, Any]] = None


def play(tmp: Path, fleet: Optional[LiveFleet], tasks: Sequence[Tuple[str, Dict[str, Any]]],
         hosts: Optional[List[str]] = None, check: bool = False, diff: bool = False,
         extra_vars: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None,
         windows: Optional[Dict[str, str]] = None, urls: Optional[Dict[str, str]] = None,
         results: bool = True) -> Run:
    """Run `tasks` (name, task) on simulated VMs; every task is registered and may fail. With results=False no
    task writes them (a test that reads only what the run left elsewhere saves a module call).

    `windows` adds hosts (inventory name -> simulated VM) that connect through the Windows test double,
    with their disks under tmp/windows/<name>. `urls` (inventory name -> IMDS URL) replaces the fleet's hosts: VMs
    of several fleets in one run."""
    if urls is None:
        assert fleet is not None
        urls = {h: fleet.url(h) for h in (fleet.vms if hosts is None else hosts)}
    windows = windows or {}
    inventory_hosts: Dict[str, Dict[str, Any]] = {h: {"imds_url": url, "ansible_connection": "local"}
                                                  for h, url in urls.items()}
    for name, vm in windows.items():
        assert fleet is not None
        inventory_hosts[name] = {"imds_url": fleet.url(vm), "ansible_connection": "windows_double",
                                 "ansible_windows_double_root": str(tmp / "windows" / name)}
    environment = dict(env or {})
    if windows:
        environment["ANSIBLE_CONNECTION_PLUGINS"] = str(WINDOWS_DOUBLE)
    return _run(tmp, inventory_hosts, {"all": tasks}, check=check, diff=diff, extra_vars=extra_vars,
                env=environment, results=results)


def play_cases(tmp: Path, cases: Dict[str, Case], env: Optional[Dict[str, str]] = None, check: bool = False) -> Run:
    """Several cases in one ansible-playbook run (Ansible starts once): a play per case, in the order given, over
    that case's hosts only (no task of another case is skipped on them). A case's name is its inventory group."""
    inventory_hosts: Dict[str, Dict[str, Any]] = {}
    groups: Dict[str, Dict[str, Any]] = {}
    for name, case in cases.items():
        for host, url in case.hosts.items():
            assert host not in inventory_hosts, f"host {host} is in two cases"
            inventory_hosts[host] = dict(case.host_vars or {}, imds_url=url, ansible_connection="local")
        groups[name] = {"hosts": {host: {} for host in case.hosts}}
    return _run(tmp, inventory_hosts, {name: case.tasks for name, case in cases.items()}, groups=groups, env=env,
                check=check)


def _run(tmp: Path, inventory_hosts: Dict[str, Dict[str, Any]],
         plays: Dict[str, Sequence[Tuple[str, Dict[str, Any]]]], groups: Optional[Dict[str, Any]] = None,
         check: bool = False, diff: bool = False, extra_vars: Optional[Dict[str, Any]] = None,
         env: Optional[Dict[str, str]] = None, results: bool = True) -> Run:
    """One ansible-playbook run: a play per host pattern, then every host's registered results written at once."""
    out = tmp / "results"
    out.mkdir(exist_ok=True)
    inventory: Dict[str, Any] = {"all": {"hosts": inventory_hosts,
                                         "vars": {"ansible_python_interpreter": sys.executable}}}
    if groups:
        inventory["all"]["children"] = groups
    (tmp / "inventory.json").write_text(json.dumps(inventory))
    playbook = [{"hosts": pattern, "gather_facts": False,
                 "tasks": [dict(task, name=name, register=_var(name), ignore_errors=True) for name, task in tasks]}
                for pattern, tasks in plays.items()]
    names = list(dict.fromkeys(name for tasks in plays.values() for name, _ in tasks))
    # One file for every host, written once: a `copy` per host cost each test a module call per host.
    per_host = "{%s}" % ", ".join("%s: hostvars[h].%s | default(None)" % (json.dumps(name), _var(name))
                                   for name in names)
    dump = {"name": "dump results", "ansible.builtin.copy": {
        "content": "{%% set ns = namespace(out={}) %%}{%% for h in ansible_play_hosts_all %%}"
                   "{%% set ns.out = ns.out | combine({h: %s}) %%}{%% endfor %%}{{ ns.out | to_json }}" % per_host,
        "dest": str(out / "results.json")}, "check_mode": False, "diff": False,
        "delegate_to": "localhost", "run_once": True}
    if results and len(plays) == 1:
        playbook[0]["tasks"].append(dump)
    elif results:
        playbook.append({"hosts": "all", "gather_facts": False, "tasks": [dump]})
    (tmp / "playbook.json").write_text(json.dumps(playbook))
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inventory.json"),
               str(tmp / "playbook.json")]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    if extra_vars:
        command += ["-e", json.dumps(extra_vars)]
    environment = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="0",
                       ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
                       **(env or {}))
    proc = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300)
    written = out / "results.json"
    registered = json.loads(written.read_text()) if written.exists() else {}
    return Run(proc.returncode, registered, proc.stdout, proc.stderr)


def _var(name: str) -> str:
    return "r_" + "".join(c if c.isalnum() else "_" for c in name)


def info(**args: Any) -> Dict[str, Any]:
    return {f"{FQCN}.scheduled_events_info": dict({"imds_url": "{{ imds_url }}"}, **args)}


def approve(**args: Any) -> Dict[str, Any]:
    return {f"{FQCN}.scheduled_events_approve": dict({"imds_url": "{{ imds_url }}"}, **args)}


def leader_approves(leader: str) -> Tuple[str, Dict[str, Any]]:
    """The task "approve": the leader approves its events as read by an earlier task named "read"."""
    return ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}",
                                    expected_incarnation="{{ r_read.document_incarnation }}"),
                            when="inventory_hostname == %r" % leader))
