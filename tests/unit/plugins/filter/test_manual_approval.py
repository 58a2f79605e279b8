"""plugins/filter/manual_approval.py: the approve playbook's plan from each target host's read, and a bad request
as one sentence (the plan's own rules: tests/unit/plugins/module_utils/document/test_approval.py)."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.filter.manual_approval import approval_plan
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import NO_MANUAL_IDS

A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"


def read(*ids: str) -> dict:
    return {"approve_query": {"events_for_this_vm": [{"event_id": i} for i in ids]}}


def test_each_id_is_sent_by_the_first_host_whose_read_lists_it() -> None:
    hostvars = {"vm0": read(A), "vm1": read(A, B), "vm2": {}}
    plan = approval_plan([A, B], ["vm0", "vm1", "vm2"], hostvars)
    assert plan["by_host"] == {"vm0": [A], "vm1": [B], "vm2": []} and plan["unlisted"] == []


def test_a_host_that_could_not_be_read_lists_nothing() -> None:
    plan = approval_plan([A], ["vm0"], {"vm0": {"approve_query": {"failed": True}}})
    assert plan["unlisted"] == [A] and plan["by_host"] == {"vm0": []}


def test_a_bad_request_is_one_sentence() -> None:
    with pytest.raises(AnsibleFilterError) as raised:
        approval_plan(" , ", ["vm0"], {"vm0": read(A)})
    assert str(raised.value) == NO_MANUAL_IDS
