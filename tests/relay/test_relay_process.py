"""The event relay as a real process, on an interpreter without Ansible, against the simulator over HTTP.

The controller here is the test's own receiver, which checks each push with the same relay.verify and
parse_push the Event-Driven Ansible source uses. Clocks are compressed: notices of seconds, not minutes.
"""
from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import jsonschema
import pytest
import yaml

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    PushError,
    SIGNATURE_HEADER,
    VERSION,
    check_push,
    relay_key,
)
from imds_simulator.fleet import FleetSpec
from tests.conftest import COLLECTIONS_PATH
from tests.eda.rulebook_setup import free_port
from tests.live_fleet import LiveFleet
from tests.timing import epoch, wait_for

TOKEN = b"relay-test-token-0123456789"   # the controller's shared secret; each relay signs with its own key
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "reference" / "observation.schema.json").read_text())
PLAIN_PYTHON = getattr(sys, "_base_executable", sys.executable)  # no Ansible installed there


class Receiver:
    """A controller stand-in: checks each push as the event source does (with the key of the host it names),
    records it and answers (401 for a bad signature)."""

    def __init__(self, port: int = 0, token: bytes = TOKEN):
        self.pushes: List[Dict[str, Any]] = []
        self.arrived: List[float] = []  # when each of `pushes` arrived
        self.refused: List[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    receiver.pushes.append(check_push(body, self.headers.get(SIGNATURE_HEADER), token, time.time()))
                    receiver.arrived.append(time.time())
                    self.send_response(204)
                except PushError as exc:
                    receiver.refused.append(str(exc))
                    self.send_response(401)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def changes(self) -> List[Dict[str, Any]]:
        return [p for p in self.pushes if p["kind"] == "change"]


class RelayBench:
    def __init__(self, tmp_path: Path, fleet: LiveFleet, vm: str, port: int, **settings: Any):
        self.dir = tmp_path / vm
        self.dir.mkdir(exist_ok=True)
        token = self.dir / "token"
        token.write_bytes(settings.pop("token", relay_key(TOKEN, vm)))  # its own key, as the role installs it
        token.chmod(0o600)
        self.history = self.dir / "history.jsonl"
        self.config = self.dir / "relay.json"
        self.config.write_text(json.dumps(dict({
            "host": vm, "controller_url": f"http://127.0.0.1:{port}/push", "token_file": str(token),
            "state_dir": str(self.dir / "state"), "imds_url": fleet.url(vm), "poll_interval": 0.2,
            "heartbeat_seconds": 1.0, "history_path": str(self.history)}, **settings)))
        self.process: Optional[subprocess.Popen] = None

    def start(self, preexec: Optional[Callable[[], None]] = None) -> None:
        env = dict(os.environ, PYTHONPATH=COLLECTIONS_PATH)
        self.process = subprocess.Popen(
            [PLAIN_PYTHON, "-m", "ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program",
             str(self.config)], env=env, stderr=subprocess.PIPE, text=True, preexec_fn=preexec)

    def stop(self, how: int = signal.SIGTERM) -> str:
        assert self.process is not None
        self.process.send_signal(how)
        _, stderr = self.process.communicate(timeout=10)
        return stderr

    def records(self) -> List[Dict[str, Any]]:
        if not self.history.exists():
            return []
        return [json.loads(line) for line in self.history.read_text().splitlines() if line.strip()]


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    live = LiveFleet(None, time_scale=60.0, fleet=FleetSpec(vms=2, fault_domains=2))
    yield live
    live.close()


REBOOT = {"key": "reboot", "type": "Reboot", "notice_s": 900}


def test_a_change_reaches_the_controller_within_a_second_or_two_with_one_second_bounds(
        tmp_path: Path, fleet: LiveFleet) -> None:
    receiver = Receiver()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, receiver.port)
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        wait_for(lambda: any(p["kind"] == "heartbeat" for p in receiver.pushes), 10, "a heartbeat")
        assert receiver.pushes[-1]["quiet"] is True
        before = time.time()
        (event_id,) = fleet.inject(dict(REBOOT, resources={"names": [vm]}))
        after = time.time()
        change = wait_for(lambda: [p for p in receiver.changes() if p["record"]["events"]], 10, "the change")[0]
    finally:
        relay.stop()
        receiver.close()
    assert change["record"]["events"][0]["EventId"] == event_id and change["quiet"] is False
    assert change["host"] == vm and change["vm"] == vm
    for record in relay.records():
        jsonschema.validate(record, SCHEMA)  # the one observation schema, from the relay too
    first, second = relay.records()[:2]
    assert "previous_observed_at" not in first and second["events"][0]["EventId"] == event_id
    # The bounds hold the true change: the last poll that saw no event came before the event appeared, and
    # the first that saw it after (1 ms of slack: observed_at has millisecond precision).
    assert epoch(second["previous_observed_at"]) < after + 0.001
    assert epoch(second["observed_at"]) > before - 0.001
    assert epoch(second["previous_observed_at"]) < epoch(second["observed_at"])
    assert epoch(second["previous_observed_at"]) > epoch(first["observed_at"]), "the last poll, not the first record"
    seqs = [p["seq"] for p in receiver.pushes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "one sequence, in order, no duplicate"


def test_pushes_wait_in_the_spool_while_the_controller_is_down_and_arrive_in_order(
        tmp_path: Path, fleet: LiveFleet) -> None:
    port = free_port()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, port)
    relay.start()
    try:
        wait_for(relay.records, 30, "the first document recorded on the VM")
        for n in range(3):  # three changes while nobody listens
            (event_id,) = fleet.inject(dict(REBOOT, key=f"r{n}", resources={"names": [vm]}))
            wait_for(lambda: any(event_id in json.dumps(r) for r in relay.records()), 10, f"change {n} on the VM")
        spooled = len(list((relay.dir / "state" / "spool").glob("*.json")))
        receiver = Receiver(port)
        wait_for(lambda: len(receiver.changes()) >= len(relay.records()), 40, "the spool to drain")
        receiver.close()
    finally:
        relay.stop()
    assert spooled >= 4, "every change waited in the spool"
    recorded = relay.records()
    assert len(recorded) >= 4
    assert [c["record"] for c in receiver.changes()[:len(recorded)]] == recorded, "every change, in order"
    assert not list((relay.dir / "state" / "spool").glob("*.json")), "sent pushes leave the spool"


