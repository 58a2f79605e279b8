"""control_node_path: one naming rule for the control node's files per target; a target never escapes the folder."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.filter.control_node import control_node_path


def test_a_plain_target_keeps_its_name() -> None:
    assert control_node_path("azure_vms", "run", ".lock") == "~/.ansible/azure_imds_scheduled_events/run-azure_vms.lock"


def test_patterns_and_paths_become_one_safe_file_name() -> None:
    path = control_node_path("web:&db/../x y", "vms", ".json")
    assert path == "~/.ansible/azure_imds_scheduled_events/vms-web_db_.._x_y.json"
    assert "/" not in path.rsplit("/", 1)[1] and " " not in path
