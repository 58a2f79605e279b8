"""Playbooks run exactly as AWX runs them: ansible-runner, the project an admin makes from awx/project/ (playbooks
that import the collection's, their own task files), an inventory folder, survey answers as extra vars, no TTY;
the job's events are read back, also through a REST API shaped like AWX's (the one boundary this machine cannot
reach: a real AWX server)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest
import yaml

import event_analysis as ea
from event_analysis.__main__ import main as analysis_main
from event_analysis.loading.awx import load_awx_job, load_runner_artifacts, runner_job_events
from tests.conftest import COLLECTIONS_PATH
from tests.live_fleet import SMALL_SET, LiveFleet

# Module-scoped fixtures: one xdist worker runs this file (`--dist loadgroup`), so they are built once.
pytestmark = pytest.mark.xdist_group("awx-runner")
REPO = Path(__file__).resolve().parents[2]
SKELETON = REPO / "awx" / "project"
RUNNER = Path(sys.executable).parent / "ansible-runner"
# A 15-minute notice lasts 225-255 s: minutes more than a job that approves needs on a loaded machine.
TIME_SCALE = 4.0


class RunnerJob:
    """An ansible-runner private data dir laid out as AWX lays out a job's."""

    def __init__(self, root: Path, fleet: LiveFleet):
        self.root, self.fleet = root, fleet
        self.result: Tuple[int, str] = (-1, "not run")
        # The project checkout: the admin's own repository, made from the skeleton. The collection itself comes
        # from the execution environment (ANSIBLE_COLLECTIONS_PATH below), as installed.
        root.mkdir(parents=True)
        shutil.copytree(SKELETON, root / "project")
        (root / "inventory").mkdir()
        (root / "env").mkdir()
        self.actions = root / "actions"
        (root / "inventory" / "hosts.json").write_text(json.dumps({"azure_vms": {
            "hosts": {vm: {"maintenance_cycle_imds_url": fleet.url(vm),
                           "maintenance_cycle_availability_set": fleet.availability_set(vm),
                           "maintenance_cycle_state_path": str(root / "state" / f"{vm}.json")} for vm in fleet.vms},
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "actions_dir": str(self.actions)}}}))
        # What the execution environment provides: the collection installed, no colour, no retry files, and a
        # home of its own (each AWX job runs in a fresh container: jobs never share the control-node lock).
        (root / "home").mkdir()
        (root / "env" / "envvars").write_text(yaml.safe_dump({
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_PATH, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCAL_TEMP": str(root / "tmp"), "HOME": str(root / "home")}))

    def run(self, playbook: str, ident: str, survey: Dict[str, Any]) -> Tuple[int, str]:
        (self.root / "env" / "extravars").write_text(yaml.safe_dump(survey))
        proc = subprocess.run([str(RUNNER), "run", str(self.root), "-p", playbook, "--ident", ident],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PATH=f"{RUNNER.parent}{os.pathsep}{os.environ['PATH']}"),
                              check=False)
        status = (self.root / "artifacts" / ident / "status").read_text().strip()
        return proc.returncode, status

    def artifacts(self, ident: str) -> Path:
        return self.root / "artifacts" / ident

    def events(self, ident: str) -> List[Dict[str, Any]]:
        return sorted(runner_job_events(self.artifacts(ident)), key=lambda e: e["counter"])


def new_job(root: Path) -> RunnerJob:
    fleet = LiveFleet("platform-maintenance", time_scale=TIME_SCALE, seed=3, fleet=SMALL_SET)
    fleet.wait_for_events(timeout=10.0)
    return RunnerJob(root, fleet)


@pytest.fixture
def job(tmp_path: Path) -> Iterator[RunnerJob]:
    runner_job = new_job(tmp_path / "job")
    yield runner_job
    runner_job.fleet.close()


# The survey answers of the cycle template: the task files are the project's, by path relative to its root
# (where AWX, like ansible-runner, starts ansible-playbook: <private data dir>/project).
CYCLE_SURVEY = {"prepare_tasks": "maintenance/prepare.yml", "recover_tasks": "maintenance/recover.yml",
                "maintenance_cycle_max_fault_domains_in_maintenance": 1,
                "maintenance_cycle_prepare_anyway_seconds": 480 / TIME_SCALE}  # the role's 480 s, on the fleet's clock


@pytest.fixture(scope="module")
def cycle_job(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunnerJob]:
    """One cycle job, run once for the tests that read it (a real run is among the suite's dearest steps)."""
    runner_job = new_job(tmp_path_factory.mktemp("cycle") / "job")
    runner_job.result = runner_job.run("cycle.yml", "cycle", CYCLE_SURVEY)
    yield runner_job
    runner_job.fleet.close()


def test_ansible_started_in_the_projects_root_runs_its_jobs_with_pipelining_on() -> None:
    """The skeleton's ansible.cfg is found where AWX starts ansible-playbook (docs/lab/benchmarks.md: pipelining
    saves the controller a third of each call over SSH)."""
    env = {k: v for k, v in os.environ.items() if k != "ANSIBLE_CONFIG"}
    done = subprocess.run([str(RUNNER.parent / "ansible-config"), "dump", "--only-changed"], cwd=SKELETON, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert f"ANSIBLE_PIPELINING({SKELETON / 'ansible.cfg'}) = True" in done.stdout.splitlines(), done.stdout


def test_the_cycle_job_runs_the_projects_own_prepare_tasks_from_a_relative_survey_answer(cycle_job: RunnerJob) -> None:
    assert cycle_job.result == (0, "successful")
    prepared = [e for e in cycle_job.events("cycle") if e["event"] == "runner_on_ok"
                and e["event_data"].get("task") == "Say what this VM prepares for"]
    assert prepared, "the project's maintenance/prepare.yml ran"
    project = cycle_job.root / "project"
    assert {e["event_data"]["task_path"].rsplit(":", 1)[0] for e in prepared} == \
        {str(project / "maintenance" / "prepare.yml")}
    approved = {i for a in cycle_job.fleet.approvals() for i in a["event_ids"]}
    listed = {vm for e in cycle_job.fleet.truth() if e["event_id"] in approved for vm in e["resources"]}
    assert approved and listed <= {e["event_data"]["host"] for e in prepared}  # prepared by the project's file


def test_the_cycle_job_runs_under_ansible_runner_and_its_events_rebuild_the_history(cycle_job: RunnerJob) -> None:
    job = cycle_job
    assert job.result == (0, "successful")
    events = job.events("cycle")
    reads = [e for e in events if e["event"] == "runner_on_ok"
             and e["event_data"].get("resolved_action", "").endswith("scheduled_events_claim")]  # the cycle's reads
    assert {e["event_data"]["host"] for e in reads} == set(job.fleet.vms)
    assert any(e["event"] == "playbook_on_stats" for e in events)
    approvals = job.fleet.approvals()
    assert approvals, "the cycle approves the first fault domain's prepared event"
    frame = load_runner_artifacts(job.artifacts("cycle"))
    report = ea.report_of(frame)
    assert report.observations == len(reads) and report.approvals == len(approvals) and not report.bad
    prepares = [e for e in events if e["event"] == "runner_on_ok" and e["event_data"].get("task") ==
                "Say what this VM prepares for"]   # the project's own prepare task, once per host and event
    begun = frame[frame["record"] == "action"]
    assert sorted(begun["host"].astype(str)) == sorted(e["event_data"]["host"] for e in prepares)
    assert set(begun["action"]) == {"prepare"} and begun["trigger"].isna().all()
    approved = frame[frame["record"] == "approval"]
    assert set(approved["event_id"]) == {i for a in approvals for i in a["event_ids"]}
    assert set(approved["host"]) == {a["vm"] for a in approvals}
    lifecycles = ea.event_lifecycles(frame)
    affected = {vm for e in job.fleet.truth() for vm in e["resources"]}
    assert set(lifecycles["vm"]) == affected and lifecycles["approved"].all()


def test_the_approve_job_takes_its_survey_answers_as_text(job: RunnerJob) -> None:
    event = next(e for e in job.fleet.truth() if e["status"] == "Scheduled")
    survey = {"target": "azure_vms", "event_ids": f" {event['event_id'].lower()} "}  # as typed into a survey
    rc, status = job.run("approve.yml", "approve", survey)
    assert (rc, status) == (0, "successful")
    (approval,) = job.fleet.approvals()
    assert approval["event_ids"] == [event["event_id"]] and approval["vm"] == event["resources"][0]


def test_bad_survey_input_fails_the_job_with_the_argument_spec_message(job: RunnerJob) -> None:
    rc, status = job.run("cycle.yml", "bad", dict(CYCLE_SURVEY, maintenance_cycle_max_fault_domains_in_maintenance="two"))
    assert rc != 0 and status == "failed"
    messages = [json.dumps(e["event_data"].get("res", {})) for e in job.events("bad") if e["event"] == "runner_on_failed"]
    assert any("maintenance_cycle_max_fault_domains_in_maintenance" in m and "int" in m for m in messages), messages
    assert job.fleet.approvals() == []


def test_a_task_file_the_project_does_not_have_fails_the_job_before_any_vm_is_read(job: RunnerJob) -> None:
    rc, status = job.run("cycle.yml", "missing", dict(CYCLE_SURVEY, prepare_tasks="maintenance/drain.yml"))
    assert rc != 0 and status == "failed"
    events = job.events("missing")
    messages = [e["event_data"]["res"].get("msg", "") for e in events if e["event"] == "runner_on_failed"]
    assert any("maintenance/drain.yml" in m and str(job.root / "project") in m for m in messages), messages
    touched = [e for e in events if e["event"].startswith("runner_on_")
               and e["event_data"].get("resolved_action", "").startswith("azure_imds.scheduled_events.scheduled_events_")]
    assert touched == []  # no IMDS read, lock or state on any VM (the control-node lock is the controller's)
    assert job.fleet.approvals() == [] and not (job.root / "state").exists()


# ----------------------------------------------------------------- the same events through an AWX-shaped REST API

class FakeAwxEvents(BaseHTTPRequestHandler):
    """TEST DOUBLE for an AWX server (none can run here): /api/v2/jobs/<id>/job_events/ with
    AWX's page shape ({count, next, previous, results}), ordering and token check."""
    events: List[Dict[str, Any]] = []
    token = "s3cret"
    page_size = 7

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            return self._send(401, {"detail": "Authentication credentials were not provided."})
        if url.path != "/api/v2/jobs/42/job_events/":
            return self._send(404, {"detail": "Not found."})
        query = parse_qs(url.query)
        page, size = int(query.get("page", ["1"])[0]), min(int(query.get("page_size", ["25"])[0]), self.page_size)
        ordered = sorted(self.events, key=lambda e: e["counter"])
        chunk = ordered[(page - 1) * size:page * size]
        more = page * size < len(ordered)
        self._send(200, {"count": len(ordered), "results": chunk, "previous": None,
                         "next": f"{url.path}?order_by=counter&page_size={size}&page={page + 1}" if more else None})

    def _send(self, status: int, body: Dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_awx_jobs_events_give_the_same_history_as_its_artifacts(cycle_job: RunnerJob) -> None:
    job = cycle_job
    assert job.result[0] == 0
    FakeAwxEvents.events = [dict(e, id=i, host_name=e["event_data"].get("host", "")) for i, e in
                            enumerate(job.events("cycle"), start=1)]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAwxEvents)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        from_api = load_awx_job(base, 42, FakeAwxEvents.token)
        with pytest.raises(ea.HistoryError, match="refused the token"):
            load_awx_job(base, 42, "wrong")
        with pytest.raises(ea.HistoryError, match="HTTP 404"):
            load_awx_job(base, 7, FakeAwxEvents.token)
    finally:
        server.shutdown()
    assert len(FakeAwxEvents.events) > FakeAwxEvents.page_size * 2  # several pages were followed
    pd.testing.assert_frame_equal(from_api, load_runner_artifacts(job.artifacts("cycle")))


def from_awx_cli(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "event_analysis", "from-awx", *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=Path(__file__).resolve().parents[2])


def from_awx_here(capsys: pytest.CaptureFixture, *args: str) -> "subprocess.CompletedProcess[str]":
    """The same command's main() in this process (a process of its own costs seconds of CPU to import pandas)."""
    code = analysis_main(["from-awx", *args])
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(["main", *args], code, printed.out, printed.err)


def test_a_jobs_history_is_written_to_a_file_the_notebooks_read(cycle_job: RunnerJob, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    """From the artifacts by a real `python -m event_analysis from-awx`; from the REST API, and the refusal to
    overwrite, through the same main() in this process."""
    artifacts = cycle_job.artifacts("cycle")
    from_runner = tmp_path / "job.jsonl"
    done = from_awx_cli("--runner", str(artifacts), str(from_runner))
    assert done.returncode == 0 and f"to {from_runner}" in done.stdout, done.stderr
    expected = load_runner_artifacts(artifacts)
    written = ea.load_history(from_runner)
    assert (ea.report_of(written).observations, ea.report_of(written).approvals) == \
        (ea.report_of(expected).observations, ea.report_of(expected).approvals) and not ea.report_of(written).bad
    pd.testing.assert_frame_equal(ea.event_lifecycles(written), ea.event_lifecycles(expected))

    FakeAwxEvents.events = [dict(e, id=i, host_name=e["event_data"].get("host", "")) for i, e in
                            enumerate(cycle_job.events("cycle"), start=1)]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAwxEvents)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text(FakeAwxEvents.token + "\n")
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        from_api = tmp_path / "api.jsonl"
        assert from_awx_here(capsys, "--url", base, "--job", "42", "--token-file", str(token),
                             str(from_api)).returncode == 0
        again = from_awx_here(capsys, "--url", base, "--job", "42", "--token-file", str(token), str(from_api))
    finally:
        server.shutdown()
    assert from_api.read_bytes() == from_runner.read_bytes(), "the REST API and the artifacts give one history"
    assert again.returncode == 1 and "exists" in again.stderr and again.stderr.count("\n") == 1
