# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role setting of the wrong type or value, in one sentence, before the role's own check.

Ansible checks a role's variables against its meta/argument_specs.yml when the role starts, and on a bad value
prints the whole specification with the error (38 KB for the maintenance_cycle role over a few hosts). The
collection's playbooks check first, against the same file (the one home of the role's settings), and fail with
the error alone.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


def settings_error(options: Mapping[str, Dict[str, Any]], given: Mapping[str, Any]) -> str:
    """'' when every given setting that `options` (a role's argument_specs entry point options) describes is
    valid, else one sentence: the first error, how many more there are, and that nothing was done."""
    values = dict((name, given[name]) for name in options if name in given)
    errors = ArgumentSpecValidator(dict(options)).validate(values).error_messages
    if not errors:
        return ""
    more = len(errors) - 1
    return "A setting of the maintenance_cycle role is not valid, so nothing was read or approved: %s%s." % (
        str(errors[0]).rstrip("."), (" (and %d more)" % more) if more else "")
