"""Tests mirror the code: every plugin file with logic has tests/unit/plugins/<kind>/<folder>/test_<file>.py, or
is named below with where its behaviour is tested instead (a module through its runner, a filter through the
playbooks). A new plugin file fails here until it has one or the other, so a newcomer always finds its tests."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "plugins"
# plugin file (under plugins/) -> (what its tests call it, the tests that hold its behaviour). The action plugins
# of the IMDS modules run whenever a module meets a Windows host: the Windows tests drive them through the role.
TESTED_ELSEWHERE: Dict[str, Tuple[str, List[str]]] = {
    "action/controller_lock.py": ("controller_lock", ["tests/unit/plugins/plugin_utils/test_controller_lock.py"]),
    "action/scheduled_events_approve.py": ("approve(", ["tests/windows/test_windows_hosts.py"]),
    "action/scheduled_events_claim.py": ("CycleBench", ["tests/windows/test_windows_hosts.py"]),
    "action/scheduled_events_info.py": ("info(", ["tests/windows/test_windows_hosts.py"]),
    "action/scheduled_events_lock.py": ("CycleBench", ["tests/windows/test_windows_hosts.py"]),
    "action/scheduled_events_state.py": ("control_plane=", ["tests/integration/test_control_plane_cycle.py"]),
    "plugin_utils/host_transport.py": ("control_plane=", ["tests/integration/test_control_plane_cycle.py"]),
    "action/relay_code.py": ("relay_code", ["tests/relay/test_event_relay_role.py"]),
    "action/vm_memory.py": ("vm_memory", ["tests/unit/plugins/plugin_utils/test_vm_memory.py"]),
    "callback/scheduled_events_history.py": ("scheduled_events_history", ["tests/history/test_history_callback.py"]),
    "filter/task_files.py": ("task_files", ["tests/unit/plugins/plugin_utils/test_task_files.py"]),
    "module_utils/cycle/errors.py": ("PolicyError", ["tests/unit/plugins/module_utils/cycle/test_plan.py"]),
    "module_utils/cycle/transition.py": ("state_for_step", ["tests/unit/plugins/module_utils/cycle/test_plan.py"]),
    "module_utils/host/interface.py": ("Capabilities", ["tests/unit/plugins/module_utils/lease/test_cycle_lock.py",
                                       "tests/unit/plugins/plugin_utils/test_windows_host.py"]),
    "module_utils/host/vm.py": ("LinuxVm", ["tests/unit/plugins/module_utils/tasks/test_info.py"]),
    "module_utils/observation/prometheus_text.py": ("prometheus_text", ["tests/test_metrics_docs.py"]),
    "module_utils/relay/program.py": ("relay.program", ["tests/relay/test_relay_process.py", "tests/relay/test_relay_spool.py"]),
    "module_utils/tasks/approve.py": ("tasks import approve", ["tests/unit/plugins/modules/test_scheduled_events_approve.py"]),
    "module_utils/tasks/claim.py": ("scheduled_events_claim", ["tests/unit/plugins/modules/test_scheduled_events_claim.py"]),
    "module_utils/tasks/lock.py": ("scheduled_events_lock", ["tests/unit/plugins/modules/test_scheduled_events_lock.py"]),
    "module_utils/tasks/module_support.py": ("module_support", ["tests/unit/plugins/module_utils/tasks/test_info.py"]),
    "module_utils/tasks/state_file.py": ("scheduled_events_state", ["tests/unit/plugins/modules/test_scheduled_events_state.py"]),
    "modules/scheduled_events_acknowledge.py": ("scheduled_events_acknowledge",
                                                ["tests/integration/test_control_plane_modules.py"]),
    "modules/scheduled_events_control_plane_info.py": ("scheduled_events_control_plane_info",
                                                       ["tests/integration/test_control_plane_modules.py"]),
    "modules/controller_lock.py": ("controller_lock", ["tests/reliability/test_concurrency.py"]),
    "modules/relay_code.py": ("relay_code", ["tests/relay/test_event_relay_role.py"]),
    "modules/vm_memory.py": ("vm_memory", ["tests/unit/plugins/plugin_utils/test_vm_memory.py"]),
}


def plugin_files() -> List[str]:
    return sorted(str(p.relative_to(PLUGINS)) for p in PLUGINS.rglob("*.py")
                  if "doc_fragments" not in p.parts and "__pycache__" not in p.parts and p.name != "__init__.py")


def mirror(plugin: str) -> Path:
    path = Path(plugin)
    return REPO / "tests" / "unit" / "plugins" / path.parent / f"test_{path.name}"


def test_every_plugin_file_has_its_mirror_or_says_where_it_is_tested() -> None:
    lost = [p for p in plugin_files() if not mirror(p).is_file() and p not in TESTED_ELSEWHERE]
    assert not lost, f"no tests/unit/plugins/<kind>/<folder>/test_<file>.py and no entry here: {lost}"


def test_every_entry_is_still_needed_and_its_tests_name_the_file() -> None:
    for plugin, (named, tests) in TESTED_ELSEWHERE.items():
        assert (PLUGINS / plugin).is_file(), f"{plugin} is gone: drop its entry"
        assert not mirror(plugin).is_file(), f"{plugin} has its mirror now: drop its entry"
        assert any(named in (REPO / test).read_text() for test in tests), f"none of {tests} uses {named}"
