# -*- coding: utf-8 -*-
"""A test double of privilege escalation (sudo to root) for a machine where the tests cannot become root: the
command runs as the same user, with HOME set to the become user's home, which is all that decides where a
module expands `~` (the event_relay role's resolution of the cycle's state path)."""
from __future__ import annotations

import shlex

from ansible.plugins.become import BecomeBase

DOCUMENTATION = """
name: home_double
short_description: Test double of become that only changes HOME
description:
  - Runs the command as the same user with HOME set to O(become_home), as sudo to root would set root's home.
options:
  become_home:
    description: The home of the become user.
    vars:
      - name: ansible_become_home_double_home
    required: true
"""


class BecomeModule(BecomeBase):
    name = "home_double"

    def build_become_command(self, cmd, shell):
        super(BecomeModule, self).build_become_command(cmd, shell)
        if not cmd:
            return cmd
        return "env HOME=%s %s" % (shlex.quote(self.get_option("become_home")),
                                   self._build_success_command(cmd, shell))
