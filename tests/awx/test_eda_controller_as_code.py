"""awx/eda_controller.yml, the event-driven path on EDA controller, run by real ansible-playbook as awx/README.md
writes it, against a TEST STAND-IN of the ansible.eda collection (tests/awx/ansible_eda_stand_in/: the documented
options of ansible.eda 2.13.0's modules and the checks EDA controller makes; neither the collection nor a
controller is reachable here). What it creates is then checked as EDA controller would start it: the rulebook's
source arguments, rendered from the activation's variables and the credential's injected ones, satisfy the
source's schema and say what the operator asked for."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import jsonschema
import pytest
import yaml
from ansible_rulebook.util import substitute_variables

REPO = Path(__file__).resolve().parents[2]
AWX = REPO / "awx"
STAND_IN = Path(__file__).resolve().parent / "ansible_eda_stand_in"
SCHEMA = json.loads((REPO / "extensions/eda/plugins/event_source/schemas/scheduled_events.json").read_text())
CREDENTIAL_TYPE = REPO / "extensions/eda/plugins/event_source/credential_types/scheduled_events_relay"
BIN = Path(sys.executable).parent
REGISTRY = "registry.example"
AWX_CREDENTIAL = {"credential_type_name": "Red Hat Ansible Automation Platform", "organization_name": "Default",
                  "inputs": {"host": "https://awx.example", "oauth_token": "t"}, "description": None}


def readme_command() -> str:
    """The shell block of awx/README.md's event-driven section, with the placeholders a user fills in."""
    text = (AWX / "README.md").read_text()
    part = text[text.index("## Event-driven, on EDA controller"):]
    (block,) = re.findall(r"```sh\n(.*?)```", part[:part.index("\n## ")], re.S)
    command = re.sub(r"^ {3}", "", block, flags=re.M)
    return command.replace("<git URL of your project>", str(AWX / "project")).replace("<your registry>", REGISTRY)


