"""event_endings and the lifecycles of control-plane reads: Completed and Canceled rows are no sightings, and they
tell the outcome outright, also of an event that started and ended between two reads (which the poll series alone
takes for a cancellation). Expectations are read off the hand-written lines."""
from __future__ import annotations

import math
from pathlib import Path

import event_analysis as ea
from tests.analysis.histories import at, event, observation, write_lines

E1, E2, E3 = ("11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002",
              "33333333-0000-4000-8000-000000000003")


def control_plane(seconds: float, events: list) -> dict:
    return dict(observation(seconds, "web0", events), source="control_plane")


def history(tmp_path: Path) -> Path:
    nb = at(900)
    return write_lines(tmp_path / "history.jsonl", [
        control_plane(0, [event(E1, "Scheduled", ["web0"], not_before=nb), event(E2, "Scheduled", ["web0"], not_before=nb),
                          event(E3, "Scheduled", ["web0"], not_before=nb)]),
        control_plane(60, [event(E1, "Started", ["web0"]), event(E2, "Canceled", ["web0"]),
                           event(E3, "Completed", ["web0"])]),
        control_plane(120, [event(E1, "Completed", ["web0"]), event(E2, "Canceled", ["web0"]),
                            event(E3, "Completed", ["web0"])]),
        control_plane(180, [event(E1, "Completed", ["web0"])]),
    ])


def test_endings_say_how_and_when_each_event_ended_and_how_many_were_cancelled(tmp_path: Path) -> None:
    observations = ea.load_history(history(tmp_path))
    assert set(observations["source"].astype(str)) == {"control_plane"}
    endings = ea.event_endings(observations).set_index("event_id")
    assert endings.loc[E1, "ended_status"] == "Completed" and endings.loc[E1, "first_seen_to_end_s"] == 120
    assert endings.loc[E2, "ended_status"] == "Canceled" and endings.loc[E2, "first_seen_to_end_s"] == 60
    assert math.isclose(ea.cancellation_rate(endings.reset_index()), 1 / 3)
    summary = ea.endings_summary(endings.reset_index())
    assert summary.loc["Completed", "events"] == 2 and summary.loc["Canceled", "events"] == 1
    assert summary.loc["Completed", "first_seen_to_end_s_max"] == 120


def test_a_notebook_view_carries_the_endings_and_an_imds_history_has_none(tmp_path: Path) -> None:
    assert len(ea.open_history(str(history(tmp_path))).endings) == 3
    imds_only = write_lines(tmp_path / "imds.jsonl", [observation(0, "web0", [event(E1, "Scheduled", ["web0"])])])
    assert ea.open_history(str(imds_only)).endings.empty


def test_lifecycles_take_an_ended_row_as_the_end_not_as_a_sighting(tmp_path: Path) -> None:
    lifecycles = ea.event_lifecycles(ea.load_history(history(tmp_path))).set_index("event_id")
    assert lifecycles.loc[E1, "last_seen"].to_pydatetime() == at(60) and lifecycles.loc[E1, "gone_at"].to_pydatetime() == at(120)
    assert dict(lifecycles["outcome"].astype(str)) == {E1: "completed", E2: "cancelled", E3: "completed"}
