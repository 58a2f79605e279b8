"""The simulated VMs' Python, for the benchmarks only: runs the real interpreter as its child with the same
arguments, stdin, stdout and stderr, exits with its exit code, and appends one line to the file that
$BENCH_VM_CPU_LOG names: the child's CPU-seconds (user + system, from os.wait4, its own children included) and its
own. The simulated VMs are local-connection hosts, so a module's process would otherwise count as the
controller's; on a real VM it runs on the VM (tools/vm_cpu.py reads the log and splits the controller's CPU).

Run as `python -S tools/vm_python.py ...` (tools/vm_cpu.py writes the launcher an inventory names): the real
interpreter is the one that runs this file, started without -S. Imports nothing but os, sys and time (built into
the interpreter), so that its own start-up, which counts as the VM's, stays small; its own CPU is read with
time.process_time (nanoseconds), not os.times (clock ticks: 10 ms, about its whole start-up). Works with pipelining on (the module arrives on stdin) and off
(its path is an argument).
"""
import os
import sys
import time

LOG_VARIABLE = "BENCH_VM_CPU_LOG"


def run(argv: list) -> tuple:
    """Run the real interpreter with `argv`; -> (its wait status, its CPU-s, this process's CPU-s)."""
    child = os.fork()
    if child == 0:
        try:
            os.execv(sys.executable, [sys.executable] + list(argv))
        finally:
            os._exit(127)  # as a shell does for a command it cannot run
    _, status, usage = os.wait4(child, 0)
    return status, usage.ru_utime + usage.ru_stime, time.process_time()


def log(path: str, child_cpu: float, own_cpu: float) -> None:
    """One line per call, in one write to a file opened for appending: concurrent calls never mix their lines."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, ("%.6f %.6f\n" % (child_cpu, own_cpu)).encode())
    finally:
        os.close(fd)


def exit_code(status: int) -> int:
    """The child's exit code, or 128 + the signal that ended it (as a shell reports it)."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def main() -> int:
    status, child_cpu, own_cpu = run(sys.argv[1:])
    path = os.environ.get(LOG_VARIABLE)
    if path:
        log(path, child_cpu, own_cpu)
    return exit_code(status)


if __name__ == "__main__":
    sys.exit(main())
