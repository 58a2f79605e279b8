"""The history-capture callback, enabled in real ansible-playbook runs against the in-process simulator. What a run
writes is read from one shared capture (two concurrent runs, one under --check, a play per case on hosts of its own,
one file); a run without the callback, the default path, a killed run (configured by an ini file alone) and an
unwritable path have runs of their own. How
lines are appended (whole, locked, a torn line ended) is observation/history_file.py's:
tests/unit/plugins/module_utils/observation."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.callback import scheduled_events_history as plugin
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation import history_file
from tests.modules.harness import FQCN, Case, LiveFleet, Run, approve, info, leader_approves, play, play_cases
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
SHARED = pytest.mark.xdist_group("history")  # the tests that read the shared capture: one worker builds it


def _ini(tmp_path: Path, path: Path) -> Path:
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\ncallbacks_enabled = azure_imds.scheduled_events.scheduled_events_history\n\n"
                      f"[scheduled_events_history]\npath = {path}\n")
    return config


class Capture:
    """Two ansible-playbook runs at once, one of them under --check, whose plays (one per case, on hosts of its
    own) all write one history file.

    Both read their configuration from an ini file that enables the callback and names another path: the
    environment variable's path is the one written. Each case's fleet: 6 VMs / 3 fault domains under platform
    maintenance at time scale 4 (a notice of 225-255 s), or 2 where the event must still be Scheduled when a late
    play approves it in check mode; the approvals come first."""

    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "new" / "dirs" / "history.jsonl"  # parents are created
        self.ini_path = tmp / "ini" / "history.jsonl"
        self.fleets: Dict[str, LiveFleet] = {
            "main": LiveFleet("platform-maintenance", time_scale=4.0),
            # a VM that keeps answering when its event starts, for a wait for the start from a VM the event lists
            "answering": LiveFleet("platform-maintenance", time_scale=4.0, simulate_impact=False),
            "checked": LiveFleet("platform-maintenance", time_scale=2.0),
            "under_check": LiveFleet("platform-maintenance", time_scale=2.0),
            "misc": LiveFleet("platform-maintenance", time_scale=4.0),
        }
        for live in self.fleets.values():
            live.wait_for_events()
        self.truth = {name: live.truth()[0] for name, live in self.fleets.items()}
        self.fleets["misc"].fault("avset-web-vm0", {"kind": "empty_body"})
        self.fleets["misc"].fault("avset-web-vm1", {"kind": "status", "status": 503, "count": -1})
        self.plain, self.checked = self._plain_cases(tmp), self._check_mode_cases()
        self.cases = dict(self.plain, **self.checked)
        self.runs: Dict[str, Run] = {}
        env = {"ANSIBLE_CONFIG": str(_ini(tmp, self.ini_path)), "SCHEDULED_EVENTS_HISTORY_PATH": str(self.path)}

        def one(tag: str, cases: Dict[str, Case], check: bool) -> None:
            (tmp / tag).mkdir()
            self.runs[tag] = play_cases(tmp / tag, cases, env=env, check=check)

        threads = [threading.Thread(target=one, args=("plain", self.plain, False)),
                   threading.Thread(target=one, args=("check", self.checked, True))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.history = read_history(self.path)

    def host(self, fleet: str, vm: str) -> str:
        """The inventory name of `vm` of that fleet."""
        return f"{fleet}.{vm}"

    def vm(self, host: str) -> Tuple[LiveFleet, str]:
        fleet, vm = host.split(".", 1)
        return self.fleets[fleet], vm

    def run_of(self, host: str) -> str:
        """Which of the two runs played on `host`."""
        return "check" if any(host in case.hosts for case in self.checked.values()) else "plain"

    def records(self, case: str) -> List[Dict[str, Any]]:
        """The case's records, in the order written."""
        return [r for r in self.history.records if r["host"] in self.cases[case].hosts]

    def of(self, host: str, task: str) -> Dict[str, Any]:
        return self.runs[self.run_of(host)].of(host, task)

    def _hosts(self, fleet: str, *vms: str) -> Dict[str, str]:
        return {self.host(fleet, vm): self.fleets[fleet].url(vm) for vm in vms}

    def _plain_cases(self, tmp: Path) -> Dict[str, Case]:
        leader, other = self.truth["main"]["resources"]
        unlisted = [vm for vm in self.fleets["main"].vms if vm not in (leader, other)]
        claim = {f"{FQCN}.scheduled_events_claim": {"imds_url": "{{ imds_url }}", "owner": "run a",
                                                    "state_path": str(tmp / "{{ inventory_hostname }}.json")}}
        return {
            "served": Case(self._hosts("main", leader, other, unlisted[0]), [
                ("read", info()),
                leader_approves(self.host("main", leader)),
            ]),
            "started": Case(self._hosts("answering", self.truth["answering"]["resources"][0]), [
                ("approve", approve(event_ids=[self.truth["answering"]["event_id"]], wait_for_start=True,
                                    poll_interval=0.2, wait_timeout=20)),
            ]),
            "check_task": Case(self._hosts("checked", self.truth["checked"]["resources"][0]), [
                ("read", info()),
                ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}"), check_mode=True)),
            ]),
            "loop": Case(self._hosts("main", unlisted[1]), [("read", dict(info(), loop=[1, 2]))]),
            "delegated": Case(self._hosts("main", *unlisted[2:4]), [
                ("read", dict(info(imds_url="{{ hostvars[item].imds_url }}"), delegate_to="{{ item }}", run_once=True,
                              loop="{{ groups['delegated'] }}")),
            ]),
            "partial": Case(self._hosts("misc", "avset-web-vm3"), [
                ("anonymous", info(include_instance=False)),
                ("named", info(include_instance=False, resource_name="AVSET-WEB-VM3")),
            ]),
            "short": Case(self._hosts("misc", "avset-web-vm4"), [
                ("read", {"scheduled_events_info": {"imds_url": "{{ imds_url }}"}, "collections": [FQCN]}),
            ]),
            "claim": Case(self._hosts("misc", "avset-web-vm5"), [("claim", claim)]),
        }

    def _check_mode_cases(self) -> Dict[str, Case]:
        """The cases of the run under --check (reads are real in check mode, approvals are not)."""
        other, leader = self.truth["under_check"]["resources"]
        approve_read = approve(events="{{ r_read.events_for_this_vm }}")
        return {
            "in_check_mode": Case(self._hosts("under_check", other), [("read", info()), ("approve", approve_read)]),
            # check_mode: false on the task sends the approval even under --check, so it is recorded (after the
            # other's, which must still find the event Scheduled)
            "sent": Case(self._hosts("under_check", leader), [
                ("read", info()), ("approve", dict(approve_read, check_mode=False))]),
            "faults": Case(self._hosts("misc", "avset-web-vm0", "avset-web-vm1"), [("read", info(retries=0))]),
            "judged": Case(self._hosts("misc", "avset-web-vm2"), [
                ("judged", dict(info(), failed_when="r_judged.document_incarnation is number")),
                ("polled", dict(info(), until="false", retries=1, delay=0)),
            ]),
        }

    def close(self) -> None:
        for live in self.fleets.values():
            live.close()


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capture]:
    built = Capture(tmp_path_factory.mktemp("history"))
    try:
        yield built
    finally:
        built.close()


