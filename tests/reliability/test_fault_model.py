"""The whole-system fault model (tests/reliability/fault_model.py) over seeded fleet-days: 0 violations.

`make check` runs a slice (FAULT_MODEL_EXAMPLES=1: 27 fleet-days); `make invariants` runs at least 10,000
fleet-days through tools/fault_model_run.py; `make invariant-mutants` shows that each safety fix, reverted,
is caught here.
"""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.reliability.fault_model import FAULTS, FLEETS, simulate

EXAMPLES = int(os.environ.get("FAULT_MODEL_EXAMPLES", "1"))


@pytest.mark.parametrize("fleet", sorted(FLEETS))
@pytest.mark.parametrize("faults", sorted(FAULTS))
@pytest.mark.parametrize("period_s", [30, 60, 300])
# No shrinking: a failing fleet-day is reported as drawn (its seed reproduces it).
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
          database=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 2**31 - 1))
def test_what_happened_to_the_vms_keeps_every_safety_rule(seed: int, fleet: str, faults: str, period_s: int) -> None:
    run = simulate(seed, FAULTS[faults], period_s, fleet=fleet)
    assert run.verdict.problems == [], f"seed {seed}: " + json.dumps(run.verdict.problems[:8], indent=1, default=str)
    assert run.ledger.drains and run.ledger.undrains and run.verdict.approvals, "the scenario exercised the cycle"
    if faults != "none":
        assert run.cycles and (run.verdict.kills or FAULTS[faults].kill == 0)
