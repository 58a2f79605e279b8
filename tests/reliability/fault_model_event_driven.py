"""The fault model's event-driven half, and runs split over one set: who is in a run, and runs side by side.

Event-driven: every VM's relay polls the engine as roles/event_relay does (relay.Tracker, with the state file it
reads), signs each push with its own key (relay_key) and sends it to the source, which checks it (check_push),
refuses hosts it does not expect (403), and keeps the fleet view (fleet_view.FleetView, the source's own). The
view's next_run starts the cycles: each runs the role's steps (fault_model.FleetRun.steps) on the run's hosts,
leaving alone those the view names, with every other running cycle's steps and the relays' polls interleaved
between its steps, under the VM locks (or without them, one cycle at a time); a cycle that ends reports its own
read's quiet hosts (the cycle playbook's done report), a killed one reports nothing (the view gives its news back
after max_run_seconds, its locks stay until their lease ends).

Beyond the cycle's faults (fault_model.Faults), while the faults last: pushes lost in transit; forged pushes (a
VM's relay signing for another host with its own key, or with the controller's shared secret, saying quiet with a
huge sequence number); pushes seen on the wire replayed; one relay that lies about its own VM (quiet, always, with
huge sequence numbers); and, for the whole day, one relay that reads another state file than the cycle (it never
sees the recovers its VM owes).

Split: the set's VMs in two runs side by side, each over its half (Windows VMs on a schedule and Linux VMs
event-driven, or two job templates), without VM locks (Windows VMs take none), their steps interleaved.

The verdicts are fault_model's: what happened to the VMs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Dict, Iterator, List, Optional, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.fleet_view import FleetView, ViewSettings
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    PushError,
    RelaySettings,
    Tracker,
    check_push,
    relay_key,
    sign,
)
from tests.reliability.fault_model import API_VERSION, START, Cycle, Faults, FleetRun, fleet_run

SECRET = b"the controller's shared secret, for the model"
TICK_S = 5              # the model's clock: relays poll, the source ticks, running cycles take steps
STEPS_PER_TICK = 2      # steps the running cycles take per tick, between them (a step: a task on a host)
HEARTBEAT_S = 30.0
HUGE_SEQ = 10 ** 12
# left_drained's measure: SETTLE_CYCLES of these after the faults stop (a run killed just before holds its VM locks
# and a slot of the view for 900 s, then the view's reruns come every 60 s)
SETTLE_PERIOD_S = 150


@dataclass
class PushFaults:
    lost: float = 0.0        # a push is lost in transit
    forged: float = 0.0      # per tick: a VM's relay signs a push for another host (its own key or the shared secret)
    replayed: float = 0.0    # per tick: a push seen on the wire is sent again
    liar: bool = False       # one VM's relay says its VM is quiet, always, with huge sequence numbers
    wrong_state: bool = False  # one VM's relay reads another state file than the cycle, all day


@dataclass
class Relay:
    host: str
    tracker: Tracker
    seq: int = 0
    lies: bool = False
    wrong_state: bool = False
    last_seen: Optional[Tuple[int, str, bool]] = None  # (the engine's revision, what IMDS served, owes) last poll


@dataclass
class Running:
    number: int   # the view's run number (its done report names it)
    cycle: Cycle
    steps: Iterator[None]


@dataclass
class EventDrivenRun(FleetRun):
    """FleetRun with relays, the source's fleet view and cycles side by side."""
    push_faults: PushFaults = field(default_factory=PushFaults)
    view: Optional[FleetView] = None
    relays: Dict[str, Relay] = field(default_factory=dict)
    running: List[Running] = field(default_factory=list)
    wire: List[Tuple[bytes, str]] = field(default_factory=list)  # pushes seen on the wire (for replays)
    pushes: int = 0
    refused: int = 0       # pushes check_push or the expected hosts refused
    duplicates: int = 0    # pushes the view dropped as seen (replays within the window)

    # ----------------------------------------------------------------------------------- relays

    def start_relays(self) -> None:
        vms = self.vms()
        liar, wrong = (self.rng.choice(vms), self.rng.choice(vms))
        for vm in vms:
            tracker = Tracker(RelaySettings(host=vm, heartbeat_seconds=HEARTBEAT_S))
            tracker.vm = {"name": vm}
            self.relays[vm] = Relay(vm, tracker, lies=self.push_faults.liar and vm == liar,
                                    wrong_state=self.push_faults.wrong_state and vm == wrong)

    def poll(self, relay: Relay) -> None:
        """One poll of the relay on its VM; a push when the tracker asks for one."""
        state = self.states.get(relay.host) or {}
        owes = bool(state.get("events")) and not relay.wrong_state
        epoch = self.now.timestamp()
        if self.unchanged(relay, owes, epoch):
            relay.tracker.seen_at = relay.tracker.last_success_at = epoch  # what polled() does with no news
            return
        served = self.engine.serve(relay.host, API_VERSION, self.now)
        self.saw(relay.host, self.engine.vm_state(relay.host).revision)
        relay.last_seen = (self.engine.vm_state(relay.host).revision, served.kind, owes)
        if served.kind == "document":
            step = relay.tracker.polled(epoch, served.document, owes)
        elif served.kind == "enabling":
            step = relay.tracker.polled(epoch, None, owes)
        else:
            step = relay.tracker.failed(epoch, f"IMDS is {served.kind}", owes)
        if step.push is not None:
            relay.seq += 1
            push = dict(step.push, relay_id=f"relay-{relay.host}", seq=relay.seq)
            if relay.lies and self.now < self.fault_until:
                push.update(quiet=True, imds_ok=True, seq=HUGE_SEQ + relay.seq)
            self.send(json.dumps(push).encode(), sign_as=relay.host)

    def unchanged(self, relay: Relay, owes: bool, epoch: float) -> bool:
        """Whether this poll would only see what the last one saw (the same document, IMDS answering, the same
        state) with no heartbeat due: the tracker then does nothing but note the time (a shortcut for speed)."""
        if relay.last_seen is None or relay.last_seen[1] != "document" or relay.tracker.last_push_at is None:
            return False
        if epoch - relay.tracker.last_push_at >= HEARTBEAT_S:
            return False
        self.engine.advance_to(self.now)
        state = self.engine.vm_state(relay.host)
        return (self.engine.condition(relay.host, self.now)[0] == "up"
                and (state.revision, "document", owes) == relay.last_seen)

    def send(self, body: bytes, sign_as: str, key: Optional[bytes] = None) -> None:
        header = sign(body, key if key is not None else relay_key(SECRET, sign_as), self.now.timestamp())
        self.wire = (self.wire + [(body, header)])[-200:]
        if not self.chance(self.push_faults.lost):
            self.receive(body, header)

    def receive(self, body: bytes, header: str) -> None:
        """The source's receiver: check, refuse or take."""
        self.pushes += 1
        try:
            push = check_push(body, header, SECRET, self.now.timestamp())
        except PushError:
            self.refused += 1
            return
        if not self.view.knows(push["host"]):
            self.refused += 1
            return
        if not self.view.accept(push, self.clock()):
            self.duplicates += 1

    def attack(self) -> None:
        """Forged and replayed pushes."""
        if self.chance(self.push_faults.forged):
            sender, target = self.rng.sample(self.vms(), 2)
            push = {"version": 1, "kind": "heartbeat", "host": target, "vm": target, "relay_id": f"relay-{target}",
                    "seq": HUGE_SEQ + self.rng.randrange(HUGE_SEQ), "quiet": True, "imds_ok": self.rng.random() < 0.5,
                    "sent_at": self.now.isoformat()}
            key = SECRET if self.rng.random() < 0.5 else relay_key(SECRET, sender)
            self.send(json.dumps(push).encode(), sign_as=sender, key=key)
        if self.wire and self.chance(self.push_faults.replayed):
            self.receive(*self.rng.choice(self.wire))

    # ----------------------------------------------------------------------------------- the source

    def clock(self) -> float:
        """The source's monotonic clock."""
        return (self.now - START).total_seconds()

    def tick(self) -> None:
        for vm in self.vms():
            self.poll(self.relays[vm])
        self.attack()
        run = self.view.next_run(self.clock())
        if run is not None:
            cycle = self.new_cycle(run.hosts or self.vms(), set(run.leave_alone))
            self.running.append(Running(run.number, cycle, self.steps(cycle)))
        self.take_steps()

    def take_steps(self) -> None:
        """The running cycles' next steps, interleaved at random."""
        for _ in range(STEPS_PER_TICK):
            if not self.running:
                return
            current = self.rng.choice(self.running)
            ended = self.advance(current.cycle, current.steps)
            if ended is not None:
                self.running.remove(current)
            if ended:  # a killed run sends no done report: the view gives its news back in time
                self.view.done(current.number, current.cycle.read_quiet, current.cycle.deleted)


