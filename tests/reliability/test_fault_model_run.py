"""tools/fault_model_run.py's journal: a run in parts counts every fleet-day once, and only for the code that ran it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tools.fault_model_run import CODE, code_version, journaled

REPO = Path(__file__).resolve().parents[2]


def run(journals: Path, fleet_days: int) -> str:
    done = subprocess.run([sys.executable, "tools/fault_model_run.py", "--fleet-days", str(fleet_days), "--resume",
                           "--only", "scheduled", "--workers", "1", "--journals", str(journals)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_run_in_two_parts_counts_each_fleet_day_once(tmp_path: Path) -> None:
    first = run(tmp_path, 2)
    assert "0 of these 2 fleet-days already run" in first and first.splitlines()[-1].startswith("2 fleet-days")
    (journal,) = tmp_path.glob("*.jsonl")
    assert journal.stem == code_version() and len(journal.read_text().splitlines()) == 2
    second = run(tmp_path, 3)
    assert "2 of these 3 fleet-days already run" in second
    summary = second.splitlines()[-1]
    assert summary.startswith("3 fleet-days") and "2 fleet-days of them from the journal" in summary
    assert re.search(r"(\d+) cycles", summary) and len(journal.read_text().splitlines()) == 3, "one more, journaled"


def test_a_torn_line_is_run_again_and_another_code_version_starts_afresh(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_text('{"combo": [0, "one set", "none", 60], "problems": []}\n{"combo": [1, "one s')
    assert [r["combo"] for r in journaled(journal)] == [(0, "one set", "none", 60)]
    for top in CODE:  # a tree with one file in each place the version reads
        target = tmp_path / "tree" / top
        if not top.endswith(".py"):
            target = target / "a.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
    before = code_version(tmp_path / "tree")
    (tmp_path / "tree" / "plugins" / "a.py").write_text("y")
    assert code_version(tmp_path / "tree") != before, "a change to the collection's code is another journal"


def test_the_fleet_days_that_failed_in_an_old_journal_run_again_under_this_code(tmp_path: Path) -> None:
    """Seed 76's fleet-days failed in an old journal on a false alarm of the judge, fixed since: only the failed
    fleet-days of the old journal run again, and this code keeps them clean."""
    old = tmp_path / "old.jsonl"
    old.write_text('{"combo": [0, "one set", "none", 300], "problems": []}\n'
                   '{"combo": [76, "one set", "none", 300], "problems": ["over_the_limit: ..."]}\n'
                   '{"combo": [76, "one set", "none", 300], "problems": ["over_the_limit: ..."]}\n'
                   '{"not": "a fleet-day"}\n[1, 2]\n')
    done = subprocess.run([sys.executable, "tools/fault_model_run.py", "--failed-in", str(old), "--workers", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 fleet-days failed in" in done.stdout and done.stdout.splitlines()[-1].startswith("1 fleet-days")
    assert "0 fleet-days with violations" in done.stdout
    missing = subprocess.run([sys.executable, "tools/fault_model_run.py", "--failed-in", str(tmp_path / "none.jsonl")],
                             cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert missing.returncode == 2 and "no such journal file" in missing.stdout and "Traceback" not in missing.stderr