def test_a_relay_killed_and_restarted_loses_no_change(tmp_path: Path, fleet: LiveFleet) -> None:
    port = free_port()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, port)
    relay.start()
    (event_id,) = fleet.inject(dict(REBOOT, resources={"names": [vm]}))
    wait_for(lambda: any(r["events"] for r in relay.records()), 10, "the change recorded")
    relay.stop(signal.SIGKILL)  # the controller never got it
    relay.start()
    receiver = Receiver(port)
    try:
        wait_for(lambda: any(c["record"]["events"] for c in receiver.changes()), 20, "the change after restart")
        wait_for(lambda: any(p["kind"] == "heartbeat" for p in receiver.pushes), 10, "a heartbeat")
    finally:
        relay.stop()
        receiver.close()
    relay_ids = {p["relay_id"] for p in receiver.pushes}
    seqs = [p["seq"] for p in receiver.pushes]
    assert len(relay_ids) == 1 and len(seqs) == len(set(seqs)), "one spool, no sequence number reused"
    assert any(c["record"]["events"] and c["record"]["events"][0]["EventId"] == event_id for c in receiver.changes())


def test_imds_throttling_then_down_is_pushed_at_once_recorded_as_nothing_and_the_bounds_stay_honest(
        tmp_path: Path, fleet: LiveFleet) -> None:
    receiver = Receiver()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, heartbeat_seconds=30.0)
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        fleet.fault(vm, {"kind": "status", "status": 429, "count": -1})  # throttled, then gone
        failing = wait_for(lambda: [p for p in receiver.pushes if p.get("imds_ok") is False], 5,
                           "the failure pushed at once (heartbeats come every 30 s)")[0]
        before = time.time()
        (event_id,) = fleet.inject(dict(REBOOT, resources={"names": [vm]}))  # appears while IMDS fails
        fleet.sim.faults.clear(vm)
        fleet.fault(vm, {"kind": "drop", "count": -1})  # then no answer at all (a VM rebooting)
        time.sleep(1.5)
        during = len(relay.records())
        fleet.sim.faults.clear(vm)
        back = wait_for(lambda: [p for p in receiver.pushes if p["seq"] > failing["seq"] and p.get("imds_ok")], 10,
                        "IMDS answering again, pushed at once")[0]
        change = wait_for(lambda: [c for c in receiver.changes() if c["record"]["events"]], 10, "the change")[0]
        alive = relay.process.poll() is None
    finally:
        relay.stop()
        receiver.close()
    assert failing["quiet"] is False, "a VM whose IMDS fails is never quiet"
    assert during == 1, "nothing seen, nothing recorded while IMDS failed"
    assert alive and back["kind"] in ("heartbeat", "change")
    record = change["record"]
    assert record["events"][0]["EventId"] == event_id
    # The outage widens the bounds honestly: the last poll that saw the old document came before the outage.
    assert epoch(record["previous_observed_at"]) < before and epoch(record["observed_at"]) > before


