# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state store's refusal of an AWX job that would keep it under the job's home (plugin_utils/store/)."""

from __future__ import annotations

import os

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import awx_refusal


def state_store_refusal(store, job_id=None, state_dir="", memory_path=""):
    return awx_refusal(str(store or ""), None if job_id in (None, "") else str(job_id), os.path.expanduser("~"),
                       str(state_dir or ""), str(memory_path or ""))


class FilterModule(object):
    def filters(self):
        return {"state_store_refusal": state_store_refusal}
