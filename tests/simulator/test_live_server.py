"""Live tests: the simulator runs as a real subprocess and is spoken to over real HTTP.

Every test starts `python -m imds_simulator serve --port 0 ...` (or shares a
module-wide instance when its requests cannot disturb other tests), waits for the
`imds_simulator ready at ...` line and talks to it with `requests`. Scenario time
is compressed with `--time-scale`, so nothing here sleeps for realistic
durations: waits are short polls with a bounded deadline.
"""
from __future__ import annotations

import json
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

import pytest
import requests

from tests.timing import wait_for

pytestmark = pytest.mark.live

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_LINE = re.compile(r"^imds_simulator ready at (http://127\.0\.0\.1:\d+) \(")
API = "2020-07-01"
COMPUTE_API = "2021-02-01"
HEADERS = {"Metadata": "true"}
HTTP_TIMEOUT = 5.0
START_TIMEOUT = 20.0
EVENT_ID = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
RFC1123 = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} "
                     r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$")
ALL_FIELDS = {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore",
              "Description", "EventSource", "DurationInSeconds"}
API_VERSIONS = ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01", "2019-04-01", "2019-08-01", "2020-07-01")
NEWEST_VERSIONS = ["2020-07-01", "2019-08-01", "2019-04-01"]

T = TypeVar("T")
Document = Dict[str, Any]
Event = Dict[str, Any]


# --------------------------------------------------------------------------- process handling

class LiveSimulator:
    """One `imds_simulator serve` subprocess and small helpers to speak to it."""

    def __init__(self, process: "subprocess.Popen[str]", base_url: str, stderr_path: Path):
        self.process = process
        self.base_url = base_url
        self.stderr_path = stderr_path
        self.stopped = False

    @classmethod
    def start(cls, args: Sequence[str], stderr_path: Path) -> "LiveSimulator":
        command = [sys.executable, "-m", "imds_simulator", "serve", "--port", "0", *args]
        if "--rate-limit" not in args:
            command += ["--rate-limit", "0"]  # tests poll fast; throttling has its own test
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True)
        try:
            base_url = _read_ready_url(process, stderr_path)
        except BaseException:
            _terminate(process)
            raise
        return cls(process, base_url, stderr_path)

    def stop(self) -> Optional[int]:
        """SIGTERM (then SIGKILL); the exit status, or raise if it had died by itself."""
        if self.stopped:
            return self.process.returncode
        self.stopped = True
        died_early = self.process.poll()
        code = _terminate(self.process)
        if died_early is not None:
            raise AssertionError(f"the simulator exited with status {died_early} during the test; "
                                 f"stderr:\n{self.stderr()[-3000:]}")
        return code

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    # ---------------------------------------------------------------- IMDS

    def imds_url(self, vm: str, endpoint: str = "scheduledevents", api_version: Optional[str] = API) -> str:
        path = {"scheduledevents": "metadata/scheduledevents", "compute": "metadata/instance/compute"}[endpoint]
        prefix = f"{self.base_url}/{vm}/" if vm else f"{self.base_url}/"
        query = "" if api_version is None else f"?api-version={api_version}"
        return f"{prefix}{path}{query}"

    def get(self, vm: str, api_version: Optional[str] = API, headers: Optional[Dict[str, str]] = None,
            **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT)
        return requests.get(self.imds_url(vm, api_version=api_version),
                            headers=HEADERS if headers is None else headers, **kwargs)

    def document(self, vm: str, api_version: str = API, timeout: float = 5.0) -> Document:
        """A VM's document; a VM that is rebooting drops connections, so retry those."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                response = self.get(vm, api_version)
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
                continue
            assert response.status_code == 200, response.text
            return response.json()

    def compute(self, vm: str) -> Dict[str, Any]:
        response = requests.get(self.imds_url(vm, "compute", COMPUTE_API), headers=HEADERS, timeout=HTTP_TIMEOUT)
        assert response.status_code == 200, response.text
        return response.json()

    def post_approval(self, vm: str, body: Any, headers: Optional[Dict[str, str]] = None) -> requests.Response:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return requests.post(self.imds_url(vm), data=data, headers=HEADERS if headers is None else headers,
                             timeout=HTTP_TIMEOUT)

    def approve(self, vm: str, *event_ids: str) -> requests.Response:
        return self.post_approval(vm, {"StartRequests": [{"EventId": i} for i in event_ids]})

    # ---------------------------------------------------------------- control API

    def control_url(self, name: str) -> str:
        return f"{self.base_url}/_simulator/{name}"

    def control_get(self, name: str) -> Any:
        response = requests.get(self.control_url(name), timeout=HTTP_TIMEOUT)
        assert response.status_code == 200, response.text
        return response.json()

    def control_post(self, name: str, body: Any) -> requests.Response:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return requests.post(self.control_url(name), data=data, timeout=HTTP_TIMEOUT)

    def fleet_vms(self) -> List[Dict[str, Any]]:
        return self.control_get("fleet")["vms"]

    def vm_names(self) -> List[str]:
        return [vm["name"] for vm in self.fleet_vms()]

    def ground_truth(self) -> List[Dict[str, Any]]:
        return self.control_get("events")["events"]

    def truth_for(self, event_id: str) -> Dict[str, Any]:
        return next(e for e in self.ground_truth() if e["event_id"] == event_id)

    def inject_faults(self, vm: str, *faults: Dict[str, Any], **extra: Any) -> requests.Response:
        return self.control_post("faults", {"vm": vm, "faults": list(faults), "clear": True, **extra})

    def violations(self) -> Dict[str, List[Dict[str, Any]]]:
        return self.control_get("violations")

    def wait_for_event(self, vm: str, api_version: str = API, timeout: float = 5.0,
                       match: Callable[[Event], bool] = lambda ev: True) -> Tuple[Document, Event]:
        """Poll one VM until its document lists an event that `match`es."""
        def found() -> Optional[Tuple[Document, Event]]:
            doc = self.document(vm, api_version)
            hit = next((ev for ev in doc["Events"] if match(ev)), None)
            return (doc, hit) if hit is not None else None
        return wait_for(found, timeout, f"an event on {vm}")


def _read_ready_url(process: "subprocess.Popen[str]", stderr_path: Path) -> str:
    lines: "queue.Queue[str]" = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=START_TIMEOUT)
    except queue.Empty:
        raise AssertionError(f"simulator printed nothing in {START_TIMEOUT} s") from None
    match = READY_LINE.match(line)
    if match is None:
        process.wait(timeout=5)
        raise AssertionError(f"no ready line, got {line!r}; stderr: {stderr_path.read_text()}")
    return match.group(1)


def _terminate(process: "subprocess.Popen[str]") -> Optional[int]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if process.stdout is not None:
        process.stdout.close()
    return process.returncode


def _check_no_server_errors(sim: LiveSimulator) -> None:
    errors = sim.stderr()
    if "Traceback" in errors:
        pytest.fail(f"the simulator raised while serving:\n{errors[-3000:]}")


@pytest.fixture
def start_simulator(tmp_path: Path) -> Iterator[Callable[..., LiveSimulator]]:
    """Factory: start_simulator("--scenario", "user-reboot", ...) -> a running server."""
    started: List[LiveSimulator] = []

    def start(*args: str) -> LiveSimulator:
        sim = LiveSimulator.start(args, tmp_path / f"server-{len(started)}.stderr")
        started.append(sim)
        return sim

    yield start
    problems: List[str] = []
    for sim in started:
        try:
            sim.stop()
        except AssertionError as exc:
            problems.append(str(exc))
    if problems:
        pytest.fail("\n".join(problems))
    for sim in started:
        _check_no_server_errors(sim)


def _module_server(args: List[str], directory: Path) -> Iterator[LiveSimulator]:
    """A server shared by one test module: started once, checked for server errors at the end."""
    sim = LiveSimulator.start(args, directory / "server.stderr")
    try:
        sim.wait_for_event("avset-web-vm0")
        yield sim
    finally:
        sim.stop()
    _check_no_server_errors(sim)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSimulator]:
    """6 VMs / 3 FDs under platform maintenance at time scale 5: the first fault
    domain's event appears after 1 s and stays Scheduled for at least 180 s, far
    longer than this whole module runs. Only for tests that do not change its events."""
    yield from _module_server(["--scenario", "platform-maintenance", "--time-scale", "5"],
                              tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSimulator]:
    """A quiet fleet for fault tests: one degraded-hardware Redeploy, NotBefore days
    (scaled: ~17 minutes) ahead, so every VM's incarnation is 2 and nothing moves."""
    yield from _module_server(["--scenario", "degraded-hardware", "--time-scale", "600"],
                              tmp_path_factory.mktemp("faulty"))