def test_a_wrong_token_is_refused_and_nothing_is_lost(tmp_path: Path, fleet: LiveFleet) -> None:
    receiver = Receiver()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, token=b"not-the-controllers-token")
    relay.start()
    try:
        wait_for(lambda: receiver.refused, 10, "a refused push")
        time.sleep(0.5)
    finally:
        stderr = relay.stop()
        receiver.close()
    assert receiver.pushes == [] and "does not match" in receiver.refused[0]
    assert "refused a push with HTTP 401" in stderr
    assert list((relay.dir / "state" / "spool").glob("*.json")), "the change stays in the spool"


def test_the_relay_says_when_it_starts_which_version_reads_what_and_pushes_where(tmp_path: Path,
                                                                                    fleet: LiveFleet) -> None:
    """A trial where nothing seems to happen starts from this line: which code, which VM, which IMDS, which
    controller address and port."""
    receiver = Receiver()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, receiver.port)
    relay.start()
    try:
        wait_for(lambda: receiver.pushes, 10, "a first push")
    finally:
        stderr = relay.stop()
        receiver.close()
    galaxy = yaml.safe_load((Path(__file__).resolve().parents[2] / "galaxy.yml").read_text())
    assert VERSION == galaxy["version"], "relay.VERSION is the collection's version"
    assert stderr.splitlines()[0] == (f"azure-imds-relay: version {VERSION} started for host {vm}: reads "
                                      f"{fleet.url(vm)} every 0.2 s, pushes to http://127.0.0.1:{receiver.port}/push.")


def test_a_state_path_that_is_not_absolute_is_refused_in_one_sentence(tmp_path: Path, fleet: LiveFleet) -> None:
    """~ is whoever runs the relay's home, not necessarily the cycle's: never guessed, never silent."""
    relay = RelayBench(tmp_path, fleet, fleet.vms[0], 1, cycle_state_path="~/.ansible/state.json")
    relay.start()
    assert relay.process is not None
    _, stderr = relay.process.communicate(timeout=10)
    assert relay.process.returncode == 2 and "Traceback" not in stderr
    assert "cycle_state_path '~/.ansible/state.json' is not an absolute path" in stderr


def test_bad_configuration_is_one_sentence_and_exit_2(tmp_path: Path, fleet: LiveFleet) -> None:
    relay = RelayBench(tmp_path, fleet, fleet.vms[0], 1)
    (relay.dir / "token").chmod(0o644)
    relay.start()
    assert relay.process is not None
    _, stderr = relay.process.communicate(timeout=10)
    assert relay.process.returncode == 2 and "Traceback" not in stderr
    assert "is readable by others (mode 644); make it 0600." in stderr



def test_a_configuration_without_the_cycles_imds_settings_reads_imds_itself(tmp_path: Path) -> None:
    """The event_relay role writes "" for imds_url and api_version unless the play sets the cycle's: the relay then
    reads IMDS where the modules do by default (document/imds.py, their one home)."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import (
        DEFAULT_API_VERSION,
        DEFAULT_URL,
    )
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.program import RelayConfig
    path = tmp_path / "relay.json"
    path.write_text(json.dumps({"host": "vm0", "controller_url": "http://127.0.0.1:9", "token_file": "/t",
                                "state_dir": "/s", "imds_url": "", "api_version": ""}))
    config = RelayConfig.from_file(str(path))
    assert (config.imds_url, config.api_version) == (DEFAULT_URL, DEFAULT_API_VERSION)


def metrics(path: Path) -> Dict[str, float]:
    """The relay's textfile as Prometheus reads it: "name{k=v,...}" -> value."""
    from prometheus_client.parser import text_string_to_metric_families
    return {s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(path.read_text()) for s in family.samples}


