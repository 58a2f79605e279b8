"""Reading the simulator's JSON input files (fleets, scenarios) with one-sentence errors."""
from __future__ import annotations

import json
from typing import Any, Type


def read_json(path: str, what: str, error: Type[ValueError]) -> Any:
    """The parsed file, or `error` with one sentence naming the file and the cause."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise error(f"cannot read {what} file {path}: {exc.strerror}.") from None
    except ValueError as exc:
        raise error(f"{what} file {path} is not valid JSON ({exc}).") from None
