"""A rehearsal of the README's quick start on simulated VMs, and the mark on what it captures.

`serve --inventory DIR` writes DIR/inventory.ini (each simulated VM as a local host with its own IMDS root and
state file, and the settings a time-compressed clock needs), DIR/ansible.cfg (the history callback, writing
DIR/history.jsonl) and that history's description, which tells event_analysis the history is SIMULATED and at
which time scale. `serve --history PATH` writes only the description, for a history captured otherwise (a relay's,
the mock stand-in's).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Sequence

from .fleet import VM
from .offline import write_description

# The role's maintenance_cycle_prepare_anyway_seconds default (plugins/module_utils/cycle/plan.py; the
# simulator installs without the collection, so a test keeps the two equal). Azure's notices are compressed by the
# time scale while NotBefore stays on the wall clock, so the rehearsal divides it too, or a deferred event would
# never be prepared before NotBefore.
PREPARE_ANYWAY_SECONDS = 480.0
INVENTORY, CONFIG, HISTORY = "inventory.ini", "ansible.cfg", "history.jsonl"
_WRITTEN_BY = "# Written by python -m imds_simulator serve --inventory"


class RehearsalError(ValueError):
    """A rehearsal folder or history the simulator must not write over; one sentence."""


def mark_simulated(history: Path, command: str, time_scale: float, what: str) -> Path:
    """Write `<history>.meta.json` (simulated, this time scale); refuse a history already there that says otherwise,
    since appending to it would mix simulated and real data, or two clocks."""
    meta_path = history.with_name(history.name + ".meta.json")
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            same = bool(meta.get("simulated")) and float(meta.get("time_scale", 1.0)) == time_scale
        except (ValueError, TypeError, AttributeError):
            same = False
        if not same and history.is_file() and history.stat().st_size:
            raise RehearsalError(f"{history} already holds a history that {meta_path} does not describe as simulated "
                                 f"at time scale {time_scale:g}; give the simulator another history path (with "
                                 f"--inventory, another folder), or move that history away.")
    elif history.is_file() and history.stat().st_size:
        raise RehearsalError(f"{history} already holds a history not marked as simulated; give the simulator "
                             f"another history path, or move that one away.")
    history.parent.mkdir(parents=True, exist_ok=True)
    return Path(write_description(str(history), command, what, time_scale=time_scale))


def write_rehearsal(directory: Path, vms: Sequence[VM], vm_url: Callable[[str], str], time_scale: float,
                    command: str) -> Path:
    """The rehearsal folder for these VMs; returns the inventory's path."""
    directory = directory.resolve()
    inventory = directory / INVENTORY
    if inventory.is_file() and not inventory.read_text(encoding="utf-8").startswith(_WRITTEN_BY):
        raise RehearsalError(f"{inventory} exists and was not written by the simulator; give --inventory a new "
                             f"folder, so that no inventory of real VMs is replaced.")
    (directory / "state").mkdir(parents=True, exist_ok=True)
    history = directory / HISTORY
    mark_simulated(history, command, time_scale, f"a rehearsal on {len(vms)} simulated VMs at time scale "
                                                 f"{time_scale:g}")
    inventory.write_text(inventory_text(directory, vms, vm_url, time_scale, command), encoding="utf-8")
    (directory / CONFIG).write_text(config_text(history), encoding="utf-8")
    return inventory


def inventory_text(directory: Path, vms: Sequence[VM], vm_url: Callable[[str], str], time_scale: float,
                   command: str) -> str:
    """Each VM a local host: its own IMDS root, and its own state file (two hosts sharing one would share its lock
    and its saved events, and recover on the wrong VM)."""
    lines = [f"{_WRITTEN_BY}: {command}",
             "# Simulated VMs on this machine; run the README's quick start steps from this folder.", "[azure_vms]"]
    for vm in vms:
        fields = {"maintenance_cycle_imds_url": vm_url(vm.name),
                  "maintenance_cycle_state_path": str(directory / "state" / f"{vm.name}.json")}
        if vm.availability_set and not vm.vm_scale_set_name:  # IMDS does not tell it: the inventory must
            fields["maintenance_cycle_availability_set"] = vm.availability_set
        lines.append(" ".join([vm.name] + [f"{key}={value}" for key, value in fields.items()]))
    settings = {
        "ansible_connection": "local", "ansible_python_interpreter": '"{{ ansible_playbook_python }}"',
        "maintenance_cycle_prepare_anyway_seconds": f"{PREPARE_ANYWAY_SECONDS / time_scale:g}",
        "maintenance_cycle_vm_memory": str(directory / "vms.json"),  # simulated VMs stay out of ~/.ansible's memory
    }
    lines += ["", "[azure_vms:vars]"] + [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def config_text(history: Path) -> str:
    return (f"{_WRITTEN_BY}: every read and approval of a run from this folder goes to {history.name}, which\n"
            f"# {history.name}.meta.json marks SIMULATED.\n"
            "[defaults]\ncallbacks_enabled = azure_imds.scheduled_events.scheduled_events_history\n\n"
            f"[scheduled_events_history]\npath = {history}\n")
