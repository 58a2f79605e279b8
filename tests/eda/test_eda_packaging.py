"""The source as Event-Driven Ansible's ecosystem ships sources: its argument schema (tied to the source's own
DOCUMENTATION, and accepting what the shipped rulebooks pass once ansible-rulebook renders them), the credential type
for EDA controller (whose injected variables are the ones the rulebooks read), eda_runtime.yml and the decision
environment (ansible-builder writes its build context)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import jsonschema
import pytest
import yaml
from ansible_rulebook.util import substitute_variables

from tests.eda.test_event_source import load_source

REPO = Path(__file__).resolve().parent.parent.parent
EDA = REPO / "extensions" / "eda"
SCHEMA = EDA / "plugins" / "event_source" / "schemas" / "scheduled_events.json"
CREDENTIAL = EDA / "plugins" / "event_source" / "credential_types" / "scheduled_events_relay"
# The rulebooks of the relays' path (the Event Grid one reads azure.azcollection's azure_service_bus source instead)
RULEBOOKS = sorted(p for p in (EDA / "rulebooks").glob("*.yml")
                   if "azure_imds.scheduled_events.scheduled_events:" in p.read_text())
TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "list": ["array", "string"]}


def source_options() -> Dict[str, Any]:
    text = (EDA / "plugins" / "event_source" / "scheduled_events.py").read_text()
    return yaml.safe_load(re.search(r'DOCUMENTATION = r"""(.*?)"""', text, re.S).group(1))["options"]


def schema() -> Dict[str, Any]:
    return json.loads(SCHEMA.read_text())


def source_args(rulebook: Path) -> Dict[str, Any]:
    (ruleset,) = yaml.safe_load(rulebook.read_text())
    (source,) = ruleset["sources"]
    return source["azure_imds.scheduled_events.scheduled_events"]


def test_the_schema_is_the_sources_documentation() -> None:
    options, found = source_options(), schema()
    jsonschema.Draft202012Validator.check_schema(found)
    assert list(found["properties"]) == list(options), "the same arguments, in the same order"
    for name, option in options.items():
        prop = found["properties"][name]
        assert prop["type"] == TYPES[option["type"]], name
        assert prop.get("default") == option.get("default"), name
    assert found["required"] == [n for n, o in options.items() if o.get("required")]


@pytest.mark.parametrize("rulebook", RULEBOOKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("given", [{}, {"listen_host": "0.0.0.0", "listen_port": 8443, "expected_hosts": "vm0,vm1",
                                       "certfile": "/c.pem", "keyfile": "/k.pem", "cafile": "/ca.pem"}])
def test_what_each_rulebook_passes_fits_the_schema_and_the_source_accepts_it(rulebook: Path, given: dict) -> None:
    rendered = substitute_variables(source_args(rulebook), dict({"token_file": "/etc/relay.secret"}, **given))
    jsonschema.validate(rendered, schema())
    load_source().settings_of(rendered)  # no ConfigError


def test_the_schema_refuses_a_misspelt_argument_and_a_wrong_type() -> None:
    with pytest.raises(jsonschema.ValidationError, match="expected_host"):
        jsonschema.validate({"token_file": "/t", "expected_host": ["vm0"]}, schema())
    with pytest.raises(jsonschema.ValidationError, match="port"):
        jsonschema.validate({"token_file": "/t", "port": "http"}, schema())


def test_the_credential_type_injects_the_files_the_rulebooks_read() -> None:
    inputs = yaml.safe_load((CREDENTIAL / "input.yml").read_text())
    injectors = yaml.safe_load((CREDENTIAL / "injectors.yml").read_text())
    fields = {f["id"]: f for f in inputs["fields"]}
    assert fields["relay_secret"]["secret"] is True and fields["keyfile"]["secret"] is True
    assert inputs["required"] == ["relay_secret"]
    assert set(injectors["file"]) == {f"template.{name}" for name in fields}, "each field goes to a file"
    read = set()
    for rulebook in RULEBOOKS:
        read |= set(re.findall(r"\{\{\s*([a-z_]+)", rulebook.read_text()))
    assert set(injectors["extra_vars"]) <= read, "every injected variable is one the rulebooks read"
    assert injectors["extra_vars"]["token_file"] == "{{ eda.filename.relay_secret }}"


def test_eda_runtime_routes_only_plugins_that_exist() -> None:
    runtime = yaml.safe_load((EDA / "eda_runtime.yml").read_text())
    assert set(runtime["plugin_routing"]) <= {"event_source", "event_filter"}
    for kind, routes in runtime["plugin_routing"].items():
        for name in routes or {}:
            assert (EDA / "plugins" / kind / f"{name}.py").is_file(), name


def test_ansible_builder_writes_the_decision_environment_build_context(tmp_path: Path) -> None:
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-builder"), "create", "-f", str(REPO / "awx" / "decision-environment.yml"),
                          "-c", str(tmp_path / "context")], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    (containerfile,) = [p for p in (tmp_path / "context" / n for n in ("Containerfile", "Dockerfile")) if p.is_file()]
    text = containerfile.read_text()
    assert "ansible-core>=2.19,<2.20" in text
    python = (tmp_path / "context" / "_build" / "requirements.txt").read_text()
    assert "ansible-rulebook" in python and "aiohttp" in python
    system = (tmp_path / "context" / "_build" / "bindep.txt").read_text()
    assert "java-17-openjdk-headless" in system


def test_the_awx_projects_rulebook_is_the_collections_controller_rulebook() -> None:
    """EDA controller takes rulebooks from the project, not from collections: the skeleton project carries a copy."""
    copy = REPO / "awx" / "project" / "rulebooks" / "scheduled_events.yml"
    home = EDA / "rulebooks" / "scheduled_events_controller.yml"
    assert copy.read_text() == home.read_text(), f"cp {home.relative_to(REPO)} {copy.relative_to(REPO)}"
