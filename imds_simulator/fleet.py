"""The simulated fleet: one availability set or one scale-set placement group.

Every VM of the set sees every event of the set (the Scheduled Events scope
rule); `Resources` says who is affected. The one documented exception, GPU VMs
in a scale set with a single fault domain, is the `affected_only` scope.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .jsonfile import read_json

KINDS = ("availability_set", "scale_set")
SCOPES = ("set", "affected_only")


class FleetError(ValueError):
    """A fleet description that cannot be built; the message is one sentence."""


@dataclass(frozen=True)
class VM:
    name: str
    resource_id: str
    vm_scale_set_name: str
    fault_domain: int
    update_domain: int
    zone: str
    location: str
    os_type: str = "Linux"

    def compute_document(self) -> Dict[str, Any]:
        """What `/metadata/instance/compute` answers (the fields we model)."""
        return {
            "location": self.location,
            "name": self.name,
            "osType": self.os_type,
            "platformFaultDomain": str(self.fault_domain),
            "platformUpdateDomain": str(self.update_domain),
            "resourceId": self.resource_id,
            "vmScaleSetName": self.vm_scale_set_name,
            "zone": self.zone,
        }

    def observation_fields(self) -> Dict[str, Any]:
        """The `vm` object of an observation record."""
        return {
            "name": self.name,
            "resource_id": self.resource_id,
            "vm_scale_set_name": self.vm_scale_set_name,
            "fault_domain": self.fault_domain,
            "update_domain": self.update_domain,
            "zone": self.zone,
            "location": self.location,
        }


@dataclass
class Fleet:
    kind: str
    name: str
    vms: List[VM]
    scope: str = "set"
    fault_domains: int = 1
    update_domains: int = 1

    def vm(self, name: str) -> Optional[VM]:
        return self._by_name().get(name.lower())

    def _by_name(self) -> Dict[str, VM]:
        return {v.name.lower(): v for v in self.vms}

    def in_fault_domain(self, fault_domain: int) -> List[VM]:
        return [v for v in self.vms if v.fault_domain == fault_domain]

    def in_update_domain(self, update_domain: int) -> List[VM]:
        return [v for v in self.vms if v.update_domain == update_domain]

    def describe(self) -> Dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "scope": self.scope,
                "fault_domains": self.fault_domains, "update_domains": self.update_domains,
                "vms": [asdict(v) for v in self.vms]}


@dataclass
class FleetSpec:
    """The knobs `serve`/`generate` take; a fleet file may set them or list VMs."""
    kind: str = "availability_set"
    name: str = "avset-web"
    vms: int = 6
    fault_domains: int = 3
    update_domains: int = 5
    location: str = "westeurope"
    zone: str = ""
    scope: str = "set"
    os_type: str = "Linux"
    subscription: str = "00000000-0000-0000-0000-000000000000"
    resource_group: str = "rg-maintenance-sim"
    names: List[str] = field(default_factory=list)


def build_fleet(spec: FleetSpec) -> Fleet:
    _check_spec(spec)
    vms = [_make_vm(spec, i) for i in range(spec.vms)]
    return Fleet(kind=spec.kind, name=spec.name, vms=vms, scope=spec.scope,
                 fault_domains=spec.fault_domains, update_domains=spec.update_domains)


def _check_types(spec: FleetSpec) -> None:
    for name, value in vars(spec).items():
        if name in ("vms", "fault_domains", "update_domains"):
            ok = isinstance(value, int) and not isinstance(value, bool)
            wanted = "a whole number"
        elif name == "names":
            ok = isinstance(value, list) and all(isinstance(n, str) for n in value)
            wanted = "a list of VM names"
        else:
            ok, wanted = isinstance(value, str), "text"
        if not ok:
            raise FleetError(f"fleet field {name} must be {wanted}, not {value!r}.")


def _check_spec(spec: FleetSpec) -> None:
    _check_types(spec)
    if spec.kind not in KINDS:
        raise FleetError(f"fleet kind {spec.kind!r} is not one of {', '.join(KINDS)}.")
    if spec.scope not in SCOPES:
        raise FleetError(f"fleet scope {spec.scope!r} is not one of {', '.join(SCOPES)}.")
    if not 1 <= spec.vms <= 1000:
        raise FleetError(f"a fleet needs 1 to 1000 VMs, not {spec.vms}.")
    # Availability sets have at most 3 fault domains and 20 update domains;
    # scale-set placement groups use up to 5 fault domains.
    max_fd = 3 if spec.kind == "availability_set" else 5
    if not 1 <= spec.fault_domains <= max_fd:
        raise FleetError(f"an {spec.kind} has 1 to {max_fd} fault domains, not {spec.fault_domains}.")
    if not 1 <= spec.update_domains <= 20:
        raise FleetError(f"update domains must be 1 to 20, not {spec.update_domains}.")
    if spec.names and len(spec.names) != spec.vms:
        raise FleetError(f"the fleet lists {len(spec.names)} names for {spec.vms} VMs.")
    for name in spec.names:
        _check_vm_name(name)
    if len({n.lower() for n in spec.names}) != len(spec.names):
        raise FleetError("the fleet lists a VM name twice (names are case-insensitive).")


def _check_vm_name(name: str) -> None:
    # Azure VM names never start with "_": that keeps /_simulator/ free of clashes.
    if not name or name.startswith("_") or "/" in name or len(name) > 64:
        raise FleetError(f"VM name {name!r} is not a valid Azure VM name.")


def _make_vm(spec: FleetSpec, index: int) -> VM:
    prefix = f"/subscriptions/{spec.subscription}/resourceGroups/{spec.resource_group}/providers/Microsoft.Compute"
    if spec.kind == "scale_set":
        # Scale-set instances are `<vmss>_<instanceId>` in compute name and Resources.
        name = spec.names[index] if spec.names else f"{spec.name}_{index}"
        resource_id = f"{prefix}/virtualMachineScaleSets/{spec.name}/virtualMachines/{index}"
        vmss = spec.name
    else:
        name = spec.names[index] if spec.names else f"{spec.name}-vm{index}"
        resource_id = f"{prefix}/virtualMachines/{name}"
        vmss = ""
    return VM(name=name, resource_id=resource_id, vm_scale_set_name=vmss,
              fault_domain=index % spec.fault_domains, update_domain=index % spec.update_domains,
              zone=spec.zone, location=spec.location, os_type=spec.os_type)


def load_fleet_spec(path: str) -> FleetSpec:
    """Read a fleet file (JSON, the fields of FleetSpec); one clear sentence on error."""
    data = read_json(path, "fleet", FleetError)
    if not isinstance(data, dict):
        raise FleetError(f"fleet file {path} must hold a JSON object.")
    known = set(FleetSpec.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise FleetError(f"fleet file {path} has unknown field(s) {', '.join(unknown)}.")
    if "names" in data and "vms" not in data and isinstance(data["names"], list):
        data["vms"] = len(data["names"])
    try:
        return FleetSpec(**data)
    except TypeError as exc:
        raise FleetError(f"fleet file {path} is not a fleet description ({exc}).") from None
