"""plugins/filter/relay_key.py: the relay's key as the role and the event source derive it, as text, and a missing
secret or host as one sentence."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.azure_imds.scheduled_events.plugins.filter.relay_key import relay_key
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import relay_key as derived

SECRET = "0123456789abcdef0123456789abcdef"


def test_the_key_is_the_relays_own_as_text() -> None:
    assert relay_key(SECRET, "web-vm0") == derived(SECRET, "web-vm0").decode("ascii")
    assert relay_key(SECRET, "web-vm0") != relay_key(SECRET, "web-vm1"), "a VM can speak only for itself"


@pytest.mark.parametrize("secret, host, message", [
    ("", "vm0", "^relay_key needs the controller's shared secret, at least 16 characters.$"),
    ("short", "vm0", "^relay_key needs the controller's shared secret, at least 16 characters.$"),
    (None, "vm0", "^relay_key needs the controller's shared secret, at least 16 characters.$"),
    (SECRET, "", "^relay_key needs the host name the relay pushes as.$"),
])
def test_a_missing_secret_or_host_is_one_sentence(secret: object, host: str, message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        relay_key(secret, host)
