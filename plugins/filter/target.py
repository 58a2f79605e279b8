# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' first check: a target that names no host of the inventory fails the run in one sentence.

Ansible skips a play whose pattern matches nothing and exits 0, so a scheduled run with a mistyped target would
read nothing, approve nothing and report success every time.
"""

from __future__ import annotations

# Ansible's own groups, which name no group of the user's
_IMPLICIT_GROUPS = ("all", "ungrouped")


def target_error(target, matched, groups=None):
    """'' when the target names at least one host of the inventory, else the sentence that fails the run (with
    the inventory's groups, so that the right name is at hand)."""
    if list(matched or ()):
        return ""
    known = sorted(name for name in (groups or {}) if name not in _IMPLICIT_GROUPS)
    offered = ("its groups: %s" % ", ".join(known)) if known else "it has no group"
    return ("The target %r matches no host of the inventory (%s), so nothing was read, prepared or approved; pass "
            "-e target= a group, host or pattern of the inventory." % (str(target), offered))


class FilterModule(object):
    def filters(self):
        return {"target_error": target_error}
