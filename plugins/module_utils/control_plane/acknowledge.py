# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Approving events from outside the VM (Microsoft.Maintenance acknowledge): the request, and what an answer
means for each event sent; pure, no I/O.

Azure treats this approval as it treats IMDS's POST. One event goes to .../scheduledevents/<id>/acknowledge
(no body; since api-version 2023-10-01-preview); several go in one list acknowledge, .../scheduledevents with
{"value": [ids]} (since 2025-10-01-preview), which may answer 207 with a result per event, by id, in any order and
perhaps not for every id. Only what an answer says was approved counts as approved: an id a 207 does not mention,
or any answer this code does not know, leaves the event unknown (never approved; the next read decides). NotFound
means the event is gone (it started and ended, or was withdrawn), which is not a failure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    SCOPE_TYPES,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import is_event_id

# The newest stable version of Microsoft.Maintenance that has both forms (azure-rest-api-specs, stable/2025-11-01);
# the same operations are in 2025-10-01-preview and 2026-02-01-preview. Azure documents the feature as a preview.
DEFAULT_API_VERSION = "2025-11-01"
FIRST_SINGLE_VERSION = "2023-10-01"
FIRST_LIST_VERSION = "2025-10-01"
GONE_CODES = ("notfound", "invalidscheduledeventid")
# A 207's per-event codes are not in the published spec (it defines 200 and an error body with details[{target,
# code, message}]): these are read as approved, and these as refused; any other code says neither, and the event
# counts as not approved (never as refused, which would fail an approval Azure may have taken) until a read shows it.
APPROVED_CODES = ("ok", "succeeded", "success", "approved")
REFUSED_CODES = ("conflict", "badrequest", "forbidden", "authorizationfailed", "invalidrequest", "operationnotallowed",
                 "failed", "rejected")


class AcknowledgeError(ValueError):
    """A request that cannot be sent. The message is one sentence naming the cause."""


def acknowledge_request(scope, event_ids, api_version=DEFAULT_API_VERSION):
    """{method, path, body} approving `event_ids` of one scope ({subscription, resource_group, scope_type,
    scope_name}); path relative to https://management.azure.com."""
    ids = list(event_ids)
    if not ids:
        raise AcknowledgeError("No event to acknowledge.")
    bad = [i for i in ids if not is_event_id(i)]
    if bad:
        raise AcknowledgeError("%r is not an EventId (8-4-4-4-12 hex digits)." % bad[0])
    if scope.get("scope_type") not in SCOPE_TYPES:
        raise AcknowledgeError("%r is not a scope Microsoft.Maintenance acknowledges in (%s)."
                               % (scope.get("scope_type"), ", ".join(SCOPE_TYPES)))
    version_day = str(api_version)[:10]
    if version_day < FIRST_SINGLE_VERSION:
        raise AcknowledgeError("api-version %s has no acknowledge (it came with 2023-10-01-preview)." % api_version)
    if len(ids) > 1 and version_day < FIRST_LIST_VERSION:
        raise AcknowledgeError("api-version %s acknowledges one event at a time; %d were given (the list form came "
                               "with 2025-10-01-preview)." % (api_version, len(ids)))
    base = ("/subscriptions/%(subscription)s/resourcegroups/%(resource_group)s/providers/Microsoft.Compute/"
            "%(scope_type)s/%(scope_name)s/providers/Microsoft.Maintenance/scheduledevents" % scope)
    if len(ids) == 1:
        return {"method": "POST", "path": "%s/%s/acknowledge?api-version=%s" % (base, ids[0], api_version),
                "body": None}
    return {"method": "POST", "path": "%s?api-version=%s" % (base, api_version), "body": {"value": ids}}


def acknowledge_outcome(status, body, sent_ids):
    """What an answer means: {approved, gone, refused: {id: code}, unknown, error: one sentence or None}."""
    sent = list(sent_ids)
    outcome = {"approved": [], "gone": [], "refused": {}, "unknown": [], "error": None}
    error = _error_of(body)
    if status in (200, 204):
        outcome["approved"] = sent
    elif status == 207:
        results = dict((str(_get(d, "target")).lower(), str(_get(d, "code"))) for d in _list(_get(error, "details")))
        for event_id in sent:
            code = results.get(event_id.lower())
            if code is not None and code.lower() in APPROVED_CODES:
                outcome["approved"].append(event_id)
            elif code is not None and code.lower() in GONE_CODES:
                outcome["gone"].append(event_id)
            elif code is not None and code.lower() in REFUSED_CODES:
                outcome["refused"][event_id] = code
            else:
                outcome["unknown"].append(event_id)
        if outcome["unknown"]:
            said = ", ".join("%s (%s)" % (i, results.get(i.lower()) or "not named") for i in outcome["unknown"])
            outcome["error"] = ("Azure's 207 answer does not say whether it acknowledged %s: counted as not approved "
                                "until a read shows it Started, and never sent again." % said)
    elif status == 404 and len(sent) == 1 and str(_get(error, "code")).lower() in GONE_CODES:
        outcome["gone"] = sent
    else:
        outcome["unknown"] = sent
        outcome["error"] = _sentence(status, error)
    return outcome


def _sentence(status, error):
    said = _get(error, "message") or _get(error, "code") or "no reason given"
    if status == 401:
        return "Azure refused the credentials (401: %s); nothing was approved." % said
    if status == 403:
        return ("The identity may not acknowledge scheduled events here (403: %s): it needs the Scheduled Events "
                "Contributor role on the VM, scale set or availability set; nothing was approved." % said)
    if status == 404:
        return "Azure knows no such VM, scale set or availability set (404: %s); nothing was approved." % said
    if status == 405:
        return "Acknowledging from the control plane is not offered in this region (405: %s); approve through IMDS." % said
    if status == 429:
        return "Azure throttled the request (429: %s); nothing was approved, try again later." % said
    return "Azure answered %s (%s); nothing was approved." % (status, said)


def _error_of(body):
    """The error object of an answer, whichever case its keys are in (Azure's clients show both)."""
    return _get(body, "error") if isinstance(_get(body, "error"), dict) else {}


def _get(mapping, key):
    if not isinstance(mapping, dict):
        return None
    for name, value in mapping.items():
        if isinstance(name, str) and name.lower() == key:
            return value
    return None


def _list(value):
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