def test_the_metrics_textfile_follows_the_event_the_polls_and_the_controller(tmp_path: Path, fleet: LiveFleet) -> None:
    port = free_port()
    vm = fleet.vms[0]
    textfile = tmp_path / "textfile" / "azure_scheduled_events.prom"
    textfile.parent.mkdir()
    relay = RelayBench(tmp_path, fleet, vm, port, metrics_path=str(textfile), metrics_seconds=0.5)
    relay.start()
    reboot = "azure_scheduled_events_events{event_source=Platform}{event_status=Scheduled}{event_type=Reboot}"
    try:
        wait_for(lambda: textfile.exists(), 30, "the first metrics file")
        assert metrics(textfile)["azure_scheduled_events_quiet"] == 1
        (event_id,) = fleet.inject(dict(REBOOT, resources={"names": [vm]}))   # the controller is down
        seen = wait_for(lambda: [m for m in [metrics(textfile)] if m[reboot] == 1], 10, "the event counted")[0]
        receiver = Receiver(port)
        drained = wait_for(lambda: [m for m in [metrics(textfile)]
                                    if m["azure_scheduled_events_spool_pushes"] == 0], 30, "the spool drained")[0]
        receiver.close()
    finally:
        relay.stop()
    (truth,) = [e for e in fleet.truth() if e["event_id"] == event_id]
    assert seen["azure_scheduled_events_quiet"] == 0
    assert seen["azure_scheduled_events_spool_pushes"] >= 1, "the change waits for the controller"
    assert seen["azure_scheduled_events_pushes_total{result=failed}"] >= 1
    assert abs(seen["azure_scheduled_events_next_not_before_timestamp_seconds"] - epoch(truth["not_before"])) < 1
    assert drained["azure_scheduled_events_pushes_total{result=sent}"] >= 1
    assert drained["azure_scheduled_events_polls_total"] > seen["azure_scheduled_events_polls_total"] > 0
    assert time.time() - drained["azure_scheduled_events_last_successful_poll_timestamp_seconds"] < 30
    assert oct(textfile.stat().st_mode & 0o777) == "0o644", "node_exporter, another user, must read it"
    assert [p.name for p in textfile.parent.iterdir()] == [textfile.name], "no temporary file left"


def test_the_relay_matches_events_by_resource_name_as_the_modules_do(tmp_path: Path, fleet: LiveFleet) -> None:
    """A VM whose name in Resources differs from its compute name (maintenance_cycle_resource_name): here the
    simulator's vms[0] is listed as vms[1]; an event listing only that name is this VM's."""
    receiver = Receiver()
    vm, listed_as = fleet.vms
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, resource_name=listed_as)
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        fleet.inject(dict(REBOOT, resources={"names": [listed_as]}))
        change = wait_for(lambda: [c for c in receiver.changes() if c["record"]["events"]], 10, "the change")[0]
    finally:
        stderr = relay.stop()
        receiver.close()
    assert change["quiet"] is False and change["vm"] == listed_as, "the event lists this VM: " + stderr


@pytest.mark.parametrize("setting, value, fragment", [
    ("poll_interval", "1", "sets poll_interval to '1', which is not a number"),
    ("spool_max_entries", True, "sets spool_max_entries to True, which is not a whole number"),
    ("history_path", 7, "sets history_path to 7, which is not a string"),
    ("controller_url", "htp://controller:5081/push", "controller_url 'htp://controller:5081/push' is not an http"),
    ("controller_url", "http://controller:port/push", "is not an http:// or https:// URL with a host"),
    ("imds_url", "http://", "imds_url 'http://' is not an http"),
    ("api_version", "2020-07-1", "api_version '2020-07-1' is not a Scheduled Events api-version the modules support"),
    ("host", None, "lacks the settings ['host']"),
    ("local_command", ["drain.sh"], "local_command 'drain.sh' must start with an absolute path"),
    ("local_command", "/bin/true", "sets local_command to '/bin/true', which is not a list of non-empty strings"),
    ("local_command_types", ["Pre empt"], "local_command_types ['Pre empt'] must be event type names"),
])
def test_a_configuration_typo_is_one_sentence_and_exit_2_never_a_restart_loop(
        tmp_path: Path, fleet: LiveFleet, setting: str, value: Any, fragment: str) -> None:
    relay = RelayBench(tmp_path, fleet, fleet.vms[0], 1)
    config = json.loads(relay.config.read_text())
    if value is None:
        del config[setting]
    else:
        config[setting] = value
    relay.config.write_text(json.dumps(config))
    relay.start()
    assert relay.process is not None
    _, stderr = relay.process.communicate(timeout=10)
    assert relay.process.returncode == 2 and "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    assert fragment in stderr


