# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue between AnsibleModule parameters and the IMDS client (module side only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from datetime import datetime, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.events import (
    DocumentError,
    compute_facts,
    parse_document,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.imds import ImdsClient, ImdsError

IMDS_ARGUMENT_SPEC = dict(
    imds_url=dict(type="str", default="http://169.254.169.254"),
    api_version=dict(type="str", default="2020-07-01"),
    timeout=dict(type="float", default=5.0),
    first_call_timeout=dict(type="float", default=120.0),
    retries=dict(type="int", default=4),
    resource_name=dict(type="str"),
)

SUPPORTED_API_VERSIONS = ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01", "2019-04-01",
                          "2019-08-01", "2020-07-01")


def utc_now():
    return datetime.now(timezone.utc)


def client_from_params(module):
    """An ImdsClient from the shared options; bad values fail the task in one sentence."""
    params = module.params
    if params["timeout"] <= 0 or params["first_call_timeout"] <= 0:
        module.fail_json(msg="timeout and first_call_timeout must be positive numbers of seconds.")
    if params["retries"] < 0:
        module.fail_json(msg="retries must be 0 or more.")
    if params["api_version"] not in SUPPORTED_API_VERSIONS:
        module.fail_json(msg="api_version %r is not a Scheduled Events api-version (known: %s)."
                         % (params["api_version"], ", ".join(SUPPORTED_API_VERSIONS)))
    try:
        return ImdsClient(base_url=params["imds_url"], api_version=params["api_version"],
                          timeout=params["timeout"], retries=params["retries"],
                          first_call_timeout=params["first_call_timeout"])
    except ImdsError as exc:
        module.fail_json(msg=str(exc))


def read_document(client):
    """GET and parse the document; None for an empty body ("no document yet")."""
    return parse_document(client.get_document_body())


def this_vm(client, resource_name, include_instance=True):
    """(facts from compute metadata or None, the name to match Resources against)."""
    facts = compute_facts(client.get_compute()) if include_instance else None
    name = resource_name or (facts or {}).get("name")
    return facts, name


def fail_on_errors(module, func, *args, **kwargs):
    """Run an IMDS step; ImdsError and DocumentError fail the task with their one sentence."""
    try:
        return func(*args, **kwargs)
    except (ImdsError, DocumentError) as exc:
        module.fail_json(msg=str(exc))
