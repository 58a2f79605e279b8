"""The relay's files on the VM (relay/program.py's Spool and History), in-process on a temporary folder."""
from __future__ import annotations

import json
from pathlib import Path

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program import History, Spool

CHANGE = {"version": 1, "kind": "change", "host": "vm0", "quiet": False}
BEAT = {"version": 1, "kind": "heartbeat", "host": "vm0", "quiet": True}


def test_a_heartbeat_never_takes_a_sequence_number_while_a_change_waits(tmp_path: Path) -> None:
    """Regression: a heartbeat stamped after a change and sent before it made the controller drop the change."""
    spool = Spool(str(tmp_path), 100)
    spool.add(CHANGE)
    assert spool.heartbeat(BEAT) is None
    spool.remove(spool.oldest()["seq"])
    beat = spool.heartbeat(BEAT)
    assert beat is not None and beat["seq"] == 2


def test_sequence_numbers_go_on_after_a_restart_and_a_damaged_counter_starts_a_new_spool_id(tmp_path: Path) -> None:
    first = Spool(str(tmp_path), 100)
    first.add(CHANGE)
    again = Spool(str(tmp_path), 100)
    assert again.relay_id == first.relay_id and again.next_seq == 2
    (tmp_path / "last_seq").write_text("garbage")
    damaged = Spool(str(tmp_path), 100)
    assert damaged.relay_id != first.relay_id, "an untrusted counter must not reuse numbers under the same id"


def test_a_full_spool_keeps_the_newest_pushes(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path), 3)
    for n in range(5):
        spool.add(dict(CHANGE, n=n))
    assert spool.seqs() == [3, 4, 5] and spool.dropped == 2
    assert spool.oldest()["n"] == 2


def test_temporary_files_of_interrupted_writes_are_cleared(tmp_path: Path) -> None:
    Spool(str(tmp_path), 10)
    (tmp_path / "spool" / ".lock-abc").write_text("half")
    Spool(str(tmp_path), 10)
    assert not list((tmp_path / "spool").glob(".lock-*"))


def test_history_rotates_once_at_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = History(str(path), 200)
    for n in range(10):
        history.append({"n": n, "pad": "x" * 50})
    assert path.stat().st_size <= 200 and (tmp_path / "history.jsonl.1").stat().st_size <= 200
    assert json.loads(path.read_text().splitlines()[-1])["n"] == 9
