# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is implemented entirely by its action plugin, on the control node.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: controller_lock
short_description: One run of the maintenance playbooks per target on this control node
version_added: 0.1.0
description:
  - Takes or releases a lock file on the control node that names the C(ansible-playbook) process holding it
    (its pid and start time). While that process lives, another run that asks for the same lock fails at once,
    with a sentence naming the holder, before it touches any VM. A cron job that starts a cycle while the last
    one still runs, or a cycle started by hand during a scheduled one, stops there.
  - A lock whose process has ended (killed, crashed, or a run that stopped before its last play) holds
    nothing, and the next run takes it over with a warning. The lock records the machine too; a lock written by
    another machine (a shared home directory) counts as held.
  - The shipped C(cycle) playbook takes it first and releases it in a last play on C(localhost).
    Its variable C(controller_lock) names the lock file, by default
    C(~/.ansible/azure_imds_scheduled_events/run-<target>.lock); an empty string takes none.
  - That last play does not run when every host failed, or when C(--limit) leaves out C(localhost); the next
    run then takes the lock over, with a warning.
  - The C(approve) playbook takes no lock, because a manual approval is an explicit decision of an operator.
  - Each VM also has its own lease lock (see M(azure_imds.scheduled_events.scheduled_events_lock)), which works
    across control nodes and AWX jobs, where each job runs in a fresh container and this lock cannot reach.
author:
  - azure_imds.scheduled_events maintainers (@azure-imds)
attributes:
  action:
    support: full
    description: Implemented entirely by its action plugin, on the control node.
  check_mode:
    support: full
    description: The lock works the same in check mode, so that a check run does not overlap a real one.
  diff_mode:
    support: none
    description: Nothing to show.
  platform:
    support: full
    platforms: posix
    description: Runs on the control node only; the target hosts are not contacted.
options:
  path:
    description: The lock file on the control node (C(~) is expanded).
    type: str
    required: true
  state:
    description: V(held) takes the lock or fails naming its holder; V(released) deletes it if this run holds it.
    type: str
    choices: [held, released]
    default: held
  owner:
    description: A name for this run, shown to a run that is refused.
    type: str
    default: ""
notes:
  - Use it with C(run_once=true). Taking and releasing the lock are not reported as changes.
seealso:
  - module: azure_imds.scheduled_events.scheduled_events_lock
"""

EXAMPLES = r"""
- name: One run per target on this control node
  azure_imds.scheduled_events.controller_lock:
    path: "~/.ansible/azure_imds_scheduled_events/run-{{ target | default('azure_vms') }}.lock"
    owner: nightly cycle
  run_once: true
"""

RETURN = r"""
path:
  description: The lock file, with C(~) expanded.
  returned: always
  type: str
pid:
  description: The ansible-playbook process that holds (or held) the lock.
  returned: always
  type: int
released:
  description: Whether this run's lock was deleted.
  returned: when O(state=released)
  type: bool
"""