def _first_event(doc: Document) -> Event:
    assert doc["Events"], f"no events in {doc}"
    return doc["Events"][0]


def _assert_imds_error(response: requests.Response, status: int) -> Dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"]
    return body


def _assert_sentence(text: Any) -> None:
    assert isinstance(text, str) and text.strip(), text
    assert "Traceback" not in text and "\n" not in text.strip(), text


# --------------------------------------------------------------------------- request rules

def test_get_without_metadata_header_is_400(shared: LiveSimulator) -> None:
    body = _assert_imds_error(shared.get("avset-web-vm0", headers={}), 400)
    assert "metadata header" in body["error"].lower()


def test_metadata_header_must_say_true(shared: LiveSimulator) -> None:
    _assert_imds_error(shared.get("avset-web-vm0", headers={"Metadata": "false"}), 400)


def test_missing_metadata_header_is_recorded_as_violation(shared: LiveSimulator) -> None:
    shared.get("avset-web-vm1", headers={})
    rules = [(v["rule"], v["path"]) for v in shared.violations()["violations"]]
    assert ("metadata-header", f"/avset-web-vm1/metadata/scheduledevents?api-version={API}") in rules


def test_x_forwarded_for_is_400(shared: LiveSimulator) -> None:
    response = shared.get("avset-web-vm0", headers={**HEADERS, "X-Forwarded-For": "10.0.0.1"})
    assert "x-forwarded-for" in _assert_imds_error(response, 400)["error"].lower()


def test_missing_api_version_is_400_with_newest_versions(shared: LiveSimulator) -> None:
    body = _assert_imds_error(shared.get("avset-web-vm0", api_version=None), 400)
    assert body["newest-versions"] == NEWEST_VERSIONS


@pytest.mark.parametrize("version", ["2016-01-01", "latest", "2021-02-01", "2020-07-01x"])
def test_unknown_api_version_is_400(shared: LiveSimulator, version: str) -> None:
    body = _assert_imds_error(shared.get("avset-web-vm0", api_version=version), 400)
    assert body["newest-versions"] == NEWEST_VERSIONS


def test_unknown_vm_is_404(shared: LiveSimulator) -> None:
    _assert_imds_error(shared.get("no-such-vm"), 404)


def test_unknown_path_is_404(shared: LiveSimulator) -> None:
    response = requests.get(f"{shared.base_url}/avset-web-vm0/metadata/scheduledthings?api-version={API}",
                            headers=HEADERS, timeout=HTTP_TIMEOUT)
    _assert_imds_error(response, 404)


def test_root_path_of_multi_vm_fleet_is_404(shared: LiveSimulator) -> None:
    _assert_imds_error(shared.get(""), 404)


