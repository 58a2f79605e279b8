"""Offline mode: histories in the documented observation schema, fast enough for big datasets."""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest

from imds_simulator import scenario as sc
from imds_simulator.engine import Engine, EngineOptions
from imds_simulator.fleet import FleetError, FleetSpec, build_fleet, load_fleet_spec
from imds_simulator.offline import GenerateOptions, generate
from tools.soak import busier_fleet_mix

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "docs" / "reference" / "observation.schema.json").read_text())
T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)


def history(name: str, days: float, poll: float, approve: str = "none", seed: int = 2, **fleet: object) -> list:
    engine = Engine(build_fleet(FleetSpec(**fleet)), sc.load(name), T0, seed=seed,  # type: ignore[arg-type]
                    options=EngineOptions(record_served=False))
    out = io.StringIO()
    generate(engine, GenerateOptions(days=days, poll_interval_s=poll, approve=approve), out, seed=seed)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_line_matches_the_documented_schema() -> None:
    lines = history("fleet-mix", days=1, poll=120, approve="user")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for line in lines:
        validator.validate(line)
    assert any(line.get("record") == "approval" for line in lines)
    assert any(line["events"] for line in lines if "record" not in line)


def test_each_vm_polls_at_its_own_phase_and_interval() -> None:
    lines = history("platform-maintenance", days=0.5, poll=30)
    by_host: dict = {}
    for line in lines:
        by_host.setdefault(line["host"], []).append(datetime.fromisoformat(line["observed_at"].replace("Z", "+00:00")))
    assert len(by_host) == 6
    phases = {times[0] for times in by_host.values()}
    assert len(phases) == 6  # not synchronised
    for times in by_host.values():
        steps = {round((b - a).total_seconds()) for a, b in zip(times, times[1:])}
        # 30 s, or a multiple of it across a reboot when the VM could not answer
        assert steps and all(step % 30 == 0 for step in steps)
    assert len(lines) < 6 * 0.5 * 86400 / 30 + 6


def test_rebooting_vms_leave_a_gap_and_observations_carry_the_vm() -> None:
    lines = history("platform-maintenance", days=0.05, poll=1)  # fault domain 0 reboots in its first half hour
    vm0 = [l for l in lines if l["host"] == "avset-web-vm0"]
    assert vm0[0]["vm"] == {"name": "avset-web-vm0", "resource_id": vm0[0]["vm"]["resource_id"],
                            "vm_scale_set_name": "", "fault_domain": 0, "update_domain": 0, "zone": "",
                            "location": "westeurope"}
    times = [datetime.fromisoformat(l["observed_at"].replace("Z", "+00:00")) for l in vm0]
    longest = max((b - a).total_seconds() for a, b in zip(times, times[1:]))
    assert 6 <= longest <= 9  # the 7 s reboot impact, polled every second


def test_approval_policy_all_starts_events_at_first_sight() -> None:
    lines = history("platform-maintenance", days=0.3, poll=10, approve="all")
    approvals = [l for l in lines if l.get("record") == "approval"]
    assert len(approvals) == 3
    for record in approvals:
        (event_id,) = record["event_ids"]
        assert record["results"] == {event_id: "started"}
        started = [l for l in lines if "record" not in l and any(
            e["EventId"] == event_id and e["EventStatus"] == "Started" for e in l["events"])]
        first_started = min(l["observed_at"] for l in started)
        assert first_started >= record["observed_at"]