@SHARED
def test_the_shared_file_is_whole_compact_valid_and_written_quietly(capture: Capture) -> None:
    for run in capture.runs.values():
        assert run.returncode == 0, run.stdout
        assert "scheduled_events_history" not in run.stdout + run.stderr  # no warning, no error
    history = capture.history
    assert history.bad_lines == [] and history.ends_with_newline
    assert_valid(history)
    for raw_line in capture.path.read_text(encoding="utf-8").splitlines():  # compact JSON
        assert raw_line == json.dumps(json.loads(raw_line), separators=(",", ":"), ensure_ascii=False)


@SHARED
def test_two_concurrent_runs_share_one_file_without_corruption(capture: Capture) -> None:
    """The appender's own test races six processes over 1,200 lines, some of 70 kB:
    tests/unit/plugins/module_utils/observation/test_history_file.py."""
    runs = [capture.run_of(r["host"]) for r in capture.history.records]
    assert capture.history.bad_lines == [] and capture.history.ends_with_newline
    assert runs.count("check") == 2 + 1 + 1 + 3  # reads, the approval sent, the empty answer, the judged reads
    assert runs.count("plain") == 4 + 1 + 1 + 2 + 2 + 2 + 1 + 1  # served, started, check_task, loop, ..., claim
    switches = sum(1 for x, y in zip(runs, runs[1:]) if x != y)
    assert switches >= 2, "the two runs did not overlap, so this test proved nothing"


