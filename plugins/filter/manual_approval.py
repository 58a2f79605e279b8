# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manual approval's plan (module_utils/document/approval.py) for playbooks/approve.yml."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import (
    ApprovalRequestError,
    manual_approval_plan,
)


def approval_plan(event_ids, hosts, hostvars, result_name="approve_query"):
    events_by_host = dict((host, (hostvars[host].get(result_name) or {}).get("events_for_this_vm") or [])
                          for host in hosts)
    try:
        return manual_approval_plan(event_ids, events_by_host)
    except ApprovalRequestError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"approval_plan": approval_plan}
