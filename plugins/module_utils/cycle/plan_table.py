# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cycle's plan as lines an operator reads: one row per host with something to show (what its read saw, what
it prepares, which approvals it sends as leader, what it recovers), then each event that waits, with why.

The role prints it once per cycle, after the plan; under --check it is what the run would do now (nothing is
prepared, approved, recovered or saved).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

COLUMNS = ("host", "unit", "read", "seen", "prepare", "approve", "recover")
# The plan's lists of what waits, in the order the table gives them, with the word it says before the reason (an
# event prepared late is in `waiting` too, with its reason)
WAITS = (("refused", "refused"), ("deferred", "deferred"), ("waiting", "not approved now"))
# A host with anything in these lists gets a row
NEWS = ("prepare", "approve", "recover") + tuple(key for key, _word in WAITS)


def short_id(event_id):
    """An event id's first 8 characters: enough to tell a cycle's events apart in a row."""
    return str(event_id)[:8]


def _event_id(item):
    """A plan entry's event id: its lists hold events, {event_id, reason} records or bare ids."""
    return item["event_id"] if isinstance(item, dict) else item


def _ids(items):
    return [short_id(_event_id(item)) for item in items or ()]


def _cell(ids):
    return ", ".join(ids) if ids else "-"


def _row(host, host_plan, seen):
    return (host, str(host_plan.get("fault_domain") or "?"), str(host_plan.get("status") or "?"), _cell(_ids(seen)),
            _cell(_ids(host_plan.get("prepare"))), _cell(_ids(host_plan.get("approve"))),
            _cell(_ids(host_plan.get("recover"))))


def _has_news(host_plan, seen):
    return bool(seen or host_plan.get("status") != "fresh"
                or any(host_plan.get(key) for key in NEWS))


# An event this VM's saved state approved and IMDS still serves Scheduled: never approved again (Written ahead), and
# without this line the cycle does nothing and says nothing (a restarted mock or simulator serving an old id again)
APPROVED_BEFORE = ("approved by an earlier run (this VM's saved state) and still Scheduled, so it is not approved "
                   "again; if the IMDS behind it was restarted and serves an old id (a mock, the simulator with a "
                   "fixed --seed), start from a new state file")


def _waits(host, host_plan, approved_before=()):
    lines = ["%s %s %s" % (host, short_id(event_id), APPROVED_BEFORE) for event_id in approved_before]
    for key, word in WAITS:
        for item in host_plan.get(key) or ():
            reason = item.get("reason") if isinstance(item, dict) else ""
            lines.append("%s %s %s%s" % (host, short_id(_event_id(item)), word, (": " + reason) if reason else ""))
    return lines


def plan_table(plan, seen=None, check_mode=False, approved_before=None):
    """[lines]: the heading, the aligned rows of the hosts with news, what waits and why, and the quiet count; none
    when every host is quiet, outside check mode.

    `plan` is plan.plan_cycle's; `seen` is {host: [event ids its read shows listing its VM]};
    `approved_before` {host: [ids of those still Scheduled that its saved state says were approved]}."""
    seen = seen or {}
    approved_before = approved_before or {}
    hosts = plan.get("hosts") or {}
    shown = [h for h in sorted(hosts) if _has_news(hosts[h], seen.get(h))]
    heading = ("Check mode: nothing is prepared, approved, recovered or saved; this cycle would do this now "
               "(ids shortened to 8 characters):" if check_mode else
               "This cycle's plan (ids shortened to 8 characters):")
    if not shown:  # said under --check, where it is the answer; a cycle that does nothing says nothing
        return [heading, "every one of the %d hosts is quiet: nothing to prepare, approve or recover" % len(hosts)
                ] if check_mode else []
    rows = [COLUMNS] + [_row(h, hosts[h], seen.get(h)) for h in shown]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = [heading] + ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    waits = [line for h in shown for line in _waits(h, hosts[h], approved_before.get(h) or ())]
    if waits:
        lines += ["waits:"] + ["  " + line for line in waits]
    quiet = len(hosts) - len(shown)
    if quiet:
        lines.append("%d quiet host%s not shown" % (quiet, "" if quiet == 1 else "s"))
    return lines
