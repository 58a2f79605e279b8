"""The control-node lock's judgement: a live holder refuses, a gone one is taken over, a reused pid is not
mistaken for the holder."""
from __future__ import annotations

import json
import os
import subprocess

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import DELETE
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.controller_lock import (
    Process,
    alive,
    give_back,
    process,
    take,
)

ME = Process(4242, "777", "ctl")
PATH = "/home/ops/.ansible/azure_imds_scheduled_events/run-azure_vms.lock"


def record(pid: int, started: str = "1", host: str = "ctl") -> str:
    return json.dumps({"pid": pid, "started": started, "host": host, "owner": "nightly cycle", "playbook": "cycle"})


def test_a_free_lock_is_taken_naming_this_process() -> None:
    written, refusal, note = take(None, ME, "manual run", "cycle", PATH)
    assert refusal is None and note is None
    assert json.loads(written) == {"pid": 4242, "started": "777", "host": "ctl", "owner": "manual run",
                                   "playbook": "cycle"}


def test_a_live_holder_refuses_with_one_sentence_naming_it() -> None:
    written, refusal, _note = take(record(99), ME, "manual run", "cycle", PATH, is_alive=lambda p: True)
    assert written is None
    assert refusal.startswith("another run of this collection holds %s on this control node (nightly cycle, pid 99 "
                              "on ctl, playbook cycle); this run stops before it touches any VM." % PATH)
    assert refusal.endswith(".") and "\n" not in refusal


def test_a_gone_holder_is_taken_over_with_a_note() -> None:
    written, refusal, note = take(record(99), ME, "manual run", "cycle", PATH, is_alive=lambda p: False)
    assert refusal is None and json.loads(written)["pid"] == 4242 and "from a run that has ended (pid 99)" in note


def test_a_lock_from_another_machine_counts_as_alive() -> None:
    """A shared home directory: that machine's pid cannot be judged from here."""
    written, refusal, _note = take(record(99, host="other"), ME, "", "cycle", PATH, is_alive=lambda p: False)
    assert written is None and "pid 99 on other" in refusal


def test_a_reused_pid_is_not_this_run() -> None:
    """Same pid, other start time (a container's pid 1, or a reused pid): not this run's lock."""
    assert give_back(record(4242, started="1"), ME) is None
    written, refusal, note = take(record(4242, started="1"), ME, "", "cycle", PATH, is_alive=lambda p: False)
    assert refusal is None and "has ended" in note
    _written, refusal, _note = take(record(4242, started="1"), ME, "", "cycle", PATH, is_alive=lambda p: True)
    assert refusal is not None


def test_a_torn_lock_is_replaced() -> None:
    for text in ("", "{", json.dumps({"pid": "x"}), "[]"):
        written, refusal, _note = take(text, ME, "", "cycle", PATH, is_alive=lambda p: True)
        assert refusal is None and json.loads(written)["pid"] == 4242


def test_only_the_holder_gives_it_back() -> None:
    assert give_back(record(4242, started="777"), ME) is DELETE
    assert give_back(record(99), ME) is None and give_back(None, ME) is None


def test_liveness_of_real_processes() -> None:
    assert alive(process(os.getpid()))
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert not alive(Process(ended.pid, ""))
    me = process(os.getpid())
    if me.started:  # Linux: a reused pid has another start time
        assert not alive(Process(me.pid, str(int(me.started) + 1)))
