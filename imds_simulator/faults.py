"""Faults a test can inject into one VM's IMDS, taken request by request."""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

KINDS = {
    "status": "answer with an HTTP status (410, 429, 500, 503, ...) and an IMDS-style error body",
    "delay": "answer normally after delay_s seconds (wall clock), e.g. past a client's timeout",
    "empty_body": "answer 200 with an empty body (as IMDS does right after enabling)",
    "malformed_json": "answer 200 with a body that is not valid JSON",
    "wrong_shape": "answer 200 with JSON that is not a scheduled-events document",
    "non_utf8": "answer 200 with bytes that are not UTF-8",
    "huge": "answer 200 with the real document padded to size_bytes (still valid JSON)",
    "drop": "close the connection without answering",
    "reset_mid_body": "send the headers and half the body, then reset the connection",
    "redirect": "answer 307 pointing at /_simulator/redirect-trap (a client must not follow it)",
    "body": "answer with the given status and raw body text",
}
METHODS = ("GET", "POST", "any")
PATHS = ("scheduledevents", "compute", "identity", "any")  # identity: the VM's managed-identity token endpoint


class FaultError(ValueError):
    """A fault description the control API rejects; one sentence."""


@dataclass
class Fault:
    kind: str
    count: int = 1            # requests it applies to; -1 = until cleared
    status: int = 503
    delay_s: float = 0.0
    size_bytes: int = 5_000_000
    body: str = ""
    method: str = "GET"
    path: str = "scheduledevents"

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("any", method) and self.path in ("any", path)


def parse_fault(raw: Any) -> Fault:
    if not isinstance(raw, dict):
        raise FaultError("a fault must be a JSON object with a kind.")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise FaultError(f"fault kind {kind!r} is not one of {', '.join(sorted(KINDS))}.")
    unknown = sorted(set(raw) - set(Fault.__dataclass_fields__))
    if unknown:
        raise FaultError(f"fault field {unknown[0]!r} is unknown.")
    try:
        fault = Fault(**raw)
    except TypeError as exc:
        raise FaultError(f"fault is not valid ({exc}).") from None
    _check(fault)
    return fault


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a number


def _check(fault: Fault) -> None:
    if not _whole(fault.count) or fault.count == 0 or fault.count < -1:
        raise FaultError("fault count must be a positive whole number, or -1 for until cleared.")
    if not _whole(fault.status) or not 200 <= fault.status <= 599:
        raise FaultError("fault status must be an HTTP status code.")
    if isinstance(fault.delay_s, bool) or not isinstance(fault.delay_s, (int, float)) or not 0 <= fault.delay_s <= 600:
        raise FaultError("fault delay_s must be 0 to 600 seconds.")
    if not _whole(fault.size_bytes) or not 0 < fault.size_bytes <= 200_000_000:
        raise FaultError("fault size_bytes must be 1 to 200000000.")
    if fault.method not in METHODS:
        raise FaultError(f"fault method must be one of {', '.join(METHODS)}.")
    if fault.path not in PATHS:
        raise FaultError(f"fault path must be one of {', '.join(PATHS)}.")
    if not isinstance(fault.body, str):
        raise FaultError("fault body must be text.")


class FaultBook:
    """Per-VM queues of faults; the oldest matching fault is used first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: Dict[str, List[Fault]] = {}
        self.taken: Dict[str, int] = {}  # faults applied per VM, for tests and reports

    def add(self, vm: str, faults: List[Fault]) -> None:
        with self._lock:
            self._faults.setdefault(vm.lower(), []).extend(faults)

    def clear(self, vm: str) -> None:
        with self._lock:
            self._faults.pop(vm.lower(), None)

    def take(self, vm: str, method: str, path: str) -> Optional[Fault]:
        with self._lock:
            queue = self._faults.get(vm.lower(), [])
            for fault in queue:
                if fault.matches(method, path):
                    if fault.count > 0:
                        fault.count -= 1
                        if fault.count == 0:
                            queue.remove(fault)
                    self.taken[vm.lower()] = self.taken.get(vm.lower(), 0) + 1
                    return fault
        return None

    def pending(self) -> Dict[str, List[Dict[str, Any]]]:
        with self._lock:
            return {vm: [asdict(f) for f in q] for vm, q in self._faults.items() if q}
