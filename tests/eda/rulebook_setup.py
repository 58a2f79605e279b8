"""Starting the collection's rulebook as a user would, for the end-to-end test and `make bench-reaction`."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, IO, List

import yaml

from tests.integration.runner import FILES

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class RulebookSetup:
    """In `work`: the relays' token, a free port, the rulebook's vars (the test's prepare/recover log tasks)
    and a user's environment with a home of its own (the cycles' VM memory lives there)."""

    def __init__(self, work: Path, token: bytes, hosts: List[str]):
        self.work = work
        self.token_file = work / "token"
        self.token_file.write_bytes(token)
        self.token_file.chmod(0o600)
        self.port = free_port()
        self.vars_file = work / "vars.yml"
        self.vars_file.write_text(yaml.safe_dump({
            "token_file": str(self.token_file), "listen_port": self.port, "expected_hosts": ",".join(hosts),
            "prepare_tasks": str(FILES / "prepare_log.yml"), "recover_tasks": str(FILES / "recover_log.yml")}))
        home = work / "home"
        home.mkdir(exist_ok=True)
        self.env: Dict[str, str] = dict(os.environ, HOME=str(home), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                                        ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
                                        ANSIBLE_LOCAL_TEMP=str(work / "ansible-tmp"))

    def start(self, inventory: Path, log: IO[str]) -> subprocess.Popen:
        """`ansible-rulebook -r azure_imds.scheduled_events.scheduled_events`, in its own process group."""
        return subprocess.Popen([str(BIN / "ansible-rulebook"), "-r", "azure_imds.scheduled_events.scheduled_events",
                                 "-i", str(inventory), "--vars", str(self.vars_file)], cwd=self.work, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


SERVICE_BUS_DOUBLE = Path(__file__).resolve().parent / "service_bus_double"  # azure_service_bus's TEST DOUBLE


def event_grid_files(work: Path, inventory: Path, vm_ids: Dict[str, str]) -> Path:
    """In `work`, what docs/guide/event-driven.md has the Event Grid rulebook run from: the inventory as a directory,
    vm_ids.yml, and rulebook_vars.yml (the test's prepare/recover log tasks) whose Service Bus connection string
    names the double's queue file; -> that queue file, one Event Grid delivery per line."""
    (work / "inventory").mkdir()
    (work / "inventory" / "hosts.json").write_text(inventory.read_text())
    (work / "vm_ids.yml").write_text(yaml.safe_dump(vm_ids))
    queue = work / "queue.jsonl"
    queue.write_text("")
    (work / "rulebook_vars.yml").write_text(yaml.safe_dump({
        "service_bus_connection_string": f"file://{queue}", "service_bus_queue": "scheduled-events",
        "prepare_tasks": str(FILES / "prepare_log.yml"), "recover_tasks": str(FILES / "recover_log.yml")}))
    return queue


def event_grid_env(collections: Path) -> Dict[str, str]:
    """Only the double and the collection: the real azure.azcollection in site-packages would come first."""
    return {"ANSIBLE_COLLECTIONS_PATH": f"{SERVICE_BUS_DOUBLE}{os.pathsep}{collections}",
            "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false"}
