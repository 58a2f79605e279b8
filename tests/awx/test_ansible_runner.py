"""Playbooks run exactly as AWX runs them: ansible-runner, a project folder, an inventory folder,
survey answers as extra vars, no TTY; the job's events are read back, also through a REST API
shaped like AWX's (the one boundary this machine cannot reach: a real AWX server)."""
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
from event_analysis.awx import load_awx_job, load_runner_artifacts, runner_job_events
from tests.conftest import COLLECTIONS_PATH
from tests.live_fleet import LiveFleet

REPO = Path(__file__).resolve().parents[2]
FILES = REPO / "tests" / "integration" / "files"
RUNNER = Path(sys.executable).parent / "ansible-runner"


class RunnerJob:
    """An ansible-runner private data dir laid out as AWX lays out a job's."""

    def __init__(self, root: Path, fleet: LiveFleet):
        self.root, self.fleet = root, fleet
        (root / "project").mkdir(parents=True)
        shutil.copytree(REPO / "playbooks", root / "project" / "playbooks")  # the project checkout
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


@pytest.fixture
def job(tmp_path: Path) -> Iterator[RunnerJob]:
    # Time scale 10: a 15-minute notice lasts 90 s, so a job slowed by a loaded machine still plans well before
    # NotBefore is near (prepare_anyway_seconds below), when the event would be left to NotBefore.
    fleet = LiveFleet("platform-maintenance", time_scale=10.0, seed=3)
    fleet.wait_for_events(timeout=10.0)
    yield RunnerJob(tmp_path / "job", fleet)
    fleet.close()


CYCLE_SURVEY = {"prepare_tasks": str(FILES / "prepare_log.yml"), "recover_tasks": str(FILES / "recover_log.yml"),
                "maintenance_cycle_max_fault_domains_in_maintenance": 1,
                "maintenance_cycle_prepare_anyway_seconds": 48}  # 480 s at time scale 10


def test_the_cycle_job_runs_under_ansible_runner_and_its_events_rebuild_the_history(job: RunnerJob) -> None:
    rc, status = job.run("playbooks/cycle.yml", "cycle", CYCLE_SURVEY)
    assert (rc, status) == (0, "successful")
    events = job.events("cycle")
    reads = [e for e in events if e["event"] == "runner_on_ok"
             and e["event_data"].get("resolved_action", "").endswith("scheduled_events_info")]
    assert {e["event_data"]["host"] for e in reads} == set(job.fleet.vms)
    assert any(e["event"] == "playbook_on_stats" for e in events)
    approvals = job.fleet.approvals()
    assert approvals, "the cycle approves the first fault domain's prepared event"
    frame = load_runner_artifacts(job.artifacts("cycle"))
    report = ea.report_of(frame)
    assert report.observations == len(reads) and report.approvals == len(approvals) and not report.bad
    approved = frame[frame["record"] == "approval"]
    assert set(approved["event_id"]) == {i for a in approvals for i in a["event_ids"]}
    assert set(approved["host"]) == {a["vm"] for a in approvals}
    lifecycles = ea.event_lifecycles(frame)
    affected = {vm for e in job.fleet.truth() for vm in e["resources"]}
    assert set(lifecycles["vm"]) == affected and lifecycles["approved"].all()


def test_the_approve_job_takes_its_survey_answers_as_text(job: RunnerJob) -> None:
    event = next(e for e in job.fleet.truth() if e["status"] == "Scheduled")
    survey = {"target": "azure_vms", "event_ids": f" {event['event_id'].lower()} "}  # as typed into a survey
    rc, status = job.run("playbooks/approve.yml", "approve", survey)
    assert (rc, status) == (0, "successful")
    (approval,) = job.fleet.approvals()
    assert approval["event_ids"] == [event["event_id"]] and approval["vm"] == event["resources"][0]


def test_bad_survey_input_fails_the_job_with_the_argument_spec_message(job: RunnerJob) -> None:
    rc, status = job.run("playbooks/cycle.yml", "bad", dict(CYCLE_SURVEY, maintenance_cycle_max_fault_domains_in_maintenance="two"))
    assert rc != 0 and status == "failed"
    messages = [json.dumps(e["event_data"].get("res", {})) for e in job.events("bad") if e["event"] == "runner_on_failed"]
    assert any("maintenance_cycle_max_fault_domains_in_maintenance" in m and "int" in m for m in messages), messages
    assert job.fleet.approvals() == []


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


def test_an_awx_jobs_events_give_the_same_history_as_its_artifacts(job: RunnerJob) -> None:
    assert job.run("playbooks/cycle.yml", "cycle", CYCLE_SURVEY)[0] == 0
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
