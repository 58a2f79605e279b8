# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus text exposition format (version 0.0.4), for node_exporter's textfile collector: pure.

The event relay on each VM and the history callback on the controller write their metrics as a
`.prom` file that node_exporter (`--collector.textfile.directory`) serves with the machine's own
metrics: the convention for machine-level and batch-job metrics, with no port of our own to open.
Names and units follow Prometheus practice (base units, `_total` for counters, `_seconds` for
times); docs/reference/metrics.md lists every metric.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

PREFIX = "azure_scheduled_events_"
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
KINDS = ("gauge", "counter", "histogram")


@dataclass
class Family:
    """One metric: its samples are (name suffix, labels, value); the suffix is "" except for a histogram's
    _bucket, _sum and _count."""
    name: str
    kind: str
    help: str
    samples: List[Tuple[str, Dict[str, str], float]] = field(default_factory=list)

    def add(self, value, **labels):
        # type: (float, **str) -> Family
        self.samples.append(("", dict(labels), float(value)))
        return self


def histogram_samples(labels, bounds, counts, total):
    # type: (Dict[str, str], Sequence[float], Sequence[int], float) -> List[Tuple[str, Dict[str, str], float]]
    """A histogram's samples for one label set: `counts` per bucket (len(bounds) + 1, the last above every
    bound), written cumulative with +Inf, then _sum (`total`) and _count."""
    samples, running = [], 0
    for bound, count in zip(list(bounds) + [math.inf], counts):
        running += count
        samples.append(("_bucket", dict(labels, le=_number(bound)), float(running)))
    samples.append(("_sum", dict(labels), float(total)))
    samples.append(("_count", dict(labels), float(running)))
    return samples


def render(families):
    # type: (Sequence[Family]) -> str
    """The families as a textfile: HELP and TYPE lines, then one line per sample, newline-terminated."""
    lines = []
    for family in families:
        if not _NAME.match(family.name) or family.kind not in KINDS:
            raise ValueError("not a metric: %r (%r)" % (family.name, family.kind))
        lines.append("# HELP %s %s" % (family.name, _escape_help(family.help)))
        lines.append("# TYPE %s %s" % (family.name, family.kind))
        for suffix, labels, value in family.samples:
            lines.append("%s%s%s %s" % (family.name, suffix, _labels(labels), _number(value)))
    return "\n".join(lines) + "\n"


def _labels(labels):
    # type: (Dict[str, str]) -> str
    if not labels:
        return ""
    for name in labels:
        if not _LABEL.match(name) or name.startswith("__"):
            raise ValueError("not a label name: %r" % name)
    return "{%s}" % ",".join('%s="%s"' % (name, _escape_value(str(value))) for name, value in sorted(labels.items()))


def _escape_value(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value):
    # type: (float) -> str
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value)) if value != int(value) or abs(value) >= 1e15 else "%d" % int(value)
