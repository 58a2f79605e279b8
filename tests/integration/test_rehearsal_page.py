"""docs/guide/rehearse-with-microsofts-mock.md, run as written against its stand-in for Microsoft's mock server.

The stand-in is the page's own second command (`imds_simulator serve --mock-server`), on a free port instead of
8080: a test double for Azure-Samples/scheduled-events-mock-server, which this machine cannot fetch, checked against
what that project publishes (its README: `/metadata/scheduledevents` GET and POST, the resource `vmss_vm1`) and what
a client sees of it (no compute metadata, lower-case EventIds, ISO 8601 NotBefore). The inventory and the tasks
files are the page's, the cycle command is the page's, run through bash; only the URL points at the stand-in, and
its clock runs slower than the page's (a test never races the simulator's clock: see start_stand_in).
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.timing import wait_for

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "guide" / "rehearse-with-microsofts-mock.md").read_text()
BIN = Path(sys.executable).parent
PAGE_SCALE, SCALE = "--time-scale 10 ", "--time-scale 4 "  # the page's 90 s of notice for a user; 225 s here
STARTED_FOR_S = 300  # the user-reboot scenario's longest Started phase, in simulated seconds


def blocks(language: str) -> List[str]:
    return re.findall(r"```%s\n(.*?)```" % language, PAGE, re.S)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def control(url: str, name: str) -> Any:
    """The stand-in's record (its control API): `events` or `approvals`."""
    with urllib.request.urlopen(f"{url}/_simulator/{name}", timeout=10) as answer:
        return json.loads(answer.read())[name]


def test_the_rehearsal_page_runs_as_written_against_the_stand_in(tmp_path: Path) -> None:
    clone, stand_in, cycle = blocks("sh")
    assert "Azure-Samples/scheduled-events-mock-server" in clone and "main.py" in clone
    (inventory,) = blocks("ini")
    prepare, recover = blocks("yaml")
    port = free_port()
    (tmp_path / "home").mkdir()
    assert "--port 8080" in stand_in and "http://localhost:80 " in inventory
    env = dict(os.environ, HOME=str(tmp_path / "home"), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    def start_stand_in() -> "subprocess.Popen[str]":
        """The page's command on a free port and a slower clock: its reboot's 15 minutes of notice last 225 s here,
        where a loaded machine's cycle may take more than the page's 90 s (its own scale is the page's, above)."""
        assert PAGE_SCALE in stand_in
        command = stand_in.strip().replace("--port 8080", f"--port {port}").replace(PAGE_SCALE, SCALE)
        started = subprocess.Popen(["bash", "-ec", "exec " + command],
                                   cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert "ready at" in (started.stdout.readline() if started.stdout else ""), "the stand-in did not start"
        return started

    server = start_stand_in()
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: control(url, "events"), 10, "the stand-in's user reboot to appear")
        (tmp_path / "mock.ini").write_text(inventory.replace("http://localhost:80", url))
        (tmp_path / "prepare.yml").write_text(prepare)
        (tmp_path / "recover.yml").write_text(recover)
        first = subprocess.run(["bash", "-ec", cycle], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        approvals: List[Dict[str, Any]] = control(url, "approvals")
        events = control(url, "events")
        wait_for(lambda: all(e["status"] == "Removed" for e in control(url, "events")),
                 STARTED_FOR_S / float(SCALE.split()[1]) + 60, "the approved reboot to run and leave the document",
                 interval=1)
        second = subprocess.run(["bash", "-ec", cycle], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=300)
        # "start the stand-in again for another try": a new run, a new EventId, prepared and approved again (one
        # served again would be the one the saved state approved, and the cycle would do nothing)
        server.terminate()
        server.wait(timeout=30)
        server = start_stand_in()
        wait_for(lambda: control(url, "events"), 10, "the restarted stand-in's user reboot to appear")
        again = subprocess.run(["bash", "-ec", cycle], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        (retried,) = control(url, "events")
        approved_again = control(url, "approvals")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert retried["event_id"] != events[0]["event_id"], "a fresh EventId per run"
    assert f"Would drain rehearsal for Reboot {retried['event_id']}" in again.stdout
    assert [a["event_ids"] for a in approved_again] == [[retried["event_id"]]]
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-4000:]
    (event,) = events
    assert event["event_id"] == event["event_id"].lower(), "the stand-in serves lower-case ids, as the mock does"
    assert f"Would drain rehearsal for Reboot {event['event_id']}" in output, "the page's prepare task ran"
    assert "no compute metadata" in output and "fault domain is unknown" in output, "said, not failed"
    assert "<" not in "".join(line for line in output.splitlines() if "HTTP 404" in line), "no HTML page quoted"
    assert [a["event_ids"] for a in approvals] == [[event["event_id"]]], "a user's reboot, approved once prepared"
    assert second.returncode == 0, (second.stdout + second.stderr)[-4000:]
    assert f"Would put rehearsal back after {event['event_id']}" in second.stdout, "the page's recover task ran"
