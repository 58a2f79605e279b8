"""The event_relay role: real ansible-playbook runs with a local connection into a temporary root, and the tree it
lays down (the relay_code action's one archive) run as the service would run it, on an interpreter without Ansible,
against the simulator.

Three playbook runs: install (with a Windows host and a host without a token, which both stop before any change);
install again in one play and remove in check mode in the next (no change, nothing touched); remove. No systemd runs
here as PID 1: the runs set event_relay_manage_service to false, and `systemd-analyze verify` checks the unit file.
"""
from __future__ import annotations

import ast
import getpass
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import zipfile
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import yaml

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import relay_key
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program import RelayConfig
from imds_simulator.fleet import FleetSpec
from tests.conftest import COLLECTIONS_PATH
from tests.integration.runner import RECAP, WINDOWS_DOUBLE
from tests.live_fleet import LiveFleet
from tests.relay.test_relay_process import PLAIN_PYTHON, TOKEN, Receiver
from tests.timing import wait_for
from tests.unit.plugins.plugin_utils.test_relay_code import relay_imports

REPO = Path(__file__).resolve().parents[2]
ROLE = REPO / "roles" / "event_relay"
MODULE_UTILS = REPO / "plugins" / "module_utils"
PACKAGE = "ansible_collections.azure_imds.scheduled_events.plugins.module_utils"
BIN = Path(sys.executable).parent
FQCN = "azure_imds.scheduled_events.event_relay"
# What a VM has before the role runs (the unit directory above all); absent leaves exactly this.
VM_DIRS = ("etc/systemd/system", "opt", "var/lib")
# sudo to root, as far as where a module expands ~ goes (no root here): HOME becomes the become user's
BECOME_DOUBLE = REPO / "tests" / "doubles" / "become_plugins"


def test_the_configuration_is_the_relays_settings_with_its_defaults_and_every_variable_is_documented() -> None:
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert set(role_vars["event_relay_config"]) == {f.name for f in fields(RelayConfig)}
    for field in fields(RelayConfig):
        variable = f"event_relay_{field.name}"
        if field.default is not MISSING and isinstance(defaults.get(variable), (int, float)):
            assert defaults[variable] == field.default, variable
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert set(spec) == set(defaults) | {"event_relay_token"}
    assert spec["event_relay_token"]["no_log"] is True
    for name, option in spec.items():
        assert option["description"], name
        if name in defaults and not str(defaults[name]).startswith("{{ maintenance_cycle_"):
            assert option.get("default") == defaults[name], name
    doc = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", FQCN], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH))
    assert doc.returncode == 0 and "event_relay_manage_service" in doc.stdout, doc.stderr


def unit_file(text: str) -> Dict[str, List[Tuple[str, str]]]:
    """A systemd unit as its sections' (key, value) lines, in order (a key may repeat)."""
    sections: Dict[str, List[Tuple[str, str]]] = {}
    current: Optional[List[Tuple[str, str]]] = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
        else:
            assert current is not None, f"a setting outside any section: {line}"
            key, _, value = line.partition("=")
            current.append((key.strip(), value.strip()))
    return sections


def tree(root: Path) -> Dict[str, Tuple[int, int, int]]:
    """Every path under root with its mode, size and modification time."""
    found = {}
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


