# The two commands a newcomer needs: `make demo` and `make test`.
# Both create the virtual environment they need from the requirement files.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
REQS   := requirements.txt requirements-test.txt
STAMP  := $(VENV)/.installed-$(shell cat $(REQS) pyproject.toml tools/install_requirements.py | cksum | cut -d' ' -f1)

# Python writes its bytecode caches, as it does by default, even where the image sets PYTHONDONTWRITEBYTECODE (this
# one does): uv installs without them, and then every ansible-playbook, notebook kernel and pytest worker compiles
# what it imports again (what that costs: docs/lab/benchmarks.md, the test suite's cost).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo demo-event-driven soak-relay test ansible-test-legs check invariants invariant-mutants sanity units newest-core newest-core-full pytest fault-table soak notebooks bench-cycle bench-analysis bench-month bench-reaction bench-fast-path bench-ssh venv clean

demo: $(STAMP)
	$(PY) tools/demo.py

# The event-driven path: relays on 6 simulated VMs, the real ansible-rulebook (Java 17+), a Reboot and a
# Preempt, printed as a timeline (about two minutes).
demo-event-driven: $(STAMP)
	$(PY) tools/demo_event_driven.py

# Two jobs side by side: pytest on parallel workers (most of its tests wait on simulated clocks), and the
# ansible-test legs one after the other (sanity, units, then the newest-ansible-core leg). Each job's output
# is printed when it ends; every leg runs even if another fails (-k), and any failure fails make test.
# tests/unit runs under ansible-test units, as collection maintainers run it.
test: $(STAMP)
	$(MAKE) --no-print-directory -k -j2 --output-sync=target pytest ansible-test-legs

ansible-test-legs: sanity units newest-core

# The quick tier for the inner loop (aim: under a minute; 73 s on 2 idle cores): unit tests (the pure cycle decisions, parsing, approval,
# locks), the simulator's engine, a slice of the fault model (27 fleet-days), ansible-test's pep8 rule and
# ansible-lint's yaml rules (the sanity and lint failures that most often slip through), the plugins' docs as YAML.
# The simulator's offline mode (days of history, validated line by line: too slow for this tier) is make test's.
check: $(STAMP)
	$(PY) -m pytest -q -n 2 tests/unit tests/simulator/test_engine.py \
	  tests/reliability/test_fault_model.py tests/test_pep8.py tests/test_plugin_docs_yaml.py tests/test_lint_yaml_rules.py

# The whole-system fault model over 10,000 simulated fleet-days on every core, judged by what happened to the
# VMs (docs/lab/reliability.md; about 4 CPU-hours, 2 hours on 2 idle cores). INVARIANT_FLEET_DAYS=... for another
# number. Resumable: finished fleet-days are journaled under build/invariants/ per version of the code, so a run
# stopped part-way goes on where it stopped when started again.
INVARIANT_FLEET_DAYS ?= 10000
invariants: $(STAMP)
	$(PY) tools/fault_model_run.py --fleet-days $(INVARIANT_FLEET_DAYS) --resume

# Each safety fix reverted in turn, in a scratch copy: the fault model must catch every one (about 30 minutes on 2
# idle cores; what each run caught: docs/lab/reliability.md).
invariant-mutants: $(STAMP)
	$(PY) tools/invariant_mutants.py

sanity: $(STAMP)
	$(PY) tools/run_ansible_test.py sanity

units: $(STAMP)
	$(PY) tools/run_ansible_test.py units

# Sanity, unit and module tests again on the newest ansible-core, in .venv-core-newest on Python 3.12+;
# skipped, with the reason printed, where no such interpreter exists.
newest-core:
	$(PYTHON) tools/newest_core_leg.py

newest-core-full:
	NEWEST_CORE_FULL=1 $(PYTHON) tools/newest_core_leg.py

# Everything but tests/unit (`make units` runs it under ansible-test; `make check` under plain pytest),
# on 4 workers.
pytest: $(STAMP)
	$(PY) -m pytest -n 4 --dist loadgroup --ignore=tests/unit

# Only the fault matrix (part of `make test`), which rewrites docs/lab/fault-matrix.md.
fault-table: $(STAMP)
	$(PY) -m pytest tests/reliability/test_fault_matrix.py

# The cycle playbook started every minute for 30 minutes against 50 simulated VMs (a busy fleet-mix at time
# scale 1): events missed, prepare/recover coverage, reaction latency, runs that overran the minute, controller
# memory; figures to docs/lab/soak.md. Not part of `make test`. SOAK_ARGS="--minutes 5 --vms 12" for a short run.
soak: $(STAMP)
	$(PY) tools/soak.py $(SOAK_ARGS)

