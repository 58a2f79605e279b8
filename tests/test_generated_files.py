"""Generated files stay in step with their generators."""
from __future__ import annotations


def test_the_analysis_package_carries_the_collections_record_builders() -> None:
    from tools import copy_history_records

    assert copy_history_records.TARGET.read_text() == copy_history_records.render(), (
        "event_analysis/loading/history_records.py differs from plugins/module_utils/observation/history_records.py: edit the "
        "collection's file and run python tools/copy_history_records.py")
