"""Where the notebooks find a history when they are not told: the environment, the demo, the sample."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE_HISTORY = REPO / "notebooks" / "data" / "sample-history.simulated.jsonl.gz"
# Written by `make demo` (tools/demo.py), with a .meta.json sidecar giving its time scale.
DEMO_HISTORY = Path.home() / ".ansible" / "scheduled_events" / "demo-history.jsonl"
ENVIRONMENT = "SCHEDULED_EVENTS_HISTORY"


def default_history() -> str:
    """$SCHEDULED_EVENTS_HISTORY if set, else the last `make demo` capture if any, else the shipped sample."""
    chosen = os.environ.get(ENVIRONMENT, "").strip()
    if chosen:
        return chosen
    if DEMO_HISTORY.is_file() and DEMO_HISTORY.stat().st_size > 0:
        return str(DEMO_HISTORY)
    return str(SAMPLE_HISTORY)
