"""The simulated fleet: one or more availability sets or scale-set placement groups.

Every VM of a set sees every event of its set (the Scheduled Events scope
rule); `Resources` says who is affected. The one documented exception, GPU VMs
in a scale set with a single fault domain, is the `affected_only` scope.

By default a fleet is one set. Opt-in shapes:
- several sets (`sets` or `set_names`): each set is its own scope and reuses
  the same fault-domain numbers, as real sets do (FD numbers mean nothing
  across sets);
- zonal (`zones`, scale sets only): VMs spread round-robin over the zones, every
  VM reports platformFaultDomain 0 (max spreading), so the zone is the domain
  that routine maintenance walks and serialises.
"""
from __future__ import annotations

import string
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .jsonfile import read_json

KINDS = ("availability_set", "scale_set")
SCOPES = ("set", "affected_only")
ZONES = ("1", "2", "3")
MAX_SET_VMS = 1000     # a scale set's maximum (an availability set's is 200)
MAX_FLEET_VMS = 10000  # a month of one-second polls of a fleet this size is still an offline run of minutes
MAX_SETS = len(string.ascii_lowercase)  # derived set names end in a letter: <name>-a, <name>-b, ...


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
    # Never served in compute metadata (IMDS has no such field); kept for the
    # scope rule and for test inventories (`/_simulator/fleet`).
    availability_set: str = ""

    @property
    def set_name(self) -> str:
        """The set whose events this VM sees: its scale set or its availability set."""
        return self.vm_scale_set_name or self.availability_set

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
    sets: List[str] = field(default_factory=list)   # set names, in VM order; empty: just `name`
    zones: List[str] = field(default_factory=list)  # non-empty: a zonal fleet

    def __post_init__(self) -> None:
        if not self.sets:
            self.sets = sorted({v.set_name for v in self.vms}) or [self.name]

    @property
    def zonal(self) -> bool:
        return bool(self.zones)

    def vm(self, name: str) -> Optional[VM]:
        return self._by_name().get(name.lower())

    def _by_name(self) -> Dict[str, VM]:
        return {v.name.lower(): v for v in self.vms}

    def in_fault_domain(self, fault_domain: int) -> List[VM]:
        return [v for v in self.vms if v.fault_domain == fault_domain]

    def in_update_domain(self, update_domain: int) -> List[VM]:
        return [v for v in self.vms if v.update_domain == update_domain]

    def in_set(self, set_name: str) -> List[VM]:
        return [v for v in self.vms if v.set_name == set_name]

    def in_zone(self, zone: str) -> List[VM]:
        return [v for v in self.vms if v.zone == zone]

    def describe(self) -> Dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "scope": self.scope,
                "fault_domains": self.fault_domains, "update_domains": self.update_domains,
                "sets": list(self.sets), "zones": list(self.zones),
                "vms": [asdict(v) for v in self.vms]}


@dataclass
class FleetSpec:
    """The knobs `serve`/`generate` take; a fleet file may set them or list VMs.

    `vms`, `fault_domains` and `update_domains` describe ONE set; a fleet of
    several sets has `vms * sets` VMs. `names` lists every VM of the fleet,
    set after set.
    """
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
    sets: int = 1                                        # how many sets of `vms` VMs
    set_names: List[str] = field(default_factory=list)   # explicit set names (their number wins)
    zones: List[str] = field(default_factory=list)       # zonal scale set: spread over these zones

    def set_list(self) -> List[str]:
        """The set names: given, `<name>-a`, `<name>-b`, ... for several sets, else `name`."""
        if self.set_names:
            return list(self.set_names)
        if self.sets == 1:
            return [self.name]
        return [f"{self.name}-{string.ascii_lowercase[i]}" for i in range(self.sets)]


def build_fleet(spec: FleetSpec) -> Fleet:
    _check_spec(spec)
    sets = spec.set_list()
    vms = [_make_vm(spec, set_name, i, s * spec.vms + i)
           for s, set_name in enumerate(sets) for i in range(spec.vms)]
    _check_unique(vms)
    # Zonal VMs all report fault domain 0: the zone is their only fault boundary.
    fault_domains = 1 if spec.zones else spec.fault_domains
    return Fleet(kind=spec.kind, name=spec.name, vms=vms, scope=spec.scope, fault_domains=fault_domains,
                 update_domains=spec.update_domains, sets=sets, zones=list(spec.zones))


def spec_from_fields(fields: Dict[str, Any], where: str = "fleet") -> FleetSpec:
    """A FleetSpec from a JSON object (a fleet file, a scenario's `fleet`); one sentence on error."""
    known = set(FleetSpec.__dataclass_fields__)
    unknown = sorted(set(fields) - known)
    if unknown:
        raise FleetError(f"{where} has unknown field(s) {', '.join(unknown)}.")
    data = dict(fields)
    if "names" in data and "vms" not in data and isinstance(data["names"], list):
        data["vms"] = _vms_per_set(data)
    return FleetSpec(**data)


