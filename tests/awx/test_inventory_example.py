"""The azure_rm inventory example (playbooks/examples/inventory/azure_vms.azure_rm.yml), with no Azure here:
every option is one the plugin documents and reads, and the real plugin, fed hosts shaped as it builds them
(AzureHost.hostvars), filters, composes and groups them as the file says."""
from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import ansible
import pytest
import yaml

# Module-scoped fixtures: one xdist worker runs this file (`--dist loadgroup`), so they are built once.
pytestmark = pytest.mark.xdist_group("awx-inventory")
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "playbooks" / "examples" / "inventory" / "azure_vms.azure_rm.yml"
SKELETON_COPY = REPO / "awx" / "project" / "inventory" / "azure_vms.azure_rm.yml"
BIN = Path(sys.executable).parent
# azure.azcollection as the `ansible` package bundles it, next to ansible-core
AZCOLLECTION = Path(ansible.__file__).resolve().parents[1] / "ansible_collections" / "azure" / "azcollection"
PLUGIN_SOURCE = AZCOLLECTION / "plugins" / "inventory" / "azure_rm.py"
CONFIG: Dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())

# Set by AzureHost.hostvars for Azure Stack HCI VMs only.
HCI_ONLY = {"customLocation", "virtual_machine_memoryMB", "virtual_machine_processors"}


def test_the_awx_project_skeleton_carries_the_same_file() -> None:
    assert SKELETON_COPY.read_bytes() == EXAMPLE.read_bytes(), \
        "awx/project/inventory/ must be a copy of playbooks/examples/inventory/ (cp the example over it)"


@pytest.fixture(scope="module")
def plugin_doc() -> Dict[str, Any]:
    run = subprocess.run([str(BIN / "ansible-doc"), "-t", "inventory", "azure.azcollection.azure_rm", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(run.stdout)["azure.azcollection.azure_rm"]["doc"]


def test_every_option_is_documented_by_the_plugin_and_read_by_it(plugin_doc: Dict[str, Any]) -> None:
    options = plugin_doc["options"]  # with its doc fragments (azure, azure_rm, constructed, inventory_cache)
    assert set(CONFIG) <= set(options), sorted(set(CONFIG) - set(options))
    assert CONFIG["plugin"] in options["plugin"]["choices"]
    # `groups` and `strict` come with the constructed fragment, but azure_rm reads conditional_groups and
    # fail_on_template_errors instead: a config using them would silently do nothing.
    source = PLUGIN_SOURCE.read_text()
    for ignored in ("groups", "strict"):
        assert f"get_option('{ignored}')" not in source and ignored not in CONFIG
    assert CONFIG.get("fail_on_template_errors", True) is True  # a broken filter must fail, not widen the scope
    for name in ("include_vm_resource_groups", "include_vmss_resource_groups", "exclude_host_filters",
                 "default_host_filters"):
        assert isinstance(CONFIG[name], list), name
    assert "*" not in CONFIG["include_vm_resource_groups"], "scoped by resource group"
    assert CONFIG["conditional_groups"] == {"azure_vms": True}


def azure_rm_host_keys() -> set:
    """The keys AzureHost.hostvars gives a VM (the dict literal and the keys set on it later)."""
    tree = ast.parse(PLUGIN_SOURCE.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AzureHost"]
    (prop,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "hostvars"]
    keys = set()
    for node in ast.walk(prop):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == "new_hostvars":
                keys |= {k.arg for k in node.value.keywords}
            if isinstance(target, ast.Subscript) and getattr(target.value, "id", "") == "new_hostvars":
                keys.add(target.slice.value)
    return keys


def vm(name: str, rg: str, tags: Dict[str, str], *, powerstate: str = "running", zones: Any = None,
       vmss: str = "", system: str = "linux", private: List[str] = (), public: List[str] = ()) -> Dict[str, Any]:
    """A VM's host variables, shaped as AzureHost.hostvars builds them."""
    vm_id = f"/subscriptions/0000/resourceGroups/{rg.upper()}/providers/Microsoft.Compute/virtualMachines/{name}"
    return {
        "network_interface": [f"{name}-nic"], "network_interface_properties": [{}], "mac_address": ["00-0D-3A-00-00-01"],
        "network_interface_id": [vm_id + "-nic"], "security_group_id": [], "security_group": [],
        "public_ip_address": [{"id": "pip", "name": f"{name}-pip", "ipv4_address": ip} for ip in public],
        "public_ipv4_address": list(public), "public_dns_hostnames": [], "private_ipv4_addresses": list(private),
        "subnet": [{"id": "subnet"}], "id": vm_id, "location": "westeurope", "name": name, "computer_name": name,
        "availability_zone": zones, "powerstate": powerstate, "provisioning_state": "succeeded", "tags": tags,
        "resource_type": "Microsoft.Compute/virtualMachines", "vmid": "36bca69d-c365-4584-8c06-a62f4a1dc5d2",
        "os_profile": {"system": system}, "vmss": {"id": f"{vm_id}ss", "name": vmss} if vmss else {},
        "virtual_machine_size": "Standard_B2s", "plan": None, "resource_group": rg,
        "default_inventory_hostname": f"{name}_{hashlib.sha1(vm_id.encode()).hexdigest()[:4]}", "creation_time": "2026-01-01T00:00:00Z",
        "license_type": "Unknown", "os_compute_name": name, "os_name": "ubuntu", "os_version": "22.04",
        "hyper_v_generation": "V2", "image": {}, "os_disk": {"name": f"{name}-os", "operating_system_type": system, "id": "d"},
        "data_disks": [],
    }


MAINTAIN = {"maintenance": "azure-imds"}
HOSTS = [
    vm("web-vm0", "rg-web-prod", dict(MAINTAIN, availability_set="Web"), private=["10.0.0.4"], public=["20.1.2.3"]),
    vm("web-vm1", "rg-web-prod", dict(MAINTAIN, availability_set="web"), private=["10.0.0.5"],
       powerstate="starting"),  # in its own reboot: kept, so that the plan sees it
    vm("web-vm2", "rg-db-prod", dict(MAINTAIN, availability_set="web"), private=["10.1.0.4"]),  # same name, other RG
    vm("db-vm0", "rg-db-prod", dict(MAINTAIN, availability_set="db"), private=["10.1.0.5"], system="windows"),
    vm("api-vm0", "rg-web-prod", dict(MAINTAIN), zones=["2"], public=["20.1.2.4"]),  # zonal, no set tag
    vm("api_3", "rg-web-prod", dict(MAINTAIN), vmss="api"),  # a scale-set instance, no address
    vm("web-vm3", "rg-web-prod", {"availability_set": "web"}, private=["10.0.0.6"]),  # not tagged for maintenance
    vm("db-vm1", "rg-db-prod", dict(MAINTAIN, availability_set="db"), powerstate="deallocated"),  # off
]
BY_NAME = {h["name"]: h["default_inventory_hostname"] for h in HOSTS}


def test_the_fake_hosts_are_shaped_as_the_plugin_builds_them() -> None:
    for host in HOSTS:
        assert set(host) == azure_rm_host_keys() - HCI_ONLY


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    tmp = tmp_path_factory.mktemp("azure_rm")
    (tmp / "hosts.json").write_text(json.dumps(HOSTS))
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("azure_rm_offline.py")), str(EXAMPLE),
                          str(tmp / "hosts.json")], capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="1", ANSIBLE_NOCOLOR="1"))
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def hosts_of(names: List[str]) -> List[str]:
    return sorted(BY_NAME[n] for n in names)


