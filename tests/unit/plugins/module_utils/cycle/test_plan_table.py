"""cycle/plan_table.py: the plan as lines an operator reads, host by host, with what waits and why."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan_table import plan_table

EVENT = "5D1B7E2A-0C3F-4B8E-9A6D-2F4E8C1B3A70"
OTHER = "9F0A1C2D-3E4B-4C5D-8E6F-7A8B9C0D1E2F"


def host(status="fresh", unit="fault domain 0", **lists):
    plan = {"status": status, "fault_domain": unit, "prepare": [], "approve": [], "recover": [], "deferred": [],
            "waiting": [], "refused": [], "late": []}
    plan.update(lists)
    return plan


def test_a_row_per_host_with_news_and_the_quiet_ones_counted() -> None:
    plan = {"hosts": {
        "vm0": host(prepare=[{"event_id": EVENT, "event_type": "Reboot"}], approve=[EVENT]),
        "vm1": host(prepare=[{"event_id": EVENT, "event_type": "Reboot"}]),
        "vm2": host(unit="fault domain 1", deferred=[{"event_id": OTHER, "reason": "fault domain 0 is in maintenance"}]),
        "vm3": host(unit="fault domain 2"),
        "vm4": host(unit="fault domain 2"),
    }}
    lines = plan_table(plan, {"vm0": [EVENT], "vm1": [EVENT], "vm2": [OTHER]})
    assert lines[0] == "This cycle's plan (ids shortened to 8 characters):"
    assert lines[1].split() == ["host", "unit", "read", "seen", "prepare", "approve", "recover"]
    assert lines[2].split() == ["vm0", "fault", "domain", "0", "fresh", "5D1B7E2A", "5D1B7E2A", "5D1B7E2A", "-"]
    assert lines[3].split() == ["vm1", "fault", "domain", "0", "fresh", "5D1B7E2A", "5D1B7E2A", "-", "-"]
    assert lines[4].split()[:5] == ["vm2", "fault", "domain", "1", "fresh"]
    assert len({line.index("fresh") for line in lines[2:5]}) == 1, "the columns line up"
    assert lines[5:] == ["waits:", "  vm2 9F0A1C2D deferred: fault domain 0 is in maintenance", "2 quiet hosts not shown"]


def test_an_unread_host_is_shown_even_with_nothing_planned() -> None:
    lines = plan_table({"hosts": {"vm0": host(status="unread", unit="unknown"), "vm1": host()}})
    assert [line.split()[:3] for line in lines[2:3]] == [["vm0", "unknown", "unread"]]
    assert lines[-1] == "1 quiet host not shown"


def test_check_mode_says_nothing_is_done_and_says_so_of_a_quiet_run_too() -> None:
    quiet = {"hosts": {"vm0": host(), "vm1": host()}}
    assert plan_table(quiet) == [], "a cycle that does nothing prints nothing"
    lines = plan_table(quiet, check_mode=True)
    assert lines[0].startswith("Check mode: nothing is prepared, approved, recovered or saved; this cycle would do")
    assert lines[1] == "every one of the 2 hosts is quiet: nothing to prepare, approve or recover"


def test_what_waits_is_given_in_order_refused_deferred_then_not_approved_with_each_reason() -> None:
    plan = {"hosts": {"vm0": host(refused=[{"event_id": EVENT, "reason": "its set is split"}],
                                  waiting=[{"event_id": OTHER, "reason": "not prepared on vm1"}])}}
    assert plan_table(plan)[-2:] == ["  vm0 5D1B7E2A refused: its set is split",
                                     "  vm0 9F0A1C2D not approved now: not prepared on vm1"]


def test_an_event_approved_before_and_still_scheduled_says_why_nothing_is_done() -> None:
    """A restarted mock or simulator serving an id the saved state approved: the cycle sends no second approval, and
    says so, rather than doing nothing silently."""
    plan = {"hosts": {"vm0": host()}}
    lines = plan_table(plan, {"vm0": [EVENT]}, approved_before={"vm0": [EVENT]})
    assert lines[-2] == "waits:"
    assert lines[-1].startswith("  vm0 5D1B7E2A approved by an earlier run (this VM's saved state) and still Scheduled")
    assert "start from a new state file" in lines[-1]
