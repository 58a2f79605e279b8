"""Where the notebooks find a history when they are not told: the environment, the demo, the sample."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Tuple

SAMPLES = Path(__file__).resolve().parent.parent / "samples"  # event_analysis/samples: shipped in the package (and its wheel)
SAMPLE_HISTORY = SAMPLES / "sample-history.simulated.jsonl.gz"
# `make bench-reaction`'s runs (relays' change-only histories and the cycles' callback records, event-driven and
# the retired watch): the sample of the reaction notebook, whose questions the simulator's sample cannot answer.
REACTION_SAMPLE = SAMPLES / "reaction-sample.simulated.jsonl.gz"
# Written by `make demo` (tools/demo.py), with a .meta.json sidecar giving its time scale.
DEMO_HISTORY = Path.home() / ".ansible" / "scheduled_events" / "demo-history.jsonl"
ENVIRONMENT = "SCHEDULED_EVENTS_HISTORY"


def default_history() -> str:
    """$SCHEDULED_EVENTS_HISTORY if set, else the last `make demo` capture if any, else the shipped sample."""
    return choose_history()[0]


def choose_history(given: Optional[str] = None, sample: Path = SAMPLE_HISTORY) -> Tuple[str, str]:
    """(the history to load, one sentence saying which it is and why). A history nobody named is never a
    silent choice: the sentence says loudly that it is not the user's data. `sample`: the last resort."""
    if given:
        return str(given), f"history: {given} (as given)."
    chosen = os.environ.get(ENVIRONMENT, "").strip()
    if chosen:
        return chosen, f"history: {chosen} (from ${ENVIRONMENT})."
    fallback = f"NOT YOUR DATA: no history was given (pass one, or set ${ENVIRONMENT}), so this reads "
    if DEMO_HISTORY.is_file() and DEMO_HISTORY.stat().st_size > 0:
        return str(DEMO_HISTORY), fallback + f"the last `make demo` capture, {DEMO_HISTORY} (simulated)."
    return str(sample), fallback + f"the shipped simulated sample, {sample}."