class RoleBench:
    """An inventory of three hosts on this machine: a Linux VM of the simulator, a Windows VM, a VM without a token."""

    def __init__(self, tmp: Path, fleet: LiveFleet, controller_url: str):
        self.tmp = tmp
        self.vm = fleet.vms[0]
        self.imds_url = fleet.url(self.vm)
        self.root = tmp / "vm"
        self.home = tmp / "home"  # the connecting user's home, where the cycle keeps its state
        for root in (self.root, self.root / "notoken"):
            for sub in VM_DIRS:
                (root / sub).mkdir(parents=True)
        self.home.mkdir()
        (tmp / "windows").mkdir()
        self.pristine = tree(self.root)  # the VM's own directories, before the role
        self.inventory = tmp / "inventory.json"
        self.inventory.write_text(json.dumps({"vms": {
            "hosts": {
                self.vm: dict(self.paths(self.root), event_relay_token=TOKEN.decode(),
                              maintenance_cycle_imds_url=self.imds_url),
                "vm-notoken": self.paths(self.root / "notoken"),
                # what a user of SSH to Windows sets: the double stands in for the Windows host
                "vm-windows": {"ansible_connection": "windows_double", "ansible_shell_type": "powershell",
                               "ansible_windows_double_root": str(tmp / "windows")}},
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "event_relay_controller_url": controller_url, "event_relay_manage_service": False,
                     "event_relay_python": PLAIN_PYTHON, "event_relay_user": getpass.getuser(),
                     "event_relay_poll_interval": 0.2, "event_relay_heartbeat_seconds": 1.0}}}))

    @staticmethod
    def paths(root: Path) -> Dict[str, str]:
        return {"event_relay_prefix": str(root / "opt" / "azure-imds-relay"),
                "event_relay_config_dir": str(root / "etc" / "azure-imds-relay"),
                "event_relay_state_dir": str(root / "var" / "lib" / "azure-imds-relay"),
                "event_relay_unit_dir": str(root / "etc" / "systemd" / "system")}

    def run(self, name: str, plays: List[Dict[str, Any]]) -> Tuple[subprocess.CompletedProcess, Dict[str, Dict]]:
        playbook = self.tmp / f"{name}.yml"
        playbook.write_text(yaml.safe_dump([dict(play, gather_facts=False, roles=[{"role": FQCN}]) for play in plays],
                                           sort_keys=False))
        env = dict(os.environ, HOME=str(self.home), ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
                   ANSIBLE_CONNECTION_PLUGINS=str(WINDOWS_DOUBLE), ANSIBLE_BECOME_PLUGINS=str(BECOME_DOUBLE),
                   ANSIBLE_LOCAL_TEMP=str(self.tmp / "ansible-tmp"))
        run = subprocess.run([str(BIN / "ansible-playbook"), str(playbook), "-i", str(self.inventory), "--diff"],
                             capture_output=True, text=True, env=env, cwd=self.tmp, timeout=300)
        assert TOKEN.decode() not in run.stdout + run.stderr, "the token is never shown"
        recap = {m[0]: {"changed": int(m[2]), "failed": int(m[4])} for m in RECAP.findall(run.stdout)}
        return run, recap


def test_install_again_check_remove_and_the_installed_relay_runs(tmp_path: Path) -> None:
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1))
    receiver = Receiver()
    try:
        bench = RoleBench(tmp_path, fleet, f"http://127.0.0.1:{receiver.port}/push")
        _install(bench)
        _run_the_installed_relay(bench, receiver)
        _install_again_and_remove_in_check_mode(bench)
        _remove(bench)
    finally:
        receiver.close()
        fleet.close()


