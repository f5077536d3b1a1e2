# The two commands of the README, each self-contained on a fresh machine:
#   make demo   the main job on the embedded default (etcd + local Ray): a small failover
#               experiment (examples/experiments/demo.yaml) with its report and plots
#   make test   the test suite (unit, integration on real etcd, end to end with Ray), with
#               hypothesis's fast profile and the 25 slowest tests listed at the end, on
#               two pytest-xdist workers (WORKERS; a test file stays on one: --dist loadfile)
# and `make up`: a cluster of 6 hollow nodes running a Deployment, left running.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# Two workers (each has its own etcd and Ray head, tests/conftest.py), handed the modules in
# tests/conftest.py's order, the end-to-end ones first (--no-loadscope-reorder keeps it), so
# the short unit modules fill the end of both. `make test WORKERS=0` runs in one process.
WORKERS ?= 2
PYTEST  = $(BIN)/pytest -q --durations=25 -n $(WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: demo up test test-deep bench bench-all proto tables lint down

$(BIN)/kubera: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

demo: $(BIN)/kubera
	$(BIN)/kubera experiment run examples/experiments/demo.yaml --output experiment-results/demo

up: $(BIN)/kubera
	$(BIN)/kubera up --detach --nodes 6
	$(BIN)/kubera apply -f examples/deployment.yaml
	$(BIN)/kubera get nodes -o wide
	$(BIN)/kubera get pods -A -o wide
	@echo "kubera keeps running; stop it with: $(BIN)/kubera down"

down: $(BIN)/kubera
	$(BIN)/kubera down

test: $(BIN)/kubera
	$(PYTEST)

# The same suite with every property run as deep as before the profiles (tests/profiles.py).
test-deep: $(BIN)/kubera
	HYPOTHESIS_PROFILE=deep $(PYTEST)

# The figures of docs/benchmarks.md: `make bench` the headline two (apiserver, SchedulingBasic
# median of 3), `make bench-all` every one of issue 14 (hours at 5,000 nodes). Each scenario
# is an experiment file (examples/experiments/NAME.yaml, `kubera bench NAME`); its output
# directory (results.json, DataItems, report.html) goes in BENCH_OUT.
BENCH_OUT ?= bench-results
SCHED      = $(BIN)/kubera bench scheduling-basic --repeat 3

bench: $(BIN)/kubera
	mkdir -p $(BENCH_OUT)
	$(BIN)/kubera bench apiserver --output $(BENCH_OUT)/apiserver.json
	$(SCHED) --output $(BENCH_OUT)/basic

bench-all: bench
	$(SCHED) --apiservers 2 --output $(BENCH_OUT)/basic-k2
	$(SCHED) --init-pods 5000 --pods 50000 --no-controllers --output $(BENCH_OUT)/basic-50k
	$(SCHED) --workload topology-spread --no-controllers --output $(BENCH_OUT)/topology-spread
	$(SCHED) --workload anti-affinity --no-controllers --output $(BENCH_OUT)/anti-affinity
	$(SCHED) --workload node-affinity --no-controllers --output $(BENCH_OUT)/node-affinity
	$(SCHED) --workload unschedulable --no-controllers --output $(BENCH_OUT)/unschedulable
	$(SCHED) --workload mixed-churn --no-controllers --output $(BENCH_OUT)/mixed-churn
	$(SCHED) --workload preemption --output $(BENCH_OUT)/preemption
	$(BIN)/kubera bench capacity $(BENCH_OUT)/basic $(BENCH_OUT)/basic-k2 \
		--output $(BENCH_OUT)/capacity.json
	$(BIN)/kubera bench nodes --nodes 10000 --pods-per-node 10 --output $(BENCH_OUT)/nodes
	$(BIN)/kubera bench shared-state --output $(BENCH_OUT)/shared-state
	$(BIN)/kubera bench failover --lease-duration 1s --renew-deadline 750ms --retry-period 500ms \
		--output $(BENCH_OUT)/failover
	$(BIN)/kubera bench chaos --output $(BENCH_OUT)/chaos

proto: $(BIN)/kubera
	PYTHON=$(BIN)/python scripts/genproto.sh

# The tables generated from upstream (zero values); run after adding or changing a message.
tables: $(BIN)/kubera
	$(BIN)/python scripts/genzerovalues.py

lint: $(BIN)/kubera
	$(BIN)/ruff check .
	$(BIN)/mypy services actors kubera