# How the rulebook runs the cycles: side by side under the VM locks (the shipped rulebook), one at a time
# without locks, and side by side without locks (every cycle must refuse, before it does anything).
SETUPS = {
    "side by side, locked": (3, True),
    "one at a time, unlocked": (1, False),
    "side by side, unlocked": (3, False),
}
PUSH_FAULTS = {
    "none": PushFaults(),
    "kills and lost hosts": PushFaults(lost=0.05, liar=True, wrong_state=True),
    "everything fails sometimes": PushFaults(lost=0.05, forged=0.05, replayed=0.05, liar=True, wrong_state=True),
}


def event_driven_run(seed: int, faults: Faults, push_faults: PushFaults, setup: str, hours: float = 24.0,
                     fleet: str = "one set") -> EventDrivenRun:
    """One fleet-day, event-driven: faults for the first 80 % of it, then a fault-free settle."""
    parallel, locking = SETUPS[setup]
    run = fleet_run(EventDrivenRun, seed, faults, hours, fleet, locking=locking, push_faults=push_faults)
    run.policy["parallel_runs"] = parallel  # the rulebook passes its max_parallel_runs to the cycles
    run.view = FleetView(ViewSettings(expected_hosts=run.vms(), max_parallel_runs=parallel))
    run.start_relays()
    end = START + timedelta(hours=hours)
    while run.now < end:
        run.tick()
        run.now += timedelta(seconds=TICK_S)
    run.finish(run.now, SETTLE_PERIOD_S)
    if parallel > 1 and not locking and (run.ledger.drains or run.verdict.approvals):
        # Only the VM locks keep cycles side by side apart (two could admit two fault domains at once): without
        # them every cycle must refuse before it acts, whether or not this day happened to overlap two domains.
        run.verdict.add("unlocked_side_by_side", f"cycles ran side by side without VM locks and acted "
                                                 f"({run.ledger.drains} drains, {run.verdict.approvals} approvals)")
    return run


def split_run(seed: int, faults: Faults, period_s: int, hours: float = 24.0, fleet: str = "one set") -> FleetRun:
    """One fleet-day, each set's VMs in two runs side by side (every other VM in each), on a schedule."""
    run = fleet_run(FleetRun, seed, faults, hours, fleet)
    vms = run.vms()
    halves = [vms[0::2], vms[1::2]]
    end = START + timedelta(hours=hours)
    while run.now < end:
        cycles = [run.new_cycle(half, target=half) for half in halves]
        cycles[1].owner = f"{cycles[0].owner}-b"
        both = [(cycle, run.steps(cycle)) for cycle in cycles]
        while both:
            cycle, steps = run.rng.choice(both)
            if run.advance(cycle, steps) is not None:
                both.remove((cycle, steps))
        run.now += timedelta(seconds=period_s)
    run.finish(run.now, period_s)
    return run
