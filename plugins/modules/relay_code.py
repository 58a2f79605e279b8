# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is implemented entirely by its action plugin, which builds the archive on the control
# node and copies it with ansible.builtin.copy.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: relay_code
short_description: Install the event relay's code on a VM as one archive
version_added: 0.1.0
description:
  - Builds, on the control node, one zip archive of the event relay's code (the module_utils of this collection
    that C(relay.program) imports, transitively, each level of the package tree with an empty
    C(__init__.py)) and copies it to O(dest) with M(ansible.builtin.copy).
  - Python imports from the archive when it is on C(PYTHONPATH); the relay needs nothing else of Ansible on the VM.
  - The archive's bytes depend only on the code (every member has the same fixed date), so installing the same
    collection again changes nothing.
  - The role M(azure_imds.scheduled_events.event_relay) uses it; you seldom need it directly.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
attributes:
  action:
    support: full
    description: Built on the control node, copied by M(ansible.builtin.copy).
  check_mode:
    support: full
    description: As M(ansible.builtin.copy) does.
  diff_mode:
    support: partial
    description: As M(ansible.builtin.copy) does for a binary file.
  platform:
    support: full
    platforms: posix
    description: Builds on the control node; the VM needs Python (3.8 or later) to run the relay, nothing of Ansible.
options:
  dest:
    description: Where the archive goes on the VM (a file; C(~) and variables are expanded there); its directory
      must exist.
    type: str
    required: true
  mode:
    description: The archive's permissions, as for M(ansible.builtin.copy).
    type: raw
    default: "0644"
"""

EXAMPLES = r"""
- name: Install the relay's code
  azure_imds.scheduled_events.relay_code:
    dest: /opt/azure-imds-relay/lib/relay.zip
"""

RETURN = r"""
modules:
  description: The modules in the archive, as names under the collection's module_utils (C(relay.program)).
  returned: success
  type: list
  elements: str
dest:
  description: The archive on the VM, as M(ansible.builtin.copy) returns it.
  returned: success
  type: str
"""
