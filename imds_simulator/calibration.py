"""The simulator against Azure's published timing figures (event_analysis/published.py).

A scenario is calibrated when the draws of its event specs keep every published figure that applies: `check`
samples each spec's spans as the engine does (each spec in proportion to its `per_day`, or once per spec for
timed events) and returns one finding per figure, with what the draws showed. `fleet-2026` is the scenario
calibrated this way; tests/simulator/test_calibration.py holds it to every figure, and docs/reference/simulator.md carries
the table `python -m imds_simulator.calibration` prints.
"""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

from event_analysis import published as pub
from imds_simulator import scenario as sc

SAMPLES = 20000
CALIBRATED = "fleet-2026"


@dataclass(frozen=True)
class Finding:
    topic: str
    ok: bool
    measured: str


def _weights(specs: Sequence[sc.EventSpec]) -> List[float]:
    return [spec.per_day if spec.per_day is not None else 0.1 for spec in specs]


def draws(specs: Sequence[sc.EventSpec], span: Callable[[sc.EventSpec], sc.Span], rng: random.Random,
          samples: int = SAMPLES) -> List[float]:
    """`samples` values of `span`, each from a spec chosen in proportion to how often it happens."""
    if not specs:
        return []
    chosen = rng.choices(list(specs), weights=_weights(specs), k=samples)
    return [sc.sample(span(spec), rng) for spec in chosen]


def _share(values: Sequence[float], test: Callable[[float], bool]) -> float:
    return sum(1 for v in values if test(v)) / len(values)


def _notice(spec: sc.EventSpec) -> sc.Span:
    return spec.notice_s  # type: ignore  # only specs with a notice are drawn from


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _pause(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    freezes = [s for s in specs if s.event_type == "Freeze"]
    if not freezes:
        return None
    values = draws(freezes, sc.impact_span, rng)
    under = _share(values, lambda v: v < pub.PAUSE_ALMOST_ALWAYS_UNDER_S)
    return Finding("pause (Freeze)", under >= pub.PAUSE_ALMOST_ALWAYS_SHARE and max(values) <= pub.PAUSE_LONGEST_S,
                   f"{under:.2%} under {pub.PAUSE_ALMOST_ALWAYS_UNDER_S:.0f} s, longest {max(values):.1f} s")


def _live_migration(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    migrations = [s for s in specs if s.event_type == "Freeze" and "live migration" in s.description.lower()]
    if not migrations:
        return None
    median = statistics.median(draws(migrations, sc.impact_span, rng))
    return Finding("live-migration pause", median <= pub.LIVE_MIGRATION_TYPICAL_S, f"median {median:.1f} s")


def _routine_notice(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    routine = [s for s in specs if s.routine and s.notice_s[1] < pub.DAY]  # type: ignore
    if not routine:
        return None
    minimums = pub.documented_min_notice()
    below = sum(1 for s in routine if s.notice_s[0] < minimums[s.event_type])  # type: ignore
    chosen = rng.choices(routine, weights=_weights(routine), k=SAMPLES)
    above = [sc.sample(spec.notice_s, rng) - minimums[spec.event_type] for spec in chosen]  # type: ignore
    near = _share(above, lambda seconds: seconds <= pub.NEAR_MINIMUM_S)
    return Finding("notice of platform Freeze, Reboot, Redeploy", below == 0 and near > 0.5,
                   f"{below} of {len(routine)} specs below the minimum; {near:.0%} within "
                   f"{pub.NEAR_MINIMUM_S:.0f} s above it")


def _user_reboot(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    reboots = [s for s in specs if s.event_type == "Reboot" and s.source == "User" and s.notice_s is not None]
    if not reboots:
        return None
    values = draws(reboots, _notice, rng)
    low = pub.USER_REBOOT_OBSERVED_NOTICE_S - 60
    return Finding("notice of user reboots", min(values) >= low and max(values) <= pub.DOCUMENTED_MIN_NOTICE_S["Reboot"],
                   f"{_minutes(min(values))} to {_minutes(max(values))}")


def _terminate(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    terminates = [s for s in specs if s.event_type == "Terminate" and s.notice_s is not None]
    if not terminates:
        return None
    low, high = pub.TERMINATE_NOTICE_RANGE_S
    notices = {s.notice_s for s in terminates}
    fixed = len(notices) == 1 and all(a == b for a, b in notices)  # one profile per scale set
    inside = all(low <= a <= high and low <= b <= high for a, b in notices)  # type: ignore
    return Finding("Terminate notice", fixed and inside,
                   ", ".join(_minutes(a) for a, _ in sorted(notices)) + (" for the set" if fixed else " (varies)"))


def _spot(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    preempts = [s for s in specs if s.event_type == "Preempt" and s.notice_s is not None]
    if not preempts:
        return None
    values = draws(preempts, _notice, rng)
    fast = _share(values, lambda v: v < pub.SPOT_FAST_UNDER_S)
    return Finding("Spot notice (Preempt)", max(values) <= pub.SPOT_NOTICE_S and fast >= pub.SPOT_FAST_SHARE,
                   f"{min(values):.1f} to {max(values):.1f} s, {fast:.0%} under {pub.SPOT_FAST_UNDER_S:.0f} s")


def _started_to_removed(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    routine = [s for s in specs if s.event_type in sc.ROUTINE_TYPES]
    reboots = [s for s in routine if s.event_type == "Reboot" and s.source == "Platform" and s.notice_s is not None]
    if not routine or not reboots:
        return None
    median = statistics.median(draws(routine, lambda s: s.started_for_s, rng))
    impact = statistics.median(draws(reboots, sc.impact_span, rng))
    typical = pub.STARTED_TO_REMOVED_TYPICAL_S
    return Finding("Started to removed", typical / 2 <= median <= typical * 1.5 and 5 <= impact <= 10,
                   f"median {_minutes(median)}; a platform reboot's median impact {impact:.0f} s")


def _degraded(specs: List[sc.EventSpec], rng: random.Random) -> Optional[Finding]:
    ahead = [s for s in specs if s.notice_s is not None and s.notice_s[1] >= pub.DAY]
    if not ahead:
        return None
    values = draws(ahead, _notice, rng)
    return Finding("degraded hardware", min(values) >= 2 * pub.DAY and max(values) <= pub.DEGRADED_HARDWARE_NOTICE_S,
                   f"{min(values) / pub.DAY:.1f} to {max(values) / pub.DAY:.1f} days")


CHECKS = (_pause, _live_migration, _routine_notice, _user_reboot, _terminate, _spot, _started_to_removed, _degraded)


def check(scenario: sc.Scenario, seed: int = 1) -> Dict[str, Finding]:
    """Per published topic the scenario has events for, whether its draws keep the figure."""
    rng = random.Random(seed)
    findings = (one(list(scenario.specs), rng) for one in CHECKS)
    return {finding.topic: finding for finding in findings if finding is not None}


def table(scenario_name: str = CALIBRATED) -> str:
    """The calibration table of docs/reference/simulator.md: each published figure, its source, and the scenario's draws."""
    findings = check(sc.load(scenario_name))
    rows = ["| topic | published | source | `%s` draws (%d each, seed 1) | read as |" % (scenario_name, SAMPLES),
            "|---|---|---|---|---|"]
    for figure in pub.FIGURES:
        finding = findings.get(figure.topic)
        drawn = "not drawn" if finding is None else ("%s%s" % ("" if finding.ok else "OUTSIDE: ", finding.measured))
        rows.append(f"| {figure.topic} | {figure.published} | {figure.source} | {drawn} | {figure.reading} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
