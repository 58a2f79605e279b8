"""The modules' documentation renders with ansible-doc (FQCN), as users will read it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ANSIBLE_DOC = str(Path(sys.executable).parent / "ansible-doc")


@pytest.mark.parametrize("module, must_mention", [
    ("scheduled_events_info", ["wait_for_change", "affects_this_vm", "imds_url", "first_call_timeout"]),
    ("scheduled_events_approve", ["expected_incarnation", "force", "already_started", "imds_url", "planned"]),
    ("scheduled_events_claim", ["lease_seconds", "held_by", "quiet", "imds_url", "given back"]),
    ("scheduled_events_lock", ["renewed", "released", "held_by", "lease_seconds", "changed"]),
    ("scheduled_events_state", ["content", "atomically", "0600"]),
    ("controller_lock", ["pid", "released", "localhost"]),
])
def test_ansible_doc_renders_each_module(module: str, must_mention: list) -> None:
    fqcn = f"azure_imds.scheduled_events.{module}"
    text = subprocess.run([ANSIBLE_DOC, fqcn], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    for word in must_mention:
        assert word in text.stdout
    data = json.loads(subprocess.run([ANSIBLE_DOC, "--json", fqcn], capture_output=True, text=True,
                                     timeout=120).stdout)[fqcn]
    assert data["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert data["examples"] and data["return"]