def run(tmp: Path, command: str, without: tuple = ()) -> subprocess.CompletedProcess:
    """In a directory of the user's (awx/ and extensions/ linked in, as in a clone), with the stand-in installed and
    the controller's address and token in the environment as the README says (but for the variables `without`)."""
    for name in ("awx", "extensions"):
        if not (tmp / name).exists():
            (tmp / name).symlink_to(REPO / name)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(STAND_IN), ANSIBLE_EDA_STAND_IN_STORE=str(tmp / "eda.json"),
               AAP_HOSTNAME="https://eda.example", AAP_TOKEN="stand-in-token")
    for name in without:
        env.pop(name, None)
    return subprocess.run(["bash", "-ec", command], cwd=tmp, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def store(tmp: Path) -> Dict[str, Any]:
    return json.loads((tmp / "eda.json").read_text())


def source_arguments(created: Dict[str, Any], files: Dict[str, str]) -> Dict[str, Any]:
    """The rulebook's source arguments as ansible-rulebook renders them in the activation: its extra_vars plus what
    the attached credentials inject (each injected file at the path in `files`)."""
    activation = created["rulebook_activation"]["Azure Scheduled Events relays"]
    variables = yaml.safe_load(activation["extra_vars"])
    for name in activation["eda_credentials"]:
        credential = created["credential"][name]
        kind = created.get("credential_type", {}).get(credential["credential_type_name"])
        if kind:
            context = dict(credential["inputs"], eda={"filename": files})
            variables.update(substitute_variables(kind["injectors"]["extra_vars"], context))
    rulebook = created["project"]["Azure Scheduled Events"]["rulebooks"][activation["rulebook_name"]]
    (ruleset,) = yaml.safe_load(Path(rulebook).read_text())
    (source,) = ruleset["sources"]
    return substitute_variables(source["azure_imds.scheduled_events.scheduled_events"], variables)


def test_the_readme_command_creates_an_activation_whose_source_starts_as_asked(tmp_path: Path) -> None:
    (tmp_path / "eda.json").write_text(json.dumps({"credential": {"AWX": AWX_CREDENTIAL}}))
    first = run(tmp_path, readme_command())
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    secret = yaml.safe_load((tmp_path / "relay_secret.yml").read_text())["relay_secret"]
    assert secret not in first.stdout + first.stderr, "the relay secret is never printed"
    created = store(tmp_path)
    assert created["credential_type"]["Azure Scheduled Events relay"]["inputs"] == \
        yaml.safe_load((CREDENTIAL_TYPE / "input.yml").read_text()), "the type shipped with the source"
    assert created["credential"]["Azure Scheduled Events relay secret"]["inputs"]["relay_secret"] == secret
    assert created["decision_environment"]["Azure Scheduled Events DE"]["image_url"] == f"{REGISTRY}/azure-imds-de:1"
    activation = created["rulebook_activation"]["Azure Scheduled Events relays"]
    assert activation["eda_credentials"] == ["Azure Scheduled Events relay secret", "AWX"]
    assert activation["restart_policy"] == "always"
    files = {"relay_secret": "/eda/relay_secret", "certfile": "/eda/cert", "keyfile": "/eda/key", "cafile": "/eda/ca"}
    arguments = source_arguments(created, files)
    jsonschema.validate(arguments, SCHEMA)
    assert (arguments["host"], arguments["port"], arguments["expected_hosts"]) == ("0.0.0.0", 5081, ["vm0", "vm1"])
    assert arguments["token_file"] == "/eda/relay_secret" and arguments["certfile"] == "", "plain HTTP without TLS"
    assert arguments["max_run_seconds"] == 900

    pem = {name: tmp_path / f"{name}.pem" for name in ("cert", "key", "ca")}
    for name, path in pem.items():
        path.write_text(f"-----BEGIN {name}-----\n")
    tls = " ".join(f"-e tls_{n}file={p}" for n, p in pem.items())
    second = run(tmp_path, readme_command().replace("ansible-playbook ", f"ansible-playbook {tls} ", 1))
    assert second.returncode == 0, second.stdout[-3000:]
    assert re.search(r"localhost\s*: ok=\d+\s+changed=1 ", second.stdout), "only the credential changes"
    arguments = source_arguments(store(tmp_path), files)
    assert (arguments["certfile"], arguments["keyfile"], arguments["cafile"]) == ("/eda/cert", "/eda/key", "/eda/ca")
    inputs = store(tmp_path)["credential"]["Azure Scheduled Events relay secret"]["inputs"]
    assert inputs["certfile"] == "-----BEGIN cert-----"


def test_a_missing_required_variable_stops_it_before_anything_is_created(tmp_path: Path) -> None:
    command = readme_command().replace(" -e @relay_secret.yml", "")
    result = run(tmp_path, command)
    assert result.returncode != 0
    assert "relay_secret is required: give the relays' shared secret" in result.stdout
    assert not (tmp_path / "eda.json").exists()


def test_without_an_eda_controller_it_is_a_dry_run_that_stops_in_one_sentence(tmp_path: Path) -> None:
    """The variables are checked, then one sentence says what is missing and what to export; nothing is created."""
    result = run(tmp_path, readme_command(), without=("AAP_HOSTNAME", "CONTROLLER_HOST"))
    assert result.returncode != 0 and "Traceback" not in result.stdout + result.stderr
    message = next(line for line in result.stdout.splitlines() if "no EDA controller to configure" in line)
    assert "export AAP_HOSTNAME=" in message and "missing required arguments" not in result.stdout
    assert not (tmp_path / "eda.json").exists()


def load_stand_in() -> Any:
    path = STAND_IN / "ansible_collections/ansible/eda/plugins/module_utils/stand_in.py"
    spec = importlib.util.spec_from_file_location("eda_stand_in", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("kind, record, refusal", [
    ("credential", {"credential_type_name": "Azure Scheduled Events relay", "inputs": {"relay_token": "x" * 16}},
     "are not fields of"),
    ("credential", {"credential_type_name": "Azure Scheduled Events relay", "inputs": {"certfile": ""}},
     "Required inputs ['relay_secret'] are empty"),
    ("credential", {"credential_type_name": "No such type", "inputs": {}}, "does not exist"),
    ("credential_type", {"inputs": {"fields": [{"id": "a", "label": "A", "type": "string"}]},
                         "injectors": {"extra_vars": {"v": "{{ b }}"}}}, "neither an input nor a file"),
    ("rulebook_activation", {"rulebook_name": "elsewhere.yml"}, "has no rulebook elsewhere.yml"),
    ("rulebook_activation", {"extra_vars": "token_file: /x\n"}, "repeat ['token_file']"),
    ("rulebook_activation", {"eda_credentials": ["Azure Scheduled Events relay secret"]},
     "attach a Red Hat Ansible Automation Platform credential"),
    ("rulebook_activation", {"extra_vars": "- a list\n"}, "must be a YAML mapping"),
])
def test_the_stand_in_refuses_what_eda_controller_would(kind: str, record: Dict[str, Any], refusal: str) -> None:
    """The stand-in can fail: each check the playbook's run relies on refuses a wrong value."""
    stand_in = load_stand_in()
    kind_inputs = yaml.safe_load((CREDENTIAL_TYPE / "input.yml").read_text())
    injectors = yaml.safe_load((CREDENTIAL_TYPE / "injectors.yml").read_text())
    store = {"credential_type": {"Azure Scheduled Events relay": {"inputs": kind_inputs, "injectors": injectors}},
             "credential": {"AWX": AWX_CREDENTIAL,
                            "Azure Scheduled Events relay secret": {"credential_type_name": "Azure Scheduled Events relay",
                                                                    "inputs": {"relay_secret": "x" * 16}}},
             "decision_environment": {"DE": {"image_url": "i"}},
             "project": {"P": {"url": str(AWX / "project"), "rulebooks": {
                 "scheduled_events.yml": str(AWX / "project/rulebooks/scheduled_events.yml")}}}}
    activation = {"project_name": "P", "rulebook_name": "scheduled_events.yml", "decision_environment_name": "DE",
                  "organization_name": "Default", "eda_credentials": ["Azure Scheduled Events relay secret", "AWX"],
                  "extra_vars": "listen_host: 0.0.0.0\n"}
    base = {"rulebook_activation": activation}.get(kind, {})
    with pytest.raises(stand_in.Refused, match=re.escape(refusal)):
        stand_in.CHECKS[kind](dict(base, **record), store)
    if kind == "rulebook_activation":
        stand_in.CHECKS[kind](activation, store)  # and accepts the right one
