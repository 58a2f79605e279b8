# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control-node lock: one run of the collection's playbooks per target on this machine.

Cron starting a cycle while the last one still runs, or a cycle started by hand during it, would
do every VM's work twice. The lock file names the ansible-playbook process that holds it (its
pid and its start time, so that a reused pid is not mistaken for it); a process that is gone
holds nothing, so a killed run never blocks the next one. Judging is pure; the file work
happens under an exclusive flock (see lock_file.update_under_guard).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import DELETE


@dataclass(frozen=True)
class Process:
    pid: int
    started: str  # the kernel's start time of the process ("" where unknown), against pid reuse
    host: str = ""  # the control node: a pid means nothing on another machine (a shared home)


def process(pid: int) -> Process:
    return Process(pid, start_time(pid), socket.gethostname())


def start_time(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat (Linux); "" elsewhere."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def alive(holder: Process) -> bool:
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    return not holder.started or start_time(holder.pid) in ("", holder.started)


def lock_record(me: Process, owner: str, playbook: str) -> str:
    return json.dumps({"pid": me.pid, "started": me.started, "host": me.host, "owner": owner,
                       "playbook": playbook}, sort_keys=True) + "\n"


def holder_process(record: Dict[str, Any]) -> Process:
    return Process(record["pid"], str(record.get("started", "")), str(record.get("host", "")))


def holder_of(text: Optional[str]) -> Optional[Dict[str, Any]]:
    try:
        record = json.loads(text) if text is not None else None
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("pid"), int):
        return None
    return record


def take(text: Optional[str], me: Process, owner: str, playbook: str, path: str,
         is_alive: Callable[[Process], bool] = alive) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(text to write, refusal sentence, note): refused while another live run holds the lock."""
    holder = holder_of(text)
    other = holder_process(holder) if holder is not None else None
    if other is not None and other != me:
        # On another machine its liveness cannot be judged: it counts as alive.
        if (other.host and other.host != me.host) or is_alive(other):
            return None, ("another run of this collection holds %s on this control node (%s, pid %d on %s, playbook %s); "
                          "this run stops before it touches any VM. Let that run finish (or delete the file if "
                          "it is gone)." % (path, holder.get("owner", "?"), holder["pid"],
                                            other.host or "?", holder.get("playbook", "?"))), None
        note = "took over %s from a run that has ended (pid %d)." % (path, holder["pid"])
        return lock_record(me, owner, playbook), None, note
    return lock_record(me, owner, playbook), None, None


def give_back(text: Optional[str], me: Process) -> Any:
    """DELETE when the lock is this process's, else None."""
    holder = holder_of(text)
    return DELETE if holder is not None and holder_process(holder) == me else None
