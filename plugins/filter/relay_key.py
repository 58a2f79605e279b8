# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The key of one VM's event relay, derived on the controller from the shared secret (the event_relay role)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import relay_key as _relay_key


def relay_key(secret, host):
    """HMAC-SHA256(secret, "relay-key:" + host) in hex: what the relay of `host` signs with, and what the event
    source checks that host's pushes with. The secret itself never leaves the controller."""
    if not str(secret or "").strip() or len(str(secret).strip()) < 16:
        raise AnsibleFilterError("relay_key needs the controller's shared secret, at least 16 characters.")
    if not str(host or ""):
        raise AnsibleFilterError("relay_key needs the host name the relay pushes as.")
    return _relay_key(str(secret), str(host)).decode("ascii")


class FilterModule(object):
    def filters(self):
        return {"relay_key": relay_key}
