"""tools/profile_module_floor.py's parts: the plays it writes, the import time it reads, the arithmetic it reports."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.profile_module_floor import PLAYS, Measured, import_seconds, per_host_task, playbook, report


def test_each_play_has_the_asked_number_of_tasks_and_the_save_is_a_state_the_module_accepts(tmp_path: Path) -> None:
    for play in PLAYS:
        (parsed,) = yaml.safe_load(playbook(play, 3, tmp_path))
        assert len(parsed["tasks"]) == 3 and parsed["gather_facts"] is False, play.name
    save = next(p for p in PLAYS if "scheduled_events_state" in p.task)
    tasks = yaml.safe_load(playbook(save, 2, tmp_path))[0]["tasks"]
    contents = [json.loads(t["azure_imds.scheduled_events.scheduled_events_state"]["content"]) for t in tasks]
    assert [c["version"] for c in contents] == [2, 2], "the module refuses any other version"
    paths = [t["azure_imds.scheduled_events.scheduled_events_state"]["path"] for t in tasks]
    assert len(set(paths)) == 2 and all(p.startswith(str(tmp_path)) for p in paths)
    assert yaml.safe_load(playbook(None, 0, tmp_path))[0]["tasks"] == []


def test_the_import_time_of_a_module_is_read_from_pythons_own_trace() -> None:
    traced = subprocess.run([sys.executable, "-X", "importtime", "-c", "import json"], capture_output=True,
                            text=True, check=True).stderr
    assert import_seconds(traced, "json") > 0
    with pytest.raises(SystemExit, match="did not list no.such.module"):
        import_seconds(traced, "no.such.module")


def test_a_task_costs_its_plays_cpu_less_the_empty_plays_over_hosts_and_tasks() -> None:
    empty = Measured("empty play", 1.0, 2.0)
    ping = Measured("ping", 13.0, 62.0)
    assert per_host_task(ping, empty, hosts=20, tasks=3) == pytest.approx(1.0)
    assert per_host_task(Measured("noise", 1.0, 1.5), empty, hosts=20, tasks=3) == 0.0, "never negative"
    text = report([ping], empty, {"module_process_s": 0.3, "import_basic_s": 0.2}, 20, 5, 3, "python x")
    assert "| ping | 13.0 s | 62.0 | 1.000 | 4.0 s |" in text
    assert "0.300 CPU-s, of which importing ansible.module_utils.basic 0.200 s (67%" in text
