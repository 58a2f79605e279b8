"""Show that the safety invariants catch each bug they guard against: revert one fix of cycle_policy at a time,
in a scratch copy of the repository, and run tests/reliability/test_safety_invariants.py (72 fleet-days); each
run must fail.  `make invariant-mutants`; exits non-zero if a reverted fix goes unnoticed.

The unprepared-host check of the plan is a second layer behind confirm_approvals (which drops an approval that
lists a host that failed its prepare), so it is reverted together with that check.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What each fix is, in cycle_policy.py, and what reverting it looks like.
MUTATIONS = {
    "a fault domain counts as free once its event left (before its recover)":
        ('if record.get("prepare") or (view["status"] == BLIND', 'if (view["status"] == BLIND'),
    "a host that cannot be read drops out of fault-domain accounting":
        ('if view["status"] in (UNREAD, HELD, AMBIGUOUS):', 'if False:'),
    "nothing is saved before the approval":
        ('plan[host]["save_first"] = plan[host]["saves"] and (', 'plan[host]["save_first"] = False and ('),
    "an approval goes out although a listed host failed its prepare (both layers: the plan and the confirmation)":
        [('    if unprepared:\n        return "not prepared on %s"', '    if False:\n        return "not prepared on %s"'),
         ('if host in alive and all(h in alive for h in approval["hosts"]):', 'if host in alive:')],
    "what was approved is not saved (sent again by the next cycle)":
        ('list(saved["approved"]) + list(approved_now)', 'list(saved["approved"])'),
}


def run_invariants(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           "tests/reliability/test_safety_invariants.py"], cwd=root, capture_output=True, text=True)


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="invariant-mutants-")) / "repo"
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "__pycache__", ".pytest_cache"))
    policy = root / "plugins/module_utils/cycle_policy.py"
    original = policy.read_text()
    missed = []
    try:
        for name, change in MUTATIONS.items():
            mutated = original
            for old, new in (change if isinstance(change, list) else [change]):
                assert mutated.count(old) == 1, f"the fix behind {name!r} is no longer where this script looks"
                mutated = mutated.replace(old, new)
            policy.write_text(mutated)
            proc = run_invariants(root)
            found = [line for line in proc.stdout.splitlines() if line.startswith("E    ")][:2]
            print(f"{'CAUGHT' if proc.returncode else 'MISSED'}: {name}", *found, sep="\n    ", flush=True)
            if proc.returncode == 0:
                missed.append(name)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(f"{len(MUTATIONS) - len(missed)} of {len(MUTATIONS)} reverted fixes caught by the invariants.")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
