"""Show that the fault model catches each bug it guards against: revert one safety fix at a time, in a scratch copy
of the repository, and run the model (tools/fault_model_run.py, up to 2,000 fleet-days, or 1,200 event-driven or 400 split
ones for a mutant whose code runs only there, stopping at the first violation);
each run must fail.  `make invariant-mutants` (or `python tools/invariant_mutants.py 'late'`, the mutants whose
name has that part); exits non-zero if a reverted fix goes unnoticed.

The unprepared-host check of the plan is a second layer behind confirm_approvals (which drops an approval that
lists a host that failed its prepare), so it is reverted together with that check. The save after the prepare tasks
(before the approval), once a mutant here, is no longer one: the write-ahead before the prepare tasks now carries
what it protected (a drain owes its recover whatever happens next); it still records news and marks prepares done.
Rules the model cannot tell apart by what happens to the VMs are held by unit tests instead (tests/unit/plugins/
module_utils/cycle/test_plan.py): a blind host holds its domain (every VM of a set sees the set's events, so
another VM's read already shows the domain busy), ambiguous names (the simulator's VM names are unique), and
that a drain made late licenses no other event to join its fault domain (the domain is drained already, so by the
model's measure, the README's, joining it adds no fault domain in maintenance; the rule keeps another event from
taking it down before NotBefore, which a unit test holds), and that an event spanning beyond the limit is not
admitted as alone beside another such event (the plan can only mistake it for alone when its domains include all the
other's, so the two together take down no domain the second would not take alone; the rule keeps it waiting until
the first is over, which test_fault_domains.py and test_plan.py hold; the model's runs rarely reach that case,
docs/lab/reliability.md has the runs). A unit test holds one more such rule, that an approved event still shown
Scheduled holds its fault domain: the model's runs always have prepare tasks, so a drain record holds that domain
too; without prepare tasks only the approval does (test_plan.py's regression test).

Issue 43's fixes, each caught on the kind of fleet-day it concerns (tools/fault_model_run.py's deployments), except:
the state store itself (a store that loses writes, or the VM memory kept apart from it): the model keeps the
controller's state and memory in its own maps, one per store, so it can only tell a store that outlives the job from
one that does not (the AWX refusal's mutant), and the stores' unit tests (tests/unit/plugins/plugin_utils/store/)
hold that SQLite and PostgreSQL keep what they are given; a throttled Resource Graph read, which ends as a failed read
(the model's `read` fault) once its waits are spent, so that wait's loss could only make a read fail more often; and
a read that takes its first page as the whole table: the control-plane fleet-days read in pages of 2, 5 or 1,000 rows,
but with that fix reverted some 13 of them (9 minutes on a loaded machine) broke no rule: a missing row of an event on
record makes the host blind (check_owed), a missing new event is neither prepared nor approved, and only a missing
Started event beside another domain's approval would show; unit tests (test_graph_paging.py) and the regression test
over real HTTP (tests/integration/test_control_plane_cycle.py) hold it.
Not yet shown caught: an unread control-plane host taken as deleted after its own eviction (views.py's
silent_when_gone), reverted and run on spot-restart fleet-days for 16 minutes on a loaded machine without a catch;
test_deleted.py and the filter's unit tests hold it meanwhile. And, since a gone host is read once nothing it lists
could count its fault domain in maintenance, a control-plane host whose own Preempt or Terminate Completed is read
whatever it lists (check_present reverted): caught at seed 1 before that change, in none of the first 39 seeds of
control-plane fleet-days under a first version of it (21 minutes on a loaded machine); test_host_read.py holds it,
with the case a review found.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
CYCLE = "plugins/module_utils/cycle"
POLICY = f"{CYCLE}/plan.py"
VIEWS = f"{CYCLE}/views.py"
FAULT_DOMAINS = f"{CYCLE}/fault_domains.py"
TRANSITION = f"{CYCLE}/transition.py"
VIEW = "plugins/module_utils/relay/fleet_view.py"
HOST_READ = "plugins/module_utils/control_plane/host_read.py"
WAKE_UP = "plugins/module_utils/control_plane/wake_up.py"
EVENTS = "plugins/module_utils/document/events.py"
STORE_URL = "plugins/plugin_utils/store/url.py"
ROLE = "roles/maintenance_cycle/tasks"
FLEET_DAYS = 2000

Change = Tuple[str, str, str]  # (file, the fix as it reads, the fix reverted)
# What each fix is, where, and what reverting it looks like.
MUTATIONS: Dict[str, List[Change]] = {
    # issue 25
    "nothing is on record before the prepare tasks run (a run killed mid-prepare owes no recover)":
        [(TRANSITION, "return state_after(result, prepared, failed=True, late=late)", "return state_after(result, (), late=late)")],
    "the role prepares before it recovers (prepare-anyway drains a second domain before the first is recovered)":
        [(f"{ROLE}/main.yml", "import_tasks: recover.yml", "import_tasks: RECOVER"),
         (f"{ROLE}/main.yml", "import_tasks: prepare.yml", "import_tasks: recover.yml"),
         (f"{ROLE}/main.yml", "import_tasks: RECOVER", "import_tasks: prepare.yml")],
    "a recover runs while another event still needs the host's drain":
        [(POLICY, "    if not owed or not holding:\n", "    if True:\n")],
    "a late prepare is forgotten (a later cycle approves it before NotBefore)":
        [(TRANSITION, "was_late = was_late or key in late", "was_late = was_late")],
    "a drain owed only a recover licenses other events to join its fault domain":
        [(FAULT_DOMAINS, "ongoing and record[\"prepare\"] == PREPARE_DONE", "record[\"prepare\"] == PREPARE_DONE")],
    "a drain merely begun (written ahead) licenses other events to join its fault domain":
        [(FAULT_DOMAINS, "ongoing and record[\"prepare\"] == PREPARE_DONE and not", "ongoing and not")],
    "an event of an unknown status holds no fault domain":
        [(FAULT_DOMAINS, 'if event["event_status"] == "Scheduled" and event.get("known_status", True) and not started:',
          'if event["event_status"] != "Started" and not started:')],
    "a state file that cannot be read is taken as a first cycle, and saved over":
        [(VIEWS, 'elif result.get("state_status") == "corrupt":', "elif False:"),
         (TRANSITION, '    if result.get("state_status") == "corrupt":\n        raise', "    if False:\n        raise")],
    "a push saying quiet takes its host out of the event-driven runs (a lying relay hides an owed recover)":
        [(VIEW, "h not in self.read_quiet_at or self.worried_at.get(h, 0.0) >= self.read_quiet_at[h]\n"
                "                       or self.covered_at.get(h, 0.0) > self.read_quiet_at[h]))",
          "not self.hosts[h].quiet))")],
    "a host an event-driven run covered leaves the runs without a read that found it quiet":
        [(VIEW, "\n                       or self.covered_at.get(h, 0.0) > self.read_quiet_at[h]))", "))")],
    "a host prepares an event only another host's read shows (its write-ahead cannot record it)":
        [(POLICY, '    if own is None or not affects(own, view["vm_name"]):\n        # Another host', "    if False:\n        # Another host")],
    "a host prepares an event its own read shows without listing it (its recover then undoes the drain)":
        [(POLICY, '    if own is None or not affects(own, view["vm_name"]):', "    if own is None:")],
    "a Started event licenses other events to join its fault domain (it may end before the drain)":
        [(FAULT_DOMAINS, 'hold(domain, "%s is in %s event %s" % (name, status, event["event_id"]), False, event["event_id"])',
          'hold(domain, "%s is in %s event %s" % (name, status, event["event_id"]), True, event["event_id"])')],
    "an approval is led by a host whose own read does not show the event (its save then drops the record)":
        [(POLICY, 'views[h]["status"] == FRESH and event["event_id"].upper() in views[h]["present"]]',
          'views[h]["status"] == FRESH]')],
    "a set with VMs outside the target is not refused (a set split over two runs drains two domains at once)":
        [(POLICY, '    if not policy["approve_outside_inventory"]:\n        split = split_sets(',
          '    if False:\n        split = split_sets(')],
    "a split set is forgotten once the events that listed the other run's VMs are gone":
        [(POLICY, "outside_vms(views, target_names), remembered_outside,", "outside_vms(views, target_names), None,")],
    "cycles side by side without VM locks are not refused":
        [(POLICY, '    if policy["parallel_runs"] < 2:\n        return', "    return")],
    # earlier issues
    "a VM another run holds (its lock) counts as free":
        [(VIEWS, "    elif lock.get(\"held_by\"):\n        status = HELD", "    elif False:\n        status = HELD")],
    "a fault domain counts as free once its event left (before its recover)":
        [(FAULT_DOMAINS, '            if record.get("prepare"):\n                # Only a drain',
          '            if False:\n                # Only a drain')],
    "a host that cannot be read drops out of fault-domain accounting":
        [(FAULT_DOMAINS, 'if view["status"] in UNSEEN_STATUSES:', "if False:")],
    "an approval goes out although a listed host failed its prepare (both layers: the plan and the confirmation)":
        [(POLICY, "    if wanted and unprepared:", "    if False:"),
         (POLICY, 'return leaders[event_id] in alive and all(h in alive for h in plan["approvals"][event_id]["hosts"])',
          "return leaders[event_id] in alive")],
    # issue 27
    "an unread VM counts as deleted without a sighting of its own Preempt or Terminate Started":
        [(VIEWS, 'given.get("silent_when_gone", True) \\\n                and taken_as_deleted(views[host]["deleting"], now):',
          'given.get("silent_when_gone", True):')],
    # issue 30
    "a control-plane read that shows neither an event on record nor its end counts as news (a read gone back in time "
    "undoes a drain)":
        [(HOST_READ, "    if owed:\n        raise ControlPlaneBlind", "    if False:\n        raise ControlPlaneBlind")],
    "a control-plane read that does not show an approved or merely seen event forgets it (the approval is sent twice)":
        [(HOST_READ, 'return [e["event_id"] for e in state.get("events") or []] + list(state.get("approved") or [])',
          'return [e["event_id"] for e in state.get("events") or [] if e.get("prepare") or e.get("event_status") '
          '== "Started"]')],
    "an Event Grid notification wakes a cycle on the hosts it lists only (a host of another domain owing a recover goes uncounted)":
        [(WAKE_UP, 'return {"hosts": everyone, "listed": placed["hosts"],',
          'return {"hosts": placed["hosts"] or everyone, "listed": placed["hosts"],')],
    # issue 43
    "settings that differ between hosts of one run are not refused (the first host's policy decides for every host: "
    "a group's events left to NotBefore are approved early)":
        [(POLICY, "        if len(values) > 1:\n            raise PolicyError(_differ_sentence(",
          "        if False:\n            raise PolicyError(_differ_sentence(")],
    "an AWX job whose state store is under its fresh home is not refused (the next job forgets what it drained)":
        [(STORE_URL, '    if not inside:\n        return ""', '    if True:\n        return ""')],
    "a state on an ephemeral OS disk is read as any other (the Redeploy it prepared for erases the recover it owes)":
        [(EVENTS, '    return isinstance(option, str) and option.lower() == "local"', "    return False")],
    "a control-plane host whose own Preempt Completed is never read (a Spot VM started again stays drained)":
        [(HOST_READ, 'event["event_status"] == "Completed" and licensing:', 'event["event_status"] == "Completed":')],
}


# Mutants whose code runs in one kind of fleet-day only (the source's fleet view, the VM locks, the split-set rule):
# their fleet-days are all of that kind, so that the rare path they open is reached as often as the others'.
ONLY = {
    "an Event Grid notification wakes a cycle on the hosts it lists only (a host of another domain owing a recover goes uncounted)": "event-grid",
    "a control-plane read that does not show an approved or merely seen event forgets it (the approval is sent twice)": "control-plane",
    "a control-plane read that shows neither an event on record nor its end counts as news (a read gone back in time "
    "undoes a drain)": "control-plane",
    "a push saying quiet takes its host out of the event-driven runs (a lying relay hides an owed recover)":
        "event-driven",
    "a host an event-driven run covered leaves the runs without a read that found it quiet": "event-driven",
    "cycles side by side without VM locks are not refused": "event-driven",
    "a VM another run holds (its lock) counts as free": "event-driven",
    "a set with VMs outside the target is not refused (a set split over two runs drains two domains at once)": "split",
    "settings that differ between hosts of one run are not refused (the first host's policy decides for every host: "
    "a group's events left to NotBefore are approved early)": "per-group",
    "an AWX job whose state store is under its fresh home is not refused (the next job forgets what it drained)":
        "fresh-home",
    "a state on an ephemeral OS disk is read as any other (the Redeploy it prepared for erases the recover it owes)":
        "reset-disk",
    "a control-plane host whose own Preempt Completed is never read (a Spot VM started again stays drained)":
        "spot-restart",
    "a split set is forgotten once the events that listed the other run's VMs are gone": "split",
}


def mutated_texts(root: Path, name: str) -> Dict[str, str]:
    """{path: text} with the fix behind `name` reverted; AssertionError when the fix is no longer where it was."""
    changes = MUTATIONS[name]
    mutated = {path: (root / path).read_text() for path, _old, _new in changes}
    for path, old, new in changes:
        assert mutated[path].count(old) == 1, f"the fix behind {name!r} is no longer where this script looks"
        mutated[path] = mutated[path].replace(old, new)
    return mutated


FLEET_DAYS_OF = {"event-driven": 1200, "split": 400,  # an event-driven fleet-day costs about ten scheduled ones
                 "per-group": 400, "fresh-home": 400, "reset-disk": 400, "spot-restart": 400}


def caught(root: Path, only: str = "all") -> Tuple[bool, str]:
    days = FLEET_DAYS_OF.get(only, FLEET_DAYS)
    proc = subprocess.run([sys.executable, "tools/fault_model_run.py", "--fleet-days", str(days),
                           "--first-failure", "--only", only], cwd=root, capture_output=True, text=True)
    found = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")][:1]
    # Caught means a fleet-day broke an invariant; a mutant that crashes the model is not caught, it is broken.
    if not found:
        return False, proc.stdout.strip()[-300:] + proc.stderr.strip()[-300:]
    # And the unmutated code keeps every invariant on that fleet-day: a judge that fails the fixed code too (a judge
    # wrong about one kind of fleet-day fails all of them) catches every mutant there, whatever it reverted.
    combo = re.search(r"^    COMBO (.*)$", proc.stdout, re.M)
    if combo is None:  # the role-order check, which the unmutated role passes (test_fault_model.py says so)
        return True, found[0]
    clean = subprocess.run([sys.executable, "tools/fault_model_run.py", "--combo", combo.group(1)],
                           cwd=REPO, capture_output=True, text=True)
    if clean.returncode != 0:
        return False, f"{found[0]}\n    but the unmutated code fails there too: {clean.stdout.strip()[-300:]}"
    return True, found[0]


def main(argv: List[str]) -> int:
    only = argv[0] if argv else ""  # a part of a mutant's name: run only those
    root = Path(tempfile.mkdtemp(prefix="invariant-mutants-")) / "repo"
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".git", ".venv*", "build", "__pycache__", ".pytest_cache"))
    missed = []
    try:
        for name, changes in MUTATIONS.items():
            if only not in name:
                continue
            originals = {path: (root / path).read_text() for path, _old, _new in changes}
            for path, text in mutated_texts(root, name).items():
                (root / path).write_text(text)
            found, evidence = caught(root, ONLY.get(name, "all"))
            print(f"{'CAUGHT' if found else 'MISSED'}: {name}\n    {evidence}", flush=True)
            if not found:
                missed.append(name)
            for path, text in originals.items():
                (root / path).write_text(text)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    tried = [name for name in MUTATIONS if only in name]
    print(f"{len(tried) - len(missed)} of {len(tried)} reverted fixes caught by the fault model.")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
