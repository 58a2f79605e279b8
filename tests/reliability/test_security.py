"""Security defaults: the simulator stays on loopback, and user task files are checked before anything runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from imds_simulator.server import BindError, ServerOptions, check_bind
from tests.integration.runner import CycleBench
from tests.live_fleet import LiveFleet


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.10"])
def test_the_simulator_refuses_a_non_loopback_address_unless_told(host: str) -> None:
    with pytest.raises(BindError, match="refusing to listen on non-loopback address"):
        check_bind(host, allow_non_loopback=False)
    check_bind(host, allow_non_loopback=True)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_addresses_need_no_flag(host: str) -> None:
    check_bind(host, allow_non_loopback=False)


def test_the_cli_says_why_in_one_line_and_serves_nothing() -> None:
    proc = subprocess.run([sys.executable, "-m", "imds_simulator", "serve", "--host", "0.0.0.0", "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "refusing to listen on non-loopback address 0.0.0.0" in proc.stderr + proc.stdout
    assert ServerOptions().host == "127.0.0.1"


def test_a_live_fleet_listens_on_loopback_only() -> None:
    fleet = LiveFleet(None)
    try:
        assert fleet.server.server_address[0] == "127.0.0.1"
    finally:
        fleet.close()


@pytest.mark.parametrize("which", ["prepare_tasks", "recover_tasks"])
def test_a_missing_or_directory_task_file_fails_the_job_before_anything_is_approved(tmp_path: Path, which: str) -> None:
    # A user event: approved at once if anything runs. Time scale 4: its notice (225 s) outlasts both runs on a
    # loaded machine, so an event still Scheduled shows that the refusal, not the clock, kept it unapproved.
    fleet = LiveFleet("user-reboot", time_scale=4.0)
    try:
        fleet.wait_for_events(timeout=10.0)
        bench = CycleBench(fleet, tmp_path)
        for path in (tmp_path / "missing.yml", tmp_path):
            run = bench.run(extra={which: str(path)})
            assert run.returncode != 0
            assert f"maintenance_cycle_{which} {path} is not a file on the control node." in run.stdout
            assert fleet.approvals() == [] and bench.actions() == []
        assert {e["status"] for e in fleet.truth()} == {"Scheduled"}
    finally:
        fleet.close()
