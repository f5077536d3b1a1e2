# The two commands of the README, each self-contained on a fresh machine:
#   make demo   the main job on the embedded default (etcd + local Ray): a small failover
#               experiment (examples/experiments/demo.yaml) with its report and plots
#   make test   the test suite (unit, integration on real etcd, end to end with Ray)
# and `make up`: a cluster of 6 hollow nodes running a Deployment, left running.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo up test bench proto lint down

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
	$(BIN)/pytest -q

bench: $(BIN)/kubera
	$(BIN)/kubera bench apiserver

proto: $(BIN)/kubera
	PYTHON=$(BIN)/python scripts/genproto.sh

lint: $(BIN)/kubera
	$(BIN)/ruff check .
	$(BIN)/mypy services actors kubera
