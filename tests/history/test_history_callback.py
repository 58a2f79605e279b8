"""The history-capture callback, enabled in real ansible-playbook runs against the in-process simulator. How lines are
appended (whole, locked, a torn line ended) is observation/history_file.py's: tests/unit/plugins/module_utils/observation."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.callback import scheduled_events_history as plugin
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation import history_file
from tests.modules.harness import FQCN, LiveFleet, approve, info, leader_approves, play
from tests.history.history_helpers import (
    assert_valid,
    capture_env,
    expected_vm,
    read_history,
    schema_errors,
    served,
    start_playbook,
)
from tests.processes import kill_leftovers

pytestmark = pytest.mark.live


def test_every_hosts_observation_is_written_as_served(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "new" / "dirs" / "history.jsonl"  # parents are created
    run = play(tmp_path, fleet, [("read", info())], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    history = read_history(path)
    assert history.bad_lines == [] and history.ends_with_newline
    assert_valid(history)
    assert sorted(r["host"] for r in history.records) == sorted(fleet.vms)
    assert "scheduled_events_history" not in run.stdout + run.stderr
    for vm in fleet.vms:
        (line,) = history.of_host(vm)
        last = served(fleet, vm)[-1]
        assert line["events"] == last["document"]["Events"] and line["events"]  # exactly as served, not normalised
        assert line["document_incarnation"] == last["incarnation"] == run.of(vm, "read")["document_incarnation"]
        assert line["observed_at"] == run.of(vm, "read")["observed_at"]
        assert line["vm"] == expected_vm(fleet, vm)
        assert "record" not in line
    for raw_line in path.read_text(encoding="utf-8").splitlines():  # compact JSON
        assert raw_line == json.dumps(json.loads(raw_line), separators=(",", ":"), ensure_ascii=False)


def test_each_loop_item_is_one_observation(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    hosts = ["avset-web-vm0", "avset-web-vm4"]
    run = play(tmp_path, fleet, [("read", dict(info(), loop=[1, 2, 3]))], hosts=hosts, env=capture_env(path))
    assert run.returncode == 0, run.stdout
    history = read_history(path)
    assert len(history.lines) == 6 and history.bad_lines == []
    assert_valid(history)
    for vm in hosts:
        lines = history.of_host(vm)
        items = run.of(vm, "read")["results"]
        assert [r["observed_at"] for r in lines] == [i["observed_at"] for i in items]
        assert [r["events"] for r in lines] == [s["document"]["Events"] for s in served(fleet, vm)[-3:]]


def test_an_approval_writes_one_approval_record(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    truth = fleet.truth()[0]
    leader, other = truth["resources"]
    run = play(tmp_path, fleet, [
        ("read", info()),
        leader_approves(leader),
    ], hosts=[leader, other], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    assert len(fleet.approvals()) == 1
    history = read_history(path)
    assert_valid(history)
    (record,) = history.approvals
    assert record["host"] == leader and record["event_ids"] == [truth["event_id"]]
    assert record["results"] == {truth["event_id"]: "approved"}
    assert record["vm"] == expected_vm(fleet, leader)  # known from the read earlier in the run
    assert history.records[-1] == record and len(history.observations) == 2
    assert record["observed_at"] >= max(r["observed_at"] for r in history.observations)


def test_approval_seen_starting_is_recorded_as_started_and_without_vm_when_unknown(tmp_path: Path,
                                                                                   answering_fleet: LiveFleet) -> None:
    fleet = answering_fleet
    path = tmp_path / "history.jsonl"
    truth = fleet.truth()[0]
    leader = truth["resources"][0]
    run = play(tmp_path, fleet, [("approve", approve(event_ids=[truth["event_id"]], wait_for_start=True,
                                                     poll_interval=0.2, wait_timeout=20))],
               hosts=[leader], env=capture_env(path))
    assert run.of(leader, "approve")["started"] == [truth["event_id"]], run.stdout
    (record,) = read_history(path).records
    assert schema_errors(record) == []
    assert record["results"] == {truth["event_id"]: "started"} and "vm" not in record


def test_check_mode_writes_no_approval_record(tmp_path: Path) -> None:
    # Time scale 3: the notice (5 minutes) outlasts the three runs, the last of which approves, by minutes
    fleet = LiveFleet("platform-maintenance", time_scale=3.0)
    try:
        fleet.wait_for_events()
        _check_mode_runs(tmp_path, fleet)
    finally:
        fleet.close()


def _check_mode_runs(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    leader = fleet.truth()[0]["resources"][0]
    tasks = [("read", info()), ("approve", approve(events="{{ r_read.events_for_this_vm }}"))]
    run = play(tmp_path, fleet, tasks, hosts=[leader], check=True, env=capture_env(path))
    assert run.returncode == 0 and run.of(leader, "approve")["approved"] != [], run.stdout
    history = read_history(path)
    assert history.approvals == [] and len(history.observations) == 1  # reads are real in check mode too
    assert fleet.approvals() == []

    forced_check = [("read", info()), ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}"), check_mode=True))]
    play(tmp_path, fleet, forced_check, hosts=[leader], env=capture_env(path))
    assert read_history(path).approvals == [] and fleet.approvals() == []

    # check_mode: false on the task sends the approval even under --check, so it is recorded
    real = [("read", info()), ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}"), check_mode=False))]
    run = play(tmp_path, fleet, real, hosts=[leader], check=True, env=capture_env(path))
    assert len(fleet.approvals()) == 1, run.stdout
    (record,) = read_history(path).approvals
    assert record["event_ids"] == fleet.approvals()[0]["event_ids"]


def test_empty_body_is_null_incarnation_and_a_failed_read_writes_nothing(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    fleet.fault("avset-web-vm0", {"kind": "empty_body"})
    fleet.fault("avset-web-vm1", {"kind": "status", "status": 503, "count": -1})
    run = play(tmp_path, fleet, [("read", info(retries=0))], hosts=["avset-web-vm0", "avset-web-vm1", "avset-web-vm2"],
               env=capture_env(path))
    assert run.of("avset-web-vm0", "read")["document_available"] is False
    assert run.of("avset-web-vm1", "read")["failed"] is True
    history = read_history(path)
    assert_valid(history)
    assert sorted(r["host"] for r in history.records) == ["avset-web-vm0", "avset-web-vm2"]
    assert "scheduled_events_history" not in run.stdout + run.stderr  # skipped quietly, not by an error
    (empty,) = history.of_host("avset-web-vm0")
    assert empty["document_incarnation"] is None and empty["events"] == []
    assert empty["vm"] == expected_vm(fleet, "avset-web-vm0")
    assert history.of_host("avset-web-vm2")[0]["events"] != []


def test_failed_when_and_until_attempts_are_observations(tmp_path: Path, fleet: LiveFleet) -> None:
    """A document that was read is recorded even when a condition marks the task failed; each until attempt counts."""
    path = tmp_path / "history.jsonl"
    run = play(tmp_path, fleet, [
        ("judged", dict(info(), failed_when="r_judged.document_incarnation is number")),
        ("polled", dict(info(), until="false", retries=2, delay=0)),
    ], hosts=["avset-web-vm2"], env=capture_env(path))
    assert run.of("avset-web-vm2", "judged")["failed"] and run.of("avset-web-vm2", "polled")["failed"], run.stdout
    history = read_history(path)
    assert_valid(history)
    assert len(history.of_host("avset-web-vm2")) == 1 + 3  # one read, then three attempts


def test_partial_vm_facts_give_a_complete_vm_object(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    run = play(tmp_path, fleet, [("anonymous", info(include_instance=False)),
                                 ("named", info(include_instance=False, resource_name="AVSET-WEB-VM3"))],
               hosts=["avset-web-vm3"], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    history = read_history(path)
    assert_valid(history)
    anonymous, named = history.records
    empty = {"resource_id": "", "vm_scale_set_name": "", "fault_domain": None, "update_domain": None, "zone": "",
             "location": ""}
    assert anonymous["vm"] == dict(empty, name="avset-web-vm3")
    assert named["vm"] == dict(empty, name="AVSET-WEB-VM3")


def test_a_delegated_read_is_recorded_for_the_vm_that_polled(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    task = dict(info(imds_url="{{ hostvars[item].imds_url }}"), delegate_to="{{ item }}", run_once=True,
                loop="{{ groups['all'] }}")
    run = play(tmp_path, fleet, [("read", task)], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    history = read_history(path)
    assert_valid(history)
    assert sorted(r["host"] for r in history.records) == sorted(fleet.vms)
    assert all(r["vm"]["name"] == r["host"] for r in history.records)


def test_short_action_names_are_captured(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    task = {"scheduled_events_info": {"imds_url": "{{ imds_url }}"}}
    run = play(tmp_path, fleet, [("read", dict(task, collections=[FQCN]))], hosts=["avset-web-vm5"], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    assert [r["host"] for r in read_history(path).records] == ["avset-web-vm5"]


def test_a_cycles_read_under_its_lock_is_an_observation_too(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    claim = {f"{FQCN}.scheduled_events_claim": {"imds_url": "{{ imds_url }}", "owner": "run a",
                                                "state_path": str(tmp_path / "{{ inventory_hostname }}.json")}}
    run = play(tmp_path, fleet, [("claim", claim)], hosts=["avset-web-vm1"], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    (line,) = read_history(path).records
    assert line["host"] == "avset-web-vm1" and line["observed_at"] == run.of("avset-web-vm1", "claim")["observed_at"]
    assert "lock" not in line, "the run's lock is not part of the observation schema"


def test_nothing_is_written_when_the_callback_is_not_enabled(tmp_path: Path, fleet: LiveFleet,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    path = tmp_path / "history.jsonl"
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"], env={"SCHEDULED_EVENTS_HISTORY_PATH": str(path)})
    assert run.returncode == 0 and not path.exists()


# ---- location ---------------------------------------------------------------------------------------


def _ini(tmp_path: Path, path: Path) -> Path:
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\ncallbacks_enabled = azure_imds.scheduled_events.scheduled_events_history\n\n"
                      f"[scheduled_events_history]\npath = {path}\n")
    return config


def test_ini_option_sets_the_path_and_the_environment_variable_wins(tmp_path: Path, fleet: LiveFleet,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCHEDULED_EVENTS_HISTORY_PATH", raising=False)
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    from_ini, from_env = tmp_path / "ini" / "history.jsonl", tmp_path / "env" / "history.jsonl"
    config = _ini(tmp_path, from_ini)
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"], env={"ANSIBLE_CONFIG": str(config)})
    assert run.returncode == 0, run.stdout
    assert [r["host"] for r in read_history(from_ini).records] == ["avset-web-vm0"]
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm1"],
               env={"ANSIBLE_CONFIG": str(config), "SCHEDULED_EVENTS_HISTORY_PATH": str(from_env)})
    assert run.returncode == 0, run.stdout
    assert [r["host"] for r in read_history(from_env).records] == ["avset-web-vm1"]
    assert len(read_history(from_ini).records) == 1  # the ini path was not written the second time


def test_default_path_is_under_the_users_ansible_directory(tmp_path: Path, fleet: LiveFleet,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCHEDULED_EVENTS_HISTORY_PATH", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"], env=capture_env(HOME=str(home)))
    assert run.returncode == 0, run.stdout
    default = home / ".ansible" / "scheduled_events" / "history.jsonl"
    assert [r["host"] for r in read_history(default).records] == ["avset-web-vm0"]


def test_documentation_names_the_options_and_defaults() -> None:
    import yaml
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["type"] == "notification" and doc["requirements"] == ["enable in callbacks_enabled"]
    option = doc["options"]["path"]
    assert option["default"] == "~/.ansible/scheduled_events/history.jsonl"
    assert option["env"] == [{"name": "SCHEDULED_EVENTS_HISTORY_PATH"}]
    assert option["ini"] == [{"section": "scheduled_events_history", "key": "path"}]
    module = plugin.CallbackModule
    assert (module.CALLBACK_VERSION, module.CALLBACK_TYPE, module.CALLBACK_NEEDS_ENABLED) == (2.0, "notification", True)


# ---- concurrency and crash safety -----------------------------------------------------------------


def test_two_concurrent_runs_share_one_file_without_corruption(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    runs: Dict[str, Any] = {}
    hosts = fleet.vms[:3]

    def one(tag: str) -> None:
        workdir = tmp_path / tag
        workdir.mkdir()
        # Four reads per host and run: 24 lines from 6 writers at once (the appender's own test races six
        # processes over 1,200 lines, some of 70 kB: tests/unit/plugins/module_utils/observation/test_history_file.py).
        task = dict(info(resource_name="{{ inventory_hostname }}-%s" % tag), loop=list(range(4)))
        runs[tag] = play(workdir, fleet, [("read", task)], hosts=hosts, env=capture_env(path, ANSIBLE_FORKS="3"))

    threads = [threading.Thread(target=one, args=(tag,)) for tag in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs["a"].returncode == 0 and runs["b"].returncode == 0, runs["a"].stdout + runs["b"].stdout
    history = read_history(path)
    assert history.bad_lines == [] and history.ends_with_newline
    assert len(history.records) == 2 * 3 * 4
    assert_valid(history)
    tags = [r["vm"]["name"].rsplit("-", 1)[1] for r in history.records]
    assert tags.count("a") == tags.count("b") == 12
    switches = sum(1 for x, y in zip(tags, tags[1:]) if x != y)
    assert switches >= 2, "the two runs did not overlap, so this test proved nothing"
    for vm in hosts:
        assert len(history.of_host(vm)) == 8


def test_a_run_killed_mid_way_leaves_only_complete_lines(tmp_path: Path, fleet: LiveFleet) -> None:
    path = tmp_path / "history.jsonl"
    hosts = ["avset-web-vm0", "avset-web-vm1", "avset-web-vm2"]
    tasks = [dict(info(), name="read", loop=list(range(400)))]
    proc = start_playbook(tmp_path, fleet, tasks, hosts, capture_env(path))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if path.exists() and path.read_bytes().count(b"\n") >= 15:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed: " + (tmp_path / "ansible-playbook.log").read_text()
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        kill_leftovers(str(tmp_path / "inventory.json"))
    history = read_history(path)
    assert len(history.records) >= 15
    assert len(history.bad_lines) <= 1
    if history.bad_lines:
        assert history.bad_lines[0][0] == len(history.lines) - 1 and not history.ends_with_newline
    assert_valid(history)
    before = len(history.lines)
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm3"], env=capture_env(path))
    assert run.returncode == 0, run.stdout
    after = read_history(path)
    assert len(after.lines) == before + 1 and after.bad_lines == history.bad_lines
    assert after.records[-1]["host"] == "avset-web-vm3"


# ---- failures never fail the run ---------------------------------------------------------------------


def test_an_unwritable_path_warns_once_and_the_run_succeeds(tmp_path: Path, fleet: LiveFleet) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file")
    path = blocker / "history.jsonl"
    run = play(tmp_path, fleet, [("read", dict(info(), loop=[1, 2]))], hosts=["avset-web-vm0", "avset-web-vm1"],
               env=capture_env(path))
    assert run.returncode == 0, run.stdout
    assert run.of("avset-web-vm0", "read")["results"][0]["failed"] is False
    output = " ".join((run.stdout + run.stderr).split())  # the display wraps long warnings
    assert str(path) in output and "could not append to the history file" in output
    assert output.count("could not append to the history file") == 1
    assert "Traceback" not in run.stdout + run.stderr
    assert blocker.read_text() == "a regular file"


def test_a_held_lock_delays_one_write_then_records_are_skipped_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    warnings: List[str] = []
    callback = plugin.CallbackModule()
    callback._display = type("D", (), {"warning": lambda self, msg: warnings.append(msg)})()
    callback._history = plugin.HistoryFile(str(path), lock_timeout=0.3)
    with open(path, "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        callback._write(b"{}\n")
        callback._write(b"{}\n")
        elapsed = time.monotonic() - started
        fcntl.flock(holder, fcntl.LOCK_UN)
    assert 0.3 <= elapsed < 1.0 and len(warnings) == 1 and str(path) in warnings[0] and "lock" in warnings[0]
    callback._write(b"{}\n")
    assert path.read_text() == "{}\n"


def test_a_file_system_without_flock_is_written_with_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "history.jsonl"

    def refused(fd: int, timeout: float) -> None:  # what flock_within says on such a file system
        raise history_file.NoFlock("No locks available")

    monkeypatch.setattr(history_file, "flock_within", refused)
    warnings: List[str] = []
    callback = plugin.CallbackModule()
    callback._display = type("D", (), {"warning": lambda self, msg: warnings.append(msg)})()
    callback._history = plugin.HistoryFile(str(path))
    callback._write(b"{}\n")
    callback._write(b"{}\n")
    assert path.read_text() == "{}\n{}\n"
    assert len(warnings) == 1 and "flock" in warnings[0] and str(path) in warnings[0]


class _Host:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name


class _Result:
    def __init__(self, data: Any, action: str = f"{FQCN}.scheduled_events_info", **fields: Any) -> None:
        self.result = data
        self.host = _Host("vm")
        self.task = None
        self.task_fields = dict(fields, _resolved_action=action)


def test_odd_results_are_ignored_and_never_raise(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    warnings: List[str] = []
    callback = plugin.CallbackModule()
    callback._display = type("D", (), {"warning": lambda self, msg: warnings.append(msg)})()
    callback._history = plugin.HistoryFile(str(path))
    censored = {"censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result"}
    for result in (_Result(censored), _Result(None), _Result({"observed_at": 5, "raw": None}), _Result({"msg": "x"}, "debug"),
                   _Result({"approved": ["A"]}, f"{FQCN}.scheduled_events_approve", check_mode=True),
                   _Result({"approved": []}, f"{FQCN}.scheduled_events_approve", check_mode=False),
                   _Result({"results": [{"observed_at": "x"}]})):
        callback.v2_runner_on_ok(result)
    assert not path.exists() and warnings == []
    broken = _Result({"observed_at": "2026-01-05T00:00:07.412Z", "document_available": True, "raw": {"Events": "?"}})
    broken.host = None  # not even a host: recorded as "unknown", not an exception
    callback.v2_runner_item_on_ok(broken)
    (record,) = read_history(path).records
    assert record["host"] == "unknown" and record["events"] == [] and warnings == []


def test_ansible_doc_renders_the_callback() -> None:
    import subprocess
    import sys
    ansible_doc = str(Path(sys.executable).parent / "ansible-doc")
    name = "azure_imds.scheduled_events.scheduled_events_history"
    shown = subprocess.run([ansible_doc, "-t", "callback", name], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    for word in ("SCHEDULED_EVENTS_HISTORY_PATH", "scheduled_events_history", "history.jsonl", "callbacks_enabled"):
        assert word in shown.stdout
    data = json.loads(subprocess.run([ansible_doc, "-t", "callback", "--json", name], capture_output=True, text=True,
                                     timeout=120).stdout)[name]
    assert data["doc"]["type"] == "notification" and data["doc"]["options"]["path"]["type"] == "path"
