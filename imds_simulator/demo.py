"""`python -m imds_simulator demo`: a fleet under platform maintenance, seen by pollers.

Starts a 6-VM availability set (3 fault domains) under the platform-maintenance
scenario at a high time scale, runs one poller per VM over HTTP exactly as a
responder on each VM would (stdlib client, `Metadata: true`, no proxy, no
redirects), lets the first VM of each event's Resources prepare and approve it,
and prints what the pollers saw. It is also the smallest example of pointing
your own tooling at the simulator.
"""
from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Dict, List, Optional, Set, Tuple

from . import scenario as sc
from .engine import Engine
from .fleet import FleetSpec, build_fleet
from .server import ServerOptions, Simulator, serve_in_thread

API = "api-version=2020-07-01"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # IMDS clients must never follow a redirect


class ImdsClient:
    """The minimal correct IMDS client: header, no proxy, no redirect, a timeout."""

    def __init__(self, base_url: str, timeout: float = 5.0):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def _call(self, method: str, body: Optional[bytes] = None) -> bytes:
        request = urllib.request.Request(f"{self.base_url}/metadata/scheduledevents?{API}", data=body,
                                         method=method, headers={"Metadata": "true"})
        with self._opener.open(request, timeout=self.timeout) as response:
            return response.read()

    def document(self) -> Dict[str, Any]:
        return json.loads(self._call("GET"))

    def approve(self, event_ids: List[str]) -> None:
        body = json.dumps({"StartRequests": [{"EventId": i} for i in event_ids]}).encode()
        self._call("POST", body)


@dataclass
class _Seen:
    started: float
    lines: "queue.Queue[Tuple[float, str, Dict[str, Any]]]" = field(default_factory=queue.Queue)


def _poll(vm: str, client: ImdsClient, seen: _Seen, stop: threading.Event, interval: float) -> None:
    last: Optional[int] = None
    while not stop.is_set():
        try:
            doc = client.document()
        except (urllib.error.URLError, OSError, ValueError):
            time.sleep(interval)  # rebooting: IMDS does not answer for a few seconds
            continue
        if doc["DocumentIncarnation"] != last:
            last = doc["DocumentIncarnation"]
            seen.lines.put((time.monotonic() - seen.started, vm, doc))
        time.sleep(interval)


def _prepare_and_approve(client: ImdsClient, event_id: str, prepare_s: float, log: "queue.Queue[str]",
                         leader: str) -> None:
    time.sleep(prepare_s)  # stands for draining the VM out of its load balancer
    client.approve([event_id])
    log.put(f"{leader} (leader, first in Resources) prepared and approved {event_id[:8]}")


def run_demo(time_scale: float = 120.0, seed: int = 7, timeout_s: float = 180.0) -> int:
    fleet = build_fleet(FleetSpec(kind="availability_set", name="avset-web", vms=6, fault_domains=3))
    engine = Engine(fleet, sc.load("platform-maintenance"), datetime.now(timezone.utc),
                    time_scale=time_scale, seed=seed)
    sim = Simulator(engine, ServerOptions(rate_limit=5.0), scenario_name="platform-maintenance")
    server, _ = serve_in_thread(sim)
    print(f"Simulated IMDS at {sim.base_url}: availability set avset-web, 6 VMs in 3 fault domains, "
          f"platform maintenance, time scale {time_scale:g} (1 s here = {time_scale / 60:g} simulated min).")
    fd_of = {v.name: v.fault_domain for v in fleet.vms}
    seen = _Seen(started=time.monotonic())
    stop = threading.Event()
    clients = {v.name: ImdsClient(sim.vm_url(v.name)) for v in fleet.vms}
    for name, client in clients.items():
        threading.Thread(target=_poll, args=(name, client, seen, stop, 0.25), daemon=True).start()
    approvals: "queue.Queue[str]" = queue.Queue()
    states: Dict[str, str] = {}
    viewers: Dict[Tuple[str, str], Set[str]] = {}
    deadline = time.monotonic() + timeout_s
    try:
        grace = 1.0  # let every poller see the last removal
        while time.monotonic() < deadline and grace > 0:
            while not approvals.empty():
                print(f"  {time.monotonic() - seen.started:5.1f}s  {approvals.get()}")
            _drain(seen, states, viewers, fd_of, clients, approvals, time_scale)
            time.sleep(0.05)
            if _finished(sim):
                grace -= 0.05
    finally:
        stop.set()
        server.shutdown()
    return _summary(sim, viewers, len(fleet.vms))


