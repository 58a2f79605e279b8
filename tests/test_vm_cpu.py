"""tools/vm_python.py and tools/vm_cpu.py: the simulated VMs' module CPU counted apart from the controller's, and
what a real controller would pay over SSH with pipelining. The wrapper runs for real (no mocks): a script on
stdin and as a file, and an ad-hoc ansible ping through it with pipelining on and off."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.vm_cpu import (
    LOCAL_CONTROLLER_CPU_S_PER_CALL,
    SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL,
    CpuSplit,
    VmCpuLog,
    over_ssh_with_pipelining,
    parse_log,
)

ANSIBLE = Path(sys.executable).parent / "ansible"


def test_the_log_sums_each_calls_module_and_wrapper_cpu_and_leaves_out_a_line_not_yet_ended() -> None:
    found = parse_log("0.250000 0.010000\n0.500000 0.020000\n0.7")
    assert found.calls == 2 and found.cpu_s == pytest.approx(0.78)
    assert parse_log("").calls == 0 and parse_log("").cpu_s == 0.0


def test_the_controller_alone_is_the_tree_less_the_vms_and_over_ssh_trades_each_calls_local_share() -> None:
    split = CpuSplit(raw=60.0, vm=45.0, calls=100)
    assert split.controller == pytest.approx(15.0)
    assert split.over_ssh == pytest.approx(
        15.0 + 100 * (SSH_PIPELINING_CONTROLLER_CPU_S_PER_CALL - LOCAL_CONTROLLER_CPU_S_PER_CALL))
    # the local share is in the controller alone already: adding the SSH cost alone would count it twice
    assert over_ssh_with_pipelining(12.0, 10, ssh_per_call_s=0.5, local_per_call_s=0.2) == pytest.approx(15.0)
    per = split.per_event(4)
    assert (per.raw, per.vm, per.calls, per.controller) == pytest.approx((15.0, 11.25, 25.0, 3.75))
    assert per.over_ssh == pytest.approx(split.over_ssh / 4)


def test_a_split_not_counted_apart_says_so_rather_than_guess() -> None:
    raw_only = CpuSplit(raw=12.0).per_event(3)
    assert raw_only.raw == 4.0 and raw_only.controller is None and raw_only.over_ssh is None


def test_the_wrapper_passes_stdin_stdout_stderr_and_the_exit_code_through_and_logs_the_cpu(tmp_path: Path) -> None:
    log = VmCpuLog(tmp_path / "vm")
    script = tmp_path / "echo.py"
    script.write_text("import sys\nsys.stdout.write(sys.stdin.read().upper())\nsys.stderr.write('to stderr')\n"
                      "sum(range(200000))\nsys.exit(7)\n")
    as_file = subprocess.run([str(log.interpreter), str(script)], input="module on stdin", capture_output=True,
                             text=True, env=dict(os.environ, **log.env), timeout=60, check=False)
    assert (as_file.returncode, as_file.stdout, as_file.stderr) == (7, "MODULE ON STDIN", "to stderr")
    # with pipelining, the module itself arrives on stdin
    piped = subprocess.run([str(log.interpreter)], input="import sys\nprint(sys.argv)\nsys.exit(3)\n",
                           capture_output=True, text=True, env=dict(os.environ, **log.env), timeout=60, check=False)
    assert (piped.returncode, piped.stdout.strip()) == (3, "['']")
    lines = log.path.read_text().splitlines()
    assert len(lines) == 2 and all(float(part) > 0 for line in lines for part in line.split())
    assert log.since(0).calls == 2 and log.since(log.mark()).calls == 0


def test_the_wrapper_logs_nothing_without_its_variable_and_says_how_a_signal_ended_the_child(tmp_path: Path) -> None:
    log = VmCpuLog(tmp_path / "vm")
    env = {k: v for k, v in os.environ.items() if k not in log.env}
    killed = subprocess.run([str(log.interpreter), "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
                            env=env, timeout=60, check=False)
    assert killed.returncode == 128 + 15 and log.path.read_text() == ""


@pytest.mark.parametrize("pipelining", ["False", "True"])
def test_ansible_runs_its_modules_through_the_wrapper_with_pipelining_on_and_off(tmp_path: Path,
                                                                                  pipelining: str) -> None:
    log = VmCpuLog(tmp_path / "vm")
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"vm0": {}, "vm1": {}}, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": str(log.interpreter)}}}))
    run = subprocess.run([str(ANSIBLE), "all", "-i", str(inventory), "-m", "ansible.builtin.ping", "-o"],
                         capture_output=True, text=True, timeout=300, check=False,
                         env=dict(os.environ, ANSIBLE_PIPELINING=pipelining, **log.env))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout.count('"ping": "pong"') == 2
    found = log.since(0)
    assert found.calls == 2 and found.cpu_s > 0
