# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the control-plane modules do: read a subscription's scheduled events from Resource Graph, and acknowledge
events through Microsoft.Maintenance. Run on the controller; their I/O is an ArmClient (arm_client.py).

A read never frees anything: the events are reported with the hosts they list, and what the read cannot place
(a VM no host is, a name two hosts share) or could not parse is reported beside them, for the caller to count as
busy. Resource Graph may lag behind Azure: `read_at` says when the read ran, never when Azure changed the event.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import time
from configparser import ConfigParser
from dataclasses import dataclass
from typing import Callable, List, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.acknowledge import (
    DEFAULT_API_VERSION,
    AcknowledgeError,
    acknowledge_outcome,
    acknowledge_request,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.arm_client import (
    ArmClient,
    ArmError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.azure_auth import (
    AUTH_ARGUMENT_SPEC,
    AuthError,
    resolve_credentials,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_paging import (
    GraphIncomplete,
    GraphRefused,
    all_rows,
    events_query,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_read import (
    lags_behind,
    read_of_rows,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import (
    HostMapError,
    host_index,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    SightingError,
    parse_scope,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import iso_utc
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    TaskFailed,
    utc_now,
)


@dataclass
class AzureEdges:
    """The I/O of a control-plane module besides Resource Manager's HTTP: its warning, and run_command(args) ->
    (rc, stdout, stderr) on the machine it runs on (AnsibleModule.run_command's), for the Azure CLI."""

    warn: Callable[[str], None]
    run_command: Callable[[List[str]], Tuple[int, str, str]]


def azure_edges(module):
    return AzureEdges(warn=module.warn, run_command=module.run_command)


GRAPH_PATH = "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01"


def info_argument_spec():
    return dict(AUTH_ARGUMENT_SPEC, subscriptions=dict(type="list", elements="str"),
                vm_ids=dict(type="dict", default={}), timeout=dict(type="float", default=30.0),
                wait_for=dict(type="dict"), wait_seconds=dict(type="float", default=90.0))


def acknowledge_argument_spec():
    return dict(AUTH_ARGUMENT_SPEC, scope=dict(type="str", required=True), event_ids=dict(type="list", elements="str",
                required=True), api_version=dict(type="str", default=DEFAULT_API_VERSION),
                timeout=dict(type="float", default=30.0))


def run_control_plane_info(params, edges, check_mode, diff_mode):
    try:
        index = host_index(params["vm_ids"])  # a bad host identity fails before anything is sent
    except HostMapError as exc:
        raise TaskFailed(str(exc))
    client = arm_client_for(params, edges.run_command)
    warnings = []  # each read's own: only the last one's are told

    def read():
        del warnings[:]
        return read_control_plane(client, params["subscriptions"], params["vm_ids"], index, warnings.append)
    result = read_catching_up(read, params["wait_for"], params["wait_seconds"])
    for warning in warnings:
        edges.warn(warning)
    if result["lagging"]:
        edges.warn("Resource Graph did not show %s %s within %g s of waiting; the run plans on what it shows."
                   % (params["wait_for"].get("event_id"), params["wait_for"].get("event_status"),
                      params["wait_seconds"]))
    return result


READ_AGAIN_S = 5.0  # between two reads of a Resource Graph still behind a notification


def read_catching_up(read, notified, seconds, sleep=time.sleep, clock=time.monotonic):
    """read() again, every READ_AGAIN_S for up to `seconds`, while it shows an older moment than the notification
    that started the run (graph_read.lags_behind); the last read, with `lagging` saying whether it still did."""
    deadline = clock() + max(seconds, 0.0)
    result = read()
    while lags_behind(result, notified) and clock() + READ_AGAIN_S <= deadline:
        sleep(READ_AGAIN_S)
        result = read()
    return dict(result, lagging=lags_behind(result, notified))


def read_control_plane(client, subscriptions, vm_ids, index, warn, sleep=time.sleep):
    """One Resource Graph read, its events placed on the hosts of `vm_ids` (graph_read.py)."""
    try:
        subscriptions = subscriptions or [client.subscription_id()]  # the Azure CLI's: known with its token
    except ArmError as exc:
        raise TaskFailed(str(exc))
    read_at = iso_utc(utc_now())

    def post(body):
        try:
            return client.post_reading_headers(GRAPH_PATH, body)
        except ArmError as exc:
            raise TaskFailed(str(exc))
    try:
        rows = all_rows(post, subscriptions, events_query(resource_groups(vm_ids)), sleep)
    except GraphRefused as exc:
        raise TaskFailed("Resource Graph answered %s (%s); nothing was read." % (exc.status, _said(exc.answer)))
    except GraphIncomplete as exc:
        raise TaskFailed(str(exc))
    return dict(read_of_rows(rows, read_at, subscriptions, vm_ids, index, warn), changed=False)


_RESOURCE_GROUP = re.compile(r"/resourcegroups/([^/]+)/", re.IGNORECASE)


def resource_groups(vm_ids):
    """The resource groups of the hosts' VMs, where their sets publish their events."""
    found = [_RESOURCE_GROUP.search(str(arm_id) + "/") for arm_id in (vm_ids or {}).values()]
    return [m.group(1) for m in found if m]


def run_acknowledge(params, edges, check_mode, diff_mode):
    try:
        request = acknowledge_request(parse_scope(params["scope"]), params["event_ids"], params["api_version"])
    except (SightingError, AcknowledgeError) as exc:
        raise TaskFailed(str(exc))
    result = {"changed": True, "approved": [], "gone": [], "refused": {}, "unknown": [],
              "request": {"method": request["method"], "path": request["path"]}}
    if check_mode:
        result["would_approve"] = list(params["event_ids"])
        return result
    status, answer = _post(arm_client_for(params, edges.run_command), request["path"], request["body"])
    outcome = acknowledge_outcome(status, answer, params["event_ids"])
    result.update(changed=bool(outcome["approved"]), approved=outcome["approved"], gone=outcome["gone"],
                  refused=outcome["refused"], unknown=outcome["unknown"], status=status)
    if outcome["refused"] or (outcome["error"] and not outcome["approved"]):
        raise TaskFailed(outcome["error"] or "Azure refused %s." % ", ".join(
            "%s (%s)" % item for item in sorted(outcome["refused"].items())), **result)
    if outcome["error"]:
        edges.warn(outcome["error"])
    return result


def arm_client_for(params, run_command=None):
    """An ArmClient for the auth options in `params` (absent ones from the environment or profile, as
    azure.azcollection reads them); raises TaskFailed in one sentence."""
    try:
        credentials = resolve_credentials(params, os.environ, _read_profile)
    except AuthError as exc:
        raise TaskFailed(str(exc))
    return ArmClient(credentials, timeout=params["timeout"], run_command=run_command)


def _post(client, path, body):
    try:
        return client.post(path, body)
    except ArmError as exc:
        raise TaskFailed(str(exc))


def _read_profile(name):
    parser = ConfigParser()
    parser.read(os.path.expanduser("~/.azure/credentials"))
    return dict(parser.items(name)) if parser.has_section(name) else {}


def _said(answer):
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, dict):
        return error.get("message") or error.get("code") or "no reason given"
    return "no reason given"
