# specdec-repro: build / reproduce / test entry points (GNU make).
#
#   make install      create .venv, install pinned deps + this package, register the kernel
#   make reproduce    execute notebooks/[0-9]*.ipynb with papermill (PROFILE=tiny by default)
#   make test         unit tests, then nbval on the committed notebooks
#
# Everything Jupyter/IPython/matplotlib/HF would normally write to $HOME is
# redirected into the checkout (.cache/, .venv/share/jupyter).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PY      ?= python3
VENV    = .venv
KERNEL  = specdec
PROFILE ?= tiny

STAMP      = $(VENV)/.installed
CACHE_DIRS = .cache/ipython .cache/jupyter-runtime .cache/jupyter-config \
             .cache/matplotlib .cache/huggingface

# Keep the user's home untouched and the run deterministic / offline.
export IPYTHONDIR                     = $(CURDIR)/.cache/ipython
export JUPYTER_RUNTIME_DIR            = $(CURDIR)/.cache/jupyter-runtime
export JUPYTER_DATA_DIR               = $(CURDIR)/.venv/share/jupyter
export JUPYTER_CONFIG_DIR             = $(CURDIR)/.cache/jupyter-config
export MPLCONFIGDIR                   = $(CURDIR)/.cache/matplotlib
export HF_HOME                        = $(CURDIR)/.cache/huggingface
export HF_HUB_OFFLINE                 = 1
export TRANSFORMERS_OFFLINE           = 1
export HF_DATASETS_OFFLINE            = 1
export PYTHONHASHSEED                 = 0
export TOKENIZERS_PARALLELISM         = false
export PYDEVD_DISABLE_FILE_VALIDATION = 1

.PHONY: help install reproduce test models models-cos models-multilingual models-tabed lab clean-results

help:
	@echo "Targets:"
	@echo "  install        create $(VENV), pip install -r requirements.txt + -e ., register kernel '$(KERNEL)'"
	@echo "  reproduce      run notebooks/[0-9]*.ipynb with papermill (PROFILE=$(PROFILE))"
	@echo "  test           pytest tests/, then nbval (--nbval-lax) on notebooks/"
	@echo "  models         retrain the tiny model zoo (slow)"
	@echo "  models-cos / models-multilingual / models-tabed   retrain the CoS, multilingual, TABED zoos"
	@echo "  lab            start JupyterLab in notebooks/"
	@echo "  clean-results  rm -rf results/\$$PROFILE"
	@echo "Variables: PY=$(PY) PROFILE=$(PROFILE)"

$(STAMP): requirements.txt pyproject.toml | $(CACHE_DIRS)
	[ -x $(VENV)/bin/python ] || $(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -r requirements.txt
	$(VENV)/bin/pip install --no-deps -e .
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (specdec)"
	touch $@

# order-only: recreated if .cache/ is wiped, without forcing a reinstall
$(CACHE_DIRS):
	mkdir -p $@

install: $(STAMP)

reproduce: install
	$(VENV)/bin/python scripts/run_notebooks.py --profile $(PROFILE) --kernel $(KERNEL)

# nbval 0.11 rejects --current-env together with --nbval-kernel-name, so the
# notebooks run on the registered kernel only. --ignore-glob keeps pytest from
# collecting anything but the .ipynb files under notebooks/.
# nbval runs the notebooks with results/ and figures/ redirected to an empty folder, so every checked
# number is recomputed (not read back from the committed results) and must match the committed outputs.
test: install
	MPLBACKEND=agg $(VENV)/bin/python -m pytest tests
	rm -rf .cache/nbval-output
	SPECDEC_OUTPUT_DIR=$(CURDIR)/.cache/nbval-output MPLBACKEND=agg $(VENV)/bin/python -m pytest --nbval-lax --nbval-sanitize-with nbval_sanitize.cfg --nbval-kernel-name $(KERNEL) --ignore-glob='notebooks/*.py' notebooks

models: install
	$(VENV)/bin/python -m specdec.zoo.training
	$(VENV)/bin/python -m specdec.zoo.quality

# The CoS and multilingual zoos: data step here (needs the corpus sources), training on any device (a GPU
# takes minutes; scripts/device_runs.sh is what ran on one). Weights land in data/models/.
models-cos: install
	$(VENV)/bin/python -m specdec.cos.train all --out data/models

models-multilingual: install
	$(VENV)/bin/python -m specdec.multilingual.train all --out data/models

models-tabed: install
	$(VENV)/bin/python -m specdec.tabed.train all --out data/models

lab: install
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

clean-results:
	rm -rf results/$(PROFILE)
