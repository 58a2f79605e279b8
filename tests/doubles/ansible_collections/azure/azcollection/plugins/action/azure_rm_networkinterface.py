# -*- coding: utf-8 -*-
"""TEST DOUBLE of azure.azcollection.azure_rm_networkinterface: see plugin_utils/azure_double.py."""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.azure.azcollection.plugins.plugin_utils.azure_double import call


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        return call("azure_rm_networkinterface", dict(self._task.args), task_vars.get("inventory_hostname"),
                    self._task.delegate_to, bool(self._task.check_mode))
