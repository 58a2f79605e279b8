"""Killing a whole ansible-playbook run, workers included.

ansible-playbook's workers start their own sessions, so killing the run's process group
leaves them behind, blocked forever on their dead parent. Tests that SIGKILL a run finish
the job with `kill_leftovers`, matching the run's unique inventory path on the command line.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path


def kill_leftovers(marker: str) -> int:
    """SIGKILL every process whose command line contains `marker`; returns how many."""
    killed = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in command:
            try:
                os.kill(int(proc.name), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed
