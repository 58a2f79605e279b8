"""Both modules, run by real ansible-playbook on simulated VMs over real HTTP: one run proves each behaviour once
(an approval the listed VMs see start, check mode, a retried fault, a failure in one sentence, bad options, a wait
for change, the oldest target Python). Every variant of a behaviour (each scenario's event type, each retryable fault,
each unusable answer, each refusal) is proven in-process on the same simulator by tests/unit/plugins/modules/."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from tests.modules.harness import Case, LiveFleet, approve, info, leader_approves, play_cases

pytestmark = pytest.mark.xdist_group("modules")


def _oldest_target() -> "tuple[tuple[int, int], str]":
    """The oldest target Python the running ansible-core supports (3.8 on 2.19, 3.9 from 2.21; the
    collection's own floor is 3.8), and a working interpreter of it, or ''."""
    import glob
    import os
    from ansible.module_utils import basic
    version = max((3, 8), tuple(getattr(basic, "_PY_MIN", (3, 8)))[:2])
    name = "python%d.%d" % version
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%d.%d*/bin/%s" % (*version, name))))
    candidates += [p for p in ("/usr/bin/" + name, "/usr/local/bin/" + name) if os.path.exists(p)]
    for path in candidates:
        probe = subprocess.run([path, "-c", "import sys; print(tuple(sys.version_info[:2]))"], capture_output=True,
                               text=True)
        if probe.returncode == 0 and probe.stdout.strip() == str(version):
            return version, path
    return version, ""


OLDEST_TARGET, OLDEST_PYTHON = _oldest_target()

# Each case's fleet: 6 VMs / 3 fault domains under platform maintenance, first event already out. At time scale 4 the
# notice lasts 225-255 s, at 2 twice that: the shared run's plays on a machine loaded by the other suites end before
# the event starts by itself (a refusal would then read "already started", a check-mode event could start by itself:
# a timing, not the behaviour under test). The approval's fleet runs at 4, its play first, so that a listed VM's
# reboot is soon over for the reads after it; the cases whose event must still be Scheduled when the run has ended
# run at 2. The waiting case's fleet runs at time scale 30, so that its document changes by itself within the wait:
# the notice (30-34 s) ends, the event starts, and its end and the next domain's event change it again.
FAULTS_VM = "avset-web-vm0"
RETRIED = [{"kind": "status", "status": 500}, {"kind": "drop"}]
UNUSABLE_VM, EMPTY_VM, OPTIONS_VM = "avset-web-vm2", "avset-web-vm3", "avset-web-vm4"


class Shared:
    """The fleets, what their events were before the run, and the run itself."""

    def __init__(self, tmp: Path) -> None:
        self.fleets: Dict[str, LiveFleet] = {
            "approval": LiveFleet("platform-maintenance", time_scale=4.0),
            # a VM that keeps answering when its event starts: a rebooting VM drops the connection from the moment
            # it starts, so a wait for the start from the VM the event lists ends in a broken read, or in Started,
            # by how a loaded machine times the polls
            "oldest": LiveFleet("platform-maintenance", time_scale=2.0, simulate_impact=False),
            "check": LiveFleet("platform-maintenance", time_scale=2.0),
            "post": LiveFleet("platform-maintenance", time_scale=2.0),
            "faults": LiveFleet("platform-maintenance", time_scale=2.0),
            "waiting": LiveFleet("platform-maintenance", time_scale=30.0),
        }
        for live in self.fleets.values():
            live.wait_for_events()
        self.truth = {name: live.truth()[0] for name, live in self.fleets.items()}
        self.fleets["faults"].fault(FAULTS_VM, *RETRIED)
        self.fleets["faults"].fault(UNUSABLE_VM, {"kind": "malformed_json"})
        self.fleets["faults"].fault(EMPTY_VM, {"kind": "empty_body"})
        self.fleets["post"].fault(self.leader("post"), {"kind": "status", "status": 503, "count": -1,
                                                        "method": "POST"})
        cases = self._cases()
        self.hosts = [host for case in cases.values() for host in case.hosts]
        self.run = play_cases(tmp, cases)

    def leader(self, case: str) -> str:
        return self.truth[case]["resources"][0]

    def host(self, case: str, vm: str) -> str:
        """The inventory name of `vm` of the case's fleet."""
        return f"{case}.{vm}"

    def of(self, case: str, vm: str, task: str) -> Dict[str, Any]:
        return self.run.of(self.host(case, vm), task)

    def _hosts(self, case: str, *vms: str) -> Dict[str, str]:
        return {self.host(case, vm): self.fleets[case].url(vm) for vm in vms}

    def _cases(self) -> Dict[str, Case]:
        leader, other = self.truth["approval"]["resources"]
        cases = {
            "approval": Case(self._hosts("approval", leader, other, "avset-web-vm1"), [
                ("read", info()),
                leader_approves(self.host("approval", leader)),
                ("after", info(previous="{{ r_read }}")),
            ]),
        }
        if OLDEST_PYTHON:  # its absence fails test_both_modules_run_on_the_oldest_supported_target
            cases["oldest"] = Case(self._hosts("oldest", self.leader("oldest")), [
                ("read", info()),
                ("approve", approve(events="{{ r_read.events_for_this_vm }}", wait_for_start=True, poll_interval=0.2)),
                ("after", info(previous="{{ r_read }}")),
            ], host_vars={"ansible_python_interpreter": OLDEST_PYTHON})
        cases.update({
            "check": Case(self._hosts("check", self.leader("check")), [
                ("read", info()),
                ("approve", dict(approve(events="{{ r_read.events_for_this_vm }}"), check_mode=True, diff=True)),
            ]),
            "post": Case(self._hosts("post", self.leader("post")), [
                ("approve", approve(event_ids=[self.truth["post"]["event_id"]], retries=1)),
            ]),
            "retried": Case(self._hosts("faults", FAULTS_VM), [("read", info(timeout=3, first_call_timeout=15))]),
            "unusable": Case(self._hosts("faults", UNUSABLE_VM), [("read", info(retries=1))]),
            "empty": Case(self._hosts("faults", EMPTY_VM), [("read", info())]),
            "options": Case(self._hosts("faults", OPTIONS_VM), [
                ("version", info(api_version="2016-01-01")),
                ("both", approve(event_ids=["x"], events=[{"event_id": "x"}])),
            ]),
            # last: it waits for the document to change by itself
            "waiting": Case(self._hosts("waiting", "avset-web-vm1"), [
                ("read", info()),
                # Whenever the read lands (before the start, during it, after), a later change comes within 180 s.
                ("wait", info(previous="{{ r_read }}", wait_for_change=True, wait_timeout=180, poll_interval=0.2)),
                ("quiet", info(wait_for_change=True, since_incarnation="{{ r_wait.document_incarnation }}",
                               wait_timeout=0.5, poll_interval=0.2)),
            ]),
        })
        return cases

    def close(self) -> None:
        for live in self.fleets.values():
            live.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    built = Shared(tmp_path_factory.mktemp("modules"))
    try:
        yield built
    finally:
        built.close()


@pytest.mark.core_line
def test_the_shared_run_fails_only_the_tasks_meant_to_fail(shared: Shared) -> None:
    assert set(shared.run.results) == set(shared.hosts), shared.run.stdout
    failed = {(host, task) for host, results in shared.run.results.items() for task, result in results.items()
              if result is not None and result.get("failed")}
    assert failed == {(shared.host("faults", UNUSABLE_VM), "read"), (shared.host("faults", OPTIONS_VM), "version"),
                      (shared.host("faults", OPTIONS_VM), "both"),
                      (shared.host("post", shared.leader("post")), "approve")}, shared.run.stdout
    assert "Traceback" not in shared.run.stdout + shared.run.stderr


@pytest.mark.core_line
def test_one_approval_from_the_leader_starts_the_event_for_every_listed_vm(shared: Shared) -> None:
    truth = shared.truth["approval"]
    leader, other = truth["resources"]
    approved = shared.of("approval", leader, "approve")
    assert approved["approved"] == [truth["event_id"]] and approved["changed"]
    (entry,) = shared.fleets["approval"].approvals()
    assert (entry["vm"], entry["event_ids"], entry["in_resources"]) == (leader, [truth["event_id"]],
                                                                       {truth["event_id"]: True})
    for vm in (other, "avset-web-vm1"):  # every VM of the set sees it Started
        after = shared.of("approval", vm, "after")
        assert after["events"][0]["event_status"] == "Started"
        assert [e["event_id"] for e in after["diff"]["started"]] == [truth["event_id"]]


@pytest.mark.core_line
def test_check_mode_sends_nothing_but_reports_what_it_would(shared: Shared) -> None:
    result = shared.of("check", shared.leader("check"), "approve")
    assert result["changed"] is True and len(result["approved"]) == 1
    assert "would be approved" in result["diff"]["after"]
    assert shared.fleets["check"].approvals() == []
    assert shared.fleets["check"].truth()[0]["status"] == "Scheduled"


def test_a_retryable_fault_is_retried_then_succeeds(shared: Shared) -> None:
    result = shared.of("faults", FAULTS_VM, "read")
    assert result["failed"] is False and result["document_incarnation"] >= 2, result
    assert FAULTS_VM not in shared.fleets["faults"].sim.faults.pending(), "every fault was met"


@pytest.mark.core_line
def test_an_unrecoverable_answer_fails_with_one_sentence_and_no_traceback(shared: Shared) -> None:
    result = shared.of("faults", UNUSABLE_VM, "read")
    assert result["failed"] is True and "IMDS answered with malformed JSON" in result["msg"], result["msg"]
    assert "Traceback" not in json.dumps(result) and "\n" not in result["msg"]
    assert "Traceback" not in shared.run.stdout + shared.run.stderr


@pytest.mark.core_line
def test_empty_body_is_no_document_yet_with_a_warning(shared: Shared) -> None:
    result = shared.of("faults", EMPTY_VM, "read")
    assert result["failed"] is False and result["document_available"] is False
    assert result["document_incarnation"] is None and result["events"] == []
    assert any("no Scheduled Events document yet" in w for w in result["warnings"])


@pytest.mark.core_line
def test_bad_options_fail_before_anything_is_sent(shared: Shared) -> None:
    version, both = (shared.of("faults", OPTIONS_VM, task)["msg"] for task in ("version", "both"))
    assert version.startswith("api_version '2016-01-01' is not a Scheduled Events api-version")
    assert "mutually exclusive" in both
    assert shared.fleets["faults"].approvals() == []


@pytest.mark.core_line
def test_a_failed_approval_post_says_what_was_attempted(shared: Shared) -> None:
    event_id = shared.truth["post"]["event_id"]
    result = shared.of("post", shared.leader("post"), "approve")
    assert result["failed"] is True and result["attempted"] == [event_id] and result["approved"] == []
    assert "may or may not have reached IMDS" in result["msg"] and "HTTP 503" in result["msg"]
    assert shared.fleets["post"].approvals() == []  # the fault answered before the simulator's engine saw the POST


def test_wait_for_change_returns_when_the_incarnation_moves(shared: Shared) -> None:
    waited = shared.of("waiting", "avset-web-vm1", "wait")
    assert waited["waited"]["changed"] is True
    assert waited["document_incarnation"] > shared.of("waiting", "avset-web-vm1", "read")["document_incarnation"]
    assert waited["diff"]["changed"] is True
    quiet = shared.of("waiting", "avset-web-vm1", "quiet")
    # Unchanged at the timeout is not an error. (How many polls fit in 0.5 s depends on the machine's load; the
    # polling loop itself is a unit test on a virtual clock.)
    assert quiet["failed"] is False and quiet["waited"]["changed"] is False and quiet["waited"]["polls"] >= 1


@pytest.mark.core_line
def test_both_modules_run_on_the_oldest_supported_target(shared: Shared) -> None:
    # Required, not skipped: this image's pyenv has 3.8 and 3.9; a missing one is a failure to see.
    assert OLDEST_PYTHON, f"no Python {OLDEST_TARGET} interpreter (pyenv or /usr/bin) to act as the oldest target"
    leader = shared.leader("oldest")
    approved = shared.of("oldest", leader, "approve")
    assert approved.get("started") == approved["approved"] != [], (shared.of("oldest", leader, "read"), approved)
    assert shared.of("oldest", leader, "after")["diff"]["started"] != []
    # and every file that runs on a VM compiles there
    sources = [str(p) for p in (Path(__file__).parents[2] / "plugins").glob("module*/*.py")]
    compiled = subprocess.run([OLDEST_PYTHON, "-m", "py_compile", *sources], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
