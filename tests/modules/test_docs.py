"""The modules' documentation renders with ansible-doc (FQCN), as users will read it."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

ANSIBLE_DOC = str(Path(sys.executable).parent / "ansible-doc")
COLLECTION = "azure_imds.scheduled_events"
MUST_MENTION = {
    "scheduled_events_info": ["wait_for_change", "affects_this_vm", "imds_url", "first_call_timeout"],
    "scheduled_events_approve": ["expected_incarnation", "force", "already_started", "imds_url", "planned"],
    "scheduled_events_claim": ["lease_seconds", "held_by", "quiet", "imds_url", "given back"],
    "scheduled_events_lock": ["renewed", "released", "held_by", "lease_seconds", "changed"],
    "scheduled_events_state": ["content", "atomically", "0600"],
    "controller_lock": ["pid", "released", "localhost"],
}
# One ansible-doc process for every module, once as text and once as JSON (each process starts Ansible, which
# costs more than reading a module's docs), on one xdist worker.
pytestmark = pytest.mark.xdist_group("module-docs")
HEADER = re.compile(r"^> MODULE (?:\x1b\[[0-9;]*m)?(\S+?)(?:\x1b\[[0-9;]*m)? \(", re.M)


@pytest.fixture(scope="module")
def rendered() -> Tuple[Dict[str, str], Dict[str, Any]]:
    """Each module's text page, and its JSON documentation, by FQCN."""
    names = [f"{COLLECTION}.{module}" for module in MUST_MENTION]
    text = subprocess.run([ANSIBLE_DOC, *names], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    starts = [(m.group(1), m.start()) for m in HEADER.finditer(text.stdout)]
    pages = {name: text.stdout[at:end] for (name, at), (_, end) in zip(starts, starts[1:] + [("", None)])}
    assert sorted(pages) == sorted(names), text.stdout[:2000]
    documented = subprocess.run([ANSIBLE_DOC, "--json", *names], capture_output=True, text=True, timeout=120)
    assert documented.returncode == 0, documented.stderr
    return pages, json.loads(documented.stdout)


@pytest.mark.parametrize("module", sorted(MUST_MENTION))
def test_ansible_doc_renders_each_module(module: str, rendered: Tuple[Dict[str, str], Dict[str, Any]]) -> None:
    pages, documented = rendered
    fqcn = f"{COLLECTION}.{module}"
    for word in MUST_MENTION[module]:
        assert word in pages[fqcn], f"{fqcn}: {word}"
    data = documented[fqcn]
    assert data["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert data["examples"] and data["return"]
