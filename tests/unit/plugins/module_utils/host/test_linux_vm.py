"""linux_vm: a Linux VM's state and lock as files on the machine the module runs on, refused on an ephemeral OS
disk."""
from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import ephemeral_os_disk
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsClient
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LinuxVm
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.claim import (
    argument_spec,
    run_claim,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import TaskFailed
from tests.unit.plugins.module_utils.tasks.test_info import COMPUTE


def test_the_state_is_none_before_a_first_cycle_and_its_text_after_a_write(tmp_path: Path) -> None:
    vm, path = LinuxVm(None, print), tmp_path / "se" / "state.json"
    assert vm.read_state(str(path)) is None
    vm.write_state(str(path), '{"version": 2}\n')
    assert vm.read_state(str(path)) == '{"version": 2}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_state_that_is_not_text_is_unreadable_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"\xff\xfe not text")
    with pytest.raises(StateUnreadable, match="can't decode"):
        LinuxVm(None, print).read_state(str(path))


def test_the_lock_is_changed_under_its_guard(tmp_path: Path) -> None:
    path = tmp_path / "state.json.lock"
    assert LinuxVm(None, print).update_lock(str(path), lambda text: "held\n") == "held\n"
    assert path.read_text() == "held\n" and LinuxVm.capabilities.no_lock == ""


EPHEMERAL = {"storageProfile": {"osDisk": {"diffDiskSettings": {"option": "Local"}}}}


@pytest.mark.parametrize("compute, ephemeral", [
    (EPHEMERAL, True),
    ({"storageProfile": {"osDisk": {"diffDiskSettings": {"option": "local"}}}}, True),
    ({"storageProfile": {"osDisk": {"diffDiskSettings": {"option": ""}}}}, False),  # IMDS's managed OS disk
    ({"storageProfile": {"osDisk": {}}}, False),
    ({}, False),
    (None, False),
])
def test_an_ephemeral_os_disk_is_what_imds_compute_says_it_is(compute: Any, ephemeral: bool) -> None:
    assert ephemeral_os_disk(compute) is ephemeral


def claim_on(tmp_path: Path, compute: Dict[str, Any], root: str) -> Dict[str, Any]:
    """A claim on a Linux VM whose IMDS serves `compute` (no events), its OS disk's filesystem `root`."""
    def send(method: str, url: str, body: Optional[str], timeout: float) -> bytes:
        if "/instance/compute" in url:
            return json.dumps(dict(COMPUTE, **compute)).encode()
        return json.dumps({"DocumentIncarnation": 1, "Events": []}).encode()

    host = LinuxVm(ImdsClient(send=send, retries=0), print)
    host.root = root
    spec = {name: option.get("default") for name, option in argument_spec().items()}
    spec.update(retries=0, state_path=str(tmp_path / "se" / "state.json"), owner="run 1", lease_seconds=60.0)
    return run_claim(spec, host)


def test_a_state_on_an_ephemeral_os_disk_makes_the_vm_busy_in_one_sentence(tmp_path: Path) -> None:
    """Issue 43, finding 7: the Redeploy a VM was drained for moves it to another node and gives it a fresh
    ephemeral OS disk, its state gone: the next read owed no recover and counted its fault domain free."""
    with pytest.raises(TaskFailed) as raised:
        claim_on(tmp_path, EPHEMERAL, str(tmp_path))  # the state's filesystem is the OS disk's
    assert raised.value.msg == (
        "%s is on this VM's ephemeral OS disk, which a reimage or a move to another node (Redeploy, service healing) "
        "erases with any recover it owes, so the VM counts as busy: put maintenance_cycle_state_path on a data disk."
        % (tmp_path / "se" / "state.json"))
    assert raised.value.result["this_vm"]["fault_domain"] == 1, "it holds its fault domain"
    assert not (tmp_path / "se" / "state.json.lock").exists(), "its lock given back"


def test_a_state_on_a_data_disk_or_a_managed_os_disk_is_read_as_ever(tmp_path: Path) -> None:
    assert claim_on(tmp_path, EPHEMERAL, "/proc")["quiet"], "another filesystem than the OS disk's: a data disk"
    assert claim_on(tmp_path, {}, str(tmp_path))["quiet"], "a managed OS disk outlives a move"
