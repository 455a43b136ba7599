# abbench — every target works on a fresh machine with nothing but Python 3.11+.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
DEMO_STORE := .abbench/abbench.db

.PHONY: demo test test-fast lint bench browser lab clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever the declared dependencies change.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[notebook,test]"
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

## demo: run the embedded demo end to end (offline, no keys); writes reports/demo.html
demo: $(STAMP)
	$(VENV)/bin/abbench demo

## test: the whole test suite, browser tests included (installs Debian's chromium when missing), then
## every notebook cell by cell under nbval against the demo store (made when missing)
test: $(STAMP) browser $(DEMO_STORE)
	$(PY) -m ruff check abbench tests bench
	$(PY) -m ruff format --check abbench tests bench
	$(PY) -m pytest -n 2 --dist loadgroup
	@# A notebook that raises fails CI. loadscope keeps one notebook's cells in one kernel; the notebooks
	@# find the demo store at .abbench/ above notebooks/ (as in `make lab`).
	TQDM_DISABLE=1 $(PY) -m pytest --nbval-lax --nbval-current-env -n 2 --dist loadscope -p no:cacheprovider notebooks/

# The demo store the notebooks open by default (`abbench demo` without its HTML reports).
$(DEMO_STORE): | $(STAMP)
	$(VENV)/bin/abbench demo --no-report --quiet

## test-fast: everything but the slow and browser tests
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not slow and not browser"

lint: $(STAMP)
	$(PY) -m ruff check abbench tests bench
	$(PY) -m ruff format --check abbench tests bench

## browser: Debian's chromium for the real-browser tests (never playwright's own download)
browser:
	@test -x $(CHROMIUM) || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || (echo "could not install chromium: run 'apt-get install chromium' as root" >&2; exit 1)
	@# A CJK font, so Chinese text in screenshots of the notebooks and reports is legible (optional).
	@fc-list :lang=zh 2>/dev/null | grep -q . || (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-zenhei >/dev/null) \
	  || echo "no CJK font installed: Chinese text shows as boxes in browser screenshots (apt-get install fonts-wqy-zenhei)" >&2

## bench: the performance benchmarks, printing their figures
bench: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

## lab: JupyterLab on the notebooks, against the demo store
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks

clean:
	rm -rf .abbench reports/*.html reports/*.ipynb reports/*.png
