# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inventory hosts a control-plane event is about; pure, no I/O.

An event's Resources list VM names (as in IMDS), and its scope (notifications.scope_of) names the subscription
and resource group they live in; an inventory host is known by its VM's ARM id (the azure_rm inventory's `id`
host variable). A name that matches no host, or more than one, is returned as such, never guessed: the caller
counts it as busy (fail closed), so an event the run cannot place on its hosts holds back what it would touch.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_VM_ID = re.compile(
    r"^/subscriptions/(?P<subscription>[^/]+)/resourcegroups/(?P<resource_group>[^/]+)/providers/microsoft\.compute/"
    r"(?:virtualmachines/(?P<vm>[^/]+)|virtualmachinescalesets/(?P<set>[^/]+)/virtualmachines/(?P<instance>[^/]+))$",
    re.IGNORECASE)


class HostMapError(ValueError):
    """A host identity that cannot be used. The message is one sentence naming the cause."""


def vm_key(subscription, resource_group, name):
    return (subscription.lower(), resource_group.lower(), name.lower())


def identity_of(host, arm_id):
    """A host's VM ARM id -> its key (subscription, resource group, the name Resources lists it by), lower case."""
    return vm_key(*vm_of(host, arm_id))


def vm_of(host, arm_id):
    """A host's VM ARM id -> (subscription, resource group, VM name) as the id spells them. A uniform scale set's
    instance (.../virtualMachineScaleSets/<set>/virtualMachines/<n>) is listed as <set>_<n>."""
    match = _VM_ID.match(arm_id) if isinstance(arm_id, str) else None
    if not match:
        raise HostMapError("Host %s has id %r, which is not a VM's ARM id (/subscriptions/.../resourceGroups/.../"
                           "providers/Microsoft.Compute/virtualMachines/<name>)." % (host, arm_id))
    name = match.group("vm") or "%s_%s" % (match.group("set"), match.group("instance"))
    return match.group("subscription"), match.group("resource_group"), name


def scale_set_of(arm_id):
    """The uniform scale set a VM ARM id names its instance in, or ''."""
    match = _VM_ID.match(arm_id) if isinstance(arm_id, str) else None
    return (match.group("set") or "") if match else ""


def host_index(vm_ids):
    """{host: VM ARM id} -> {key: [hosts]} (more than one host on a key is kept: it makes the key ambiguous)."""
    index = {}
    for host in sorted(vm_ids):
        index.setdefault(identity_of(host, vm_ids[host]), []).append(host)
    return index


def hosts_of(sighting, index):
    """-> {"hosts": [hosts the event lists], "unmapped": [names no host is], "ambiguous": {name: [hosts]}}."""
    scope = sighting["scope"]
    placed = {"hosts": [], "unmapped": [], "ambiguous": {}}
    for name in sighting["event"]["resources"]:
        found = index.get(vm_key(scope["subscription"], scope["resource_group"], name.lstrip("_")), [])
        if len(found) == 1:
            placed["hosts"].append(found[0])
        elif found:
            placed["ambiguous"][name] = list(found)
        else:
            placed["unmapped"].append(name)
    return placed
