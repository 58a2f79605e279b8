"""The relay soak's cycle count (tools/relay_fleet.py cycles_in), read from a rulebook log as ansible-playbook
writes it."""
from __future__ import annotations

from pathlib import Path

from tools.relay_fleet import cycles_in

RECAP = "PLAY RECAP *********************************************************************\n"
ROW = "{:<26} : ok=9    changed=2    unreachable=0    failed=0    skipped=17   rescued=0    ignored=0   \n"


def cycle(*hosts: str) -> str:
    return ("PLAY [Azure Scheduled Events maintenance cycle] ********************************\n"
            "TASK [x] ***\n" + RECAP + "".join(ROW.format(h) for h in hosts) + "\n"
            "PLAY [Azure Scheduled Events - report the cycle done to the event source] ******\n"
            + RECAP + ROW.format("localhost") + "\n")


def test_cycles_and_their_vm_plays_are_counted_from_an_offset_localhost_aside(tmp_path: Path) -> None:
    log = tmp_path / "rulebook.log"
    start_up = cycle("vm0", "vm1", "vm2")
    log.write_text(start_up + cycle("vm0", "vm1") + cycle("vm2"))
    assert cycles_in(log) == {"cycles": 3, "host_plays": 6}
    assert cycles_in(log, len(start_up.encode())) == {"cycles": 2, "host_plays": 3}
