"""An event's VMs placed on inventory hosts by their ARM ids; what matches no host, or two, is said, never guessed."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import (
    HostMapError,
    host_index,
    hosts_of,
    identity_of,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    from_event_grid,
)

from .payloads import SUBSCRIPTION, event_grid

GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Compute"


def test_uniform_instances_and_plain_vms_are_known_by_the_name_resources_lists() -> None:
    assert identity_of("h", f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/1") == (SUBSCRIPTION, "rg-web", "web_1")
    assert identity_of("h", f"{GROUP}/virtualMachines/Web-VM0".lower()) == (SUBSCRIPTION, "rg-web", "web-vm0")


def test_listed_vms_map_to_their_hosts_and_the_rest_is_said() -> None:
    index = host_index({"web1": f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/1",
                        "web2.example": f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/2",
                        "web2.copy": f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/2"})
    sighting = from_event_grid(event_grid(resources=["web_1", "web_2", "web_3"]))
    assert hosts_of(sighting, index) == {"hosts": ["web1"], "unmapped": ["web_3"],
                                         "ambiguous": {"web_2": ["web2.copy", "web2.example"]}}


def test_a_vm_of_another_resource_group_is_not_the_same_vm() -> None:
    index = host_index({"other": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-other/providers/Microsoft.Compute"
                                 "/virtualMachineScaleSets/web/virtualMachines/1"})
    assert hosts_of(from_event_grid(event_grid(resources=["web_1"])), index)["unmapped"] == ["web_1"]


def test_a_host_without_a_vm_id_is_refused_in_one_sentence() -> None:
    with pytest.raises(HostMapError, match=r"^Host db1 has id '/subscriptions/s', which is not a VM's ARM id"):
        host_index({"db1": "/subscriptions/s"})
