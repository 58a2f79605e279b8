"""docs/reference/metrics.md against the metrics the code writes, and the example alerts against promtool.

promtool comes from Debian's prometheus package, unpacked into build/ (tools/get_promtool.py); where it
cannot be fetched, the rules' metric names are checked against what the code writes instead, and the test
says so on its output."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Optional, Set

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import render
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.metrics import (
    RelayCounters,
    relay_families,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.cycle_metrics import (
    Counters,
    controller_families,
)
from tools.get_promtool import find_promtool

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "reference" / "metrics.md"
RULES = REPO / "docs" / "reference" / "prometheus" / "azure_scheduled_events.rules.yml"
RULE_TESTS = REPO / "docs" / "reference" / "prometheus" / "azure_scheduled_events.rules.test.yml"
SCHEDULED = {"EventId": "E", "EventStatus": "Scheduled", "EventType": "Reboot", "Resources": ["vm0"],
             "NotBefore": "Mon, 05 Jan 2026 00:15:12 GMT", "EventSource": "Platform"}


def textfiles() -> str:
    relay = render(relay_families({"DocumentIncarnation": 3, "Events": [SCHEDULED]}, "vm0", False, 1, 1.0,
                                  RelayCounters(started_at=1.0)))
    return relay + render(controller_families(Counters()))


def written() -> Set[str]:
    return {family.name + ("_total" if family.type == "counter" else "")
            for family in text_string_to_metric_families(textfiles())}


@pytest.fixture(scope="module")
def promtool() -> Optional[Path]:
    path, why = find_promtool()
    if path is None:
        print(f"NOTE: promtool unavailable ({why}); the rules are checked with the Prometheus parser only.")
    return path


def test_every_metric_written_is_documented_and_every_documented_one_is_written() -> None:
    documented = set(re.findall(r"`(azure_scheduled_events_[a-z_]+)`", DOC.read_text()))
    assert written() == documented


def test_the_textfiles_pass_promtools_lint(promtool: Optional[Path]) -> None:
    if promtool is None:
        assert written(), "parsed by the client library at least"
        return
    check = subprocess.run([str(promtool), "check", "metrics"], input=textfiles(), capture_output=True, text=True,
                           timeout=60)
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr


def test_the_example_alerts_load_and_fire_when_they_should(promtool: Optional[Path]) -> None:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    used = {name for rule in rules for name in re.findall(r"\b(azure_scheduled_events_[a-z_]+|node_[a-z_]+)", rule["expr"])}
    assert used - {"node_textfile_mtime_seconds"} <= written(), "alerts only on metrics the code writes"
    assert {"AzureScheduledEventWithin10Minutes", "AzureScheduledEventsNoSuccessfulPoll",
            "AzureScheduledEventsRecoverFailing"} <= {rule["alert"] for rule in rules}
    if promtool is None:
        return
    check = subprocess.run([str(promtool), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "SUCCESS: 6 rules found" in check.stdout, check.stdout + check.stderr
    tested = subprocess.run([str(promtool), "test", "rules", RULE_TESTS.name], cwd=RULE_TESTS.parent,
                            capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
