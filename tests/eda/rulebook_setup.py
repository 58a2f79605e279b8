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