@SHARED
def test_every_hosts_observation_is_written_as_served(capture: Capture) -> None:
    leader = capture.host("main", capture.truth["main"]["resources"][0])
    assert sorted(r["host"] for r in capture.records("served") if "record" not in r) == \
        sorted(capture.cases["served"].hosts)
    for host in capture.cases["served"].hosts:
        if host == leader:
            continue  # its approval read the document again, after the read below
        fleet, vm = capture.vm(host)
        (line,) = [r for r in capture.history.observations if r["host"] == host]
        last = served(fleet, vm)[-1]
        assert line["events"] == last["document"]["Events"] and line["events"]  # exactly as served, not normalised
        assert line["document_incarnation"] == last["incarnation"] == capture.of(host, "read")["document_incarnation"]
        assert line["observed_at"] == capture.of(host, "read")["observed_at"]
        assert line["vm"] == expected_vm(fleet, vm)


@SHARED
def test_the_environment_variable_wins_over_the_ini_option(capture: Capture) -> None:
    assert capture.history.records and not capture.ini_path.exists()


@SHARED
def test_each_loop_item_is_one_observation(capture: Capture) -> None:
    (host,) = capture.cases["loop"].hosts
    fleet, vm = capture.vm(host)
    lines = capture.records("loop")
    items = capture.of(host, "read")["results"]
    assert len(lines) == 2
    assert [r["observed_at"] for r in lines] == [i["observed_at"] for i in items]
    assert [r["events"] for r in lines] == [s["document"]["Events"] for s in served(fleet, vm)[-2:]]


@SHARED
def test_an_approval_writes_one_approval_record(capture: Capture) -> None:
    truth = capture.truth["main"]
    leader = truth["resources"][0]
    assert len(capture.fleets["main"].approvals()) == 1
    records = capture.records("served")
    (record,) = [r for r in records if r.get("record") == "approval"]
    assert record["host"] == capture.host("main", leader) and record["event_ids"] == [truth["event_id"]]
    assert record["results"] == {truth["event_id"]: "approved"}
    assert record["vm"] == expected_vm(capture.fleets["main"], leader)  # known from the read earlier in the run
    assert records[-1] == record and len(records) == 1 + 3
    assert record["observed_at"] >= max(r["observed_at"] for r in records[:-1])


@SHARED
def test_approval_seen_starting_is_recorded_as_started_and_without_vm_when_unknown(capture: Capture) -> None:
    event_id = capture.truth["answering"]["event_id"]
    (host,) = capture.cases["started"].hosts
    assert capture.of(host, "approve")["started"] == [event_id], capture.runs["plain"].stdout
    (record,) = capture.records("started")
    assert schema_errors(record) == []
    assert record["results"] == {event_id: "started"} and "vm" not in record


@SHARED
def test_a_task_in_check_mode_writes_no_approval_record(capture: Capture) -> None:
    (host,) = capture.cases["check_task"].hosts
    assert capture.of(host, "approve")["approved"] != [], capture.runs["plain"].stdout
    assert [r.get("record", "observation") for r in capture.records("check_task")] == ["observation"]
    assert capture.fleets["checked"].approvals() == []


@SHARED
def test_empty_body_is_null_incarnation_and_a_failed_read_writes_nothing(capture: Capture) -> None:
    empty_host, failed_host = capture.cases["faults"].hosts
    assert capture.of(empty_host, "read")["document_available"] is False
    assert capture.of(failed_host, "read")["failed"] is True
    (empty,) = capture.records("faults")
    assert empty["host"] == empty_host
    assert empty["document_incarnation"] is None and empty["events"] == []
    assert empty["vm"] == expected_vm(*capture.vm(empty_host))


@SHARED
def test_failed_when_and_until_attempts_are_observations(capture: Capture) -> None:
    """A document that was read is recorded even when a condition marks the task failed; each until attempt counts."""
    (host,) = capture.cases["judged"].hosts
    assert capture.of(host, "judged")["failed"] and capture.of(host, "polled")["failed"], capture.runs["check"].stdout
    assert len(capture.records("judged")) == 1 + 2  # one read, then two attempts