def _install(bench: RoleBench) -> None:
    notoken = tree(bench.root / "notoken")
    old_tree = Path(RoleBench.paths(bench.root)["event_relay_prefix"]) / "lib" / "ansible_collections"
    (old_tree / "azure_imds").mkdir(parents=True)  # what an earlier version installed: one file per module
    (old_tree / "azure_imds" / "__init__.py").write_text("")
    run, recap = bench.run("install", [{"name": "Install", "hosts": "vms"}])
    assert run.returncode == 2 and recap[bench.vm]["failed"] == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert recap["vm-windows"]["failed"] == 1 and recap["vm-notoken"]["failed"] == 1
    assert "The event relay runs on Linux VMs only, and vm-windows is a Windows host" in run.stdout
    assert "Installing the relay needs event_relay_controller_url" in run.stdout
    assert not list((bench.tmp / "windows").iterdir()), "nothing reaches a Windows host"
    assert tree(bench.root / "notoken") == notoken, "a host without a token gets nothing"
    assert "RUNNING HANDLER [azure_imds.scheduled_events.event_relay : Restart the event relay]" in run.stdout

    paths = RoleBench.paths(bench.root)
    lib = Path(paths["event_relay_prefix"]) / "lib"
    config_dir, state_dir = Path(paths["event_relay_config_dir"]), Path(paths["event_relay_state_dir"])
    assert sorted(p.name for p in lib.iterdir()) == ["relay.zip"], "one archive; an earlier version's tree removed"
    assert _mode(lib / "relay.zip") == 0o644 and _mode(lib) == 0o755
    root = PACKAGE.replace(".", "/")
    with zipfile.ZipFile(lib / "relay.zip") as bundle:
        code = {name: bundle.read(name) for name in bundle.namelist()}
    levels = {str(Path(root, name).parent) for name in relay_imports()}
    levels |= {str(parent) for level in levels for parent in Path(level).parents if str(parent) != "."}
    assert set(code) == {f"{root}/{name}" for name in relay_imports()} | {f"{level}/__init__.py" for level in levels}
    for name in relay_imports():
        assert code[f"{root}/{name}"] == (MODULE_UTILS / name).read_bytes(), f"{name} is the collection's own"
    assert all(code[f"{level}/__init__.py"] == b"" for level in levels), "each level a regular package"
    assert _mode(state_dir) == 0o700 and _mode(config_dir / "relay.json") == 0o600
    assert _mode(config_dir / "token") == 0o600
    assert (config_dir / "token").read_bytes() == relay_key(TOKEN, bench.vm) + b"\n", "the VM's own key"
    assert not [p for p in bench.root.rglob("*") if p.is_file() and TOKEN in p.read_bytes()], \
        "the controller's secret reaches no file of the VM: it cannot sign for another VM"

    config = RelayConfig.from_file(str(config_dir / "relay.json"))  # the relay's own reading of it
    assert config.host == bench.vm and config.imds_url == bench.imds_url, "maintenance_cycle_imds_url when set"
    assert config.token_file == str(config_dir / "token") and config.state_dir == str(state_dir)
    assert config.history_path == str(state_dir / "history.jsonl") and config.poll_interval == 0.2
    assert config.cycle_state_path == str(bench.home / ".ansible" / "azure_imds_scheduled_events" / "state.json"), \
        "the cycle's default path, in the connecting user's home"
    assert isinstance(config.spool_max_entries, int) and isinstance(config.heartbeat_seconds, float)

    unit_path = Path(paths["event_relay_unit_dir"]) / "azure-imds-relay.service"
    assert _mode(unit_path) == 0o644
    unit = unit_file(unit_path.read_text())
    service = dict(unit["Service"])
    environment = [value for key, value in unit["Service"] if key == "Environment"]
    assert service["ExecStart"] == f"{PLAIN_PYTHON} -m {PACKAGE}.relay.program {config_dir / 'relay.json'}"
    assert f"PYTHONPATH={Path(paths['event_relay_prefix']) / 'lib' / 'relay.zip'}" in environment
    assert service["Restart"] == "always" and service["User"] == getpass.getuser()
    assert service["RestartPreventExitStatus"] == "2", "a configuration error is said once, not in a restart loop"
    assert service["ProtectSystem"] == "strict" and service["ProtectHome"] == "read-only", "the cycle state is readable"
    assert str(state_dir) in service["ReadWritePaths"].split(), "the state and history directory is writable"
    assert service["CapabilityBoundingSet"] == "CAP_DAC_READ_SEARCH" and service["NoNewPrivileges"] == "yes"
    assert dict(unit["Install"]) == {"WantedBy": "multi-user.target"}
    assert shutil.which("systemd-analyze"), "the unit is checked with systemd-analyze: apt-get install systemd"
    verify = subprocess.run(["systemd-analyze", "verify", str(unit_path)], capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr


def _run_the_installed_relay(bench: RoleBench, receiver: Receiver) -> None:
    """The unit's command line and environment, alone: the installed tree runs on a Python without Ansible."""
    unit_path = bench.root / "etc" / "systemd" / "system" / "azure-imds-relay.service"
    service = unit_file(unit_path.read_text())["Service"]
    env = dict(value.split("=", 1) for key, value in service if key == "Environment")
    command = shlex.split(dict(service)["ExecStart"])
    relay = subprocess.Popen(command, env=dict(env, PATH=os.environ["PATH"]), cwd="/", stderr=subprocess.PIPE,
                             text=True)
    try:
        push = wait_for(lambda: [p for p in receiver.changes() if p["host"] == bench.vm], 30, "a signed push")[0]
    finally:
        relay.send_signal(signal.SIGTERM)
        _, stderr = relay.communicate(timeout=10)
    assert relay.returncode == 0, stderr
    assert push["vm"] == bench.vm and not receiver.refused, "signed with the installed token"
    assert (bench.root / "var" / "lib" / "azure-imds-relay" / "history.jsonl").read_text().strip()
    lib = bench.root / "opt" / "azure-imds-relay" / "lib"
    assert sorted(p.name for p in lib.iterdir()) == ["relay.zip"], "the relay ran from the archive, writing nothing"


def _install_again_and_remove_in_check_mode(bench: RoleBench) -> None:
    before = tree(bench.root)
    run, recap = bench.run("again", [{"name": "Install again", "hosts": bench.vm},
                                     {"name": "Remove in check mode", "hosts": bench.vm, "check_mode": True,
                                      "vars": {"event_relay_state": "absent"}}])
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    again, check = run.stdout.split("PLAY [Remove in check mode]")
    assert "changed:" not in again and "RUNNING HANDLER" not in again, "a second run changes nothing, restarts nothing"
    assert check.count(f"changed: [{bench.vm}]") >= 2 and '+    "state": "absent"' in check, "absent would remove"
    assert tree(bench.root) == before, "check mode changes nothing"


def _remove(bench: RoleBench) -> None:
    run, recap = bench.run("remove", [{"name": "Remove", "hosts": bench.vm, "vars": {"event_relay_state": "absent"}}])
    assert run.returncode == 0 and recap[bench.vm]["changed"] == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert _modes(tree(bench.root)) == _modes(bench.pristine), \
        "absent removes everything it installed, and the spool and history; the VM's own directories stay"


def _modes(found: Dict[str, Tuple[int, int, int]]) -> Dict[str, int]:
    return {path: mode for path, (mode, _, _) in found.items()}


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_relay_watches_the_state_file_the_cycle_writes_when_the_cycle_runs_with_become(tmp_path: Path) -> None:
    """The cycle runs with become (an AWX template's privilege escalation): its modules expand ~ in the state
    path as root. The role resolves the path with a module of the collection under the same become settings,
    and the result is exactly where the cycle's own module (scheduled_events_info, as the claim) says."""
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1))
    try:
        bench = RoleBench(tmp_path, fleet, "http://127.0.0.1:9/push")
        root_home = tmp_path / "root-home"
        root_home.mkdir()
        become = {"event_relay_cycle_become": True, "event_relay_cycle_become_method": "home_double",
                  "ansible_become_home_double_home": str(root_home)}
        run, recap = bench.run("install", [{"name": "Install", "hosts": bench.vm, "vars": become}])
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        cycle = tmp_path / "cycle.yml"   # where the cycle's module, run with become, puts the state file
        cycle.write_text(yaml.safe_dump([{"hosts": bench.vm, "gather_facts": False, "become": True,
                                          "become_method": "home_double", "vars": become, "tasks": [
            {"azure_imds.scheduled_events.scheduled_events_info": {
                "state_path": "~/.ansible/azure_imds_scheduled_events/state.json", "include_instance": False,
                "imds_url": bench.imds_url}, "register": "read"},
            {"ansible.builtin.debug": {"msg": "CYCLE-STATE-PATH={{ read.state_path }}"}}]}]))
        env = dict(os.environ, HOME=str(bench.home), ANSIBLE_BECOME_PLUGINS=str(BECOME_DOUBLE), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
        read = subprocess.run([str(BIN / "ansible-playbook"), str(cycle), "-i", str(bench.inventory)], env=env,
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
    finally:
        fleet.close()
    (cycle_path,) = [line.split("CYCLE-STATE-PATH=")[1].split('"')[0] for line in read.stdout.splitlines()
                     if "CYCLE-STATE-PATH=" in line]
    config = RelayConfig.from_file(str(Path(RoleBench.paths(bench.root)["event_relay_config_dir"]) / "relay.json"))
    assert cycle_path == str(root_home / ".ansible" / "azure_imds_scheduled_events" / "state.json")
    assert config.cycle_state_path == cycle_path, "the relay watches the very file the cycle writes"


def test_regression_the_relay_watches_the_cycles_state_whichever_way_privilege_escalation_is_turned_on(
        tmp_path: Path) -> None:
    """The role followed become only when the inventory set ansible_become (event_relay_cycle_become's default): run
    with --become or an AWX template's privilege escalation, the relay watched the login user's state file while the
    cycle wrote root's. Now it watches the path as the play runs and as the login user, whatever says become."""
    fleet = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=1))
    try:
        bench = RoleBench(tmp_path, fleet, "http://127.0.0.1:9/push")
        root_home = tmp_path / "root-home"
        root_home.mkdir()
        # become as a play keyword (what --become and AWX's escalation set), not as an inventory variable
        play = {"name": "Install", "hosts": bench.vm, "become": True, "become_method": "home_double",
                "vars": {"ansible_become_home_double_home": str(root_home)}}
        run, recap = bench.run("install", [play])
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    finally:
        fleet.close()
    config = RelayConfig.from_file(str(Path(RoleBench.paths(bench.root)["event_relay_config_dir"]) / "relay.json"))
    state = Path(".ansible") / "azure_imds_scheduled_events" / "state.json"
    watched = {config.cycle_state_path, *config.cycle_state_paths}
    assert str(root_home / state) in watched, "the state file of a cycle run with privilege escalation"
    assert str(bench.home / state) in watched, "and of one run without"
