"""Generated files stay in step with their generators."""
from __future__ import annotations

from pathlib import Path

from tools.make_watch_playbook import TARGET, render


def test_watch_playbook_is_what_its_generator_writes() -> None:
    text = Path(TARGET).read_text()
    rounds = text.count("\n- *round") + 1
    assert rounds >= 100, "a watch needs many rounds"
    assert text == render(rounds), "playbooks/watch.yml was edited by hand: edit tools/make_watch_playbook.py and rerun it"


def test_the_analysis_package_carries_the_collections_record_builders() -> None:
    from tools import copy_history_records

    assert copy_history_records.TARGET.read_text() == copy_history_records.render(), (
        "event_analysis/loading/history_records.py differs from plugins/module_utils/observation/history_records.py: edit the "
        "collection's file and run python tools/copy_history_records.py")
