"""The modules driven from pytest through pytest-ansible's `ansible_adhoc` fixture.

pytest-ansible is deprecated upstream, so it is confined to this file: the rest
of the suite runs ansible-playbook as users do.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable


from tests.modules.harness import FQCN, LiveFleet


def hosts_for(ansible_adhoc: Callable[..., Any], fleet: LiveFleet, tmp_path: Path) -> Any:
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("".join(
        f"{vm} ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        for vm in fleet.vms))
    return ansible_adhoc(inventory=str(inventory), host_pattern="all")


def module(dispatcher: Any, name: str) -> Callable[..., Any]:
    return getattr(dispatcher, f"{FQCN}.{name}")


def test_info_on_every_vm_matches_the_simulator(ansible_adhoc: Callable[..., Any], fleet: LiveFleet,
                                                tmp_path: Path) -> None:
    truth = fleet.truth()[0]
    hosts = hosts_for(ansible_adhoc, fleet, tmp_path)
    for vm in fleet.vms:  # ad-hoc arguments are not templated, so each host gets its URL here
        result = module(hosts[vm], "scheduled_events_info")(imds_url=fleet.url(vm))[vm]
        assert not result.get("failed"), result
        assert [e["event_id"] for e in result["events"]] == [truth["event_id"]]
        assert result["events"][0]["affects_this_vm"] is (vm in truth["resources"])


def test_approve_from_the_leader_through_pytest_ansible(ansible_adhoc: Callable[..., Any], fleet: LiveFleet,
                                                       tmp_path: Path) -> None:
    # Not check mode: pytest-ansible 26 accepts a check option but never applies it to the play
    # (an approval was really sent when we tried), so check mode is tested with ansible-playbook.
    truth = fleet.truth()[0]
    hosts = hosts_for(ansible_adhoc, fleet, tmp_path)
    leader = truth["resources"][0]
    approve = module(hosts[leader], "scheduled_events_approve")
    result = approve(imds_url=fleet.url(leader), event_ids=[truth["event_id"]], wait_for_start=True,
                     poll_interval=0.2)[leader]
    assert result["changed"] is True and result["started"] == [truth["event_id"]]
    (entry,) = fleet.approvals()
    assert (entry["vm"], entry["event_ids"]) == (leader, [truth["event_id"]])
