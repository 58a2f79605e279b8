# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the user's prepare and recover tasks files are, on the control node.

`include_tasks` would look a relative path up in the role's and the collection's own folders, so
`-e prepare_tasks=drain.yml` from cron could silently run a file of the installed collection, or
fail only when the first event arrives. The role resolves both paths once, at the start of a run,
with one rule users can predict: a relative path is taken from the directory `ansible-playbook`
runs in (in AWX, the project's root), else from the directory of the user's own playbook; never
from the collection. The file system comes in as two functions, so the rule is tested without one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, List, Optional

PREPARE = "maintenance_cycle_prepare_tasks"
RECOVER = "maintenance_cycle_recover_tasks"


@dataclass(frozen=True)
class Places:
    """Where relative paths are looked up, and the collection's own root (never searched)."""
    cwd: str
    playbook_dir: Optional[str]
    collection_root: str


@dataclass
class TaskFiles:
    prepare: str = ""
    recover: str = ""
    errors: List[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"prepare": self.prepare, "recover": self.recover, "errors": list(self.errors)}


def _inside(path: str, root: str) -> bool:
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def search_dirs(places: Places) -> List[str]:
    """The working directory, then the user's playbook directory unless it is the collection's."""
    found = [places.cwd]
    playbook_dir = places.playbook_dir
    if playbook_dir and not _inside(playbook_dir, places.collection_root) and playbook_dir != places.cwd:
        found.append(playbook_dir)
    return found


def resolve(name: str, given: str, places: Places, is_file: Callable[[str], bool],
            expand: Callable[[str], str] = os.path.expanduser):
    """(absolute path, None) or ("", one sentence naming the cause and the fix); "" stays "" (no tasks)."""
    given = (given or "").strip()
    if not given:
        return "", None
    path = expand(given)
    if os.path.isabs(path):
        if is_file(path):
            return os.path.normpath(path), None
        return "", "%s %s is not a file on the control node." % (name, given)
    dirs = search_dirs(places)
    for directory in dirs:
        candidate = os.path.normpath(os.path.join(directory, path))
        if is_file(candidate):
            return candidate, None
    return "", ("%s %s is not a file in %s; a relative path is taken from the directory ansible-playbook runs in "
                "(in AWX, the project's root), then from your playbook's directory, never from this collection's "
                "own files: give an absolute path, or copy the example you want into your project."
                % (name, given, " nor in ".join(dirs)))


def resolve_task_files(prepare: str, recover: str, places: Places,
                       is_file: Callable[[str], bool] = os.path.isfile) -> TaskFiles:
    files = TaskFiles()
    files.prepare, error = resolve(PREPARE, prepare, places, is_file)
    files.errors += [error] if error else []
    files.recover, error = resolve(RECOVER, recover, places, is_file)
    files.errors += [error] if error else []
    return files