# The fast path's command: writes when it started and what it was told, one file per event.
LOCAL_SCRIPT = ("import json, os, sys, time; out = os.path.join(sys.argv[1], os.environ['SCHEDULED_EVENT_ID']); "
                "open(out, 'w').write(json.dumps(dict({k: v for k, v in os.environ.items() "
                "if k.startswith('SCHEDULED_EVENT_')}, started=time.time())))")


def test_the_fast_path_runs_the_local_command_once_per_preempt_before_the_controller_hears_of_it(
        tmp_path: Path, fleet: LiveFleet) -> None:
    """Issue 27: a Spot eviction may come in under ten seconds. The relay runs the operator's command within one
    poll of first seeing a Preempt that lists its VM, before its push; a Reboot runs nothing, a restart re-runs
    nothing, and the command's output and the ids it ran for stay in the state directory."""
    receiver = Receiver()
    vm, other = fleet.vms
    ran = tmp_path / "ran"
    ran.mkdir()
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, local_command=[PLAIN_PYTHON, "-c", LOCAL_SCRIPT, str(ran)])
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        fleet.inject(dict(REBOOT, resources={"names": [vm]}))
        (preempt_id,) = fleet.inject({"key": "spot", "type": "Preempt", "notice_s": 30, "resources": {"names": [vm]}})
        fleet.inject({"key": "other", "type": "Preempt", "notice_s": 30, "resources": {"names": [other]}})
        told = wait_for(lambda: [at for p, at in zip(receiver.pushes, receiver.arrived) if p["kind"] == "change"
                                 and any(e["EventId"] == preempt_id for e in p["record"]["events"])], 10, "the push")
        wait_for(lambda: (ran / preempt_id).exists(), 10, "the local command")
        relay.stop()
        pushed = len(receiver.pushes)
        relay.start()  # a restarted relay remembers the ids it ran for
        wait_for(lambda: len(receiver.pushes) > pushed + 2, 10, "polls after the restart")
    finally:
        relay.stop()
        receiver.close()
    assert sorted(p.name for p in ran.iterdir()) == [preempt_id], "once, for its own Preempt only"
    told_env = json.loads((ran / preempt_id).read_text())
    assert told_env["SCHEDULED_EVENT_TYPE"] == "Preempt" and told_env["SCHEDULED_EVENT_VM"] == vm
    (local,) = [r for r in relay.records() if r.get("record") == "action"]
    assert local["action"] == "local" and local["event_ids"] == [preempt_id] and local["trigger"] == "relay"
    assert epoch(local["observed_at"]) <= told[0], "started before the push that tells the controller arrived"
    (seen,) = [r for r in relay.records() if r.get("record", "observation") == "observation"
               and any(e["EventId"] == preempt_id for e in r["events"])][:1]
    assert epoch(local["observed_at"]) - epoch(seen["observed_at"]) < 0.2, "within the poll that first saw it"
    jsonschema.validate(local, SCHEMA)
    assert json.loads((relay.dir / "state" / "local_actions.json").read_text()) == [preempt_id.upper()]


def test_imds_failures_are_logged_rate_limited(tmp_path: Path, fleet: LiveFleet) -> None:
    receiver = Receiver()
    vm = fleet.vms[0]
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, poll_interval=0.1)
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        fleet.fault(vm, {"kind": "status", "status": 500, "count": -1})
        wait_for(lambda: [p for p in receiver.pushes if p.get("imds_errors", 0) >= 1], 10, "the failure pushed")
        time.sleep(2.0)   # about 20 failed polls
        fleet.sim.faults.clear(vm)
        wait_for(lambda: receiver.pushes[-1].get("imds_ok") is True and receiver.pushes[-1]["imds_errors"] >= 10, 10,
                 "IMDS answering again")
    finally:
        stderr = relay.stop()
        receiver.close()
    failing = [line for line in stderr.splitlines() if "cannot read IMDS" in line]
    assert len(failing) == 1, "the first failure at once, then at most one line a minute: " + stderr
    assert "500" in failing[0]


