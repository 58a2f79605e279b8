# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cycle's one error: a policy or an input it cannot work with, said in one sentence."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class PolicyError(ValueError):
    """A policy or input the cycle cannot work with; one sentence."""
