"""The worked prepare/recover examples of playbooks/examples/, run by the real cycle on simulated VMs.

Two real cycle runs over one fleet (each costs ~20 s of CPU): the first prepares and approves, the second,
once the events are gone, recovers. Each host runs one example (tests/integration/files/example_*.yml):

- vm0, lb_drain_probe, in a Reboot: a real HTTP health server of this test answers 503 while vm0's marker
  file exists, and a TCP connection to vm0's service port stays open until the test closes it;
- vm1, lb_backend_pool, in the same Reboot, against the TEST DOUBLE of azure.azcollection (tests/doubles/),
  which validates each call with the installed module's own argument spec and records it;
- vm2, lb_backend_pool, in a 5-second Freeze; the run uses event_type_filter.yml's variables.

Assertions come from the simulator's ground truth, the health server's log, the double's log and files.
The unit checks at the end run in milliseconds.
"""
from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
import yaml

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import FILES, CycleBench
from tests.live_fleet import LiveFleet
from tests.timing import epoch, wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "playbooks" / "examples"
DOUBLES = REPO / "tests" / "doubles"
DOUBLE_UTILS = DOUBLES / "ansible_collections/azure/azcollection/plugins/plugin_utils/azure_double.py"
ARGUMENT_SPECS = REPO / "roles" / "maintenance_cycle" / "meta" / "argument_specs.yml"
SUBSCRIPTION = "/subscriptions/00000000-0000-0000-0000-000000000000"
POOL = SUBSCRIPTION + "/resourceGroups/RG-Web/providers/Microsoft.Network/loadBalancers/lb-web/backendAddressPools/" \
    "pool-web"
ADMIN_POOL = POOL.replace("pool-web", "pool-admin")
INTERVAL, THRESHOLD = 1, 2  # the test's load balancer probe: 1 s apart, down after 2 failures
HOLD_SECONDS = 10  # the open connection outlives the probe window (3 s) by far






