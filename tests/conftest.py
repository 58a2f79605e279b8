"""Shared test set-up.

The repository root is importable (imds_simulator, tools), and the collection
is staged as a copy under a temporary `ansible_collections/` tree before any
test module is imported, so that `ansible_collections.azure_imds.scheduled_events`
imports work in-process and `ansible-playbook` subprocesses find the collection
through ANSIBLE_COLLECTIONS_PATH.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import List

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.stage_collection import stage  # noqa: E402

_STAGE_ROOT = Path(tempfile.mkdtemp(prefix="azure-imds-collections-"))
COLLECTIONS_PATH = str(_STAGE_ROOT)
stage(_STAGE_ROOT)
sys.path.insert(0, COLLECTIONS_PATH)
os.environ["ANSIBLE_COLLECTIONS_PATH"] = COLLECTIONS_PATH

# A developer's own Ansible configuration must not reach the tests (nor the tests
# write into it): an empty ansible.cfg, and no callback or history settings unless a
# test passes them itself.
_EMPTY_CFG = _STAGE_ROOT / "ansible.cfg"
_EMPTY_CFG.write_text("[defaults]\n")
os.environ["ANSIBLE_CONFIG"] = str(_EMPTY_CFG)
for _name in ("ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CALLBACK_WHITELIST", "SCHEDULED_EVENTS_HISTORY_PATH",
              "ANSIBLE_STDOUT_CALLBACK"):
    os.environ.pop(_name, None)


def pytest_unconfigure(config: object) -> None:
    shutil.rmtree(_STAGE_ROOT, ignore_errors=True)


# The longest tests by wall under load (make test's --durations), longest first, are started first: in collection
# order a long test can begin last and then run alone while the other worker idles (docs/lab/benchmarks.md, the
# test suite's cost). What each test costs in CPU: tools/test_cpu_report.py.
STARTED_FIRST = (
    "tests/test_readme_try_it.py::test_make_demo_runs_as_written_and_leaves_no_vm_drained",
    "tests/integration/test_cycle.py::test_the_cycle_on_a_schedule_walks_the_fault_domains_one_at_a_time_and_takes_back_hosts_a_run_missed",
    "tests/eda/test_rulebook.py::test_relays_and_the_rulebook_prepare_approve_and_recover_and_a_forged_push_approves_nothing",
    "tests/integration/test_cycle.py::test_regression_a_host_that_fails_after_prepare_still_gets_its_recover",
    "tests/integration/test_safety_regressions.py::test_a_short_freeze_over_a_pending_reboot_does_not_undo_the_reboots_drain",
    "tests/integration/test_control_plane_cycle.py::test_one_plan_over_imds_and_the_control_plane_approves_each_event_once_and_recovers_on_completed",
    "tests/windows/test_windows_hosts.py::test_a_mixed_fleet_cycles_through_prepare_approve_and_recover",
    "tests/integration/test_cycle.py::test_a_vm_deleted_by_its_own_preempt_frees_its_fault_domain",
    "tests/test_lint.py::test_the_production_profile_passes_and_a_sloppy_playbook_fails_it",
    "tests/relay/test_event_relay_role.py::test_install_again_check_remove_and_the_installed_relay_runs",
    "tests/analysis/test_sample_and_benchmark.py::test_the_month_benchmark_measures_every_step_on_day_files",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """The longest tests first (a stable sort: every other test keeps its place). And `--dist loadgroup` (make test)
    sends each xdist_group to one worker by a suffix on the test's id; a pytest that ignores that suffix would
    silently build every module fixture once per worker (minutes)."""
    first = {name: rank for rank, name in enumerate(STARTED_FIRST)}
    items.sort(key=lambda item: first.get(item.nodeid.split("[")[0].split("@")[0], len(first)))
    if not getattr(config.option, "loadgroup", False):
        return
    lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist could not group {lost[0]} onto one worker with this pytest; "
                                "install the pytest that requirements-test.txt names.")


_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


def _cpu_seconds() -> float:
    """This worker's CPU and its reaped children's (ansible-playbook, ansible-rulebook, notebook kernels)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: object) -> object:
    """TEST_CPU_REPORT=FILE: one JSON line per test with the CPU-seconds it cost (set-up and tear-down included),
    which `make test`'s budget is made of on 2 cores; tools/test_cpu_report.py sums them by file."""
    report = os.environ.get("TEST_CPU_REPORT")
    before, started = (_cpu_seconds(), time.time()) if report else (0.0, 0.0)
    yield
    if report:
        # When and on which worker, too: `--timeline` shows where the run's cores stood idle.
        row = {"test": item.nodeid, "cpu_s": round(_cpu_seconds() - before, 2), "worker": _WORKER,
               "start": round(started, 2), "end": round(time.time(), 2)}
        with open(report, "a") as out:
            out.write(json.dumps(row) + "\n")