# The event-driven path for 30 minutes on 200 simulated VMs (relays + ansible-rulebook, fleet-mix): missed
# events, recover coverage, reaction, memory of relays and rulebook; figures to docs/lab/soak.md.
# SOAK_RELAY_ARGS="--minutes 5 --vms 20" for a short run.
soak-relay: $(STAMP)
	$(PY) tools/soak_relay.py $(SOAK_RELAY_ARGS)

# JupyterLab on the analysis notebooks; they read the last `make demo` history if there is one,
# else the shipped (simulated) sample. SCHEDULED_EVENTS_HISTORY=path/or/glob picks another.
notebooks: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/

# load_history + event_lifecycles vs a plain parse of the same 1,000,000-observation file, the same for a
# change-only history, then the month (bench-month).
bench-analysis: $(STAMP)
	$(PY) tools/bench_analysis.py --observations 1000000 --rounds 3
	$(PY) tools/bench_analysis.py --change-only --busier 40 --observations 3000000 --rounds 3
	$(PY) tools/bench_month.py

# A month of one-second relay histories of 2,000 VMs (generated once into build/bench-month/, about 7
# minutes): plain parse, partition, lifecycles part by part and whole, each notebook; seconds and peak memory.
bench-month: $(STAMP)
	$(PY) tools/bench_month.py

# Quiet-path cost of a cycle vs one ansible.builtin.uri GET per host (100 hosts; minutes), then a cycle over
# 200 VMs with one fault domain in maintenance, this checkout vs BENCH_BASELINE (before scheduled_events_claim
# and the lock folded into the saves; about 15 minutes).
BENCH_BASELINE ?= 821289b
bench-cycle: $(STAMP)
	$(PY) tools/bench_quiet_cycle.py --hosts 100 --rounds 3
	$(PY) tools/bench_busy_cycle.py --hosts 200 --rounds 3 --baseline $(BENCH_BASELINE)

# Event-driven reaction (relays + ansible-rulebook) at 50 and 200 simulated VMs by the event's shape (a whole
# fault domain, one VM, a burst of Spot evictions), and the cycle started every minute on 50 VMs, without agents,
# in one run; figures to docs/lab/benchmarks.md (needs Java 17+). BENCH_REACTION_ARGS="--sizes 6 --events 1 --burst 2
# --scheduled-size 6 --no-control-plane --no-event-grid --report ''" for a quick try (a few minutes).
# Then the relay's fast path on 100 Spot VMs: how soon each VM's local command starts after its Preempt appears.
bench-reaction: $(STAMP)
	$(PY) tools/bench_reaction.py $(BENCH_REACTION_ARGS)
	$(MAKE) --no-print-directory bench-fast-path

# The relay's fast path alone (about six minutes): 100 Spot VMs, relays polling 1 Hz with a local command, one
# Preempt each with 2-30 s notice; figures to docs/lab/benchmarks.md. BENCH_FAST_PATH_ARGS="--vms 6 --window 15".
BENCH_FAST_PATH_ARGS ?= --vms 100 --report docs/lab/benchmarks.md
bench-fast-path: $(STAMP)
	$(PY) tools/bench_fast_path.py $(BENCH_FAST_PATH_ARGS)

# Controller and VM CPU per host per module call over real SSH, Ansible's defaults beside pipelining (docs/lab/benchmarks.md).
BENCH_SSH_ARGS ?= --hosts 20 --forks 20 --tasks 4 --rounds 2
bench-ssh: $(STAMP)
	$(PY) tools/bench_ssh.py $(BENCH_SSH_ARGS)

venv: $(STAMP)

$(STAMP):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed (ansible-core 2.19)"' \
	  || { echo "make: $(PYTHON) is older than Python 3.11; set PYTHON=/path/to/python3.11"; exit 1; }
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	# The requirements, and the repository's Python packages (event_analysis, imds_simulator; pyproject.toml),
	# editable, with the notebooks' extra: importable from anywhere, notebooks' kernels included, as analysts
	# install them. With uv when it can (minutes faster than pip), else pip: tools/install_requirements.py.
	$(PY) tools/install_requirements.py $(addprefix -r ,$(REQS)) -e '.[notebooks]'
	touch $@

clean:
	rm -rf $(VENV) .venv-core-newest .pytest_cache .hypothesis
