"""The file store (plugin_utils/store/files.py): the files where the collection has always kept them."""
from __future__ import annotations

from pathlib import Path

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import open_store
from tests.unit.plugins.plugin_utils.store.test_interface import exercise


def test_the_default_file_store_keeps_the_files_where_the_collection_always_has(tmp_path: Path) -> None:
    store = open_store("file:", str(tmp_path / "cp"), lambda target: str(tmp_path / ("vms-%s.json" % target)))
    exercise(store)
    assert (tmp_path / "cp" / "web0" / "state.json").read_text() == '{"version": 1}\n'
    assert (tmp_path / "vms-azure_vms.json").read_text() == "a"
