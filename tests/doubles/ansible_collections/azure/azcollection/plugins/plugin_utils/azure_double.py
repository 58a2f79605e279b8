# -*- coding: utf-8 -*-
"""TEST DOUBLE of azure.azcollection's azure_rm_networkinterface and azure_rm_networkinterface_info.

For tests/integration/test_examples.py only: never shipped, and on ANSIBLE_COLLECTIONS_PATH (ahead of the
real azure.azcollection) only in that test. There is no Azure and no Azure SDK here, so:

- every call is validated with the argument spec the INSTALLED module builds: its own code runs, in a clean
  Python, up to the AnsibleModule it would create (`real_module_kwargs`), so arguments the real module
  would refuse fail here too;
- NICs are read from and written to AZURE_DOUBLE_DIR/nics.json (azure_rm_networkinterface_info's format);
- each call is appended to AZURE_DOUBLE_DIR/calls.jsonl: module, host, delegate_to, arguments, errors,
  and `drift`: what the update would change besides backend pools (the real module would PUT it too).
Creating or deleting NICs is not emulated: such a call fails.
"""
from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

# Run by `python -I` (no double, no collection loader on sys.path): imports the installed module, lets its
# main() build its arguments up to AnsibleModule(**kwargs), and prints those kwargs.
_REAL_KWARGS = r"""
import importlib, json, sys
common = importlib.import_module("ansible_collections.azure.azcollection.plugins.module_utils.azure_rm_common")
class Captured(Exception):
    pass
captured = {}
def capture(**kwargs):
    captured.update(kwargs)
    raise Captured()
common.AnsibleModule = capture
module = importlib.import_module("ansible_collections.azure.azcollection.plugins.modules." + sys.argv[1])
try:
    module.main()
except Captured:
    pass
def plain(spec):  # env_fallback is a function; which environment variable feeds an option is moot here
    return {k: dict({o: v for o, v in s.items() if o != "fallback"},
                    **({"options": plain(s["options"])} if s.get("options") else {})) for k, s in spec.items()}
captured["argument_spec"] = plain(captured["argument_spec"])
print(json.dumps({"file": module.__file__, "kwargs": captured}))
"""
_VALIDATOR_KWARGS = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")


@functools.lru_cache(maxsize=None)
def real_module_kwargs(module: str) -> Dict[str, Any]:
    """{file, kwargs}: the installed module's source file and the AnsibleModule kwargs its code builds."""
    run = subprocess.run([sys.executable, "-I", "-c", _REAL_KWARGS, module], capture_output=True, text=True,
                         timeout=60, check=False)
    if run.returncode != 0:
        raise RuntimeError("could not load the real %s: %s" % (module, run.stderr[-2000:]))
    found = json.loads(run.stdout)
    if "doubles" in found["file"].split(os.sep):
        raise RuntimeError("loaded the double instead of the real %s" % module)
    return found


def validate(module: str, args: Dict[str, Any]) -> List[str]:
    """The errors the real module's argument validation reports for `args` (none: it would accept them)."""
    kwargs = real_module_kwargs(module)["kwargs"]
    validator = ArgumentSpecValidator(kwargs["argument_spec"],
                                      **{k: kwargs[k] for k in _VALIDATOR_KWARGS if kwargs.get(k)})
    return list(validator.validate(copy.deepcopy(args)).error_messages)


def call(module: str, args: Dict[str, Any], host: str, delegate_to: Any, check_mode: bool) -> Dict[str, Any]:
    """One module call: validated, answered from nics.json, recorded in calls.jsonl."""
    folder = os.environ["AZURE_DOUBLE_DIR"]
    record = {"module": module, "host": host, "delegate_to": delegate_to, "check_mode": check_mode,
              "args": args, "at": time.time(), "errors": validate(module, args), "drift": []}
    if record["errors"]:
        result = {"failed": True, "msg": "; ".join(record["errors"])}
    else:
        nics = _load(folder)
        nic = _find(nics, args["resource_group"], args["name"])
        if module == "azure_rm_networkinterface_info":
            result = {"changed": False, "networkinterfaces": [nic] if nic else []}
        else:
            result = _update(nic, args, record)
            if result.get("changed") and not check_mode:
                _save(folder, nics)
    record["result"] = result
    with open(os.path.join(folder, "calls.jsonl"), "a", encoding="utf-8") as log:
        log.write(json.dumps(record, default=str) + "\n")
    return result


