"""Helpers for the history-capture callback tests: enabling it, reading and validating what it wrote."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from jsonschema import Draft202012Validator

from tests.modules.harness import LiveFleet

REPO = Path(__file__).resolve().parents[2]
CALLBACK = "azure_imds.scheduled_events.scheduled_events_history"
SCHEMA = json.loads((REPO / "docs" / "reference" / "observation.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)


def capture_env(path: Optional[Path] = None, **extra: str) -> Dict[str, str]:
    """Environment for harness.play that enables the callback (and points it at `path`)."""
    env = {"ANSIBLE_CALLBACKS_ENABLED": CALLBACK}
    if path is not None:
        env["SCHEDULED_EVENTS_HISTORY_PATH"] = str(path)
    env.update(extra)
    return env


@dataclass
class History:
    records: List[Dict[str, Any]] = field(default_factory=list)
    bad_lines: List[Tuple[int, str]] = field(default_factory=list)  # (0-based line number, text)
    lines: List[str] = field(default_factory=list)
    ends_with_newline: bool = True

    @property
    def observations(self) -> List[Dict[str, Any]]:
        return [r for r in self.records if r.get("record", "observation") == "observation"]

    @property
    def approvals(self) -> List[Dict[str, Any]]:
        return [r for r in self.records if r.get("record") == "approval"]

    def actions(self, action: str) -> List[Dict[str, Any]]:
        return [r for r in self.records if r.get("record") == "action" and r["action"] == action]

    def of_host(self, host: str) -> List[Dict[str, Any]]:
        return [r for r in self.observations if r["host"] == host]


def read_history(path: Path) -> History:
    """Parse a history file the way a reader does: one JSON object per line, bad lines counted."""
    data = path.read_bytes() if path.exists() else b""
    history = History(ends_with_newline=data.endswith(b"\n") or not data)
    text = data.decode("utf-8")
    history.lines = text.split("\n")
    if history.lines and history.lines[-1] == "":
        history.lines.pop()
    for number, line in enumerate(history.lines):
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
        except ValueError:
            history.bad_lines.append((number, line))
            continue
        history.records.append(record)
    return history


def schema_errors(record: Dict[str, Any]) -> List[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(record)]


def assert_valid(history: History) -> None:
    for record in history.records:
        errors = schema_errors(record)
        assert not errors, (errors, record)


def expected_vm(fleet: LiveFleet, name: str) -> Dict[str, Any]:
    return fleet.engine.vm_state(name).vm.observation_fields()


def served(fleet: LiveFleet, name: str) -> List[Dict[str, Any]]:
    """Every document the simulator served to VM `name` ({at, incarnation, api_version, document})."""
    with fleet.sim.lock:
        return list(fleet.engine.vm_state(name).served)


def start_playbook(tmp: Path, fleet: LiveFleet, tasks: Sequence[Dict[str, Any]], hosts: Sequence[str],
                   env: Dict[str, str]) -> subprocess.Popen:
    """Start ansible-playbook (own process group, so a test can kill the whole run) without waiting for it."""
    inventory = {"all": {"hosts": {h: {"imds_url": fleet.url(h)} for h in hosts},
                         "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    (tmp / "inventory.json").write_text(json.dumps(inventory))
    (tmp / "playbook.json").write_text(json.dumps([{"hosts": "all", "gather_facts": False, "tasks": list(tasks)}]))
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inventory.json"),
               str(tmp / "playbook.json")]
    environment = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="0",
                       ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"), **env)
    with open(tmp / "ansible-playbook.log", "w") as log:  # a file, not a pipe: a pipe nobody reads would stall the run
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)
