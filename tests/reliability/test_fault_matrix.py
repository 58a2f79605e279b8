"""The fault matrix: every IMDS fault, injected on its own VM, through the real role and playbook.

One fleet, one VM per case, each VM with its own Reboot event listing only itself, and one
`cycle` run over all of them with the history callback on. Every case must end in success
(after retries where the fault was transient) or in one clear sentence on that host: no
traceback, no approval of its event, no state written, nothing recorded that was not observed.
The table of outcomes is written to docs/lab/fault-matrix.md by this test.
"""
from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from imds_simulator.fleet import FleetSpec
from tests.integration.runner import FILES, CycleBench, PlaybookRun
from tests.live_fleet import LiveFleet
from tests.history.history_helpers import capture_env, read_history

# Module-scoped fixtures: one xdist worker runs this file (`--dist loadgroup`), so they are built once.
pytestmark = pytest.mark.xdist_group("fault-matrix")
TABLE = Path(__file__).resolve().parents[2] / "docs" / "lab" / "fault-matrix.md"
FATAL = re.compile(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", re.M)
# Short budgets so that timeouts are quick: 4 s per answer, 10 s for the first one, 2 retries. Not shorter: the
# simulator answers from a thread of a loaded test worker, and a 1 s budget ran out on a plain answer in CI. Every
# VM is in fault domain 0 of one set, and a VM whose read fails holds an unknown fault domain (fail closed: it
# blocks every new one); a limit of 2 lets the others go on, so that each case shows its own outcome.
TIMEOUT_S, FIRST_CALL_TIMEOUT_S = 4, 10
BUDGETS = {"maintenance_cycle_timeout": TIMEOUT_S, "maintenance_cycle_first_call_timeout": FIRST_CALL_TIMEOUT_S,
           "maintenance_cycle_retries": 2, "maintenance_cycle_max_fault_domains_in_maintenance": 2,
           # What is judged is each VM's read: its prepare only has to happen (so that its Reboot is approved before
           # NotBefore), not to call a module on every VM that read well.
           "prepare_tasks": str(FILES / "prepare_nothing.yml")}


@dataclass
class Case:
    name: str
    injected: str
    faults: List[Dict[str, Any]] = field(default_factory=list)
    expect: str = "approved"          # approved | not approved | failed
    says: str = ""                    # a fragment of the failure message or of a warning
    retried: bool = False             # a transient fault: the first attempt fails, a retry succeeds


def unknown_type_document(vm: str) -> str:
    not_before = format_datetime(datetime.now(timezone.utc) + timedelta(minutes=10), usegmt=True)
    return json.dumps({"DocumentIncarnation": 2, "Events": [{
        "EventId": "6F6C6E2F-1E1C-4D8C-9C9B-2B6C3C2F0A11", "EventStatus": "Scheduled", "EventType": "Hibernate",
        "ResourceType": "VirtualMachine", "Resources": [vm], "NotBefore": not_before,
        "Description": "A type this collection does not know.", "EventSource": "Platform", "DurationInSeconds": -1}]})


def status(code: int, count: int = 1) -> Dict[str, Any]:
    return {"kind": "status", "status": code, "count": count}


CASES = [
    Case("410 once", "HTTP 410 on the first GET", [status(410)], retried=True),
    Case("429 once", "HTTP 429 on the first GET", [status(429)], retried=True),
    Case("500 once", "HTTP 500 on the first GET", [status(500)], retried=True),
    Case("503 once", "HTTP 503 on the first GET", [status(503)], retried=True),
    Case("503 always", "HTTP 503 on every GET", [status(503, -1)], "failed", "(gave up after 3 attempts)"),
    Case("400 always", "HTTP 400 on every GET", [status(400, -1)], "failed", "with HTTP 400"),
    Case("refused", "nothing listens at the VM's IMDS URL", [], "failed", "cannot reach IMDS"),
    Case("dropped once", "connection closed without an answer, once", [{"kind": "drop"}], retried=True),
    Case("dropped always", "connection closed without an answer, always", [{"kind": "drop", "count": -1}],
         "failed", "(gave up after 3 attempts)"),
    Case("reset mid-body once", "half the body, then a reset, once", [{"kind": "reset_mid_body"}], retried=True),
    Case("reset mid-body always", "half the body, then a reset, always", [{"kind": "reset_mid_body", "count": -1}],
         "failed", "broke"),
    Case("timeout always", f"every answer 12 s late (timeout {TIMEOUT_S} s, first call {FIRST_CALL_TIMEOUT_S} s)",
         [{"kind": "delay", "delay_s": 12, "count": -1}], "failed", "did not answer GET"),
    Case("first-call delay", f"the first answer 6 s late (timeout {TIMEOUT_S} s, first call {FIRST_CALL_TIMEOUT_S} s)",
         [{"kind": "delay", "delay_s": 6}]),
    Case("empty 200", "HTTP 200 with an empty body, always", [{"kind": "empty_body", "count": -1}],
         "not approved", "no Scheduled Events document yet"),
    Case("malformed JSON", "HTTP 200 with a body that is not JSON", [{"kind": "malformed_json", "count": -1}],
         "failed", "malformed JSON"),
    Case("wrong shape", "HTTP 200 with JSON that is not a document", [{"kind": "wrong_shape", "count": -1}],
         "failed", "not a Scheduled Events document"),
    Case("non-UTF-8", "HTTP 200 with bytes that are not UTF-8", [{"kind": "non_utf8", "count": -1}],
         "failed", "not UTF-8"),
    Case("unknown event type", "a Scheduled event of EventType Hibernate for this VM", [],
         "not approved", "Hibernate"),
    Case("incarnation backwards", "IMDS disabled after 24 h: DocumentIncarnation restarts lower", []),
    Case("huge document", "the document padded to 5 MB (still valid)", [{"kind": "huge", "size_bytes": 5_000_000,
                                                                         "count": -1}]),
    Case("oversized document", "the document padded to 17 MB", [{"kind": "huge", "size_bytes": 17_000_000,
                                                                  "count": -1}], "failed", "more than 16 MiB"),
    Case("redirect", "HTTP 307 to another URL, always", [{"kind": "redirect", "count": -1}], "failed",
         "never follow redirects"),
]


@dataclass
class Outcome:
    case: Case
    vm: str
    failed: bool
    message: str
    faults_taken: int
    approved: bool
    state_written: bool
    observations: int
    incarnations: Tuple[Optional[int], Optional[int]]  # saved before and after the run


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[List[Outcome]]:
    work = tmp_path_factory.mktemp("fault-matrix")
    fleet = LiveFleet(None, time_scale=2.0, fleet=FleetSpec(vms=len(CASES), fault_domains=1))
    try:
        cases = dict(zip(fleet.vms, CASES))
        for vm in fleet.vms:  # 15-minute notice = 450 s at time scale 2: longer than the run on a loaded machine
            fleet.inject({"key": "e-" + vm, "type": "Reboot", "notice_s": 900, "resources": {"names": [vm]}})
        bench = CycleBench(fleet, work)
        by_name = {c.name: vm for vm, c in cases.items()}
        backwards_setup(bench, by_name["incarnation backwards"])
        point_at_nothing(bench, by_name["refused"])
        for vm, case in cases.items():
            if case.name == "unknown event type":
                fleet.fault(vm, {"kind": "body", "status": 200, "body": unknown_type_document(vm), "count": -1})
            elif case.faults:
                fleet.fault(vm, *case.faults)
        history = work / "history.jsonl"
        before = {vm: (saved_at(bench, vm), incarnation(bench, vm)) for vm in fleet.vms}
        run = bench.run(extra=BUDGETS, forks=len(CASES), env=capture_env(history), timeout=600)
        yield [outcome_of(bench, run, history, vm, case, *before[vm]) for vm, case in cases.items()]
    finally:
        fleet.close()


def backwards_setup(bench: CycleBench, vm: str) -> None:
    """A first cycle prepares without approving and saves the incarnation; then 24 h of silence."""
    solo = CycleBench(bench.fleet, bench.work / "solo", hosts=[vm])
    inventory = json.loads(bench.inventory.read_text())  # the same host vars, so the same state path
    inventory["azure_vms"]["hosts"] = {vm: inventory["azure_vms"]["hosts"][vm]}
    solo.inventory.write_text(json.dumps(inventory))
    # The set's other VMs are the main bench's, not another run's: nothing else drains them during this setup.
    run = solo.run(extra=dict(BUDGETS, maintenance_cycle_approve_prepared_events=False,
                              maintenance_cycle_approve_outside_inventory=True))
    assert run.returncode == 0, run.stdout[-3000:]
    assert bench.state(vm)["document_incarnation"] > 1
    with bench.fleet.sim.lock:
        bench.fleet.engine.disable(vm)


def point_at_nothing(bench: CycleBench, vm: str) -> None:
    inventory = json.loads(bench.inventory.read_text())
    inventory["azure_vms"]["hosts"][vm]["maintenance_cycle_imds_url"] = f"http://127.0.0.1:{closed_port()}/{vm}"
    bench.inventory.write_text(json.dumps(inventory))


def saved_at(bench: CycleBench, vm: str) -> Optional[int]:
    path = bench.state_path(vm)
    return path.stat().st_mtime_ns if path.exists() else None


def incarnation(bench: CycleBench, vm: str) -> Optional[int]:
    state = bench.state(vm)
    return state["document_incarnation"] if state else None


def outcome_of(bench: CycleBench, run: PlaybookRun, history: Path, vm: str, case: Case,
               saved_before: Optional[int], incarnation_before: Optional[int]) -> Outcome:
    failures = {host: json.loads(text) for host, text in FATAL.findall(run.stdout)}
    failed = vm in failures
    message = failures[vm].get("msg", "") if failed else warnings_of(run.stdout + run.stderr, case.says)
    event_ids = {e["event_id"] for e in bench.fleet.truth() if e["resources"] == [vm]}
    approved = any(set(a["event_ids"]) & event_ids for a in bench.fleet.approvals())
    state_written = saved_at(bench, vm) not in (None, saved_before)
    return Outcome(case, vm, failed, message, bench.fleet.sim.faults.taken.get(vm, 0), approved, state_written,
                   len(read_history(history).of_host(vm)), (incarnation_before, incarnation(bench, vm)))


def warnings_of(stdout: str, fragment: str) -> str:
    if not fragment:
        return ""
    found = [line.strip() for line in stdout.splitlines() if "WARNING" in line.upper() and fragment in line]
    return found[0] if found else ""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_fault_ends_in_success_or_one_clear_sentence(outcomes: List[Outcome], case: Case) -> None:
    (outcome,) = [o for o in outcomes if o.case is case]
    assert "Traceback" not in outcome.message and "\n" not in outcome.message
    if case.expect == "failed":
        assert outcome.failed and case.says in outcome.message, outcome.message
        assert outcome.message.endswith(".") and len(outcome.message) < 400
        assert not outcome.approved and not outcome.state_written, "a failed read approves nothing, saves nothing"
        assert outcome.observations == 0, "nothing observed, nothing recorded"
    else:
        assert not outcome.failed, outcome.message
        assert outcome.approved is (case.expect == "approved")
        assert outcome.observations >= 1, "what was observed is in the history"
        if case.says:
            assert case.says in outcome.message, f"expected a warning naming {case.says!r}"
    if case.name == "empty 200":
        assert not outcome.state_written, "no document is no news: the state is not advanced"
    elif not outcome.failed:
        assert outcome.state_written
    if case.retried:
        assert outcome.faults_taken == 1 and outcome.approved, "a transient fault is retried and the cycle goes on"
    if case.name == "incarnation backwards":
        before, after = outcome.incarnations
        assert after < before, "the cycle accepted the restarted, lower DocumentIncarnation"


def test_no_case_leaks_a_traceback_and_the_table_is_written(outcomes: List[Outcome]) -> None:
    write_table(outcomes)
    text = TABLE.read_text()
    assert all(f"| {o.case.name} |" in text for o in outcomes)


def write_table(outcomes: List[Outcome]) -> None:
    rows = ["# Fault matrix", "",
            "Generated by `tests/reliability/test_fault_matrix.py` (run by `make test`; `make fault-table` runs",
            "only it). Each fault is injected on its own simulated VM, whose Reboot event lists only that VM;",
            f"one `azure_imds.scheduled_events.cycle` run covers them all, with a {TIMEOUT_S} s timeout, a "
            f"{FIRST_CALL_TIMEOUT_S} s first-call",
            "timeout and 2 retries, and the history callback on.", "",
            "| case | injected | outcome on that VM | faults served | approved | state saved | observations "
            "recorded | message or warning |",
            "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        result = "failed" if o.failed else ("succeeded after retry" if o.case.retried else "succeeded")
        message = normalised(o.message)
        if o.case.name == "incarnation backwards":
            message = "saved DocumentIncarnation %s, then %s: accepted, the event approved" % o.incarnations
        rows.append("| %s | %s | %s | %d | %s | %s | %d | %s |" % (
            o.case.name, o.case.injected, result, o.faults_taken, "yes" if o.approved else "no",
            "yes" if o.state_written else "no", o.observations, message))
    TABLE.write_text("\n".join(rows) + "\n")


def normalised(message: str) -> str:
    text = re.sub(r"http://127\.0\.0\.1:\d+/", "http://<imds>/", message)
    text = re.sub(r"^\[WARNING\]:\s*", "", text)
    return text.replace("|", "\\|")
