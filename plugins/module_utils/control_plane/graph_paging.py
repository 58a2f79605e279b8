# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every row of a Resource Graph query, as Azure serves them: page after page, throttled; the HTTP is passed in.

Resource Graph answers at most 1,000 rows; a cut answer says so (`resultTruncated`, `count` below `totalRecords`)
and carries a `$skipToken` for the next page, and pages keep to one order only when the query orders rows by id.
Queries past the user's quota (about 15 per 5 s) get 429; every answer tells what is left of the quota and when
it resets (x-ms-user-quota-remaining, x-ms-user-quota-resets-after). A read that ends cut, inconsistent (rows
repeated or missing, the total changed between pages) or still throttled is no read: `GraphIncomplete`, in one
sentence, and the run counts every host it could concern as unread (busy), never one of its rows as all there is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PAGE_ROWS = 1000  # Resource Graph's most rows per answer
MAX_PAGES = 50  # 50,000 rows: far beyond one subscription's scheduled events; past it the read is cut
THROTTLE_TRIES = 3  # answers of 429 in a row before the read gives up
MAX_WAIT_S = 15.0  # the longest wait for the quota to reset (its window is 5 s)
EVENTS_QUERY = 'maintenanceresources | where type == "microsoft.maintenance/scheduledevents"'


class GraphIncomplete(Exception):
    """The query's rows could not all be read; one sentence."""


class GraphRefused(Exception):
    """Resource Graph answered an error (status, body): the caller says it in its own words."""

    def __init__(self, status, answer):
        super(GraphRefused, self).__init__("Resource Graph answered %s" % status)
        self.status = status
        self.answer = answer


def events_query(resource_groups):
    """The scheduled-events query limited to the hosts' resource groups (an availability set or scale set is in
    its VMs' group), ordered by id so that its pages are stable."""
    groups = sorted(set(g.lower() for g in resource_groups if g))
    where = ' | where resourceGroup in~ (%s)' % ", ".join('"%s"' % g for g in groups) if groups else ""
    return EVENTS_QUERY + where + " | order by id asc"


def all_rows(post, subscriptions, query, sleep, page_rows=PAGE_ROWS):
    """Every row of `query` over `subscriptions`. `post(body)` -> (status, JSON answer, {header: value});
    `sleep(seconds)` waits out a quota. Raises GraphIncomplete or GraphRefused."""
    rows, token, total = [], None, None
    for _page in range(MAX_PAGES):
        options = {"$top": page_rows}
        if token:
            options["$skipToken"] = token
        answer, headers = _answered(post, {"subscriptions": list(subscriptions), "query": query, "options": options},
                                    sleep)
        total = _same_total(total, answer)
        rows.extend(answer["data"])
        token = answer.get("$skipToken")
        if not token:
            _check_whole(rows, total, answer)
            return rows
        wait = quota_wait(headers)
        if wait:  # the next page would be refused: wait for the quota now
            sleep(wait)
    raise GraphIncomplete("Resource Graph had more than %d pages of %d rows of scheduled events, so the read is cut "
                          "and nothing was read." % (MAX_PAGES, page_rows))


def _answered(post, body, sleep):
    for _try in range(THROTTLE_TRIES):
        status, answer, headers = post(body)
        if status != 429:
            if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
                raise GraphRefused(status, answer)
            return answer, headers or {}
        wait = quota_wait(headers or {}, throttled=True)
        if wait is None:
            break
        sleep(wait)
    raise GraphIncomplete("Resource Graph throttled the read (429) %d times in a row, so nothing was read; fewer "
                          "queries from this identity (other tools, more frequent cycles) leave the quota free."
                          % THROTTLE_TRIES)


def quota_wait(headers, throttled=False):
    """Seconds to wait before the next query: 0 when quota is left, the reset time when none is (None when that is
    longer than MAX_WAIT_S, or a throttled answer does not say)."""
    lowered = dict((str(k).lower(), str(v)) for k, v in (headers or {}).items())
    remaining = lowered.get("x-ms-user-quota-remaining")
    if not throttled and (remaining is None or not remaining.isdigit() or int(remaining) > 0):
        return 0
    reset = _seconds(lowered.get("x-ms-user-quota-resets-after")) if "x-ms-user-quota-resets-after" in lowered \
        else _seconds(lowered.get("retry-after"))
    if reset is None or reset > MAX_WAIT_S:
        return None
    return reset


_HMS = re.compile(r"^(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$")


def _seconds(text):
    if text is None:
        return None
    text = text.strip()
    match = _HMS.match(text)
    if match:
        return int(match.group(1)) * 3600 + int(match.group(2)) * 60 + float(match.group(3))
    try:
        return max(0.0, float(text))
    except ValueError:
        return None


def _same_total(total, answer):
    given = answer.get("totalRecords", len(answer["data"]))
    if not isinstance(given, int) or isinstance(given, bool):
        raise GraphIncomplete("Resource Graph gave no number of rows (totalRecords %r), so the read cannot be "
                              "known whole and nothing was read." % (given,))
    if total is not None and given != total:
        raise GraphIncomplete("Resource Graph's rows changed between pages (%d, then %d), so the read is not one "
                              "moment and nothing was read; the next cycle reads again." % (total, given))
    return given


def _check_whole(rows, total, last):
    ids = [str(r.get("id", "")).lower() for r in rows if isinstance(r, dict)]
    if len(rows) < total or str(last.get("resultTruncated")).lower() == "true":
        said = (len(rows), total, last.get("resultTruncated"))
        raise GraphIncomplete("Resource Graph's answer was cut at %d of %d rows without a $skipToken to read the rest "
                              "(resultTruncated %s), so nothing was read." % said)
    if len(rows) != total or len(set(ids)) != len(ids):
        raise GraphIncomplete("Resource Graph's pages repeated or skipped rows (%d rows for a total of %d), so the "
                              "read is not whole and nothing was read." % (len(rows), total))
