"""The owner name of a run's locks (module_utils/cycle/run_name.py): unique per run, and telling a person which."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.run_name import run_name

NOW = datetime(2026, 11, 26, 10, 0, 5, 123456, tzinfo=timezone(timedelta(hours=1)))


def test_a_name_says_the_controller_the_token_and_the_time_in_utc_to_the_second() -> None:
    assert run_name("ctl-1", 42, NOW) == "ctl-1 run 42 2026-11-26T09:00:05Z"


def test_an_awx_job_names_itself_and_a_missing_controller_is_said_so() -> None:
    assert run_name("", 7, NOW, awx_job_id=311).startswith("controller run 7 ")
    assert run_name("ctl", 7, NOW, awx_job_id=311).endswith(" AWX job 311")
    assert not run_name("ctl", 7, NOW, awx_job_id="").endswith(" AWX job ")
