"""Timestamps as int64 nanoseconds: the form the vectorised steps compare and subtract."""
from __future__ import annotations

import numpy as np
import pandas as pd

UNKNOWN_NS = np.iinfo(np.int64).min  # NaT


def nanoseconds(times: pd.Series) -> np.ndarray:
    """UTC timestamps as int64 nanoseconds since the epoch (NaT = min int64), without a Python loop."""
    return times.dt.as_unit("ns").array.asi8
