"""The fault-domain rule (module_utils/cycle/fault_domains.py) on its own: which domains are in maintenance, and
whether an event may join them. The plan's use of it, event by event, is in test_plan.py."""
from __future__ import annotations

from typing import Any, Dict, Optional, Set

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.fault_domains import (
    admission,
    busy_fault_domains,
    unseen_needed,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import UNSEEN_DOMAIN, host_views
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import resource_name

LATE_AFTER = 480  # prepare_anyway_seconds
FAR, NEAR = 900, 60  # seconds to NotBefore


def verdict(needed: Set[str], busy: Set[str], certain: Set[str] = frozenset(), own: Set[str] = frozenset(),
            limit: int = 1, seconds_left: Optional[float] = FAR) -> str:
    return admission(set(needed), dict((d, "why") for d in busy), set(certain), set(own), limit, seconds_left,
                     LATE_AFTER)


def test_an_event_with_nothing_in_maintenance_is_admitted() -> None:
    assert verdict({"fd0"}, set()) == "admitted"


def test_an_event_joining_a_domain_surely_in_maintenance_is_admitted_whatever_the_limit() -> None:
    assert verdict({"fd0"}, {"fd0", "fd1"}, certain={"fd0", "fd1"}) == "admitted"


def test_an_event_bringing_a_new_domain_over_the_limit_waits_until_its_not_before_is_near() -> None:
    assert verdict({"fd1"}, {"fd0"}, certain={"fd0"}, seconds_left=FAR) == "deferred"
    assert verdict({"fd1"}, {"fd0"}, certain={"fd0"}, seconds_left=NEAR) == "late"
    assert verdict({"fd1"}, {"fd0"}, certain={"fd0"}, limit=2) == "admitted"


def test_a_domain_only_maybe_in_maintenance_blocks_others_but_licenses_no_join_beyond_the_limit() -> None:
    assert verdict({"fd1"}, {"fd0"}) == "deferred", "a Started event or an unread host: busy"
    assert verdict({"fd0", "fd1"}, {"fd0"}) == "deferred", "joining fd0 is not sure, and fd1 would be one more"


def test_an_event_spanning_beyond_the_limit_goes_whole_only_beside_its_own_holds() -> None:
    """Azure takes its domains together anyway; but another event's hold is something else in maintenance."""
    assert verdict({"fd0", "fd1"}, set()) == "admitted"
    assert verdict({"fd0", "fd1"}, {"fd0"}, own={"fd0"}) == "admitted", "its own begun prepare"
    assert verdict({"fd0", "fd1"}, {"fd2"}, own=set()) == "deferred"
    assert verdict({"fd0", "fd1"}, {"fd0"}, own=set()) == "deferred", "fd0 held by another event"


def read(vm: str, fault_domain: int, events: list, state: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    return {"result": {"events": events, "document_available": True, "document_incarnation": 1, "state": state,
                       "this_vm": {"name": vm, "fault_domain": fault_domain, "zone": "", "vm_scale_set_name": ""}},
            "availability_set": "as1"}


def started(resources: list) -> Dict[str, Any]:
    return {"event_id": "E1", "event_type": "Reboot", "event_status": "Started", "resources": resources,
            "not_before": None, "event_source": "Platform", "duration_in_seconds": -1, "description": "",
            "known_type": True, "known_status": True}


def busy_of(hosts: Dict[str, Any], outside_is_free: bool = False):
    views = host_views(hosts)
    by_vm = dict((resource_name(v["vm_name"]), h) for h, v in views.items())
    return busy_fault_domains(views, by_vm, outside_is_free)


def test_a_started_event_holds_the_domains_of_the_vms_it_lists_but_surely_none() -> None:
    busy, doubtful, _holders = busy_of({"vm0": read("vm0", 0, [started(["vm0"])]), "vm1": read("vm1", 1, [])})
    assert set(busy) == {"availability set as1 / fault domain 0"} and doubtful == set(busy)


def test_an_unread_host_holds_its_last_known_domain() -> None:
    hosts = {"vm0": {"result": {"failed": True}, "availability_set": "as1",
                     "last_vm": {"name": "vm0", "fault_domain": 2}}}
    busy, doubtful, holders = busy_of(hosts)
    assert set(busy) == {"availability set as1 / fault domain 2"} == doubtful
    assert holders["availability set as1 / fault domain 2"] == {"HOST VM0"}


@pytest.mark.parametrize("outside_is_free, held", [(False, {UNSEEN_DOMAIN}), (True, set())])
def test_a_vm_outside_the_run_in_an_event_holds_the_unseen_domain(outside_is_free: bool, held: Set[str]) -> None:
    busy, _doubtful, _holders = busy_of({"vm0": read("vm0", 0, [started(["vm9"])])}, outside_is_free)
    assert set(busy) == {UNSEEN_DOMAIN}, "Started: in maintenance, whoever's VM it is"
    scheduled = dict(started(["vm9"]), event_status="Scheduled")
    busy, _doubtful, _holders = busy_of({"vm0": read("vm0", 0, [scheduled])}, outside_is_free)
    assert set(busy) == held, "Scheduled: another run may be preparing vm9"
    assert unseen_needed(scheduled, {"vm0": "vm0"}, {"approve_outside_inventory": outside_is_free}) == held
