"""Which VMs form one set (an availability set, a scale set's placement group), from a history alone.

Azure shows every VM of a set the events of every other VM of that set, and never another set's: VMs that
saw a common event are in one set. IMDS names a scale set (`vm_scale_set_name`) but not an availability
set, so co-sightings are the evidence, joined with the scale set's name where IMDS gave one. Fault-domain
numbers only mean something within a set: fault domain 0 of two availability sets are two different racks,
and their maintenance at the same time is no overlap.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

import numpy as np
import pandas as pd

from event_analysis.loading.schema import OBSERVATION


class _Union:
    """Union-find over VM names."""

    def __init__(self) -> None:
        self.parent: Dict[str, str] = {}

    def find(self, vm: str) -> str:
        self.parent.setdefault(vm, vm)
        root = vm
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[vm] != root:  # path compression
            self.parent[vm], vm = root, self.parent[vm]
        return root

    def join(self, members: Iterable[str]) -> None:
        members = list(members)
        first = self.find(members[0])
        for other in members[1:]:
            root = self.find(other)
            if root != first:
                self.parent[root] = first


def _codes(column: pd.Series) -> Tuple[List[str], np.ndarray]:
    """(names, one code per row, -1 for none): a history's columns are categorical; factorize others."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return [str(c) for c in column.cat.categories], column.cat.codes.to_numpy()
    codes, names = pd.factorize(column)
    return [str(c) for c in names], codes


def vm_sets(observations: pd.DataFrame) -> Dict[str, str]:
    """{vm: its set's label}: the scale set's name when IMDS named one, else `<first VM>'s set` (the VMs that
    saw a common event, by their alphabetically first member)."""
    return sets_from_evidence(set_evidence(observations))


def set_evidence(observations: pd.DataFrame) -> pd.DataFrame:
    """What tells sets apart, without the rest of the history: one row per (event, VM that saw it) and per
    (VM, scale set IMDS named), as strings (`event_id`, `scale_set` missing where not given). Evidence of
    several parts of a history, concatenated, gives the sets of the whole (see partitioned.py)."""
    seen = observations.loc[(observations["record"] == OBSERVATION) & observations["vm"].notna(),
                            ["vm", "event_id", "scale_set"]].drop_duplicates()  # on categories: cheap
    return pd.DataFrame({"vm": seen["vm"].astype(str), "event_id": seen["event_id"].astype("string"),
                         "scale_set": seen["scale_set"].astype("string")}).reset_index(drop=True)


def sets_from_evidence(evidence: pd.DataFrame) -> Dict[str, str]:
    """{vm: its set's label} from set_evidence rows (see vm_sets)."""
    union = _Union()
    vms, vm_codes = _codes(evidence["vm"])
    for vm in vms:
        union.find(vm)
    seen = evidence["event_id"].notna().to_numpy(dtype=bool)
    pairs = pd.DataFrame({"event": pd.factorize(evidence["event_id"][seen])[0], "vm": vm_codes[seen]})
    for members in pairs.drop_duplicates().groupby("event", sort=False)["vm"]:
        union.join(vms[code] for code in members[1])
    named = evidence.loc[evidence["scale_set"].notna() & (evidence["scale_set"] != ""), ["scale_set", "vm"]]
    scale_sets = dict((name, list(members)) for name, members
                      in named.astype(str).drop_duplicates().groupby("scale_set", sort=False)["vm"])
    for members in scale_sets.values():
        union.join(members)
    scale_set_of = dict((union.find(members[0]), name) for name, members in scale_sets.items())
    groups: Dict[str, List[str]] = {}
    for vm in union.parent:
        groups.setdefault(union.find(vm), []).append(vm)
    labels: Dict[str, str] = {}
    for root, members in groups.items():
        label = scale_set_of.get(root) or f"{min(members)}'s set"
        labels.update((vm, label) for vm in members)
    return labels