def _finished(sim: Simulator) -> bool:
    with sim.lock:
        sim.engine.advance_to(sim.clock.now())
        return bool(sim.engine.events) and not sim.engine.active and sim.engine.next_change() is None


def _drain(seen: _Seen, states: Dict[str, str], viewers: Dict[Tuple[str, str], Set[str]],
           fd_of: Dict[str, int], clients: Dict[str, ImdsClient], approvals: "queue.Queue[str]",
           time_scale: float) -> None:
    while not seen.lines.empty():
        at, vm, doc = seen.lines.get()
        current = {e["EventId"]: e for e in doc["Events"]}
        for event_id, event in current.items():
            viewers.setdefault((event_id, event["EventStatus"]), set()).add(vm)
            if states.get(event_id) == event["EventStatus"]:
                continue
            states[event_id] = event["EventStatus"]
            print(f"  {at:5.1f}s  incarnation {doc['DocumentIncarnation']:>2}  {_describe(event, fd_of, time_scale)}")
            if event["EventStatus"] == "Scheduled":
                leader = event["Resources"][0]
                threading.Thread(target=_prepare_and_approve, daemon=True,
                                 args=(clients[leader], event_id, 1.0, approvals, leader)).start()
        for event_id in [i for i, s in states.items() if s != "Removed" and i not in current]:
            states[event_id] = "Removed"
            print(f"  {at:5.1f}s  incarnation {doc['DocumentIncarnation']:>2}  {event_id[:8]} removed: "
                  "maintenance done, recover now")


def _describe(event: Dict[str, Any], fd_of: Dict[str, int], time_scale: float) -> str:
    domains = sorted({fd_of[r] for r in event["Resources"]})
    who = f"FD {','.join(map(str, domains))}: {', '.join(event['Resources'])}"
    text = f"{event['EventId'][:8]} {event['EventType']} {event['EventStatus']} ({event['EventSource']}) for {who}"
    if event["NotBefore"]:
        left = (parsedate_to_datetime(event["NotBefore"]) - datetime.now(timezone.utc)).total_seconds()
        text += f", NotBefore in {left:.1f} s (= {left * time_scale / 60:.0f} simulated min)"
    return text


def _summary(sim: Simulator, viewers: Dict[Tuple[str, str], Set[str]], fleet_size: int) -> int:
    with sim.lock:
        events = sim.engine.event_summaries()
        approvals = list(sim.engine.approvals)
    order = [ev["fault_domains"][0] for ev in sorted(events, key=lambda e: e["started_at"] or "")]
    overlaps = _overlapping(events)
    everyone = all(len(v) == fleet_size for (_, status), v in viewers.items() if status == "Scheduled")
    done = bool(events) and all(ev["status"] == "Removed" for ev in events)
    print(f"Summary: {len(events)} maintenance events, fault domains walked in order {order}, "
          f"{len(approvals)} approvals (one per event, from its leader), "
          f"overlapping fault domains: {'none' if not overlaps else overlaps}; "
          f"every VM saw every event: {'yes' if everyone else 'no'}.")
    if not done:
        print("The scenario did not finish before the demo's timeout.")
    return 0 if done and not overlaps and everyone else 1


def _overlapping(events: List[Dict[str, Any]]) -> List[Tuple[str, str]]:
    found = []
    for a in events:
        for b in events:
            if a is b or a["fault_domains"] == b["fault_domains"] or not (a["started_at"] and b["started_at"]):
                continue
            if a["started_at"] < (b["removed_at"] or "~") and b["started_at"] < (a["removed_at"] or "~"):
                found.append((a["event_id"][:8], b["event_id"][:8]))
    return found