def _load(folder: str) -> List[Dict[str, Any]]:
    with open(os.path.join(folder, "nics.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _save(folder: str, nics: List[Dict[str, Any]]) -> None:
    path = os.path.join(folder, "nics.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(nics, handle, indent=1)
    os.replace(path + ".tmp", path)


def _find(nics: List[Dict[str, Any]], group: str, name: str) -> Any:
    return next((n for n in nics if (n["resource_group"].lower(), n["name"].lower()) == (group.lower(), name.lower())),
                None)


def _ids(values: Any) -> List[str]:
    return sorted(str(v).lower() for v in values or [])


def _pool_id(nic: Dict[str, Any], pool: Any) -> str:
    """A pool as the real module turns it into an id (a dict names a pool of an LB in the NIC's group)."""
    if isinstance(pool, dict):
        return "%s/resourceGroups/%s/providers/Microsoft.Network/loadBalancers/%s/backendAddressPools/%s" % (
            "/".join(nic["id"].split("/")[:3]), nic["resource_group"], pool["load_balancer"], pool["name"])
    return pool


def _update(nic: Any, args: Dict[str, Any], record: Dict[str, Any]) -> Dict[str, Any]:
    if nic is None or args.get("state", "present") != "present":
        return {"failed": True, "msg": "the double emulates updates of existing NICs only"}
    drift = record["drift"]

    def differs(what: str, wanted: Any, current: Any) -> None:
        if wanted != current:
            drift.append("%s: %r -> %r" % (what, current, wanted))

    differs("location", (args.get("location") or nic["location"]).replace(" ", "").lower(), nic["location"].lower())
    network = args.get("virtual_network")
    if network is not None:
        network = network if isinstance(network, dict) else {"name": str(network).split("/")[-1]}
        differs("virtual network", network.get("name"), nic["virtual_network"]["name"])
    differs("subnet", args.get("subnet_name") or nic["subnet"], nic["subnet"])
    group = args.get("security_group") if args.get("create_with_security_group", True) else None
    if group is None and args.get("create_with_security_group", True):
        group = args["name"]  # the module's default: a security group named after the NIC, created if missing
    differs("security group", str(group).split("/")[-1].lower() if group else None,
            nic["security_group"].split("/")[-1].lower() if nic["security_group"] else None)
    differs("accelerated networking", args.get("enable_accelerated_networking", False),
            nic["enable_accelerated_networking"])
    differs("ip forwarding", args.get("enable_ip_forwarding", False), nic["enable_ip_forwarding"])
    differs("dns servers", sorted(args.get("dns_servers") or []), sorted(nic["dns_servers"] or []))
    pools_changed = False
    for wanted in args.get("ip_configurations") or []:
        config = next((c for c in nic["ip_configurations"] if c["name"] == wanted["name"]), None)
        if config is None:
            drift.append("ip configuration %s added" % wanted["name"])
            continue
        public = config["public_ip_address"].split("/")[-1] if config["public_ip_address"] else None
        differs("public ip of " + config["name"], wanted.get("public_ip_address_name"), public)
        differs("allocation of " + config["name"], wanted.get("private_ip_allocation_method", "Dynamic"),
                config["private_ip_allocation_method"])
        differs("private ip of " + config["name"], wanted.get("private_ip_address"), config["private_ip_address"])
        differs("primary of " + config["name"], bool(wanted.get("primary")), bool(config["primary"]))
        differs("gateway pools of " + config["name"], _ids(wanted.get("application_gateway_backend_address_pools")),
                _ids(config["application_gateway_backend_address_pools"]))
        differs("security groups of " + config["name"], _ids(wanted.get("application_security_groups")),
                _ids(config["application_security_groups"]))
        pools = [_pool_id(nic, p) for p in wanted.get("load_balancer_backend_address_pools") or []]
        if _ids(pools) != _ids(config["load_balancer_backend_address_pools"]):
            pools_changed = True
            config["load_balancer_backend_address_pools"] = pools or None
    return {"changed": pools_changed or bool(drift), "state": nic}
