"""tools/bench_ssh.py's parts: the parent pids it reads from /proc, the sshd config it writes, the arithmetic it
reports (the benchmark itself, which starts an sshd, is `make bench-ssh`'s)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.bench_ssh import (
    LOCAL_MODE,
    MODES,
    MODULES,
    Sample,
    children_of,
    local_inventory,
    report,
    rows_of,
    sshd_config,
    stat_parent,
)
from tools.profile_module_floor import Measured


def test_the_parent_pid_is_read_after_the_command_name_whatever_it_holds() -> None:
    assert stat_parent("4242 (ssh: /tmp/cp/bench-0 [mux]) S 1 4242 4242 0 -1") == (4242, 1)
    assert stat_parent("77 (a) b (c)) R 55 77 77 0 -1") == (77, 55)
    stats = ["10 (sshd) S 5 10", "11 (ssh) S 5 11", "12 (python3) R 10 12"]
    assert children_of(5, stats) == [10, 11]
    assert children_of(10, stats) == [12]


def test_the_parent_pid_of_this_process_is_its_parents() -> None:
    assert stat_parent(Path("/proc/self/stat").read_text()) == (os.getpid(), os.getppid())


def test_the_sshd_config_lets_only_the_temp_key_in_and_reads_nothing_of_roots_home(tmp_path: Path) -> None:
    lines = sshd_config(tmp_path, max_startups=50).splitlines()
    assert f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}" in lines
    assert f"HostKey {tmp_path / 'host_ed25519'}" in lines
    assert {"PermitRootLogin prohibit-password", "PasswordAuthentication no", "UsePAM no",
            "ListenAddress 127.0.0.1", "MaxStartups 50", f"SetEnv HOME={tmp_path / 'home'}"} <= set(lines)


def sample(wall: float, cpu: float, vm: float) -> Sample:
    return Sample(Measured("play", wall, cpu), vm)


def test_a_call_with_the_connection_up_is_the_long_play_less_the_one_call_play_and_the_first_less_the_empty() -> None:
    hosts, tasks = 10, 3
    empty = sample(5.0, 2.0, 0.0)
    samples = {}
    for (mode, _env), controller in zip(MODES, (0.5, 0.25, 0.3)):
        for module, _task in MODULES:
            # the first call costs 1.0 (controller) and 0.8 (VM) per host; each further call `controller` and 0.4
            samples[mode, module, 1] = sample(7.0, 2.0 + hosts * 1.0, hosts * 0.8)
            samples[mode, module, tasks] = sample(11.0, 2.0 + hosts * (1.0 + 2 * controller),
                                                  hosts * (0.8 + 2 * 0.4))
    rows = rows_of([(empty, samples), (empty, samples)], hosts, tasks)
    assert [(r.mode, r.module) for r in rows] == [(m, mod) for mod, _ in MODULES for m, _ in MODES]
    default, piped = rows[0], rows[1]
    assert (default.controller_s, default.vm_s, default.wall_s) == pytest.approx((0.5, 0.4, 2.0))
    assert (default.first_controller_s, default.first_vm_s) == pytest.approx((1.0, 0.8))
    assert piped.controller_s == pytest.approx(0.25)
    text = report(rows, [empty], hosts, 20, tasks, "python tools/bench_ssh.py")
    assert f"| {MODES[0][0]} | {MODULES[0][0]} | 0.500 | 0.400 | 2.0 s | 1.000 / 0.800 |" in text
    assert f"- {MODULES[0][0]}: pipelining saves the controller 0.250 CPU-s per host per call (50%), the VM 0.000." \
        in text
    assert [r.controller_s for r in rows if r.mode == LOCAL_MODE] == pytest.approx([0.3, 0.3])
    assert f"- {MODULES[0][0]}: the local connection's controller pays 0.300 CPU-s per host per call, the module's " \
        "process left out; over SSH with pipelining 0.250." in text


def test_the_local_inventory_keeps_each_hosts_own_variables_and_drops_the_ssh_ones() -> None:
    ssh = {"azure_vms": {"hosts": {"vm0": {
        "maintenance_cycle_imds_url": "http://127.0.0.1:1/vm0", "ansible_connection": "ssh", "ansible_port": "22",
        "ansible_ssh_common_args": "-o ControlPath=/tmp/cp/vm0", "ansible_python_interpreter": "/usr/bin/python3"}}}}
    local = local_inventory(ssh, "/work/vm-python")
    assert local == {"azure_vms": {"hosts": {"vm0": {
        "maintenance_cycle_imds_url": "http://127.0.0.1:1/vm0", "ansible_connection": "local",
        "ansible_python_interpreter": "/work/vm-python"}}}}


def test_noise_never_makes_a_cost_negative() -> None:
    empty = sample(5.0, 3.0, 0.5)
    samples = {(mode, module, calls): sample(5.0, 2.0, 0.1) for mode, _ in MODES for module, _ in MODULES
               for calls in (1, 2)}
    (row, *_rest) = rows_of([(empty, samples)], 10, 2)
    assert (row.controller_s, row.vm_s, row.first_controller_s, row.first_vm_s) == (0.0, 0.0, 0.0, 0.0)
