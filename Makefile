# The two set-up commands: `make demo` and `make test`. Each creates .venv when needed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-oldest lint bench docs clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,examples,docs,graph,dask,interop]'
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/digits.py

# lint, types, the docs site (strict), the docstring examples, then the suite (which runs
# every example in --quick mode)
test: $(VENV)/.installed
	$(PY) -m ruff check pullback tests bench examples
	$(PY) -m mypy
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet --site-dir site
	$(PY) -m pytest -q -p no:xdist --doctest-modules pullback
	$(PY) -m pytest -q -n 2

# the oldest NumPy pullback supports, in a venv of its own (CI runs it after `make test`)
OLDEST := .venv-oldest

$(OLDEST)/.installed: pyproject.toml
	$(PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install -q --upgrade pip
	$(OLDEST)/bin/python -m pip install -q -e '.[test]' 'numpy==1.26.4'
	touch $@

test-oldest: $(OLDEST)/.installed
	$(OLDEST)/bin/python -m pytest -q -n 2

lint: $(VENV)/.installed
	$(PY) -m ruff check pullback tests bench examples

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

bench: $(VENV)/.bench-installed
	$(PY) bench/run.py

# the documentation site, built in strict mode: a broken link or reference fails the build
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(OLDEST) build site *.egg-info