def test_put_is_405(shared: LiveSimulator) -> None:
    response = requests.put(shared.imds_url("avset-web-vm0"), headers=HEADERS, data=b"{}", timeout=HTTP_TIMEOUT)
    _assert_imds_error(response, 405)
    assert set(response.headers["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_absolute_form_request_is_400_and_recorded(shared: LiveSimulator) -> None:
    host_port = shared.base_url.removeprefix("http://")
    target = f"{shared.base_url}/avset-web-vm2/metadata/scheduledevents?api-version={API}"
    request = (f"GET {target} HTTP/1.1\r\nHost: {host_port}\r\nMetadata: true\r\n"
               "Connection: close\r\n\r\n").encode()
    host, port = host_port.split(":")
    with socket.create_connection((host, int(port)), timeout=HTTP_TIMEOUT) as conn:
        conn.sendall(request)
        reply = _read_all(conn)
    status_line = reply.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 400"), reply[:200]
    proxied = [v for v in shared.violations()["violations"] if v["rule"] == "proxy"]
    assert any(v["path"] == target for v in proxied), proxied


def _read_all(conn: socket.socket) -> bytes:
    chunks: List[bytes] = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# --------------------------------------------------------------------------- wire format

def test_document_fields_and_formats_2020_07_01(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "60")
    sim.wait_for_event("avset-web-vm0")
    asked_at = datetime.now(timezone.utc)
    doc = sim.document("avset-web-vm0")
    assert type(doc["DocumentIncarnation"]) is int and doc["DocumentIncarnation"] >= 2
    event = _first_event(doc)
    assert set(event) == ALL_FIELDS
    assert EVENT_ID.match(event["EventId"]), event["EventId"]
    assert event["EventStatus"] == "Scheduled"
    assert (event["EventType"], event["ResourceType"]) == ("Reboot", "VirtualMachine")
    assert (event["EventSource"], event["DurationInSeconds"]) == ("Platform", 7)
    assert isinstance(event["Description"], str) and event["Description"]
    assert RFC1123.match(event["NotBefore"]), event["NotBefore"]
    assert parsedate_to_datetime(event["NotBefore"]) > asked_at


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory: pytest.TempPathFactory) -> List[Tuple[float, float, Document]]:
    """Every document VM 1 (fault domain 1) serves while the fault domain 0 event of a
    platform maintenance goes Scheduled -> Started -> removed (time scale 1200:
    ~0.8 s notice, ~0.5 s Started). Items: (sent at, received at, document), epoch s."""
    sim = LiveSimulator.start(["--scenario", "platform-maintenance", "--time-scale", "1200"],
                              tmp_path_factory.mktemp("lifecycle") / "server.stderr")
    try:
        return _observe_one_event_lifecycle(sim, "avset-web-vm1")
    finally:
        sim.stop()
        _check_no_server_errors(sim)


def _observe_one_event_lifecycle(sim: LiveSimulator, vm: str) -> List[Tuple[float, float, Document]]:
    observed: List[Tuple[float, float, Document]] = []
    statuses_seen: List[str] = []
    first_id: Optional[str] = None
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        sent = time.time()
        doc = sim.document(vm)
        observed.append((sent, time.time(), doc))
        first_id = first_id or next((e["EventId"] for e in doc["Events"]), None)
        mine = [e for e in doc["Events"] if e["EventId"] == first_id]
        if mine and (not statuses_seen or statuses_seen[-1] != mine[0]["EventStatus"]):
            statuses_seen.append(mine[0]["EventStatus"])
        if first_id and not mine and "Started" in statuses_seen:
            return observed
        time.sleep(0.01)
    raise AssertionError(f"the first event did not go Scheduled -> Started -> removed; saw {statuses_seen}")


def _events_with_id(observed: List[Tuple[float, float, Document]], event_id: str) -> List[Event]:
    return [e for _, _, doc in observed for e in doc["Events"] if e["EventId"] == event_id]


def _first_event_id(observed: List[Tuple[float, float, Document]]) -> str:
    return next(e["EventId"] for _, _, doc in observed for e in doc["Events"])


def test_event_id_is_kept_from_scheduled_to_started(lifecycle: List[Tuple[float, float, Document]]) -> None:
    statuses = [e["EventStatus"] for e in _events_with_id(lifecycle, _first_event_id(lifecycle))]
    assert "Scheduled" in statuses and "Started" in statuses
    assert statuses.index("Started") > statuses.index("Scheduled")
    assert statuses[statuses.index("Started"):] == ["Started"] * (len(statuses) - statuses.index("Started"))


def test_not_before_is_rfc1123_while_scheduled_and_empty_once_started(
        lifecycle: List[Tuple[float, float, Document]]) -> None:
    for sent, _, doc in lifecycle:
        for event in doc["Events"]:
            if event["EventStatus"] == "Started":
                assert event["NotBefore"] == ""
            else:
                assert RFC1123.match(event["NotBefore"]), event["NotBefore"]
                assert parsedate_to_datetime(event["NotBefore"]).timestamp() > sent


def test_incarnation_grows_on_every_change(lifecycle: List[Tuple[float, float, Document]]) -> None:
    docs = [doc for _, _, doc in lifecycle]
    assert len({d["DocumentIncarnation"] for d in docs}) >= 3  # Scheduled, Started, removed at least
    for before, after in zip(docs, docs[1:]):
        assert after["DocumentIncarnation"] >= before["DocumentIncarnation"]
        if after["Events"] != before["Events"]:
            assert after["DocumentIncarnation"] > before["DocumentIncarnation"], (before, after)


def test_same_incarnation_means_same_events(lifecycle: List[Tuple[float, float, Document]]) -> None:
    by_incarnation: Dict[int, List[Event]] = {}
    for _, _, doc in lifecycle:
        seen = by_incarnation.setdefault(doc["DocumentIncarnation"], doc["Events"])
        assert seen == doc["Events"], f"incarnation {doc['DocumentIncarnation']} changed its events"


def test_completed_event_leaves_the_array(lifecycle: List[Tuple[float, float, Document]]) -> None:
    event_id = _first_event_id(lifecycle)
    assert all(e["EventId"] != event_id for e in lifecycle[-1][2]["Events"])
    assert _events_with_id(lifecycle, event_id)[-1]["EventStatus"] == "Started"


@pytest.mark.parametrize("version", API_VERSIONS)
def test_fields_served_per_api_version(shared: LiveSimulator, version: str) -> None:
    expected = {"EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore"}
    expected |= {"Description"} if version >= "2019-04-01" else set()
    expected |= {"EventSource"} if version >= "2019-08-01" else set()
    expected |= {"DurationInSeconds"} if version >= "2020-07-01" else set()
    event = _first_event(shared.document("avset-web-vm1", version))
    assert set(event) == expected


def test_2019_01_01_omits_newer_fields(shared: LiveSimulator) -> None:
    event = _first_event(shared.document("avset-web-vm1", "2019-01-01"))
    assert not {"Description", "EventSource", "DurationInSeconds"} & set(event)


def test_2017_03_01_prefixes_resource_names_with_underscore(shared: LiveSimulator) -> None:
    newest = _first_event(shared.document("avset-web-vm1"))["Resources"]
    preview = _first_event(shared.document("avset-web-vm1", "2017-03-01"))["Resources"]
    assert preview == ["_" + name for name in newest]


def test_2017_08_01_does_not_prefix_resource_names(shared: LiveSimulator) -> None:
    newest = _first_event(shared.document("avset-web-vm1"))["Resources"]
    assert _first_event(shared.document("avset-web-vm1", "2017-08-01"))["Resources"] == newest
    assert all(not name.startswith("_") for name in newest)


def test_incarnation_is_the_same_for_every_api_version(shared: LiveSimulator) -> None:
    incarnations = {shared.document("avset-web-vm2", v)["DocumentIncarnation"] for v in API_VERSIONS}
    assert len(incarnations) == 1


def test_preempt_is_not_served_to_2017_08_01(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "spot-eviction", "--time-scale", "10")
    sim.wait_for_event("vmss-spot_0", "2017-11-01")  # 0.5 s to appear, then ~3 s of notice
    bystander = next(n for n in sim.vm_names() if n not in sim.ground_truth()[0]["resources"])
    before = sim.document(bystander, "2017-11-01")
    old = sim.document(bystander, "2017-08-01")
    after = sim.document(bystander, "2017-11-01")
    assert [e["EventType"] for e in before["Events"]] == ["Preempt"]
    assert after["Events"] and after["Events"][0]["EventId"] == before["Events"][0]["EventId"]
    assert old["Events"] == []
    assert old["DocumentIncarnation"] == before["DocumentIncarnation"]


# --------------------------------------------------------------------------- scope

def test_every_vm_sees_the_same_event(shared: LiveSimulator) -> None:
    names = shared.vm_names()
    assert len(names) == 6
    ids = {tuple(e["EventId"] for e in shared.document(name)["Events"]) for name in names}
    assert len(ids) == 1 and len(next(iter(ids))) == 1


def test_resources_name_only_the_vms_of_one_fault_domain(shared: LiveSimulator) -> None:
    domains = {vm["name"]: vm["fault_domain"] for vm in shared.fleet_vms()}
    assert sorted(set(domains.values())) == [0, 1, 2]
    resources = _first_event(shared.document("avset-web-vm5"))["Resources"]
    touched = {domains[name] for name in resources}
    assert len(touched) == 1
    (domain,) = touched
    assert sorted(resources) == sorted(n for n, d in domains.items() if d == domain)


def test_ground_truth_matches_the_document(shared: LiveSimulator) -> None:
    event = _first_event(shared.document("avset-web-vm0"))
    truth = shared.truth_for(event["EventId"])
    assert (truth["status"], truth["event_type"], truth["resources"]) == ("Scheduled", "Reboot", event["Resources"])
    assert truth["routine"] is True and len(truth["fault_domains"]) == 1


# --------------------------------------------------------------------------- approvals

def _scheduled_maintenance(start: Callable[..., LiveSimulator], *extra: str) -> Tuple[LiveSimulator, Event]:
    """Platform maintenance at time scale 60: the event appears after ~0.1 s and its
    NotBefore is 15-17 s away, so it stays Scheduled until approved."""
    sim = start("--scenario", "platform-maintenance", "--time-scale", "60", *extra)
    _, event = sim.wait_for_event("avset-web-vm0")
    return sim, event


def test_approval_starts_the_event_for_every_vm(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim, event = _scheduled_maintenance(start_simulator)
    leader = event["Resources"][0]
    response = sim.approve(leader, event["EventId"])
    assert response.status_code == 200, response.text
    for name in sim.vm_names():
        seen = [e for e in sim.document(name)["Events"] if e["EventId"] == event["EventId"]]
        assert [(e["EventStatus"], e["NotBefore"]) for e in seen] == [("Started", "")], name
    assert sim.truth_for(event["EventId"])["start_reason"] == "approved"


def test_approval_is_logged(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim, event = _scheduled_maintenance(start_simulator)
    before = datetime.now(timezone.utc)
    assert sim.approve(event["Resources"][0], event["EventId"]).status_code == 200
    (entry,) = sim.control_get("approvals")["approvals"]
    assert entry["vm"] == event["Resources"][0]
    assert entry["event_ids"] == [event["EventId"]]
    assert entry["accepted"] is True and entry["in_resources"] == {event["EventId"]: True}
    at = datetime.fromisoformat(entry["at"].replace("Z", "+00:00"))
    assert abs((at - before).total_seconds()) < 5


def test_any_vm_of_the_set_may_approve(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim, event = _scheduled_maintenance(start_simulator)
    outsider = next(n for n in sim.vm_names() if n not in event["Resources"])
    assert sim.approve(outsider, event["EventId"]).status_code == 200
    assert _first_event(sim.document(event["Resources"][0]))["EventStatus"] == "Started"
    (entry,) = sim.control_get("approvals")["approvals"]
    assert entry["vm"] == outsider and entry["in_resources"] == {event["EventId"]: False}


def test_approving_a_started_event_again_is_200(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim, event = _scheduled_maintenance(start_simulator, "--no-impact")
    assert sim.approve(event["Resources"][0], event["EventId"]).status_code == 200
    response = sim.approve(event["Resources"][-1], event["EventId"])
    assert response.status_code == 200, response.text
    results = [a["results"] for a in sim.control_get("approvals")["approvals"]]
    assert results == [{event["EventId"]: "started"}, {event["EventId"]: "already_started"}]


def test_approval_id_must_match_the_served_case(start_simulator: Callable[..., LiveSimulator]) -> None:
    # Stricter than Azure: a client must send back the id exactly as served, never a re-cased copy.
    sim, event = _scheduled_maintenance(start_simulator, "--no-impact")
    body = _assert_imds_error(sim.approve(event["Resources"][0], event["EventId"].lower()), 400)
    assert body["error"] == f"Bad request. EventId {event['EventId'].lower()} is not a scheduled event of this VM"
    assert _first_event(sim.document("avset-web-vm1"))["EventStatus"] == "Scheduled"
    assert sim.approve(event["Resources"][0], event["EventId"]).status_code == 200
    assert _first_event(sim.document("avset-web-vm1"))["EventStatus"] == "Started"
    rejected, accepted = sim.control_get("approvals")["approvals"]
    assert (rejected["accepted"], rejected["wrong_case"]) == (False, [event["EventId"].lower()])
    assert accepted["accepted"] is True and "wrong_case" not in accepted


MALFORMED_APPROVALS = {
    "not json": b"approve please",
    "not utf-8": b"\xff\xfe{}",
    "json list": b"[]",
    "no StartRequests": b"{}",
    "StartRequests not a list": b'{"StartRequests": {"EventId": "x"}}',
    "item is a string": b'{"StartRequests": ["x"]}',
    "item with wrong key": b'{"StartRequests": [{"Id": "x"}]}',
    "item with extra key": b'{"StartRequests": [{"EventId": "x", "Why": 1}]}',
    "id not text": b'{"StartRequests": [{"EventId": 7}]}',
    "empty list": b'{"StartRequests": []}',
    "unexpected field": b'{"StartRequests": [{"EventId": "x"}], "Force": true}',
}


@pytest.mark.parametrize("body", MALFORMED_APPROVALS.values(), ids=MALFORMED_APPROVALS.keys())
def test_malformed_approval_is_400_and_changes_nothing(shared: LiveSimulator, body: bytes) -> None:
    _assert_imds_error(shared.post_approval("avset-web-vm0", body), 400)
    assert _first_event(shared.document("avset-web-vm0"))["EventStatus"] == "Scheduled"


def test_approval_of_unknown_event_id_is_400(shared: LiveSimulator) -> None:
    unknown = str(uuid.uuid4()).upper()
    body = _assert_imds_error(shared.approve("avset-web-vm0", unknown), 400)
    assert unknown in body["error"]
    assert _first_event(shared.document("avset-web-vm0"))["EventStatus"] == "Scheduled"


def test_approval_without_metadata_header_is_400(shared: LiveSimulator) -> None:
    event = _first_event(shared.document("avset-web-vm0"))
    response = shared.post_approval("avset-web-vm0", {"StartRequests": [{"EventId": event["EventId"]}]}, headers={})
    _assert_imds_error(response, 400)
    assert _first_event(shared.document("avset-web-vm0"))["EventStatus"] == "Scheduled"


def test_approval_rule_all_waits_for_every_resource(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600", "--no-impact")
    spec = {"key": "pair", "type": "Freeze", "source": "Platform", "notice_s": 900, "duration_s": 5,
            "approval": "all", "resources": {"vms": [0, 3]}}  # both in fault domain 0
    (event_id,) = sim.control_post("events", {"event": spec}).json()["event_ids"]
    assert sim.approve("avset-web-vm0", event_id).status_code == 200
    assert sim.truth_for(event_id)["status"] == "Scheduled"
    assert sim.approve("avset-web-vm3", event_id).status_code == 200
    assert sim.truth_for(event_id)["status"] == "Started"
    results = [a["results"] for a in sim.control_get("approvals")["approvals"]]
    assert results == [{event_id: "waiting_for_other_vms"}, {event_id: "started"}]


def test_unapproved_event_starts_at_not_before_and_is_removed(
        start_simulator: Callable[..., LiveSimulator]) -> None:
    # 900 s notice at time scale 1500 = 0.6 s (NotBefore rounded up to a whole second).
    sim = start_simulator("--scenario", "user-reboot", "--time-scale", "1500")
    _, event = sim.wait_for_event("avset-web-vm1")
    not_before = parsedate_to_datetime(event["NotBefore"]).timestamp()
    last_scheduled_sent, first_started_received = _watch_start(sim, "avset-web-vm1", event["EventId"])
    assert last_scheduled_sent < not_before <= first_started_received
    wait_for(lambda: not sim.document("avset-web-vm1")["Events"], 5, "the event to be removed")
    truth = sim.truth_for(event["EventId"])
    assert (truth["start_reason"], truth["outcome"]) == ("not_before", "completed")
    assert truth["started_at"] == truth["not_before"]
    assert sim.control_get("approvals")["approvals"] == []


def _watch_start(sim: LiveSimulator, vm: str, event_id: str) -> Tuple[float, float]:
    """(send time of the last Scheduled read, receipt time of the first Started read)."""
    last_scheduled = 0.0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        sent = time.time()
        statuses = [e["EventStatus"] for e in sim.document(vm)["Events"] if e["EventId"] == event_id]
        if statuses == ["Started"]:
            return last_scheduled, time.time()
        assert statuses == ["Scheduled"], statuses
        last_scheduled = sent
        time.sleep(0.01)
    raise AssertionError("the event never started on its own")


# --------------------------------------------------------------------------- instance metadata

def test_compute_document_of_an_availability_set_vm(shared: LiveSimulator) -> None:
    compute = shared.compute("avset-web-vm4")
    listed = next(vm for vm in shared.fleet_vms() if vm["name"] == "avset-web-vm4")
    assert compute["name"] == "avset-web-vm4"
    assert compute["resourceId"] == listed["resource_id"]
    assert compute["resourceId"].endswith("/providers/Microsoft.Compute/virtualMachines/avset-web-vm4")
    assert (compute["platformFaultDomain"], compute["platformUpdateDomain"]) == ("1", "4")
    assert (compute["vmScaleSetName"], compute["zone"]) == ("", "")
    assert (compute["location"], compute["osType"]) == ("westeurope", "Linux")


def test_compute_needs_the_metadata_header(shared: LiveSimulator) -> None:
    response = requests.get(shared.imds_url("avset-web-vm0", "compute", COMPUTE_API), timeout=HTTP_TIMEOUT)
    _assert_imds_error(response, 400)


def test_compute_document_of_a_scale_set_vm(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "60",
                          "--kind", "scale_set", "--name", "vmss-app")
    assert sim.vm_names() == [f"vmss-app_{i}" for i in range(6)]
    compute = sim.compute("vmss-app_2")
    assert (compute["name"], compute["vmScaleSetName"]) == ("vmss-app_2", "vmss-app")
    assert compute["resourceId"].endswith("/virtualMachineScaleSets/vmss-app/virtualMachines/2")
    assert compute["platformFaultDomain"] == "2"
    _, event = sim.wait_for_event("vmss-app_2")
    assert all(re.fullmatch(r"vmss-app_\d", name) for name in event["Resources"])


def test_single_vm_fleet_is_also_served_at_the_root(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "user-reboot", "--time-scale", "60", "--vms", "1", "--fault-domains", "1")
    (name,) = sim.vm_names()
    _, event = sim.wait_for_event(name)
    root = sim.document("")
    assert root == sim.document(name)
    assert root["Events"][0]["EventId"] == event["EventId"]
    assert sim.compute("")["name"] == name


# --------------------------------------------------------------------------- control API

def test_fleet_lists_every_vm_with_a_working_imds_url(shared: LiveSimulator) -> None:
    fleet = shared.control_get("fleet")
    assert (fleet["kind"], fleet["fault_domains"], len(fleet["vms"])) == ("availability_set", 3, 6)
    for vm in fleet["vms"]:
        assert {"name", "fault_domain", "update_domain", "imds_url"} <= set(vm)
        response = requests.get(f"{vm['imds_url']}/metadata/scheduledevents?api-version={API}",
                                headers=HEADERS, timeout=HTTP_TIMEOUT)
        assert response.status_code == 200 and "DocumentIncarnation" in response.json()
        assert vm["fault_domain"] == int(shared.compute(vm["name"])["platformFaultDomain"])


COMPUTE_FIELDS = {"location", "name", "osType", "platformFaultDomain", "platformUpdateDomain", "resourceId",
                  "vmScaleSetName", "zone"}


def test_fleet_of_two_availability_sets_names_each_vms_set(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "60", "--sets", "2", "--vms", "3")
    fleet = sim.control_get("fleet")
    assert fleet["sets"] == ["avset-web-a", "avset-web-b"] and fleet["zones"] == []
    listed = {vm["name"]: vm for vm in fleet["vms"]}
    assert sorted(listed) == [f"avset-web-{s}-vm{i}" for s in "ab" for i in range(3)]
    for name, vm in listed.items():
        assert vm["availability_set"] == vm["set"] == name.rsplit("-vm", 1)[0] and vm["vm_scale_set_name"] == ""
        compute = sim.compute(name)
        assert compute["vmScaleSetName"] == "" and set(compute) == COMPUTE_FIELDS  # no availability-set field
        assert int(compute["platformFaultDomain"]) == vm["fault_domain"]
    _, event = sim.wait_for_event("avset-web-b-vm0")
    assert all(name.startswith("avset-web-b-") for name in event["Resources"])
    truth = sim.truth_for(event["EventId"])
    assert truth["set"] == "avset-web-b"
    other = [e["EventId"] for e in sim.document("avset-web-a-vm0")["Events"]]
    assert event["EventId"] not in other
    _assert_imds_error(sim.approve("avset-web-a-vm0", event["EventId"]), 400)  # not its set's event


def test_served_lowercase_ids_must_be_posted_back_exactly(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "60", "--no-impact",
                          "--event-id-case", "lower")
    _, event = sim.wait_for_event("avset-web-vm0")
    event_id = event["EventId"]
    assert event_id == event_id.lower() and EVENT_ID.match(event_id.upper())
    _assert_imds_error(sim.approve("avset-web-vm0", event_id.upper()), 400)
    assert sim.truth_for(event_id)["status"] == "Scheduled"
    assert sim.approve("avset-web-vm0", event_id).status_code == 200
    assert _first_event(sim.document("avset-web-vm1")) == dict(event, EventStatus="Started", NotBefore="")
    assert [a["accepted"] for a in sim.control_get("approvals")["approvals"]] == [False, True]


USER_REBOOT_OF_VM0 = {"key": "x", "type": "Reboot", "source": "User", "notice_s": 900, "resources": {"vms": [0]}}


def test_injected_event_appears_in_every_document(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600")
    sim.wait_for_event("avset-web-vm0")
    response = sim.control_post("events", {"event": USER_REBOOT_OF_VM0})
    assert response.status_code == 201, response.text
    assert response.json()["keys"] == ["x"]
    (event_id,) = response.json()["event_ids"]
    for name in sim.vm_names():
        (event,) = [e for e in sim.document(name)["Events"] if e["EventId"] == event_id]
        assert (event["EventType"], event["EventSource"], event["Resources"]) == ("Reboot", "User", ["avset-web-vm0"])


def test_injection_reports_only_the_events_it_created(start_simulator: Callable[..., LiveSimulator]) -> None:
    # The scenario's own event falls due 0.08 s after start; nothing has asked the
    # engine to advance yet when the injection arrives.
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "60")
    time.sleep(0.3)
    response = sim.control_post("events", {"event": USER_REBOOT_OF_VM0})
    assert response.status_code == 201, response.text
    injected = [e["event_id"] for e in sim.ground_truth() if e["key"] == "x"]
    assert response.json()["event_ids"] == injected


def test_injected_bundled_scenario_runs(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600")
    response = sim.control_post("events", {"scenario": "cancelled-maintenance"})
    assert response.status_code == 201, response.text
    assert response.json()["keys"] == ["cancelled"]
    # The fleet's own event is a Redeploy; the injected one a Reboot.
    _, event = sim.wait_for_event("avset-web-vm1", match=lambda e: e["EventType"] == "Reboot")
    assert event["EventStatus"] == "Scheduled" and event["Resources"] == ["avset-web-vm0", "avset-web-vm3"]
    # Cancelled 240-420 s (0.4-0.7 s here) after it appeared: Scheduled -> removed.
    wait_for(lambda: sim.truth_for(event["EventId"])["outcome"] == "cancelled", 5, "the cancellation")
    assert all(e["EventId"] != event["EventId"] for e in sim.document("avset-web-vm1")["Events"])
    assert sim.truth_for(event["EventId"])["started_at"] is None


def test_a_control_cancel_withdraws_a_scheduled_event_and_refuses_a_started_one(
        start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--time-scale", "60")
    created = sim.control_post("events", {"event": {"key": "a", "type": "Reboot", "notice_s": 900,
                                                   "resources": {"names": ["avset-web-vm0"]}}})
    (scheduled,) = created.json()["event_ids"]
    answer = sim.control_post("cancel", {"event_id": scheduled})
    assert answer.status_code == 200, answer.text
    assert sim.truth_for(scheduled)["outcome"] == "cancelled"
    # Only the cancelled event is gone: the default scenario's walk may have appeared too (83 ms after start
    # at this time scale), so the document need not be empty.
    assert scheduled not in [e["EventId"] for e in sim.document("avset-web-vm0")["Events"]]
    created = sim.control_post("events", {"event": {"key": "b", "type": "Redeploy", "notice_s": None,
                                                   "resources": {"names": ["avset-web-vm1"]}}})
    (started,) = created.json()["event_ids"]
    refused = sim.control_post("cancel", {"event_id": started})
    assert refused.status_code == 400 and "only a Scheduled event" in refused.json()["error"]
    assert sim.control_post("cancel", ["not", "an", "object"]).status_code == 400


BAD_INJECTIONS = {
    "unknown scenario": {"scenario": "no-such-scenario"},
    "scenario path": {"scenario": "../etc/passwd"},
    "scenario and event": {"scenario": "user-reboot", "event": USER_REBOOT_OF_VM0},
    "neither": {},
    "unknown event field": {"event": {**USER_REBOOT_OF_VM0, "colour": "red"}},
    "unknown event type": {"event": {**USER_REBOOT_OF_VM0, "type": "Explode"}},
    "notice not a number": {"event": {**USER_REBOOT_OF_VM0, "notice_s": "soon"}},
    "event not an object": {"event": "reboot"},
    "bad params": {"scenario": "scale-in", "params": {"terminate_notice_s": "long"}},
    "param out of range": {"scenario": "scale-in", "params": {"terminate_notice_s": 10}},
    "unknown param": {"scenario": "scale-in", "params": {"speed": 2}},
}


@pytest.mark.parametrize("body", BAD_INJECTIONS.values(), ids=BAD_INJECTIONS.keys())
def test_bad_injection_is_400_with_one_sentence(shared: LiveSimulator, body: Dict[str, Any]) -> None:
    response = shared.control_post("events", body)
    assert response.status_code == 400, response.text
    _assert_sentence(response.json()["error"])


def test_injection_body_must_be_json(shared: LiveSimulator) -> None:
    response = shared.control_post("events", b"scenario=user-reboot")
    assert response.status_code == 400
    _assert_sentence(response.json()["error"])


def test_injected_event_naming_an_unknown_vm_is_rejected(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600")
    ghost = {"key": "ghost", "type": "Reboot", "resources": {"names": ["no-such-vm"]}, "at_s": 60}
    response = sim.control_post("events", {"event": ghost})
    assert response.status_code == 400, f"accepted with {response.status_code}: {response.text}"
    _assert_sentence(response.json()["error"])


def test_timeline_records_changes_and_served_documents(shared: LiveSimulator) -> None:
    doc = shared.document("avset-web-vm3")
    timeline = shared.control_get("timeline?vm=avset-web-vm3")["vms"]
    assert list(timeline) == ["avset-web-vm3"]
    changes, served = timeline["avset-web-vm3"]["changes"], timeline["avset-web-vm3"]["served"]
    incarnations = [c["incarnation"] for c in changes]
    assert incarnations == list(range(1, len(incarnations) + 1))
    assert changes[-1]["incarnation"] == doc["DocumentIncarnation"] and changes[-1]["events"] == doc["Events"]
    assert served[-1]["document"] == doc and served[-1]["incarnation"] == doc["DocumentIncarnation"]
    assert served[-1]["api_version"] == API


def test_timeline_lists_every_vm_without_a_filter(shared: LiveSimulator) -> None:
    assert sorted(shared.control_get("timeline")["vms"]) == sorted(shared.vm_names())


def test_unknown_control_endpoint_is_404(shared: LiveSimulator) -> None:
    response = requests.get(shared.control_url("nothing"), timeout=HTTP_TIMEOUT)
    assert response.status_code == 404 and "fleet" in response.json()["error"]


# --------------------------------------------------------------------------- faults

@pytest.mark.parametrize("status", [410, 429, 500, 503])
def test_status_fault_answers_once_then_recovers(faulty: LiveSimulator, status: int) -> None:
    assert faulty.inject_faults("avset-web-vm0", {"kind": "status", "status": status}).status_code == 201
    _assert_imds_error(faulty.get("avset-web-vm0"), status)
    assert faulty.get("avset-web-vm0").status_code == 200


def test_fault_count_covers_that_many_requests(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm1", {"kind": "status", "status": 500, "count": 3})
    statuses = [faulty.get("avset-web-vm1").status_code for _ in range(4)]
    assert statuses == [500, 500, 500, 200]


def test_fault_hits_only_its_vm(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm2", {"kind": "status", "status": 503})
    assert faulty.get("avset-web-vm3").status_code == 200
    assert faulty.get("avset-web-vm2").status_code == 503


def test_compute_fault_leaves_scheduled_events_alone(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm1", {"kind": "status", "status": 500, "path": "compute"})
    assert faulty.get("avset-web-vm1").status_code == 200
    response = requests.get(faulty.imds_url("avset-web-vm1", "compute", COMPUTE_API), headers=HEADERS,
                            timeout=HTTP_TIMEOUT)
    assert response.status_code == 500


def test_delay_fault_outlasts_the_client_timeout(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm4", {"kind": "delay", "delay_s": 1.5})
    started = time.monotonic()
    with pytest.raises(requests.exceptions.Timeout):
        faulty.get("avset-web-vm4", timeout=0.3)
    assert time.monotonic() - started < 1.2
    assert faulty.get("avset-web-vm4").status_code == 200


def test_empty_body_fault(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "empty_body"})
    response = faulty.get("avset-web-vm0")
    assert (response.status_code, response.content) == (200, b"")


def test_malformed_json_fault(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "malformed_json"})
    response = faulty.get("avset-web-vm0")
    assert response.status_code == 200 and response.content
    with pytest.raises(ValueError):
        json.loads(response.content)


def test_wrong_shape_fault(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "wrong_shape"})
    body = faulty.get("avset-web-vm0").json()
    assert "DocumentIncarnation" not in body or not isinstance(body.get("Events"), list)


def test_non_utf8_fault(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "non_utf8"})
    response = faulty.get("avset-web-vm0")
    assert response.status_code == 200
    with pytest.raises(UnicodeDecodeError):
        response.content.decode("utf-8")


def test_huge_fault_is_still_the_document(faulty: LiveSimulator) -> None:
    normal = faulty.document("avset-web-vm5")
    faulty.inject_faults("avset-web-vm5", {"kind": "huge", "size_bytes": 2_000_000})
    response = faulty.get("avset-web-vm5")
    assert response.status_code == 200 and len(response.content) >= 2_000_000
    assert json.loads(response.content) == normal


def test_drop_fault_closes_without_answer(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "drop"})
    with pytest.raises(requests.exceptions.ConnectionError):
        faulty.get("avset-web-vm0")
    assert faulty.get("avset-web-vm0").status_code == 200


def test_reset_mid_body_fault(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm0", {"kind": "reset_mid_body"})
    with pytest.raises((requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        faulty.get("avset-web-vm0")
    assert faulty.get("avset-web-vm0").status_code == 200


def test_redirect_not_followed_is_not_recorded(faulty: LiveSimulator) -> None:
    before = len(faulty.violations()["redirects_followed"])
    faulty.inject_faults("avset-web-vm1", {"kind": "redirect"})
    response = faulty.get("avset-web-vm1", allow_redirects=False)
    assert response.status_code == 307
    assert response.headers["Location"] == faulty.control_url("redirect-trap")
    assert len(faulty.violations()["redirects_followed"]) == before


def test_followed_redirect_is_recorded(faulty: LiveSimulator) -> None:
    before = len(faulty.violations()["redirects_followed"])
    faulty.inject_faults("avset-web-vm1", {"kind": "redirect"})
    response = faulty.get("avset-web-vm1")  # requests follows redirects by default
    assert [r.status_code for r in response.history] == [307]
    assert response.status_code == 400
    followed = faulty.violations()["redirects_followed"]
    assert len(followed) == before + 1 and followed[-1]["method"] == "GET"


def test_body_fault_answers_the_given_text(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm2", {"kind": "body", "status": 502, "body": "upstream gone"})
    response = faulty.get("avset-web-vm2")
    assert (response.status_code, response.text) == (502, "upstream gone")


def test_pending_faults_are_listed_and_cleared(faulty: LiveSimulator) -> None:
    faulty.inject_faults("avset-web-vm3", {"kind": "drop", "count": -1})
    assert [f["kind"] for f in faulty.control_get("faults")["faults"]["avset-web-vm3"]] == ["drop"]
    assert faulty.control_post("faults", {"vm": "avset-web-vm3", "clear": True}).status_code == 201
    assert "avset-web-vm3" not in faulty.control_get("faults")["faults"]
    assert faulty.get("avset-web-vm3").status_code == 200


def test_disable_restarts_the_incarnation_at_one(faulty: LiveSimulator) -> None:
    before = faulty.document("avset-web-vm5")
    assert before["DocumentIncarnation"] > 1
    response = faulty.control_post("faults", {"vm": "avset-web-vm5", "disable": True})
    assert response.status_code == 201 and response.json()["disabled"] is True
    after = faulty.document("avset-web-vm5")
    assert (after["DocumentIncarnation"], after["Events"]) == (1, before["Events"])
    assert faulty.document("avset-web-vm5")["DocumentIncarnation"] == 1


BAD_FAULTS = {
    "unknown vm": {"vm": "no-such-vm", "faults": []},
    "no vm": {"faults": [{"kind": "drop"}]},
    "unknown field": {"vm": "avset-web-vm0", "faults": [], "when": "now"},
    "faults not a list": {"vm": "avset-web-vm0", "faults": {"kind": "drop"}},
    "fault not an object": {"vm": "avset-web-vm0", "faults": ["drop"]},
    "unknown kind": {"vm": "avset-web-vm0", "faults": [{"kind": "explode"}]},
    "unknown fault field": {"vm": "avset-web-vm0", "faults": [{"kind": "drop", "colour": 1}]},
    "status not http": {"vm": "avset-web-vm0", "faults": [{"kind": "status", "status": 99}]},
    "zero count": {"vm": "avset-web-vm0", "faults": [{"kind": "status", "count": 0}]},
    "delay too long": {"vm": "avset-web-vm0", "faults": [{"kind": "delay", "delay_s": 601}]},
    "huge of nothing": {"vm": "avset-web-vm0", "faults": [{"kind": "huge", "size_bytes": 0}]},
    "bad method": {"vm": "avset-web-vm0", "faults": [{"kind": "drop", "method": "PATCH"}]},
    "boolean count": {"vm": "avset-web-vm0", "faults": [{"kind": "drop", "count": True}]},
    "boolean status": {"vm": "avset-web-vm0", "faults": [{"kind": "status", "status": True}]},
}


@pytest.mark.parametrize("body", BAD_FAULTS.values(), ids=BAD_FAULTS.keys())
def test_bad_fault_input_is_400(faulty: LiveSimulator, body: Dict[str, Any]) -> None:
    response = faulty.control_post("faults", body)
    assert response.status_code == 400, response.text
    _assert_sentence(response.json()["error"])
    assert "avset-web-vm0" not in faulty.control_get("faults")["faults"]


def test_post_fault_blocks_the_approval(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim, event = _scheduled_maintenance(start_simulator, "--no-impact")
    leader = event["Resources"][0]
    sim.inject_faults(leader, {"kind": "status", "status": 500, "method": "POST"})
    assert sim.approve(leader, event["EventId"]).status_code == 500
    assert sim.truth_for(event["EventId"])["status"] == "Scheduled"
    assert sim.approve(leader, event["EventId"]).status_code == 200
    assert sim.truth_for(event["EventId"])["status"] == "Started"


# --------------------------------------------------------------------------- service behaviour

def test_rate_limit_throttles_one_vm_only(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600", "--rate-limit", "5")
    with requests.Session() as session:
        statuses = [session.get(sim.imds_url("avset-web-vm0"), headers=HEADERS, timeout=HTTP_TIMEOUT).status_code
                    for _ in range(20)]
    assert 429 in statuses and statuses[0] == 200, statuses
    assert set(statuses) == {200, 429}
    assert sim.get("avset-web-vm1").status_code == 200
    wait_for(lambda: sim.get("avset-web-vm0").status_code == 200, 3, "the bucket to refill", interval=0.1)


def test_first_call_is_slow_and_the_next_is_fast(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600", "--first-call-delay", "1.5")
    first = _timed(lambda: sim.get("avset-web-vm0"))
    second = _timed(lambda: sim.get("avset-web-vm0"))
    assert first >= 1.4
    assert second < first / 5
    assert _timed(lambda: sim.get("avset-web-vm1")) >= 1.4  # every VM enables on its own


def _timed(call: Callable[[], requests.Response]) -> float:
    started = time.monotonic()
    response = call()
    assert response.status_code == 200, response.text
    return time.monotonic() - started


def test_enabling_window_answers_empty_bodies(start_simulator: Callable[..., LiveSimulator]) -> None:
    # 600 scenario seconds at time scale 600: one wall second of empty answers.
    sim = start_simulator("--scenario", "degraded-hardware", "--time-scale", "600", "--enabling-window", "600")
    started = time.monotonic()
    first = sim.get("avset-web-vm0")
    assert (first.status_code, first.content) == (200, b"")
    document = wait_for(lambda: sim.get("avset-web-vm0").content, 5, "a document after the enabling window")
    assert time.monotonic() - started >= 0.95
    assert "DocumentIncarnation" in json.loads(document)


def test_rebooting_vm_drops_connections_during_the_impact(start_simulator: Callable[..., LiveSimulator]) -> None:
    # Time scale 10: the 7 s reboot lasts 0.7 s of wall time.
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "10")
    _, event = sim.wait_for_event("avset-web-vm0")
    rebooting = event["Resources"][0]
    bystander = next(n for n in sim.vm_names() if n not in event["Resources"])
    approved_at = time.monotonic()
    assert sim.approve(rebooting, event["EventId"]).status_code == 200
    with pytest.raises(requests.exceptions.ConnectionError):
        sim.get(rebooting)
    with pytest.raises(requests.exceptions.ConnectionError):
        sim.approve(rebooting, event["EventId"])
    assert _first_event(sim.document(bystander, timeout=0))["EventStatus"] == "Started"
    assert _first_event(sim.document(rebooting))["EventStatus"] == "Started"
    assert time.monotonic() - approved_at >= 0.65


def test_frozen_vm_answers_after_the_freeze(start_simulator: Callable[..., LiveSimulator]) -> None:
    # Time scale 10: the 5 s live-migration freeze lasts 0.5 s of wall time.
    sim = start_simulator("--scenario", "live-migration", "--time-scale", "10")
    _, event = sim.wait_for_event("avset-web-vm0")
    frozen = event["Resources"][0]
    assert sim.approve(frozen, event["EventId"]).status_code == 200
    started = time.monotonic()
    response = sim.get(frozen)
    assert time.monotonic() - started >= 0.3
    assert response.status_code == 200 and _first_event(response.json())["EventStatus"] == "Started"


def test_no_impact_keeps_vms_answering(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "platform-maintenance", "--time-scale", "10", "--no-impact")
    _, event = sim.wait_for_event("avset-web-vm0")
    leader = event["Resources"][0]
    assert sim.approve(leader, event["EventId"]).status_code == 200
    duration = _timed(lambda: sim.get(leader))
    assert _first_event(sim.get(leader).json())["EventStatus"] == "Started"
    assert duration < 0.35


def test_sigterm_stops_the_server_with_status_0(start_simulator: Callable[..., LiveSimulator]) -> None:
    sim = start_simulator("--scenario", "user-reboot", "--time-scale", "60")
    assert sim.get("avset-web-vm0").status_code == 200
    started = time.monotonic()
    assert sim.stop() == 0
    assert time.monotonic() - started < 3


# --------------------------------------------------------------------------- command line

def _run_cli(*args: str, timeout: float = 30) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "imds_simulator", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_non_loopback_bind_is_refused() -> None:
    result = _run_cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "0.0.0.0" in lines[0] and lines[0].endswith(".")


def test_scenarios_lists_every_bundled_scenario() -> None:
    result = _run_cli("scenarios")
    assert result.returncode == 0, result.stderr
    bundled = sorted(p.stem for p in (REPO_ROOT / "imds_simulator" / "scenarios").glob("*.json"))
    assert {"platform-maintenance", "fleet-mix", "live-migration-replay", "sample-week"} <= set(bundled)
    assert [line.split()[0] for line in result.stdout.splitlines()] == bundled


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> List[Dict[str, Any]]:
    """The records of `generate --days 0.05 --poll-interval 5` (platform maintenance)."""
    out = tmp_path_factory.mktemp("generate") / "observations.jsonl"
    result = _run_cli("generate", "--days", "0.05", "--poll-interval", "5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_generate_writes_observation_lines(generated: List[Dict[str, Any]]) -> None:
    per_vm: Dict[str, int] = {}
    for record in generated:
        assert {"observed_at", "host", "vm", "document_incarnation", "events"} <= set(record)
        assert record["vm"]["name"] == record["host"] and isinstance(record["events"], list)
        datetime.fromisoformat(record["observed_at"].replace("Z", "+00:00"))
        per_vm[record["host"]] = per_vm.get(record["host"], 0) + 1
    # 0.05 days = 4320 s at one poll per 5 s: 864 polls per VM, minus a few during reboots.
    assert len(per_vm) == 6 and all(850 <= n <= 864 for n in per_vm.values()), per_vm


def test_generated_incarnations_follow_the_rules(generated: List[Dict[str, Any]]) -> None:
    last: Dict[str, Tuple[str, int]] = {}
    events_of: Dict[Tuple[str, int], List[Event]] = {}
    for record in generated:
        host, incarnation = record["host"], record["document_incarnation"]
        if host in last:
            assert record["observed_at"] >= last[host][0] and incarnation >= last[host][1]
        last[host] = (record["observed_at"], incarnation)
        assert events_of.setdefault((host, incarnation), record["events"]) == record["events"]
    assert max(i for _, i in last.values()) >= 3


# --------------------------------------------------------------------------- Microsoft's mock server

def test_mock_server_mode_plays_what_a_client_can_tell_of_microsofts_mock(start_simulator: Any) -> None:
    """docs/guide/rehearse-with-microsofts-mock.md: one VM named vmss_vm1 at the root, no compute metadata (an HTML 404, as
    Flask answers), lower-case EventIds, NotBefore in ISO 8601 with a Z; the rest is the simulator's, as strict."""
    sim = start_simulator("--mock-server", "--scenario", "user-reboot", "--time-scale", "60")
    root = sim.base_url
    (event,) = wait_for(lambda: requests.get(f"{root}/metadata/scheduledevents?api-version={API}", headers=HEADERS,
                                             timeout=HTTP_TIMEOUT).json()["Events"], 10, "the user reboot")
    assert event["Resources"] == ["vmss_vm1"] and event["EventId"] == event["EventId"].lower()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", event["NotBefore"])
    compute = requests.get(f"{root}/metadata/instance/compute?api-version={COMPUTE_API}", headers=HEADERS,
                           timeout=HTTP_TIMEOUT)
    assert compute.status_code == 404 and compute.headers["Content-Type"].startswith("text/html")
    assert "<title>404 Not Found</title>" in compute.text
    assert requests.get(f"{root}/metadata/scheduledevents?api-version={API}", timeout=HTTP_TIMEOUT).status_code == 400
