"""The controller's metrics counted across runs (cycle_metrics.py), read back with the Prometheus parser."""
from __future__ import annotations

from typing import Dict

from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import render
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.cycle_metrics import (
    FIRST_SEEN_MAX_AGE_S,
    Counters,
    RunTally,
    add_run,
    controller_families,
    counters_text,
    load_counters,
    tally_plan,
    tally_record,
)

T0 = 1_800_000_000.0
ISO = "2027-01-15T08:00:00.000Z"   # T0


def samples(counters: Counters) -> Dict[str, float]:
    text = render(controller_families(counters))
    return {s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_prepare_in_a_later_run_reacts_from_the_first_read_of_any_earlier_run() -> None:
    first = RunTally(trigger="schedule")
    tally_record(first, {"observed_at": ISO, "host": "vm0", "events": [{"EventId": "e1"}]}, T0)
    tally_plan(first, {"fault_domains_in_maintenance": []})
    counters = add_run(Counters(), first, T0 + 5)
    second = RunTally(trigger="schedule")
    tally_plan(second, {"fault_domains_in_maintenance": ["avset/0"]})
    for host in ("vm0", "vm1"):
        tally_record(second, {"record": "action", "action": "prepare", "event_ids": ["E1"], "host": host,
                              "observed_at": "2027-01-15T08:05:00.000Z"}, T0 + 300)
    counters = add_run(counters, second, T0 + 310)
    found = samples(counters)
    assert found["azure_scheduled_events_prepares_total{trigger=schedule}"] == 2
    assert found["azure_scheduled_events_cycles_total{trigger=schedule}"] == 2
    assert found["azure_scheduled_events_reaction_seconds_count{trigger=schedule}"] == 2
    assert found["azure_scheduled_events_reaction_seconds_sum{trigger=schedule}"] == 600, "300 s each, ids any case"
    assert found["azure_scheduled_events_reaction_seconds_bucket{le=120}{trigger=schedule}"] == 0
    assert found["azure_scheduled_events_reaction_seconds_bucket{le=300}{trigger=schedule}"] == 2
    assert found["azure_scheduled_events_fault_domains_in_maintenance"] == 1
    assert found["azure_scheduled_events_last_run_timestamp_seconds"] == T0 + 310


def test_runs_results_approvals_and_recover_failures_are_counted_with_bounded_labels() -> None:
    tally = RunTally(trigger="cron-job-42")   # not a way we know: "other", never a new label value
    tally_record(tally, {"record": "approval", "results": {"a": "started", "b": "approved"}}, T0)
    tally.approvals["failed"] += 1
    for host in ("vm0", "vm1"):
        tally_record(tally, {"record": "action", "action": "recover", "event_ids": ["a"], "host": host}, T0)
    tally.failed_hosts = {"vm1"}
    found = samples(add_run(Counters(), tally, T0))
    assert found["azure_scheduled_events_cycle_runs_total{result=failed}{trigger=other}"] == 1
    assert found["azure_scheduled_events_recovers_total{trigger=other}"] == 2
    assert found["azure_scheduled_events_recover_failures_total{trigger=other}"] == 1
    assert [found[f"azure_scheduled_events_approvals_total{{result={r}}}"] for r in ("approved", "started", "failed")] \
        == [1, 1, 1]
    assert not any("cron-job" in name for name in found)
    assert len([n for n in found if n.startswith("azure_scheduled_events_cycle_runs_total")]) == 8, "4 ways x 2"


def test_counters_survive_their_file_and_a_damaged_file_restarts_them_in_one_sentence() -> None:
    tally = RunTally()
    tally_record(tally, {"observed_at": ISO, "host": "vm0", "events": [{"EventId": "E1"}]}, T0)
    counters = add_run(Counters(), tally, T0)
    again, problem = load_counters(counters_text(counters))
    assert problem == "" and again == counters
    for text in ("{", '{"version": 9}', '{"version": 1, "reaction": {"schedule": {"counts": [1], "total": 1}}}'):
        fresh, problem = load_counters(text)
        assert fresh == Counters() and problem.endswith("counting from 0.") and "\n" not in problem
    later = add_run(counters, RunTally(), T0 + FIRST_SEEN_MAX_AGE_S + 1)
    assert later.first_seen == {}, "the memory of first reads stays small"
    assert counters.first_seen == {"E1": T0}, "add_run leaves the counters it was given as they were"
