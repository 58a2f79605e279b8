"""What Azure publishes about event timing: the one home of the figures the analysis judges histories by and the
simulator is calibrated to (imds_simulator/calibration.py, docs/reference/simulator.md#calibration).

Each figure names where it is published (Microsoft Learn pages as of 2026, condensed in the project's API notes;
the sub-10 s Spot tail is a field report of AKS's Karpenter maintainers, not a Microsoft figure).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

MINUTE, DAY = 60, 86400

# Minimum notice (NotBefore - first appearance) Azure documents per EventType, in seconds.
# Terminate's is what the scale set's terminate notification profile sets (5 to 15 minutes).
DOCUMENTED_MIN_NOTICE_S: Dict[str, float] = {
    "Freeze": 15 * MINUTE, "Reboot": 15 * MINUTE, "Redeploy": 10 * MINUTE, "Preempt": 30,
}
TERMINATE_NOTICE_RANGE_S = (5 * MINUTE, 15 * MINUTE)

PAUSE_ALMOST_ALWAYS_UNDER_S = 10.0   # a Freeze's pause, general-purpose sizes
PAUSE_ALMOST_ALWAYS_SHARE = 0.99     # how the calibration reads "almost always"
PAUSE_LONGEST_S = 30.0               # "about 30 s", once in 18 months
LIVE_MIGRATION_TYPICAL_S = 5.0       # "typically 5 s or less": the median pause of a live migration
REBOOT_IMPACT_TYPICAL_S = 7.0        # the overview's typical timeline
STARTED_TO_REMOVED_TYPICAL_S = 10 * MINUTE
NEAR_MINIMUM_S = 2 * MINUTE          # how the calibration reads "immediately before the minimum notice"
SPOT_NOTICE_S = 30.0                 # "up to 30 seconds", best effort
SPOT_FAST_UNDER_S = 10.0             # "often will actually evict in less than 10 seconds"
SPOT_FAST_SHARE = 0.2                # how the calibration reads "often": at least one eviction in five
DEGRADED_HARDWARE_NOTICE_S = 7 * DAY  # Azure tries for 7 days' notice before moving off a failing host
USER_REBOOT_OBSERVED_NOTICE_S = 14 * MINUTE  # user reboots have been seen with about 14 min, under the 15 min minimum
SELF_SERVICE_WINDOW_S = 35 * DAY     # reboot maintenance: customers may start it themselves for about 35 days


@dataclass(frozen=True)
class PublishedFigure:
    """One figure as published, where, and how the simulator's calibration reads it."""
    topic: str
    published: str
    source: str
    reading: str


FIGURES: Tuple[PublishedFigure, ...] = (
    PublishedFigure("pause (Freeze)", "\"almost always\" under 10 s; about 30 s at most, once in 18 months "
                    "(general-purpose sizes)", "Maintenance for virtual machines in Azure",
                    f"at least {PAUSE_ALMOST_ALWAYS_SHARE:.0%} of pauses under {PAUSE_ALMOST_ALWAYS_UNDER_S:.0f} s, "
                    f"none over {PAUSE_LONGEST_S:.0f} s"),
    PublishedFigure("live-migration pause", "typically 5 s or less", "Live migration (maintenance overview)",
                    f"the median live-migration pause at most {LIVE_MIGRATION_TYPICAL_S:.0f} s"),
    PublishedFigure("notice of platform Freeze, Reboot, Redeploy", "at least 15, 15, 10 min; \"most events are "
                    "sent immediately before the minimum notice\"", "Scheduled Events overview",
                    f"never under the minimum; most within {NEAR_MINIMUM_S:.0f} s above it"),
    PublishedFigure("notice of user reboots", "about 14 min seen in the field, under Reboot's 15 min minimum",
                    "field reports (the project's API notes)", "user reboots may come a minute short of 15 min"),
    PublishedFigure("Terminate notice", "5 to 15 min, set by the scale set's terminate notification profile, "
                    "not extendable once an event exists", "Terminate notification for scale sets",
                    "one notice per scale set, within 5 to 15 min"),
    PublishedFigure("Spot notice (Preempt)", "up to 30 s, best effort; evictions \"often\" in under 10 s",
                    "Spot VMs; AKS Karpenter maintainers (field report)",
                    f"never over {SPOT_NOTICE_S:.0f} s; at least {SPOT_FAST_SHARE:.0%} under "
                    f"{SPOT_FAST_UNDER_S:.0f} s"),
    PublishedFigure("Started to removed", "about 10 min (with a 7 s impact for a reboot)",
                    "Scheduled Events overview (typical timeline)",
                    "the median within 5 to 15 min; a reboot's median impact about 7 s"),
    PublishedFigure("degraded hardware", "NotBefore days ahead; Azure tries for 7 days' notice",
                    "Scheduled Events overview", "notice from 2 to 7 days"),
    PublishedFigure("self-service window", "about 35 days to start reboot maintenance yourself",
                    "Maintenance for virtual machines in Azure",
                    "not modelled: the window is in the portal, not in IMDS; IMDS shows the event once scheduled"),
)


def documented_min_notice(terminate_notice_s: float = TERMINATE_NOTICE_RANGE_S[0]) -> Dict[str, float]:
    """Documented minimum notice per EventType, with Terminate as configured on the scale set."""
    low, high = TERMINATE_NOTICE_RANGE_S
    if not low <= terminate_notice_s <= high:
        raise ValueError(f"terminate_notice_s must be between {low} and {high} seconds, got {terminate_notice_s}")
    return dict(DOCUMENTED_MIN_NOTICE_S, Terminate=float(terminate_notice_s))