@SHARED
def test_partial_vm_facts_give_a_complete_vm_object(capture: Capture) -> None:
    (host,) = capture.cases["partial"].hosts
    anonymous, named = capture.records("partial")
    empty = {"resource_id": "", "vm_scale_set_name": "", "fault_domain": None, "update_domain": None, "zone": "",
             "location": ""}
    assert anonymous["vm"] == dict(empty, name=host)  # no name from the VM: the inventory's
    assert named["vm"] == dict(empty, name="AVSET-WEB-VM3")


@SHARED
def test_a_delegated_read_is_recorded_for_the_vm_that_polled(capture: Capture) -> None:
    records = capture.records("delegated")
    assert sorted(r["host"] for r in records) == sorted(capture.cases["delegated"].hosts)
    assert all(r["vm"]["name"] == capture.vm(r["host"])[1] for r in records)


@SHARED
def test_short_action_names_are_captured(capture: Capture) -> None:
    assert [r["host"] for r in capture.records("short")] == list(capture.cases["short"].hosts)


@SHARED
def test_a_cycles_read_under_its_lock_is_an_observation_too(capture: Capture) -> None:
    (host,) = capture.cases["claim"].hosts
    (line,) = capture.records("claim")
    assert line["observed_at"] == capture.of(host, "claim")["observed_at"]
    assert "lock" not in line, "the run's lock is not part of the observation schema"


@SHARED
def test_check_mode_writes_no_approval_record_unless_the_task_sends_it(capture: Capture) -> None:
    (other,) = capture.cases["in_check_mode"].hosts
    (leader,) = capture.cases["sent"].hosts
    assert capture.of(other, "approve")["approved"] != [], capture.runs["check"].stdout
    (entry,) = capture.fleets["under_check"].approvals()
    assert entry["vm"] == capture.vm(leader)[1], capture.runs["check"].stdout
    in_check_mode = capture.records("in_check_mode")
    assert [r["host"] for r in in_check_mode] == [other] and "record" not in in_check_mode[0]  # a real read
    read, record = capture.records("sent")
    assert "record" not in read and record["record"] == "approval" and record["event_ids"] == entry["event_ids"]


def test_nothing_is_written_when_the_callback_is_not_enabled(tmp_path: Path, fleet: LiveFleet,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    path = tmp_path / "history.jsonl"
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"], env={"SCHEDULED_EVENTS_HISTORY_PATH": str(path)},
               results=False)
    assert run.returncode == 0 and not path.exists()


# ---- location ---------------------------------------------------------------------------------------


def test_default_path_is_under_the_users_ansible_directory(tmp_path: Path, fleet: LiveFleet,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCHEDULED_EVENTS_HISTORY_PATH", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm0"], env=capture_env(HOME=str(home)),
               results=False)
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


def test_a_run_killed_mid_way_leaves_only_complete_lines_where_the_ini_option_says(tmp_path: Path, fleet: LiveFleet,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The killed run is enabled and pointed at its file by an ini file alone; the next run appends there."""
    monkeypatch.delenv("SCHEDULED_EVENTS_HISTORY_PATH", raising=False)
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    path = tmp_path / "ini" / "history.jsonl"
    hosts = ["avset-web-vm0", "avset-web-vm1"]
    tasks = [dict(info(), name="read", loop=list(range(400)))]
    proc = start_playbook(tmp_path, fleet, tasks, hosts, {"ANSIBLE_CONFIG": str(_ini(tmp_path, path))})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if path.exists() and path.read_bytes().count(b"\n") >= 6:
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
    assert len(history.records) >= 6 and {r["host"] for r in history.records} <= set(hosts)
    assert len(history.bad_lines) <= 1
    if history.bad_lines:
        assert history.bad_lines[0][0] == len(history.lines) - 1 and not history.ends_with_newline
    assert_valid(history)
    before = len(history.lines)
    run = play(tmp_path, fleet, [("read", info())], hosts=["avset-web-vm3"], env=capture_env(path), results=False)
    assert run.returncode == 0, run.stdout
    after = read_history(path)
    assert len(after.lines) == before + 1 and after.bad_lines == history.bad_lines
    assert after.records[-1]["host"] == "avset-web-vm3"


# ---- failures never fail the run ---------------------------------------------------------------------


def test_an_unwritable_path_warns_once_and_the_run_succeeds(tmp_path: Path, fleet: LiveFleet) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a regular file")
    path = blocker / "history.jsonl"
    run = play(tmp_path, fleet, [("read", dict(info(), loop=[1, 2]))], hosts=["avset-web-vm0"], env=capture_env(path))
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
