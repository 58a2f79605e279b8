"""The reaction benchmark's shapes and arithmetic (tools/bench_reaction.py), without running it: which events each
shape injects, and what counts as first and last prepare, prepared before eviction, and missed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

from imds_simulator.fleet import FleetSpec
from tests.live_fleet import LiveFleet
from tools.bench_reaction import (
    BURST_SHORT_NOTICE_S,
    CPU_COLUMNS,
    SHAPES,
    Result,
    default_burst,
    event_row,
    figures,
    infeasible,
    shape_list,
    table,
    waves,
)
from tools.vm_cpu import CpuSplit, over_ssh_with_pipelining

APPEARED = "2026-11-28T10:00:00.000Z"
NOT_BEFORE = "2026-11-28T10:00:30.000Z"
T0 = 1795860000.0  # APPEARED, in epoch seconds


def event(event_id: str, kind: str, vms: list, not_before: str = NOT_BEFORE) -> Dict[str, Any]:
    return {"event_id": event_id, "event_type": kind, "resources": vms, "appeared_at": APPEARED,
            "not_before": not_before, "start_reason": None}


def test_first_and_last_prepare_of_an_event_over_its_vms() -> None:
    row = event_row(event("E1", "Reboot", ["vm0", "vm3", "vm6"]), {"vm0": T0 + 4.0, "vm3": T0 + 9.5, "vm6": T0 + 6.0})
    assert (row["first_s"], row["last_s"], row["prepared_vms"], row["vms"]) == (4.0, 9.5, 3, 3)
    partly = event_row(event("E2", "Reboot", ["vm0", "vm3"]), {"vm0": T0 + 4.0, "other": T0 + 1.0})
    assert (partly["first_s"], partly["last_s"], partly["prepared_vms"]) == (4.0, None, 1), "no last until all are"


def test_a_preempt_counts_in_time_only_when_prepared_before_its_eviction() -> None:
    rows = [event_row(event("P1", "Preempt", ["vm1"]), {"vm1": T0 + 29.0}),
            event_row(event("P2", "Preempt", ["vm2"]), {"vm2": T0 + 31.0}),
            event_row(event("P3", "Preempt", ["vm4"]), {}),
            event_row(event("R1", "Reboot", ["vm5"]), {"vm5": T0 + 3.0})]
    found = figures(rows)
    assert (found["events"], found["preempts"], found["preempt_in_time"]) == (4, 3, 1)
    assert found["missed"] == ["P3 (Preempt)"], "prepared late is not missed; never prepared is"
    assert found["first_median"] == 29.0 and found["last_median"] == 29.0  # 3, 29 and 31 s


def test_the_shapes_inject_what_they_say() -> None:
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(vms=12, fault_domains=3))
    try:
        (fault_domain,) = waves("fault-domain", fleet, 1, 0, [])
        assert fault_domain == [{"type": "Reboot", "source": "Platform", "notice_s": 900,
                                 "resources": {"fault_domain": 0}}]
        one_vm = waves("one-vm", fleet, 2, 0, [])
        assert [[(s["type"], s["notice_s"]) for s in w] for w in one_vm] == [[("Preempt", 30)], [("Reboot", 900)]]
        used = [vm for w in one_vm for s in w for vm in s["resources"]["names"]]
        (burst,) = waves("burst", fleet, 0, 5, used)
        named = [s["resources"]["names"][0] for s in burst]
        assert len(set(named)) == 5 and not set(named) & set(used) and {s["notice_s"] for s in burst} == {30}
        domains = [v.fault_domain for v in fleet.engine.fleet.vms if v.name in named]
        assert sorted(set(domains)) == [0, 1, 2] and max(domains.count(d) for d in range(3)) <= 2, "round robin"
        (short,) = waves("burst-short", fleet, 0, 5, used)
        assert all(BURST_SHORT_NOTICE_S[0] <= s["notice_s"] <= BURST_SHORT_NOTICE_S[1] for s in short)
    finally:
        fleet.close()


def test_shapes_run_in_their_order_whatever_the_order_named() -> None:
    assert shape_list("burst, one-vm,fault-domain") == ["fault-domain", "one-vm", "burst"]


def test_the_benchmarks_environment_lets_the_bench_derive_each_relays_key(tmp_path: Path) -> None:
    """tools/relay_fleet.environment, in a process of its own as the benchmarks run it: the staged collection is
    importable there (make bench-reaction failed at start-up once the relays' keys came from relay_key)."""
    code = ("import sys; sys.path.insert(0, '.'); from pathlib import Path; from tools.relay_fleet import environment; "
            f"environment(Path({str(tmp_path / 'work')!r})); "
            "from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay import protocol; "
            "print(protocol.__file__); print(protocol.relay_key(b'0123456789abcdef', 'vm0').decode())")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    where, key = run.stdout.split()
    assert where.startswith(str(tmp_path / "work" / "collections")), "the staged copy, not this checkout"
    assert len(key) == 64 and int(key, 16) >= 0


def test_the_default_run_fits_each_size_and_an_impossible_one_is_refused_before_it_starts() -> None:
    """The defaults (--sizes 50,200 --events 6, every shape) plan every shape at both sizes; a burst the fleet cannot
    hold is refused in one sentence before any fleet starts (it once stopped a run half-way)."""
    shapes = list(SHAPES)
    assert (default_burst(50, shapes, 6), default_burst(200, shapes, 6)) == (22, 50)
    for size in (50, 200):
        assert infeasible(size, shapes, 6, default_burst(size, shapes, 6)) is None
        fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(vms=size, fault_domains=3))
        try:
            used: list = []
            for shape in shapes:
                planned = waves(shape, fleet, 6, default_burst(size, shapes, 6), used)
                used += [vm for wave in planned for spec in wave for vm in spec["resources"].get("names", [])]
        finally:
            fleet.close()
    assert "need 60 VMs besides the one-VM events'; 50 VMs leave 44" in infeasible(50, shapes, 6, 30)
    assert "need 20 VMs in fault domain 0" in infeasible(50, shapes, 20, 1)


def test_the_table_puts_the_raw_cpu_beside_the_controller_alone_the_vms_the_calls_and_the_ssh_estimate() -> None:
    row = event_row(event("R1", "Reboot", ["vm5"]), {"vm5": T0 + 3.0})
    found = dict(figures([row]), rows=[row])
    split = CpuSplit(raw=80.0, vm=60.0, calls=200).per_event(2)
    rows = table([Result("event-driven", 50, "fault-domain", found, cpu=split),
                  Result("control plane, cycle every 60 s", 50, "one-vm", found, cpu=CpuSplit(9.0, 0.0, 0))])
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    first, second = ([cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:4])
    at = header.index(CPU_COLUMNS[0])
    assert header[at:at + len(CPU_COLUMNS)] == list(CPU_COLUMNS) and len(first) == len(header)
    ssh = over_ssh_with_pipelining(10.0, 100)
    assert first[at:at + 5] == ["40.0", "10.0", "30.0", "100.0", f"{ssh:.1f}"]
    assert second[at:at + 5] == ["9.0", "9.0", "0.0", "0.0", "9.0"], "no VM contacted: all the controller's"