def _vms_per_set(data: Dict[str, Any]) -> int:
    """`names` lists the whole fleet: split it over the sets (rejected later if uneven)."""
    set_names = data.get("set_names")
    count = len(set_names) if isinstance(set_names, list) and set_names else data.get("sets", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return len(data["names"])  # the type check reports the bad `sets`
    return max(1, len(data["names"]) // count)


_WHOLE = ("vms", "fault_domains", "update_domains", "sets")
_LISTS = {"names": "a list of VM names", "set_names": "a list of set names", "zones": "a list of zones"}


def _check_types(spec: FleetSpec) -> None:
    for name, value in vars(spec).items():
        if name in _WHOLE:
            ok = isinstance(value, int) and not isinstance(value, bool)
            wanted = "a whole number"
        elif name in _LISTS:
            ok = isinstance(value, list) and all(isinstance(n, str) for n in value)
            wanted = _LISTS[name]
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
    if not 1 <= spec.vms <= MAX_SET_VMS:
        raise FleetError(f"a set needs 1 to {MAX_SET_VMS} VMs, not {spec.vms}.")
    # Availability sets have at most 3 fault domains and 20 update domains;
    # scale-set placement groups use up to 5 fault domains.
    max_fd = 3 if spec.kind == "availability_set" else 5
    if not 1 <= spec.fault_domains <= max_fd:
        raise FleetError(f"an {spec.kind} has 1 to {max_fd} fault domains, not {spec.fault_domains}.")
    if not 1 <= spec.update_domains <= 20:
        raise FleetError(f"update domains must be 1 to 20, not {spec.update_domains}.")
    _check_sets(spec)
    _check_zones(spec)
    total = spec.vms * len(spec.set_list())
    if total > MAX_FLEET_VMS:
        raise FleetError(f"a fleet needs at most {MAX_FLEET_VMS} VMs, not {total} ({spec.vms} in each of "
                         f"{len(spec.set_list())} sets).")
    if spec.names and len(spec.names) != total:
        raise FleetError(f"the fleet lists {len(spec.names)} names for {total} VMs.")
    for name in spec.names:
        _check_vm_name(name)
    if len({n.lower() for n in spec.names}) != len(spec.names):
        raise FleetError("the fleet lists a VM name twice (names are case-insensitive).")


def _check_sets(spec: FleetSpec) -> None:
    if not 1 <= spec.sets <= MAX_SETS:
        raise FleetError(f"a fleet has 1 to {MAX_SETS} sets, not {spec.sets}.")
    if not spec.set_names:
        return
    if spec.sets not in (1, len(spec.set_names)):
        raise FleetError(f"the fleet lists {len(spec.set_names)} set names for {spec.sets} sets.")
    if len(spec.set_names) > MAX_SETS:
        raise FleetError(f"a fleet has 1 to {MAX_SETS} sets, not {len(spec.set_names)}.")
    for name in spec.set_names:
        _check_vm_name(name, what="set")
    if len({n.lower() for n in spec.set_names}) != len(spec.set_names):
        raise FleetError("the fleet lists a set name twice (names are case-insensitive).")


def _check_zones(spec: FleetSpec) -> None:
    if not spec.zones:
        return
    if spec.kind != "scale_set":
        # Availability sets cannot span zones; zonal single VMs are not modelled.
        raise FleetError("only a scale_set fleet can span zones (availability sets are never zonal).")
    if spec.zone:
        raise FleetError("a fleet sets either zone (all VMs in one zone) or zones (spread), not both.")
    bad = [z for z in spec.zones if z not in ZONES]
    if bad:
        raise FleetError(f"zone {bad[0]!r} is not one of {', '.join(ZONES)}.")
    if len(set(spec.zones)) != len(spec.zones):
        raise FleetError("the fleet lists a zone twice.")


def _check_vm_name(name: str, what: str = "VM") -> None:
    # Azure VM names never start with "_": that keeps /_simulator/ free of clashes.
    if not name or name.startswith("_") or "/" in name or len(name) > 64:
        raise FleetError(f"{what} name {name!r} is not a valid Azure {what} name.")


def _check_unique(vms: List[VM]) -> None:
    # Derived names cannot clash (set names are unique and "-vm<i>"/"_<i>" split
    # them unambiguously); this guard keeps names unique if naming ever changes.
    seen: Dict[str, str] = {}
    for vm in vms:
        if vm.name.lower() in seen:
            raise FleetError(f"two VMs of the fleet would be named {vm.name!r} (names are case-insensitive).")
        seen[vm.name.lower()] = vm.name


def _make_vm(spec: FleetSpec, set_name: str, index: int, overall: int) -> VM:
    """VM `index` of set `set_name` (`overall` is its position in the whole fleet)."""
    prefix = f"/subscriptions/{spec.subscription}/resourceGroups/{spec.resource_group}/providers/Microsoft.Compute"
    if spec.kind == "scale_set":
        # Scale-set instances are `<vmss>_<instanceId>` in compute name and Resources.
        name = spec.names[overall] if spec.names else f"{set_name}_{index}"
        resource_id = f"{prefix}/virtualMachineScaleSets/{set_name}/virtualMachines/{index}"
        vmss, avset = set_name, ""
    else:
        name = spec.names[overall] if spec.names else f"{set_name}-vm{index}"
        resource_id = f"{prefix}/virtualMachines/{name}"
        vmss, avset = "", set_name
    if spec.zones:
        zone, fault_domain = spec.zones[index % len(spec.zones)], 0
    else:
        zone, fault_domain = spec.zone, index % spec.fault_domains
    return VM(name=name, resource_id=resource_id, vm_scale_set_name=vmss, fault_domain=fault_domain,
              update_domain=index % spec.update_domains, zone=zone, location=spec.location,
              os_type=spec.os_type, availability_set=avset)


def load_fleet_spec(path: str) -> FleetSpec:
    """Read a fleet file (JSON, the fields of FleetSpec); one clear sentence on error."""
    data = read_json(path, "fleet", FleetError)
    if not isinstance(data, dict):
        raise FleetError(f"fleet file {path} must hold a JSON object.")
    try:
        return spec_from_fields(data, where=f"fleet file {path}")
    except TypeError as exc:
        raise FleetError(f"fleet file {path} is not a fleet description ({exc}).") from None
