# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event relay's code as one archive: relay/program.py and what it imports from this collection, transitively.

Pure: the action plugin (plugins/action/relay_code.py) reads the files and copies the archive. One archive, not one
file per module: the role installed about thirty files with a copy task each (two module calls a file, on every
run); the archive is one copy, and Python imports from it as from a directory (zipimport).
"""

from __future__ import annotations

import ast
import io
import zipfile
from typing import Callable, Dict, List, Mapping

PACKAGE = "ansible_collections.azure_imds.scheduled_events.plugins.module_utils"
ENTRY = "relay.program"
# A fixed date for every member, and no compression: the same code gives the same bytes on any control node (zlib
# builds deflate differently), so a second install changes nothing; and the VM's Python needs no zlib to import it.
_EPOCH = (1980, 1, 1, 0, 0, 0)


class RelayCodeError(ValueError):
    """The relay's code cannot be archived, in one sentence."""


def imported(source: str, exists: Callable[[str], bool] = lambda path: True) -> List[str]:
    """The module_utils this source imports, as names under PACKAGE ("relay.protocol"), lazy imports included;
    `from PACKAGE.relay import protocol` names the module relay.protocol when `exists` finds its file."""
    names: List[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                raise RelayCodeError("the relay's code uses a relative import (from %s%s), which its archive "
                                     "cannot resolve: import by the full name." % ("." * node.level, node.module or ""))
            modules = [node.module or ""]
            modules += ["%s.%s" % (node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        inside = [m[len(PACKAGE) + 1:] for m in modules if m.startswith(PACKAGE + ".")]
        names += [name for name in inside if exists(path_of(name))]
    return names


def closure(read: Callable[[str], str], exists: Callable[[str], bool], entry: str = ENTRY) -> List[str]:
    """The paths under module_utils ("relay/program.py") of `entry` and all it imports, transitively;
    `read` gives a path's source, `exists` whether a module has one (a package folder has none)."""
    found: Dict[str, None] = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = None
        todo += imported(read(path_of(name)), exists)
    return sorted(path_of(name) for name in found)


def path_of(name: str) -> str:
    return name.replace(".", "/") + ".py"


def archive(files: Mapping[str, bytes]) -> bytes:
    """A zip of `files` (paths under module_utils) under the package's path, with an empty __init__.py at every
    level: each a regular package, so that no other ansible_collections directory on the VM can stand in for it."""
    root = PACKAGE.replace(".", "/")
    members: Dict[str, bytes] = {}
    for path, content in files.items():
        members[root + "/" + path] = content
        parts = (root + "/" + path).split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            members.setdefault("/".join(parts[:depth]) + "/__init__.py", b"")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_STORED  # zlib builds deflate differently (see _EPOCH)
            bundle.writestr(info, members[name])
    return buffer.getvalue()
