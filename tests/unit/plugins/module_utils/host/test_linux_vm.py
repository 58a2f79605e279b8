"""linux_vm: a Linux VM's state and lock as files on the machine the module runs on."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.linux_vm import LinuxVm


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
