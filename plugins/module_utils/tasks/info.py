# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_info's behaviour, whichever host it reads (host/interface.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import is_quiet, owes_work
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import UNTRUSTED_ADVICE, load_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    annotate,
    diff_events,
    events_of,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import (
    IMDS_ARGUMENT_SPEC,
    TaskFailed,
    guarded,
    this_vm,
    utc_now,
)


def read_argument_spec():
    """The options of a plain read (scheduled_events_claim's too)."""
    spec = dict(IMDS_ARGUMENT_SPEC)
    spec.update(
        include_instance=dict(type="bool", default=True),
        previous=dict(type="raw"),
        state_path=dict(type="path"),
    )
    return spec


def argument_spec():
    spec = read_argument_spec()
    spec.update(
        wait_for_change=dict(type="bool", default=False),
        since_incarnation=dict(type="int"),
        wait_timeout=dict(type="float", default=300.0),
        poll_interval=dict(type="float", default=1.0),
    )
    return spec


def wait_for_document(host, since, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """Poll until a document whose incarnation differs from `since` (or the timeout)."""
    started = clock()
    polls = 0
    while True:
        parsed = host.document()
        polls += 1
        changed = parsed is not None and parsed["document_incarnation"] != since
        elapsed = clock() - started
        if changed or elapsed + interval > timeout:
            return parsed, {"changed": changed, "polls": polls, "seconds": round(elapsed, 3)}
        sleep(interval)


def read_state(path, host):
    """(state, status) from the host's state; never fails the task."""
    try:
        text = host.read_state(path)
    except StateUnreadable as exc:
        host.warn("cannot read the state file %s (%s); %s" % (path, exc, UNTRUSTED_ADVICE))
        return None, "corrupt"
    state, status, message = load_state(text)
    if message:
        host.warn("%s: %s" % (path, message) if status == "corrupt" else message)
    return state, status


def run_info(params, host, check_mode=False, diff_mode=False):
    """The module's result for `params`; raises TaskFailed. Reads only (the VM's lease lock is
    scheduled_events_lock's), so check mode changes nothing."""
    if params["wait_timeout"] < 0 or params["poll_interval"] <= 0:
        raise TaskFailed("wait_timeout must be 0 or more and poll_interval positive.")
    return observe(params, host)


def observe(params, host):
    """The state file and the document, diffed; raises TaskFailed."""
    state, state_status = None, None
    if params["state_path"]:
        state, state_status = read_state(params["state_path"], host)
    previous = params["previous"]
    if previous is None and state is not None:
        previous = state
    previous_incarnation, previous_events = guarded(events_of, previous)
    facts, name = guarded(this_vm, host, params["resource_name"], params["include_instance"])
    try:
        refusal = host.reset_disk_refusal(params["state_path"]) if params["state_path"] and facts else ""
        if refusal:
            raise TaskFailed(refusal)
        return _read_events(params, host, facts, name, previous, previous_incarnation, previous_events,
                            state, state_status)
    except TaskFailed as exc:
        # Which VM failed is still worth knowing: a maintenance cycle keeps its fault domain in maintenance.
        exc.result.setdefault("this_vm", dict(facts or {}, name=name) if (facts or name) else {})
        raise


def _read_events(params, host, facts, name, previous, previous_incarnation, previous_events, state,
                 state_status):
    result = dict(changed=False)
    if params.get("wait_for_change"):
        since = params["since_incarnation"]
        if since is None:
            since = previous_incarnation
        parsed, result["waited"] = guarded(
            wait_for_document, host, since, params["wait_timeout"], params["poll_interval"])
    else:
        parsed = guarded(host.document)
    now = utc_now()
    if parsed is None:
        host.warn("IMDS answered with an empty body: no Scheduled Events document yet "
                  "(normal right after the first request enables the service).")
        parsed = {"document_incarnation": None, "events": [], "warnings": [], "raw": None}
    for warning in parsed["warnings"]:
        host.warn(warning)
    events = annotate(parsed["events"], name, now)
    if name is None:
        host.warn("this VM's name is unknown (include_instance is false and resource_name is unset), "
                  "so no event is matched to it.")
    result.update(
        document_incarnation=parsed["document_incarnation"],
        document_available=parsed["raw"] is not None,
        events=events,
        events_for_this_vm=[e for e in events if e["affects_this_vm"]],
        this_vm=dict(facts or {}, name=name) if (facts or name) else {},
        observed_at=now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        raw=parsed["raw"],
    )
    if previous is not None:
        result["diff"] = diff_events(previous_events, events, previous_incarnation, parsed["document_incarnation"])
    if params["state_path"]:
        result.update(state=state, state_status=state_status, state_path=params["state_path"],
                      quiet=_quiet(result, state, state_status))
    return result


def _quiet(result, state, state_status):
    """The one quiet rule (cycle/quiet.py) over this read."""
    return is_quiet(result["document_available"], result["this_vm"].get("name"), bool(result["events_for_this_vm"]),
                    owes_work(state, state_status))
