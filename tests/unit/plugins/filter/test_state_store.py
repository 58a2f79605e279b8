"""state_store_refusal: the role's AWX refusal, with the controller's own home."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.filter.state_store import state_store_refusal


def test_an_awx_job_is_refused_the_default_store_under_its_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/runner")
    default = ("~/.ansible/azure_imds_scheduled_events/control_plane", "~/.ansible/azure_imds_scheduled_events/vms.json")
    refusal = state_store_refusal("file:", 7, *default)
    assert refusal.startswith("This run is AWX job 7 and keeps its state store under the job's home (/runner/.ansible/")
    assert state_store_refusal("file:", None, *default) == "" and state_store_refusal("file:", "", *default) == ""
    assert state_store_refusal("postgresql://awx-postgres/se", 7, *default) == ""
