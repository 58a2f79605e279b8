"""A TEST STAND-IN for the ansible.eda collection, at the boundary this machine cannot reach.

ansible.eda is on Galaxy only (not on PyPI, no Galaxy access here) and talks to an EDA controller (none runs
here). This stand-in gives awx/eda_controller.yml's five modules the options, types, choices, aliases and defaults
of ansible.eda 2.13.0's module documentation (no option more, so a misspelt one fails as it would there), and
keeps what they create in a JSON file (ANSIBLE_EDA_STAND_IN_STORE) instead of a controller. It checks what EDA
controller would refuse and the playbook could get wrong: a credential type whose injectors name no input, a
credential whose inputs its type does not have, references to objects that do not exist, a rulebook the project
does not carry, extra_vars that are not a YAML mapping or repeat a variable a credential injects, and an activation
that launches job templates without a "Red Hat Ansible Automation Platform" credential. A project's rulebooks are
read from its URL when that is a local directory (the tests' case); any other URL is refused.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, List

import yaml

from ansible.module_utils.basic import AnsibleModule, env_fallback

AUTH: Dict[str, Dict[str, Any]] = {
    "controller_host": {"type": "str", "required": True, "aliases": ["aap_hostname"],
                        "fallback": (env_fallback, ["CONTROLLER_HOST", "AAP_HOSTNAME"])},
    "controller_username": {"type": "str", "aliases": ["aap_username"],
                            "fallback": (env_fallback, ["CONTROLLER_USERNAME", "AAP_USERNAME"])},
    "controller_password": {"type": "str", "no_log": True, "aliases": ["aap_password"],
                            "fallback": (env_fallback, ["CONTROLLER_PASSWORD", "AAP_PASSWORD"])},
    "controller_token": {"type": "str", "no_log": True, "aliases": ["aap_token", "aap_oauth_token"],
                         "fallback": (env_fallback, ["CONTROLLER_TOKEN", "AAP_TOKEN", "AAP_OAUTH_TOKEN"])},
    "request_timeout": {"type": "float", "default": 10.0, "aliases": ["aap_request_timeout"]},
    "validate_certs": {"type": "bool", "default": True, "aliases": ["aap_validate_certs"]},
}
PRESENT = {"type": "str", "default": "present", "choices": ["present", "absent"]}
ORGANIZATION = {"type": "str", "aliases": ["organization"]}
OPTIONS: Dict[str, Dict[str, Dict[str, Any]]] = {
    "credential_type": {
        "name": {"type": "str", "required": True}, "new_name": {"type": "str"}, "description": {"type": "str"},
        "inputs": {"type": "dict"}, "injectors": {"type": "dict"}, "test_inputs": {"type": "dict"},
        "test_metadata": {"type": "dict"},
        "state": {"type": "str", "default": "present", "choices": ["present", "absent", "test"]},
    },
    "credential": {
        "name": {"type": "str", "required": True}, "new_name": {"type": "str"}, "copy_from": {"type": "str"},
        "inputs": {"type": "dict"}, "credential_type_name": {"type": "str"},
        "organization_name": ORGANIZATION, "description": {"type": "str"}, "metadata": {"type": "dict"},
        "state": {"type": "str", "default": "present", "choices": ["present", "absent", "test"]},
    },
    "decision_environment": {
        "name": {"type": "str", "required": True}, "new_name": {"type": "str"}, "description": {"type": "str"},
        "image_url": {"type": "str"}, "credential": {"type": "str"},
        "pull_policy": {"type": "str", "default": "always", "choices": ["always", "never", "missing"]},
        "state": PRESENT, "organization_name": ORGANIZATION,
    },
    "project": {
        "name": {"type": "str", "required": True}, "new_name": {"type": "str"}, "description": {"type": "str"},
        "url": {"type": "str"}, "proxy": {"type": "str"}, "credential": {"type": "str"},
        "organization_name": ORGANIZATION, "scm_branch": {"type": "str"}, "state": PRESENT,
        "sync": {"type": "bool", "default": False}, "wait": {"type": "bool", "default": True},
        "update_revision_on_launch": {"type": "bool", "default": False},
        "scm_update_cache_timeout": {"type": "int", "default": 0},
    },
    "rulebook_activation": {
        "name": {"type": "str", "required": True}, "new_name": {"type": "str"}, "description": {"type": "str"},
        "project_name": {"type": "str", "aliases": ["project"]},
        "rulebook_name": {"type": "str", "aliases": ["rulebook"]}, "extra_vars": {"type": "str"},
        "restart": {"type": "bool", "default": False},
        "restart_policy": {"type": "str", "default": "on-failure", "choices": ["on-failure", "always", "never"]},
        "enabled": {"type": "bool", "default": True},
        "decision_environment_name": {"type": "str", "aliases": ["decision_environment"]},
        "awx_token_name": {"type": "str", "aliases": ["awx_token", "token"]},
        "organization_name": ORGANIZATION,
        "eda_credentials": {"type": "list", "elements": "str", "aliases": ["credentials"]},
        "k8s_service_name": {"type": "str"}, "swap_single_source": {"type": "bool", "default": True},
        "restart_on_project_update": {"type": "bool", "default": False},
        "event_streams": {"type": "list", "elements": "dict", "options": {
            "event_stream": {"type": "str"}, "source_name": {"type": "str"}, "source_index": {"type": "int"}}},
        "log_level": {"type": "str", "default": "error", "choices": ["debug", "info", "error"]},
        "enable_persistence": {"type": "bool", "default": False},
        "rule_engine_credential_id": {"type": "int"},
        "state": {"type": "str", "default": "present", "choices": ["present", "absent", "disabled", "enabled"]},
    },
}
# Credential types every EDA controller has, with their input fields (the ones this collection's material uses).
BUILT_IN_TYPES = {
    "Red Hat Ansible Automation Platform": ["host", "username", "password", "oauth_token", "verify_ssl"],
    "Container Registry": ["host", "username", "password", "verify_ssl"],
    "Source Control": ["username", "password", "ssh_key_data", "ssh_key_unlock"],
}
LAUNCHES = ("run_job_template", "run_workflow_template")
STORED = {"credential_type": ("description", "inputs", "injectors"),
          "credential": ("credential_type_name", "organization_name", "inputs", "description"),
          "decision_environment": ("image_url", "credential", "pull_policy", "organization_name", "description"),
          "project": ("url", "credential", "organization_name", "scm_branch", "description"),
          "rulebook_activation": ("project_name", "rulebook_name", "decision_environment_name", "organization_name",
                                  "eda_credentials", "extra_vars", "restart_policy", "k8s_service_name", "state",
                                  "log_level", "enable_persistence", "description")}


class Refused(Exception):
    """What EDA controller would answer with an error (the real module fails with it)."""


def run(kind: str) -> None:
    module = AnsibleModule(argument_spec=dict(AUTH, **OPTIONS[kind]), supports_check_mode=True)
    store_path = Path(os.environ["ANSIBLE_EDA_STAND_IN_STORE"])
    store = json.loads(store_path.read_text()) if store_path.is_file() else {}
    params = module.params
    objects = store.setdefault(kind, {})
    try:
        if params["state"] == "absent":
            changed = objects.pop(params["name"], None) is not None
        else:
            record = {field: params.get(field) for field in STORED[kind]}
            CHECKS[kind](record, store)
            changed = objects.get(params["name"]) != record
            objects[params["name"]] = record
    except Refused as refused:
        module.fail_json(msg=str(refused))
    if changed and not module.check_mode:
        store_path.write_text(json.dumps(store, indent=1, sort_keys=True))
    module.exit_json(changed=changed, name=params["name"])


def _check_credential_type(record: Dict[str, Any], _store: Dict[str, Any]) -> None:
    fields = (record["inputs"] or {}).get("fields", [])
    for field in fields:
        if not {"id", "label", "type"} <= set(field) or field["type"] not in ("string", "boolean"):
            raise Refused(f"Input field {field!r} needs an id, a label and a type of string or boolean.")
    ids = {f["id"] for f in fields}
    if not set((record["inputs"] or {}).get("required", [])) <= ids:
        raise Refused("A required input is not among the fields.")
    injectors = record["injectors"] or {}
    if not set(injectors) <= {"extra_vars", "env", "file"}:
        raise Refused(f"Injectors may be extra_vars, env and file, not {sorted(injectors)}.")
    files = {key.split(".", 1)[1] if "." in key else "template" for key in injectors.get("file", {})}
    for text in _strings(injectors):
        for name in re.findall(r"\{\{\s*([\w.]+)", text):
            if name not in ids and not (name.startswith("eda.filename.") and name.split(".")[2] in files):
                raise Refused(f"Injector variable {name} is neither an input nor a file.")


def _check_credential(record: Dict[str, Any], store: Dict[str, Any]) -> None:
    type_name = record["credential_type_name"]
    created = store.get("credential_type", {}).get(type_name)
    if created is None and type_name not in BUILT_IN_TYPES:
        raise Refused(f"Credential type {type_name} does not exist.")
    fields = [f["id"] for f in created["inputs"]["fields"]] if created else BUILT_IN_TYPES[type_name]
    inputs = record["inputs"] or {}
    if not set(inputs) <= set(fields):
        raise Refused(f"Inputs {sorted(set(inputs) - set(fields))} are not fields of {type_name}.")
    missing = [r for r in (created["inputs"].get("required", []) if created else []) if not inputs.get(r)]
    if missing:
        raise Refused(f"Required inputs {missing} are empty.")


def _check_decision_environment(record: Dict[str, Any], store: Dict[str, Any]) -> None:
    if not record["image_url"]:
        raise Refused("image_url is required.")
    _credential_of_type(store, record["credential"], "Container Registry")


def _check_project(record: Dict[str, Any], store: Dict[str, Any]) -> None:
    _credential_of_type(store, record["credential"], "Source Control")
    directory = Path(record["url"] or "")
    if not directory.is_dir():
        raise Refused(f"The stand-in imports only local directories, not {record['url']}.")
    record["rulebooks"] = {p.name: str(p) for d in ("rulebooks", "extensions/eda/rulebooks")
                           for p in sorted((directory / d).glob("*.y*ml"))}


def _check_activation(record: Dict[str, Any], store: Dict[str, Any]) -> None:
    for field in ("project_name", "rulebook_name", "decision_environment_name", "organization_name"):
        if not record[field]:
            raise Refused(f"{field} is required when state is present.")
    project = _existing(store, "project", record["project_name"])
    _existing(store, "decision_environment", record["decision_environment_name"])
    if record["rulebook_name"] not in project["rulebooks"]:
        raise Refused(f"Project {record['project_name']} has no rulebook {record['rulebook_name']}.")
    types = [_existing(store, "credential", name)["credential_type_name"] for name in record["eda_credentials"] or []]
    extra = yaml.safe_load(record["extra_vars"] or "{}")
    if not isinstance(extra, dict):
        raise Refused("extra_vars must be a YAML mapping.")
    repeated = set(extra) & set(_injected_vars(record, store))
    if repeated:
        raise Refused(f"extra_vars repeat {sorted(repeated)}, which a credential injects.")
    rulebook = Path(project["rulebooks"][record["rulebook_name"]]).read_text()
    if any(word in rulebook for word in LAUNCHES) and "Red Hat Ansible Automation Platform" not in types:
        raise Refused("The rulebook launches job templates: attach a Red Hat Ansible Automation Platform credential.")


def _injected_vars(record: Dict[str, Any], store: Dict[str, Any]) -> List[str]:
    names: List[str] = []
    for credential in record["eda_credentials"] or []:
        type_name = store["credential"][credential]["credential_type_name"]
        created = store.get("credential_type", {}).get(type_name)
        names += sorted(((created or {}).get("injectors") or {}).get("extra_vars", {}))
    return names


def _credential_of_type(store: Dict[str, Any], name: Any, type_name: str) -> None:
    if name is not None and _existing(store, "credential", name)["credential_type_name"] != type_name:
        raise Refused(f"Credential {name} is not of type {type_name}.")


def _existing(store: Dict[str, Any], kind: str, name: str) -> Dict[str, Any]:
    found = store.get(kind, {}).get(name)
    if found is None:
        raise Refused(f"{kind} {name} does not exist.")
    return found


def _strings(value: Any) -> List[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return [value] if isinstance(value, str) else []


CHECKS = {"credential_type": _check_credential_type, "credential": _check_credential,
          "decision_environment": _check_decision_environment, "project": _check_project,
          "rulebook_activation": _check_activation}