def test_it_lists_the_resource_groups_it_names_only(inventory: Dict[str, Any]) -> None:
    assert inventory["queried"] == [
        f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{rg}/providers/Microsoft.Compute/virtualMachines"
        for rg in CONFIG["include_vm_resource_groups"]]


def test_tagged_vms_that_are_not_off_land_in_azure_vms(inventory: Dict[str, Any]) -> None:
    assert inventory["groups"]["azure_vms"] == hosts_of(["web-vm0", "web-vm1", "web-vm2", "db-vm0", "api-vm0", "api_3"])
    assert set(inventory["hostvars"]) == set(inventory["groups"]["azure_vms"])


def test_one_group_per_availability_set_and_scale_set(inventory: Dict[str, Any]) -> None:
    groups = inventory["groups"]
    assert groups["avset_web"] == hosts_of(["web-vm0", "web-vm1", "web-vm2"])
    assert groups["avset_db"] == hosts_of(["db-vm0"])
    assert groups["avset_none"] == hosts_of(["api-vm0", "api_3"])
    assert groups["vmss_api"] == hosts_of(["api_3"])
    assert groups["os_windows"] == hosts_of(["db-vm0"])
    assert set(groups) == {"azure_vms", "avset_web", "avset_db", "avset_none", "vmss_api", "vmss_none", "os_linux",
                           "os_windows"}


def test_the_availability_set_is_composed_per_resource_group(inventory: Dict[str, Any]) -> None:
    composed = {name: inventory["hostvars"][BY_NAME[name]]["maintenance_cycle_availability_set"]
                for name in ("web-vm0", "web-vm1", "web-vm2", "db-vm0", "api-vm0", "api_3")}
    # two sets named web in two resource groups are two sets: their fault domains are never confused
    assert composed == {"web-vm0": "rg-web-prod/web", "web-vm1": "rg-web-prod/web", "web-vm2": "rg-db-prod/web",
                        "db-vm0": "rg-db-prod/db", "api-vm0": "", "api_3": ""}


def test_vms_are_reached_on_their_private_address_first(inventory: Dict[str, Any]) -> None:
    address = {name: inventory["hostvars"][BY_NAME[name]]["ansible_host"] for name in ("web-vm0", "api-vm0", "api_3")}
    assert address == {"web-vm0": "10.0.0.4", "api-vm0": "20.1.2.4", "api_3": "api_3"}


def test_no_other_host_variable_of_the_collection_is_set(inventory: Dict[str, Any]) -> None:
    for hostvars in inventory["hostvars"].values():
        assert {k for k in hostvars if k.startswith("maintenance_cycle_")} == {"maintenance_cycle_availability_set"}
