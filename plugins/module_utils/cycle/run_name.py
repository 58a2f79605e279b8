# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The owner name of a run's locks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from datetime import timezone


def run_name(controller, token, now, awx_job_id=None):
    """The owner name of this run's locks: unique per run, and telling a person which run it is."""
    name = "%s run %s %s" % (controller or "controller", token, now.astimezone(timezone.utc).isoformat(
        timespec="seconds").replace("+00:00", "Z"))
    return name + (" AWX job %s" % awx_job_id if awx_job_id not in (None, "") else "")
