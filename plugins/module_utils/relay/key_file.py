# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file a push's key is read from, on either end: the relay on the VM signs with it, the Event-Driven Ansible
source on the controller checks with it. Its own module, so that the source imports no part of the VM program."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


class ConfigError(ValueError):
    """A relay or source configuration it cannot run with; one sentence."""


def read_token(path):
    # type: (str) -> bytes
    """The shared key: a file the relay alone may read (not group- or world-readable)."""
    try:
        mode = os.stat(path).st_mode
        with open(path, "rb") as stream:
            token = stream.read().strip()
    except OSError as exc:
        raise ConfigError("cannot read the token file %s (%s)." % (path, exc))
    if mode & 0o077:
        raise ConfigError("the token file %s is readable by others (mode %o); make it 0600." % (path, mode & 0o777))
    if len(token) < 16:
        raise ConfigError("the token in %s is shorter than 16 characters." % path)
    return token