def _full_disk(directory: Path) -> Optional[Callable[[], None]]:
    """`directory` on a small tmpfs (root can mount one here), filled up: a real ENOSPC for every write that
    needs space. Returns how to unmount it; None when this machine cannot mount one."""
    directory.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(directory)],
                             capture_output=True)
    if mounted.returncode != 0:
        return None
    (directory / "state" / "spool").mkdir(parents=True)
    filler = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(filler, b"\0" * 512)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(filler)
    return lambda: subprocess.run(["umount", "-l", str(directory)], check=False)


def test_a_full_disk_is_logged_while_the_relay_keeps_polling_and_pushing(tmp_path: Path, fleet: LiveFleet) -> None:
    """The relay starts on a full disk (its spool, relay id, sequence and history cannot be written): it
    says so once per kind, and polls, pushes each change and heartbeats all the same."""
    receiver = Receiver()
    vm = fleet.vms[0]
    disk = tmp_path / "disk"
    unmount = _full_disk(disk)
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, state_dir=str(disk / "state"),
                       history_path=str(disk / "history.jsonl"))
    # Without a mount (not root): every write to a regular file fails (EFBIG) in the relay process alone.
    relay.start(preexec=None if unmount else lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document, pushed although the disk is full")
        for n in range(3):
            (event_id,) = fleet.inject(dict(REBOOT, key=f"r{n}", resources={"names": [vm]}))
            wait_for(lambda: any(c["record"]["events"] and c["record"]["events"][-1]["EventId"] == event_id
                                 for c in receiver.changes()), 10, f"change {n}")
        last = receiver.pushes[-1]["seq"]
        wait_for(lambda: [p for p in receiver.pushes if p["kind"] == "heartbeat" and p["seq"] > last], 10,
                 "heartbeats go on")
        alive = relay.process.poll() is None
    finally:
        stderr = relay.stop()
        receiver.close()
        if unmount is not None:
            unmount()
    assert alive and "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len([line for line in lines if "cannot spool a push" in line]) == 1, stderr
    assert len([line for line in lines if "cannot write the history file" in line]) == 1, stderr


def test_regression_the_fast_paths_command_is_followed_to_its_end_and_a_nul_in_the_event_stops_nothing(
        tmp_path: Path, fleet: LiveFleet) -> None:
    """The command was started and forgotten: how it ended was never logged nor counted. And a field holding a NUL
    (no environment can hold one) made the command's start raise at every poll. Now its end is logged and counted,
    and the NUL is left out of what the command is told."""
    receiver = Receiver()
    vm = fleet.vms[0]
    ran = tmp_path / "ran"
    ran.mkdir()
    metrics = tmp_path / "relay.prom"
    script = LOCAL_SCRIPT + "; sys.exit(3)"
    relay = RelayBench(tmp_path, fleet, vm, receiver.port, local_command=[PLAIN_PYTHON, "-c", script, str(ran)],
                       metrics_path=str(metrics), metrics_seconds=0.2)
    relay.start()
    try:
        wait_for(lambda: receiver.changes(), 30, "the first document")
        event_id = "6C4A6B5E-3F2D-4C1B-9A8E-7D6C5B4A3F21"
        document = {"DocumentIncarnation": 7, "Events": [{
            "EventId": event_id, "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": [vm],
            "EventStatus": "Sched\u0000uled", "NotBefore": "Mon, 30 Nov 2026 08:00:00 GMT", "Description": "",
            "EventSource": "Platform", "DurationInSeconds": -1}]}
        fleet.fault(vm, {"kind": "body", "status": 200, "body": json.dumps(document), "count": -1})
        wait_for(lambda: (ran / event_id).exists(), 10, "the local command, told the event")
        wait_for(lambda: 'local_command_exits_total{result="failed"} 1' in
                 (metrics.read_text() if metrics.exists() else ""), 10, "its end counted")
        assert relay.process is not None and relay.process.poll() is None, "the relay goes on"
    finally:
        stderr = relay.stop()
        receiver.close()
    assert f"the local command for Preempt {event_id} exited 3 after" in stderr, stderr[-2000:]
    assert json.loads((ran / event_id).read_text())["SCHEDULED_EVENT_STATUS"] == "Scheduled"
