"""Change-only generation that visits only the polls where something can change.

A change-only history (the event relay's) writes a line when a VM's document changes or when the VM
answers again after polls that got nothing. Between two such moments every poll answers the same
document, so polling it is wasted work: a month of one-second polls of 2,000 VMs is 5e9 polls and a
few million lines. A VM's answer can only change at:
  * an engine transition that gives it a new incarnation (appear, start, removal, approval), or a
    re-enabled service;
  * the end of an impact window (a reboot's downtime, a freeze) or of the enabling window, which the
    served answer names.
So each VM is polled at its first poll tick at or after each of those moments, nothing else. The
skipped polls' only effect on the engine, keeping the service enabled, is replayed by setting the
VM's last request to the tick before. The output is byte for byte the same as polling every tick
(tests/simulator/test_offline.py compares them), at a cost that grows with changes, not with polls.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import List, Optional, Tuple

from .engine import Engine, Served
from .offline import Poller

_ANSWERED = ("document", "enabling")


@dataclass
class _Ticks:
    """One VM's poll ticks (first + k * step) and where its polling stands."""
    name: str
    first: datetime
    last_index: int = -1       # the last tick polled
    answered: bool = False     # whether that poll got an answer
    revision: int = -1         # the engine's revision of the VM's document when it was last looked at
    done: bool = False         # deleted: polls no more

    def index_at_or_after(self, moment: datetime, step: timedelta) -> int:
        """The first tick at or after `moment` that has not been polled yet."""
        index = -((self.first - moment) // step) if moment > self.first else 0  # ceil, in exact microseconds
        return max(index, self.last_index + 1)


def poll_changes(poller: Poller, end: datetime, firsts: List[datetime]) -> None:
    """Poll each VM (first polls at `firsts`, in fleet order) only when its answer can have changed."""
    engine = poller.engine
    step = timedelta(seconds=poller.options.poll_interval_s)
    vms = [_Ticks(state.vm.name, first, revision=state.revision)
           for first, state in zip(firsts, engine.vms.values())]
    due: List[Tuple[datetime, int, int]] = [(vm.first, i, 0) for i, vm in enumerate(vms)]
    heapq.heapify(due)
    while True:
        change = engine.next_change()
        if change is not None and change < end and (not due or change <= due[0][0]):
            engine.advance_to(change)  # transitions first: a poll at the same moment sees them
            _schedule_changed(vms, engine, change, step, due)
            continue
        if not due:
            break
        at, i, index = heapq.heappop(due)
        vm = vms[i]
        if at >= end or vm.done or index <= vm.last_index:
            continue
        approvals = poller.stats.approvals
        _poll(poller, vm, i, index, at, step, due)
        if poller.stats.approvals != approvals:  # an approval can start events: other VMs' documents change
            _schedule_changed(vms, engine, at, step, due, approver=i)
    for vm in vms:
        if not vm.done and not vm.answered and vm.last_index >= 0:
            state = engine.vms[vm.name.lower()]
            limit = min(end, state.deleted_at) if state.deleted_at is not None else end
            poller.stats.silent_polls += _ticks_before(vm, limit, step) - vm.last_index - 1


def _poll(poller: Poller, vm: _Ticks, i: int, index: int, at: datetime, step: timedelta,
          due: List[Tuple[datetime, int, int]]) -> None:
    state = poller.engine.vms[vm.name.lower()]
    if state.deleted_at is not None and state.deleted_at <= at:
        if not vm.answered:  # the polls it made between its last and its deletion got nothing
            poller.stats.silent_polls += _ticks_before(vm, state.deleted_at, step) - vm.last_index - 1
        vm.done = True
        return
    if vm.last_index >= 0 and index > vm.last_index + 1:
        if vm.answered:
            poller.skipped_until(vm.name, vm.first + step * (index - 1))
        else:
            poller.stats.silent_polls += index - vm.last_index - 1  # and these got nothing, like the last
    served = poller.poll(vm.name, at)
    vm.last_index, vm.answered = index, served.kind in _ANSWERED
    wake = _wake_at(poller, served, state.enabled_at)
    if wake is not None:
        _poll_from(due, vm, i, wake, step)


def _wake_at(poller: Poller, served: Served, enabled_at: Optional[datetime]) -> Optional[datetime]:
    """When the answer changes without a transition: the end of impact, or of the enabling window."""
    if served.kind in ("down", "frozen"):
        return served.until  # None: down until deletion, which is a transition
    if served.kind == "enabling" and enabled_at is not None:
        return enabled_at + poller.engine.span(poller.engine.options.enabling_s)
    return None


def _schedule_changed(vms: List[_Ticks], engine: Engine, at: datetime, step: timedelta,
                      due: List[Tuple[datetime, int, int]], approver: Optional[int] = None) -> None:
    """A poll for every VM whose document changed, at its first tick from `at` on. (A re-enabled service's
    incarnation reset counts as a change too: one extra poll, which answers like the one before.) After an
    approval by VM `approver` at `at`, a VM whose tick is also `at` but comes first (a lower index: polls at
    one moment go in fleet order) polled before the approval, so it sees the change a tick later."""
    for i, vm in enumerate(vms):
        revision = engine.vms[vm.name.lower()].revision
        if revision == vm.revision or vm.done:
            continue
        vm.revision = revision
        _poll_from(due, vm, i, at, step, later=approver is not None and i < approver)


def _poll_from(due: List[Tuple[datetime, int, int]], vm: _Ticks, i: int, moment: datetime, step: timedelta,
               later: bool = False) -> None:
    """Queue the VM's first tick at or after `moment` (after it, with `later`) that it has not polled yet."""
    index = vm.index_at_or_after(moment, step)
    if later and vm.first + step * index == moment:
        index += 1
    heapq.heappush(due, (vm.first + step * index, i, index))


def _ticks_before(vm: _Ticks, limit: datetime, step: timedelta) -> int:
    """How many of the VM's ticks fall before `limit`."""
    return max(0, -((vm.first - limit) // step)) if limit > vm.first else 0
