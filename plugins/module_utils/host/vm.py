# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host whose document, compute facts and approvals are its VM's IMDS (document/imds.py's client): the Linux VM,
whose client sends with urllib, and the Windows VM, whose client sends through ansible.windows.win_uri. The
client's retries and error meanings are therefore the same on both."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import compute_facts
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import read_document
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import Host


class ImdsHost(Host):
    """Reads and approves through `client` (an ImdsClient); the state is the kind's own."""

    def __init__(self, client, warn):
        Host.__init__(self, warn)
        self.client = client
        self.compute = None  # the compute metadata compute_facts read, for what else it tells (the OS disk)

    @property
    def where(self):
        """IMDS's address, for a message about what it lacks."""
        return self.client.base_url

    def compute_facts(self):
        self.compute = self.client.get_compute()
        return compute_facts(self.compute)

    def document(self):
        return read_document(self.client)

    def approve(self, event_ids):
        self.client.approve(event_ids)
