"""The fault model's kinds of fleet-day for the deployments of issue 43 (tests/reliability/fault_model_deployments.py):
each keeps every safety rule, and each exercises what it is about. One fleet-day of each (`make invariants` runs
many; `make invariant-mutants` shows each reverted fix caught there): outside `make check`, whose slice of the fault
model stays at its cost."""
from __future__ import annotations

import json

from tests.reliability.fault_model import FAULTS
from tests.reliability.fault_model_control_plane import CONTROL_PLANE_FAULTS
from tests.reliability.fault_model_deployments import (
    per_group_run,
    reset_disk_run,
    spot_restart_run,
    two_controllers_run,
)

FAULTY = "everything fails sometimes"


def problems(run: object) -> str:
    return json.dumps(run.verdict.problems[:8], indent=1, default=str)  # type: ignore[attr-defined]


def test_hosts_of_two_groups_with_different_settings_are_refused_before_anything_is_done() -> None:
    run = per_group_run(3, FAULTS[FAULTY], 300, hours=8.0)
    assert run.verdict.problems == [], problems(run)
    assert run.refusals and not run.ledger.drains and not run.verdict.approvals, "every run refused before it acted"


def test_a_vm_whose_state_is_on_an_ephemeral_os_disk_counts_as_busy() -> None:
    run = reset_disk_run(3, FAULTS[FAULTY], 300)
    assert run.verdict.problems == [], problems(run)
    assert run.disk_refusals and run.ledger.drains, "its reads were refused, the other VMs drained"
    assert run.reset_for, "Redeploys moved VMs (an ephemeral disk's state would be gone)"


def test_two_controllers_acting_on_the_same_vms_through_one_store_keep_every_safety_rule() -> None:
    given, back = CONTROL_PLANE_FAULTS[FAULTY]
    run = two_controllers_run(3, given, back, 60, hours=8.0)
    assert run.verdict.problems == [], problems(run)
    assert run.side_by_side and run.acknowledged and run.ledger.drains and run.ledger.undrains


def test_a_control_plane_spot_vm_started_again_after_its_eviction_has_its_drain_undone() -> None:
    """Regression: seed 2 of two sets left avset-web-a-vm0 drained for good on 45dd74c (check_present)."""
    given, back = CONTROL_PLANE_FAULTS[FAULTY]
    run = spot_restart_run(2, given, back, 60, fleet="two sets")
    assert run.verdict.problems == [], problems(run)
    assert run.restarted, "a Spot VM was started again while Resource Graph still showed its eviction"
