"""An ansible-rulebook event filter: an Event Grid scheduled-event notification (as azure.azcollection's
azure_service_bus source delivers it, in `body`) -> the hosts a maintenance cycle should look at."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

# ansible-rulebook loads this file by path: the collection's own module_utils are found from here
# (<root>/ansible_collections/azure_imds/scheduled_events/extensions/eda/plugins/event_filter/this.py).
_COLLECTIONS_ROOT = str(Path(__file__).resolve().parents[7])
if _COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, _COLLECTIONS_ROOT)

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import (  # noqa: E402
    HostMapError,
    host_index,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.wake_up import (  # noqa: E402
    hosts_to_wake,
)

DOCUMENTATION = r"""
---
short_description: Turn an Event Grid scheduled-event notification into the hosts a maintenance cycle looks at.
description:
  - For the C(scheduled_events_event_grid) rulebook. Reads the C(body) of an event from
    C(azure.azcollection.azure_service_bus) (an Event Grid C(ScheduledEventEmitted) notification routed to a
    Service Bus queue), places the VMs it lists on inventory hosts by their ARM ids, and sets
    C(event.scheduled_events) (C(hosts), C(listed), C(event_id), C(event_status), C(reason)) and
    C(event.meta.hosts), which leaves the rule's cycle on its whole target.
  - A notification only widens what a cycle looks at; the cycle reads each host itself. So the cycle covers every
    host of its target, not only the C(listed) ones nor only those of O(vm_ids_file), since the fault-domain limit
    needs every host that may still owe a recover, and a notification does not say which. C(hosts) names the
    expected ones, for the log. A repeated delivery (the same Event Grid id) and events of
    other types are left without C(scheduled_events), so no rule fires for them.
options:
  vm_ids_file:
    description:
      - A YAML or JSON file of inventory host name -> the ARM id of its VM (the C(azure_rm) inventory's C(id)
        host variable gives them); a relative path is from the directory ansible-rulebook runs in.
      - ansible-rulebook does not template a filter's arguments, so the shipped rulebook relies on this default.
    type: str
    default: vm_ids.yml
  expected_hosts:
    description: The hosts each notification's cycle looks at; by default every host of O(vm_ids_file).
    type: list
    elements: str
"""

EXAMPLES = r"""
- azure.azcollection.azure_service_bus:
    conn_str: "{{ service_bus_connection_string }}"
    queue_name: "{{ service_bus_queue }}"
  filters:
    - azure_imds.scheduled_events.event_grid_hosts:
        vm_ids_file: /etc/ansible/maintenance/vm_ids.yml
"""

LOGGER = logging.getLogger(__name__)
_SEEN: List[str] = []
_LOADED: Dict[Tuple[str, float], Tuple[Dict[str, str], Dict[Any, List[str]]]] = {}


def main(event: Dict[str, Any], vm_ids_file: str = "vm_ids.yml", expected_hosts: Optional[List[str]] = None) -> Dict[str, Any]:
    vm_ids, index = _hosts_file(vm_ids_file)
    woken = hosts_to_wake(event.get("body"), index, expected_hosts or sorted(vm_ids), _SEEN)
    if woken is None:
        return event
    LOGGER.info("%s", woken["reason"])
    event["scheduled_events"] = dict(woken, source="event_grid", leave_alone=[])
    # The cycle covers the whole target, not only vm_ids.yml's hosts: a host missing from the file (an IMDS host of a
    # mixed target, a VM added to the inventory since) may still be drained, which the fault-domain limit must count.
    # localhost: the cycle has plays there.
    event.setdefault("meta", {})["hosts"] = ["all", "localhost"]
    return event


def _hosts_file(path: str) -> Tuple[Dict[str, str], Dict[Any, List[str]]]:
    """The file's hosts and their index, read and built once per version of the file (not once per event)."""
    file = Path(path)
    key = (path, file.stat().st_mtime if file.exists() else 0.0)
    if key not in _LOADED:
        try:
            loaded = yaml.safe_load(file.read_text())  # JSON is YAML too
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"vm_ids_file {path} cannot be read: {exc}") from None
        if not isinstance(loaded, dict) or not loaded:
            raise ValueError(f"vm_ids_file {path} must map inventory host names to their VMs' ARM ids.")
        vm_ids = {str(h): str(i) for h, i in loaded.items()}
        try:
            _LOADED[key] = (vm_ids, host_index(vm_ids))
        except HostMapError as exc:
            raise ValueError(f"vm_ids_file {path}: {exc}") from None
    return _LOADED[key]
