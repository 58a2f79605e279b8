"""The simulator against Azure's published timing figures (imds_simulator/calibration.py)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import event_analysis as ea
from event_analysis import published
from imds_simulator import calibration
from imds_simulator import scenario as sc
from imds_simulator.engine import Engine, EngineOptions
from imds_simulator.fleet import FleetSpec, build_fleet
from imds_simulator.offline import GenerateOptions, generate

REPO = Path(__file__).resolve().parents[2]
NOT_MODELLED = {"self-service window"}


def test_fleet_2026_draws_every_published_figure_and_keeps_each() -> None:
    findings = calibration.check(sc.load(calibration.CALIBRATED))
    assert set(findings) == {figure.topic for figure in published.FIGURES} - NOT_MODELLED
    assert [f"{f.topic}: {f.measured}" for f in findings.values() if not f.ok] == []


def spec(**raw: object) -> dict:
    return {"key": "k%d" % id(raw), "per_day": 1.0, **raw}


@pytest.mark.parametrize("raw, topic", [
    (spec(type="Freeze", duration_s=9, impact_s=[8, 15]), "pause (Freeze)"),
    (spec(type="Freeze", description="a live migration", impact_s=[4, 9]), "live-migration pause"),
    (spec(type="Reboot", notice_s=600), "notice of platform Freeze, Reboot, Redeploy"),
    (spec(type="Reboot", notice_s=[900, 1800]), "notice of platform Freeze, Reboot, Redeploy"),  # not near the minimum
    (spec(type="Reboot", source="User", notice_s=600), "notice of user reboots"),
    (spec(type="Preempt", notice_s=30, started_for_s=30), "Spot notice (Preempt)"),  # never under 10 s
    (spec(type="Preempt", notice_s=[2, 45], started_for_s=30), "Spot notice (Preempt)"),
    (spec(type="Terminate", source="User", notice_s=[300, 900]), "Terminate notice"),  # varies within one set
    (spec(type="Terminate", source="User", notice_s=60), "Terminate notice"),
    (spec(type="Reboot", started_for_s=60), "Started to removed"),
    (spec(type="Redeploy", notice_s=[86400, 172800]), "degraded hardware"),
])
def test_a_scenario_off_a_published_figure_is_told_which(raw: dict, topic: str) -> None:
    scenario = sc.parse({"name": "off", "summary": "off the published figures", "events": [raw]}, {})
    assert calibration.check(scenario)[topic].ok is False


def test_the_simulator_docs_carry_the_calibration_table_as_the_code_computes_it() -> None:
    assert calibration.table() in (REPO / "docs" / "reference" / "simulator.md").read_text(), (
        "docs/reference/simulator.md's calibration table is stale: paste `python -m imds_simulator.calibration` into it")


def test_a_fleet_2026_fortnight_meets_the_published_figures_through_the_analysis(tmp_path: Path) -> None:
    """The engine's draws, polled once a second and read back by the analysis as an analyst would."""
    scenario = sc.load(calibration.CALIBRATED)
    engine = Engine(build_fleet(FleetSpec(**scenario.fleet)), scenario, datetime(2026, 1, 5, tzinfo=timezone.utc),
                    seed=5, options=EngineOptions(record_served=False))
    path = tmp_path / "fleet-2026.jsonl"
    with path.open("w") as out:
        generate(engine, GenerateOptions(days=14, poll_interval_s=1.0, change_only=True), out, seed=5)
    lifecycles = ea.open_history(str(path)).lifecycles
    notice = ea.notice_check(lifecycles, terminate_notice_s=600)
    platform = notice[(notice["event_source"] == "Platform") & (notice["event_type"] != "Preempt")]
    assert len(platform) > 50 and set(platform["notice_verdict"]) <= {"met", "no notice (seen)", "no notice (type)"}  # hardware failures: none
    preempts = notice[notice["event_type"] == "Preempt"]
    assert len(preempts) and (preempts["notice_s_min"] <= published.SPOT_NOTICE_S).all()
    impact = ea.impact_check(lifecycles)
    freezes = impact[impact["event_type"] == "Freeze"]
    assert len(freezes) > 50 and "beyond published" not in set(freezes["impact_verdict"])
    assert (freezes["impact_verdict"] == "typical").mean() >= 0.9