def load_double() -> Any:
    """The double's plugin_utils, loaded by path (it is a test file, not part of any installed collection)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("azure_double_under_test", DOUBLE_UTILS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# ----------------------------------------------------------------- what the "VMs" and Azure look like

class HealthServer:
    """An app's health endpoint on loopback: GET /<host> answers 503 while that host's marker exists."""

    def __init__(self, markers: Path):
        self.log: List[Tuple[float, str, int]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                host = self.path.strip("/")
                status = 503 if (markers / host / "out-of-service").exists() else 200
                server.log.append((time.time(), host, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answers(self, host: str, status: int) -> List[float]:
        return [at for at, h, s in list(self.log) if h == host and s == status]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class OpenConnection:
    """A service port with one established client connection, closed HOLD_SECONDS after the first 503."""

    def __init__(self, health: HealthServer, host: str):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.client = socket.create_connection(("127.0.0.1", self.port))
        self.served, _ = self.listener.accept()
        self.closed_at = 0.0
        self.thread = threading.Thread(target=self._close_later, args=(health, host), daemon=True)
        self.thread.start()

    def _close_later(self, health: HealthServer, host: str) -> None:
        deadline = time.monotonic() + 240
        while not health.answers(host, 503) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(HOLD_SECONDS)
        self.close()

    def close(self) -> None:
        if not self.closed_at:
            self.client.close()
            self.served.close()
            self.closed_at = time.time()
        self.listener.close()


def nic(name: str, public_ip: bool) -> Dict[str, Any]:
    """A NIC as azure_rm_networkinterface_info returns it, in pool-web (and vm1's also in pool-admin)."""
    group = SUBSCRIPTION + "/resourceGroups/RG-Web/providers/Microsoft.Network"
    pools = [POOL, ADMIN_POOL] if public_ip else [POOL]
    return {
        "id": f"{group}/networkInterfaces/{name}", "resource_group": "RG-Web", "name": name, "location": "westeurope",
        "subnet": "web", "virtual_network": {"name": "vnet-web", "resource_group": "RG-Net",
                                             "subscription_id": SUBSCRIPTION.split("/")[2],
                                             "subnet_id": SUBSCRIPTION + "/resourceGroups/RG-Net/providers/"
                                                          "Microsoft.Network/virtualNetworks/vnet-web/subnets/web"},
        "tags": {"app": "web"}, "security_group": f"{group}/networkSecurityGroups/nsg-web" if public_ip else None,
        "enable_ip_forwarding": False, "enable_accelerated_networking": public_ip,
        "dns_servers": ["10.0.0.10"] if public_ip else [], "mac_address": "00-0D-3A-00-00-01",
        "provisioning_state": "Succeeded",
        "ip_configurations": [{
            "name": "ipconfig1", "primary": True, "private_ip_address": "10.0.1.5",
            "private_ip_allocation_method": "Static" if public_ip else "Dynamic",
            "load_balancer_backend_address_pools": pools, "application_gateway_backend_address_pools": None,
            "public_ip_address": f"{group}/publicIPAddresses/{name}-pip" if public_ip else None,
            "public_ip_allocation_method": "Static" if public_ip else None, "application_security_groups": None}],
    }


def pools_of(nics: List[Dict[str, Any]], name: str) -> List[str]:
    (found,) = [n for n in nics if n["name"] == name]
    return sorted(p.lower() for p in found["ip_configurations"][0]["load_balancer_backend_address_pools"] or [])


# ----------------------------------------------------------------- the two real runs

@pytest.fixture
def world(tmp_path: Path) -> Iterator[Dict[str, Any]]:
    with ExitStack() as cleanup:
        # Time scale 5: the test's 30-minute notices last 360 s, minutes more than run 1 (which approves) needs on a
        # loaded machine; the events then last seconds.
        fleet = LiveFleet(None, time_scale=5.0, fleet=FleetSpec(vms=3, fault_domains=1))
        cleanup.callback(fleet.close)
        markers, azure = tmp_path / "markers", tmp_path / "azure"
        azure.mkdir()
        probed, pooled, frozen = fleet.vms
        for host in fleet.vms:
            (markers / host).mkdir(parents=True)
        health = HealthServer(markers)
        cleanup.callback(health.close)
        busy = OpenConnection(health, probed)
        cleanup.callback(busy.close)
        idle = cleanup.enter_context(socket.create_server(("127.0.0.1", 0)))  # the pool VMs' port: nobody on it
        nics = [nic(f"{pooled}-nic", public_ip=True), nic(f"{frozen}-nic", public_ip=False)]
        (azure / "nics.json").write_text(json.dumps(nics))
        bench = CycleBench(fleet, tmp_path)
        inventory = json.loads(bench.inventory.read_text())
        hosts = inventory["azure_vms"]["hosts"]
        hosts[probed].update(example="lb_drain_probe", lb_drain_probe_become=False,
                             lb_drain_probe_marker=str(markers / probed / "out-of-service"),
                             lb_drain_probe_url=f"http://127.0.0.1:{health.port}/{probed}",
                             lb_drain_probe_service_port=busy.port, lb_drain_probe_interval_seconds=INTERVAL,
                             lb_drain_probe_unhealthy_threshold=THRESHOLD, lb_drain_probe_drain_seconds=60,
                             lb_drain_probe_margin_seconds=10, lb_drain_probe_recover_seconds=30)
        for host in (pooled, frozen):  # what the azure_rm inventory sets, and the example's own variables
            hosts[host].update(example="lb_backend_pool", resource_group="rg-web", network_interface=[f"{host}-nic"],
                               lb_backend_pool_load_balancer="lb-web", lb_backend_pool_name="pool-web",
                               lb_backend_pool_marker=str(markers / host / "out-of-lb-backend-pool"),
                               lb_backend_pool_service_port=idle.getsockname()[1], lb_backend_pool_drain_seconds=60,
                               lb_backend_pool_margin_seconds=10)
        bench.inventory.write_text(json.dumps(inventory))
        yield {"fleet": fleet, "bench": bench, "health": health, "busy": busy, "markers": markers, "azure": azure,
               "nics": nics, "hosts": (probed, pooled, frozen)}


def run_cycle(world: Dict[str, Any]) -> Any:
    extra = dict(yaml.safe_load((EXAMPLES / "event_type_filter.yml").read_text()),  # as `-e @event_type_filter.yml`
                 prepare_tasks=str(FILES / "example_prepare.yml"), recover_tasks=str(FILES / "example_recover.yml"),
                 examples_dir=str(EXAMPLES))
    # The double shadows the real azure.azcollection in this run only.
    env = {"ANSIBLE_COLLECTIONS_PATH": f"{DOUBLES}{os.pathsep}{os.environ['ANSIBLE_COLLECTIONS_PATH']}",
           "AZURE_DOUBLE_DIR": str(world["azure"])}
    return world["bench"].run(extra=extra, env=env)


def double_calls(world: Dict[str, Any]) -> List[Dict[str, Any]]:
    path = world["azure"] / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.live
def test_examples_drain_through_the_probe_and_the_backend_pool_and_let_a_short_freeze_pass(
        world: Dict[str, Any]) -> None:
    fleet, health, busy, markers = world["fleet"], world["health"], world["busy"], world["markers"]
    probed, pooled, frozen = world["hosts"]
    (reboot_id,) = fleet.inject({"key": "reboot", "type": "Reboot", "notice_s": 1800, "started_for_s": 30,
                                 "resources": {"names": [probed, pooled]}})
    (freeze_id,) = fleet.inject({"key": "freeze", "type": "Freeze", "duration_s": 5, "notice_s": 1800,
                                 "started_for_s": 10, "resources": {"names": [frozen]}})

    first = run_cycle(world)
    assert first.returncode == 0, first.stdout[-4000:]
    approvals = {i: a for a in fleet.approvals() for i in a["event_ids"]}
    assert set(approvals) == {reboot_id, freeze_id} and len(fleet.approvals()) == 2
    assert approvals[reboot_id]["vm"] == probed and approvals[freeze_id]["vm"] == frozen
    approved_at = epoch(approvals[reboot_id]["at"])

    # lb_drain_probe: out of service, seen out for the probe window, connections drained, then approved.
    out = health.answers(probed, 503)
    assert out, "vm0's probe never reported out of service"
    assert out[-1] - out[0] >= INTERVAL * THRESHOLD, "not reported out long enough for the load balancer to see it down"
    assert approved_at > out[-1]
    assert busy.closed_at and busy.closed_at >= out[0] + HOLD_SECONDS - 0.5
    assert approved_at > busy.closed_at, "approved while a connection to the service port was still open"
    assert (markers / probed / "out-of-service").exists(), "recover ran before the event was gone"

    # lb_backend_pool: read, then pool-web removed from the controller; nothing else of the NIC changed.
    calls = double_calls(world)
    assert [(c["host"], c["module"]) for c in calls] == [
        (pooled, "azure_rm_networkinterface_info"), (pooled, "azure_rm_networkinterface")], "and none for the Freeze"
    assert all(c["delegate_to"] == "localhost" and c["errors"] == [] for c in calls)
    update = calls[1]
    assert update["drift"] == [], "the update would change more of the NIC than its pools"
    (config,) = update["args"]["ip_configurations"]
    assert [p.lower() for p in config["load_balancer_backend_address_pools"]] == [ADMIN_POOL.lower()]
    assert update["at"] < approved_at, "approved before the NIC left the pool"
    azure_now = json.loads((world["azure"] / "nics.json").read_text())
    assert pools_of(azure_now, f"{pooled}-nic") == [ADMIN_POOL.lower()]
    assert pools_of(azure_now, f"{frozen}-nic") == [POOL.lower()], "the Freeze VM was drained"
    assert (markers / pooled / "out-of-lb-backend-pool").read_text().strip().lower() == POOL.lower()

    # The short Freeze: approved at once (above), never drained: no Azure call (above), no note.
    assert not (markers / frozen / "out-of-lb-backend-pool").exists()

    wait_for(lambda: all(e["status"] == "Removed" for e in fleet.truth()), 90, "both events to be gone")
    gone_at = max(epoch(e["removed_at"]) for e in fleet.truth())
    second = run_cycle(world)
    assert second.returncode == 0, second.stdout[-4000:]
    assert len(fleet.approvals()) == 2, "the recover run approved something"

    # Recover, after the events were gone: vm0 reports healthy again, vm1 is back in pool-web.
    assert not (markers / probed / "out-of-service").exists()
    assert [at for at in health.answers(probed, 200) if at > gone_at], "the recover did not wait for a healthy probe"
    calls = double_calls(world)[2:]
    assert [(c["host"], c["module"]) for c in calls] == [
        (pooled, "azure_rm_networkinterface_info"), (pooled, "azure_rm_networkinterface")], \
        "the Freeze VM, never taken out, must not be put back"
    assert all(c["delegate_to"] == "localhost" and c["errors"] == [] and c["drift"] == [] for c in calls)
    assert min(c["at"] for c in calls) > gone_at
    azure_now = json.loads((world["azure"] / "nics.json").read_text())
    assert pools_of(azure_now, f"{pooled}-nic") == pools_of(world["nics"], f"{pooled}-nic")
    assert not (markers / pooled / "out-of-lb-backend-pool").exists()


# ----------------------------------------------------------------- unit checks, in milliseconds

NOW = datetime(2026, 11, 22, 2, 45, tzinfo=timezone.utc)


def _event(event_id: str, vm: str, event_type: str, duration: int = -1, source: str = "Platform") -> Dict[str, Any]:
    return {"event_id": event_id, "event_type": event_type, "event_status": "Scheduled", "resources": [vm],
            "not_before": (NOW + timedelta(minutes=15)).strftime("%Y-%m-%dT%H:%M:%SZ"), "event_source": source,
            "duration_in_seconds": duration, "description": "", "known_type": True, "known_status": True}


def _plan(policy: Dict[str, Any]) -> Dict[str, Any]:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import plan_cycle
    events = [_event("reboot", "vm0", "Reboot"), _event("short", "vm1", "Freeze", 5),
              _event("long", "vm2", "Freeze", 30), _event("user", "vm3", "Redeploy", source="User")]
    hosts = {}
    for n in range(4):
        hosts[f"vm{n}"] = {"availability_set": "as1", "result": {
            "events": events, "document_available": True, "document_incarnation": 3, "state": None,
            "this_vm": {"name": f"vm{n}", "fault_domain": 0, "zone": "", "vm_scale_set_name": ""}}}
    plan = plan_cycle(hosts, policy, NOW)["hosts"]
    return {h: {"prepare": [e["event_id"] for e in p["prepare"]], "approve": p["approve"],
                "waiting": [w["reason"] for w in p["waiting"]]} for h, p in plan.items()}


def test_event_type_filter_drains_only_for_events_that_take_the_vm_down() -> None:
    """The file's variables are role options with valid values (a misspelt extra variable is silently ignored),
    and under them no Freeze is drained: a short one is approved at once, a long one is left to NotBefore."""
    given = yaml.safe_load((EXAMPLES / "event_type_filter.yml").read_text())
    options = yaml.safe_load(ARGUMENT_SPECS.read_text())["argument_specs"]["main"]["options"]
    for name, value in given.items():
        assert name in options, f"{name} is not a variable of the role"
        choices = options[name].get("choices")
        assert not choices or set(value) <= set(choices)
    plan = _plan({name[len("maintenance_cycle_"):]: value for name, value in given.items()})
    assert plan["vm0"] == {"prepare": ["reboot"], "approve": ["reboot"], "waiting": []}
    assert plan["vm1"] == {"prepare": [], "approve": ["short"], "waiting": []}
    assert plan["vm2"]["prepare"] == [] and plan["vm2"]["approve"] == []
    assert plan["vm2"]["waiting"] == ["no prepare tasks run for Freeze events, so it is left to NotBefore: Azure starts "
                                      "it then, and no cycle approves it early; with prepare tasks for them it is "
                                      "approved once every listed host is prepared"]
    assert plan["vm3"] == {"prepare": ["user"], "approve": ["user"], "waiting": []}
    assert _plan({})["vm2"]["prepare"] == ["long"], "without the file a long Freeze is drained"


def test_the_double_validates_with_the_installed_modules_own_argument_spec() -> None:
    """Cross-checked with a second source: the real module's DOCUMENTATION."""
    double = load_double()
    for module in ("azure_rm_networkinterface", "azure_rm_networkinterface_info"):
        real = double.real_module_kwargs(module)
        assert "site-packages" in real["file"] and "doubles" not in real["file"]
        source = Path(real["file"]).read_text()
        documented = yaml.safe_load(re.search(r"DOCUMENTATION = '''(.*?)'''", source, re.S).group(1))["options"]
        spec = real["kwargs"]["argument_spec"]
        assert set(documented) <= set(spec) and {"subscription_id", "auth_source"} <= set(spec)
        for name, option in documented.items():
            assert set(option.get("suboptions", {})) == set(spec[name].get("options") or {}), name


def test_the_double_refuses_what_the_real_module_refuses() -> None:
    double = load_double()
    good = {"resource_group": "RG-Web", "name": "vm1-nic", "virtual_network": {"name": "vnet-web"},
            "subnet_name": "web", "create_with_security_group": False, "dns_servers": ["10.0.0.10"],
            "ip_configurations": [{"name": "ipconfig1", "primary": True, "private_ip_address": "10.0.1.5",
                                   "private_ip_allocation_method": "Static", "public_ip_address_name": "vm1-pip",
                                   "load_balancer_backend_address_pools": [ADMIN_POOL]}]}
    assert double.validate("azure_rm_networkinterface", good) == []
    misspelt = copy.deepcopy(good)
    misspelt["ip_configurations"][0]["load_balancer_backend_address_pool"] = []
    wrong_choice = copy.deepcopy(good)
    wrong_choice["ip_configurations"][0]["private_ip_allocation_method"] = "static"
    no_group = {k: v for k, v in good.items() if k != "resource_group"}
    for bad, says in ((misspelt, "load_balancer_backend_address_pool"), (wrong_choice, "private_ip_allocation_method"),
                      (no_group, "resource_group")):
        errors = double.validate("azure_rm_networkinterface", bad)
        assert errors and says in " ".join(errors), errors
    assert double.validate("azure_rm_networkinterface_info", {"name": "x", "resource_group": "y", "state": "present"})


def test_the_double_reports_what_an_update_would_change_besides_the_pools(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Its `drift` is what the test above asserts empty: an update that forgets the public IP and the security
    group (the real module would detach both) says so; one that only changes the pools does not."""
    double = load_double()
    current = nic("vm1-nic", public_ip=True)
    (tmp_path / "nics.json").write_text(json.dumps([current]))
    monkeypatch.setenv("AZURE_DOUBLE_DIR", str(tmp_path))
    config = current["ip_configurations"][0]
    pools_only = {"resource_group": "rg-web", "name": "vm1-nic", "location": "westeurope", "subnet_name": "web",
                  "virtual_network": current["virtual_network"], "security_group": current["security_group"],
                  "enable_accelerated_networking": True, "dns_servers": ["10.0.0.10"],
                  "ip_configurations": [{"name": "ipconfig1", "primary": True, "private_ip_address": "10.0.1.5",
                                         "private_ip_allocation_method": "Static",
                                         "public_ip_address_name": config["public_ip_address"].split("/")[-1],
                                         "load_balancer_backend_address_pools": [ADMIN_POOL]}]}
    careless = copy.deepcopy(pools_only)
    del careless["security_group"], careless["ip_configurations"][0]["public_ip_address_name"]
    careless["create_with_security_group"] = False
    result = double.call("azure_rm_networkinterface", careless, "vm1", "localhost", check_mode=True)
    (record,) = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert result["changed"]
    assert [d.split(":")[0] for d in record["drift"]] == ["security group", "public ip of ipconfig1"]
    assert pools_of(json.loads((tmp_path / "nics.json").read_text()), "vm1-nic") == sorted([POOL.lower(),
                                                                                        ADMIN_POOL.lower()])
    result = double.call("azure_rm_networkinterface", pools_only, "vm1", "localhost", check_mode=False)
    assert result["changed"] and json.loads((tmp_path / "calls.jsonl").read_text().splitlines()[1])["drift"] == []
    assert pools_of(json.loads((tmp_path / "nics.json").read_text()), "vm1-nic") == [ADMIN_POOL.lower()]


def test_the_examples_readme_documents_each_variable_the_examples_read() -> None:
    """Every variable a task file reads but does not set itself is in README.md, and README.md names no other."""
    readme = (EXAMPLES / "README.md").read_text()
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "prepare.yml").exists()):
        prefix = folder.name + "_"
        used, defined = set(), set()
        for path in folder.glob("*.yml"):
            used |= set(re.findall(r"\b(%s\w+)" % prefix, path.read_text()))
            for task in _tasks(yaml.safe_load(path.read_text())):
                defined |= {task.get("register")} | set(task.get("vars") or {})
        documented = set(re.findall(r"`(%s\w+)`" % prefix, readme))
        assert used - defined == documented, folder.name


def _tasks(tasks: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    for task in tasks or []:
        yield task
        yield from _tasks(task.get("block", []))


def test_marker_file_prepares_a_vm_whose_marker_folder_does_not_exist_yet(tmp_path: Path) -> None:
    """A first event on a new VM: the folder is created, not a failed prepare (copy creates no parent folder)."""
    folder = tmp_path / "not" / "there" / "yet"
    event = {"event_id": "E-1", "event_type": "Reboot", "event_source": "Platform", "not_before": "",
             "seconds_to_not_before": 900, "duration_in_seconds": 7, "resources": ["localhost"], "description": "test"}
    playbook = tmp_path / "prepare.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False, "connection": "local",
        "vars": {"maintenance_cycle_event": event, "marker_file_dir": str(folder)},
        "tasks": [{"ansible.builtin.include_tasks": str(EXAMPLES / "marker_file" / "prepare.yml")}]}]))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), str(playbook)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp")))
    assert done.returncode == 0, done.stdout[-3000:]
    assert (folder / "in-maintenance-E-1").read_text() == "Reboot\n"
    assert json.loads((folder / "maintenance-audit.jsonl").read_text())["phase"] == "prepare"
