# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's prepare and recover tasks files, found on the control node (plugin_utils/task_files.py)."""

from __future__ import annotations

import os

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.task_files import Places, resolve_task_files

# plugins/filter/task_files.py -> the collection's root, whose own files are never taken for the user's.
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def task_files(prepare, recover, playbook_dir=None):
    places = Places(cwd=os.getcwd(), playbook_dir=os.path.realpath(playbook_dir) if playbook_dir else None,
                    collection_root=COLLECTION_ROOT)
    return resolve_task_files(prepare or "", recover or "", places).as_dict()


class FilterModule(object):
    def filters(self):
        return {"task_files": task_files}