def test_cli_generate_writes_gzip(tmp_path: Path) -> None:
    out = tmp_path / "h.jsonl.gz"
    result = subprocess.run([sys.executable, "-m", "imds_simulator", "generate", "--scenario", "hardware-failure",
                             "--vms", "4", "--days", "0.05", "--poll-interval", "5", "--seed", "3", "--out", str(out)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    with gzip.open(out, "rt") as handle:
        lines = [json.loads(l) for l in handle]
    assert len(lines) > 100 and result.stdout.startswith(f"wrote {len(lines)} observations")
    started = [e for l in lines for e in l["events"]]
    assert started and all(e["EventStatus"] == "Started" for e in started)
    # the history says it is simulated, beside it, where its readers look (event_analysis: SIMULATED everywhere)
    meta = json.loads((tmp_path / "h.jsonl.gz.meta.json").read_text())
    assert meta["simulated"] is True and meta["time_scale"] == 1.0
    assert meta["source"].startswith("python -m imds_simulator generate --scenario hardware-failure --vms 4")
    assert meta["description"].startswith("SIMULATED data: a 4-VM fleet over 0.05 days")


@pytest.mark.parametrize("args, message", [
    (["--vms", "0"], "a set needs 1 to 1000 VMs, not 0."),
    (["--fault-domains", "4"], "an availability_set has 1 to 3 fault domains, not 4."),
    (["--scenario", "nope"], "no scenario named 'nope'"),
    (["--param", "x"], "--param 'x' must look like NAME=NUMBER."),
    (["--scenario", "scale-in", "--param", "terminate_notice_s=30"], "outside its allowed range"),
])
def test_cli_bad_input_is_one_sentence_without_traceback(tmp_path: Path, args: list, message: str) -> None:
    result = subprocess.run([sys.executable, "-m", "imds_simulator", "generate", "--days", "0.01",
                             "--out", str(tmp_path / "x.jsonl"), *args],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_fleet_file_is_validated(tmp_path: Path) -> None:
    good = tmp_path / "fleet.json"
    good.write_text(json.dumps({"kind": "scale_set", "name": "vmss-db", "vms": 3, "fault_domains": 5, "zone": "2"}))
    fleet = build_fleet(load_fleet_spec(str(good)))
    assert [v.name for v in fleet.vms] == ["vmss-db_0", "vmss-db_1", "vmss-db_2"]
    assert fleet.vms[2].resource_id.endswith("/virtualMachineScaleSets/vmss-db/virtualMachines/2")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "cluster"}))
    with pytest.raises(FleetError, match="fleet kind 'cluster' is not one of"):
        build_fleet(load_fleet_spec(str(bad)))
    bad.write_text(json.dumps({"colour": "red"}))
    with pytest.raises(FleetError, match="unknown field"):
        load_fleet_spec(str(bad))
    bad.write_text(json.dumps({"names": ["_vm"]}))
    with pytest.raises(FleetError, match="not a valid Azure VM name"):
        build_fleet(load_fleet_spec(str(bad)))
    bad.write_text(json.dumps({"vms": "six"}))
    with pytest.raises(FleetError, match="fleet field vms must be a whole number, not 'six'."):
        build_fleet(load_fleet_spec(str(bad)))


# ----------------------------------------------------------------- change-only: only the polls that can change

def _both_ways(scenario: sc.Scenario, days: float, poll: float, approve: str, seed: int,
               engine_options: EngineOptions, **fleet: object) -> tuple:
    """The same run written change-only twice: polling every tick (the reference) and jumping to changes."""
    runs = []
    for every_poll in (True, False):
        engine = Engine(build_fleet(FleetSpec(**fleet)), scenario, T0, seed=seed,  # type: ignore[arg-type]
                        options=engine_options)
        out = io.StringIO()
        stats = generate(engine, GenerateOptions(days=days, poll_interval_s=poll, approve=approve, change_only=True,
                                                 every_poll=every_poll), out, seed=seed)
        runs.append((out.getvalue(), stats, engine.event_summaries()))
    return runs[0], runs[1]


@pytest.mark.parametrize("poll, approve, seed, fleet", [
    (1.0, "none", 3, {"vms": 6, "fault_domains": 3}),
    (7.0, "user", 4, {"vms": 4, "fault_domains": 2, "sets": 3}),
    (30.0, "all", 5, {"vms": 9, "fault_domains": 3, "sets": 2}),
    (2.5, "user", 6, {"kind": "scale_set", "name": "vmss-app", "vms": 9, "zones": ["1", "2", "3"]}),
])
def test_jumping_to_changes_writes_what_polling_every_tick_writes(poll: float, approve: str, seed: int,
                                                                   fleet: dict) -> None:
    """Byte for byte, with the same counts (silent polls included) and the same events: on a busy fleet-mix
    with reboots (VMs that do not answer), freezes, spot-less deletions, approvals that start events, sets
    and zones, at several poll rates whose ticks fall anywhere relative to the changes."""
    scenario = busier_fleet_mix(12.0)
    (slow, slow_stats, slow_events), (fast, fast_stats, fast_events) = _both_ways(
        scenario, days=0.3, poll=poll, approve=approve, seed=seed, engine_options=EngineOptions(record_served=False),
        **fleet)
    assert slow_stats.observations > 50 and slow_stats.silent_polls > 0 and slow_stats.events > 5
    assert fast == slow
    assert fast_stats == slow_stats
    assert fast_events == slow_events


def test_jumping_keeps_the_service_enabled_and_waits_out_the_enabling_window() -> None:
    """The skipped polls still count as requests: a VM polled every minute is not disabled by the hours
    between two events (disabled after 1 h here), and the enabling window ends with a line, exactly as
    when every tick is polled."""
    reboot = {"type": "Reboot", "source": "User", "description": "Virtual machine is going to be restarted.",
              "duration_s": -1, "notice_s": 600, "started_for_s": 240, "resources": {"count": 1}}
    scenario = sc.parse({"name": "two-reboots", "summary": "Two user reboots hours apart.",
                         "events": [dict(reboot, key="early", at_s=200),
                                    dict(reboot, key="late", at_s=6 * 3600)]}, {})
    options = EngineOptions(record_served=False, disable_after_s=3600.0, enabling_s=95.0)
    (slow, slow_stats, _), (fast, fast_stats, _) = _both_ways(
        scenario, days=0.5, poll=60.0, approve="none", seed=8, engine_options=options, vms=3)
    assert fast == slow and fast_stats == slow_stats
    enabling = [json.loads(line)["host"] for line in fast.splitlines() if '"document_incarnation":null' in line]
    assert sorted(enabling) == [f"avset-web-vm{i}" for i in range(3)]  # once each, at the start: never disabled
    assert sum('"late"' in line or "Reboot" in line for line in fast.splitlines()) >= 6


def test_each_line_carries_the_events_served_even_when_incarnations_restart() -> None:
    """Polls further apart than the disable time re-enable the service each time, restarting the incarnation
    at 1 with other events: a line must carry what that poll was served, not an earlier incarnation 1's."""
    engine = Engine(build_fleet(FleetSpec(vms=3)), busier_fleet_mix(40.0), T0, seed=5,
                    options=EngineOptions(disable_after_s=600.0))
    out = io.StringIO()
    generate(engine, GenerateOptions(days=1, poll_interval_s=900), out, seed=5)
    lines = [json.loads(line) for line in out.getvalue().splitlines() if '"record"' not in line]
    served = {(s["at"], name): s["document"]["Events"] for name, state in
              ((st.vm.name, st) for st in engine.vms.values()) for s in state.served}
    seen: dict = {}
    for line in lines:
        seen.setdefault((line["host"], line["document_incarnation"]), set()).add(json.dumps(line["events"]))
    assert any(len(documents) > 1 for documents in seen.values())  # one incarnation, several documents
    assert all(line["events"] == served[(line["observed_at"], line["host"])] for line in lines)


def test_jumping_sees_every_change_after_a_restarted_incarnation() -> None:
    """A hardware failure (incarnation 2, already Started) with an outage longer than the disable time: the VM
    answers again with a restarted incarnation 1, and the event's removal brings it to 2 again. Changes must
    be told by something that never goes back, or that removal is never polled for."""
    failure = {"type": "Reboot", "source": "Platform", "description": "Host server is being repaired.",
               "duration_s": -1, "impact_s": 120, "notice_s": None, "started_for_s": 400, "resources": {"count": 1},
               "key": "failure", "at_s": 100}
    scenario = sc.parse({"name": "long-outage", "summary": "An outage longer than the disable time.",
                         "events": [failure]}, {})
    options = EngineOptions(record_served=False, disable_after_s=60.0)
    (slow, slow_stats, _), (fast, fast_stats, _) = _both_ways(
        scenario, days=0.1, poll=5.0, approve="none", seed=2, engine_options=options, vms=2)
    series = [(json.loads(line)["document_incarnation"], len(json.loads(line)["events"])) for line in slow.splitlines()
              if json.loads(line)["host"] == json.loads(slow.splitlines()[-1])["host"]]
    assert series == [(1, 0), (1, 1), (2, 0)], series  # listed at 1 (restarted), gone at 2
    assert fast == slow and fast_stats == slow_stats


def test_jumping_keeps_the_fleet_order_of_polls_at_one_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two VMs with the same phase poll at the same moments, vm0 first. vm1, back from a hardware failure,
    approves a user reboot at such a moment: vm0 polled just before, so it sees Started one tick later."""
    from imds_simulator import offline

    monkeypatch.setattr(offline, "_phases", lambda engine, interval, seed: [T0 + timedelta(seconds=0.25)] * 2)
    failure = {"key": "failure", "type": "Reboot", "source": "Platform", "description": "Host server is being repaired.",
               "duration_s": -1, "impact_s": 120, "notice_s": None, "started_for_s": 400,
               "resources": {"names": ["avset-web-vm1"]}, "at_s": 100}
    reboot = {"key": "reboot", "type": "Reboot", "source": "User", "description": "Virtual machine is going to be "
              "restarted.", "duration_s": -1, "notice_s": 900, "started_for_s": 240,
              "resources": {"names": ["avset-web-vm1"]}, "at_s": 150}
    scenario = sc.parse({"name": "same-tick", "summary": "An approval at a moment both VMs poll.",
                         "events": [failure, reboot]}, {})
    (slow, slow_stats, _), (fast, fast_stats, _) = _both_ways(
        scenario, days=0.02, poll=5.0, approve="user", seed=1, engine_options=EngineOptions(record_served=False), vms=2)
    assert slow_stats.approvals == 1
    assert fast == slow and fast_stats == slow_stats
