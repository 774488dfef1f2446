# `make demo`: install what the quickstart needs and run it on this machine.
# `make test`: set everything up and run the test suite but its emulator lane (`make test-vm`);
# CI runs both.
VENV ?= .venv
PY := $(VENV)/bin/python
HASH := $(shell sha256sum pyproject.toml | cut -c1-12)
STAMP := $(VENV)/.installed-dev-$(HASH)
RUN_STAMP := $(VENV)/.installed-run-$(HASH)
RESULTS ?= results
# change points (report --trend, monitor): only Otava's analysis module is used, which needs numpy
# and scipy alone; its own requirements pin numpy==2.2.0 and pull cloud SDKs for its CLI, hence no deps
OTAVA := apache-otava>=0.8,<0.9

.PHONY: demo test test-vm setup demo-setup deps demo-deps bench clean

# the JUnit schema Jenkins' JUnit plugin publishes (junit-10.xsd), as pytest's source distribution
# carries it: the tests validate jitterlab's JUnit export against it (tests/report/test_engine_formats.py)
JUNIT_XSD := $(VENV)/share/jitterlab-tests/junit-10.xsd

setup: deps $(STAMP) $(JUNIT_XSD)

demo-setup: demo-deps $(RUN_STAMP)

deps:
	@scripts/install-deps test

demo-deps:
	@scripts/install-deps demo

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps '$(OTAVA)'
	rm -f $(VENV)/.installed-* && touch $@ $(RUN_STAMP)

$(JUNIT_XSD): $(STAMP)
	rm -rf $(VENV)/share/jitterlab-tests/sdist && mkdir -p $(VENV)/share/jitterlab-tests/sdist
	$(PY) -m pip download -q --no-deps --no-binary :all: -d $(VENV)/share/jitterlab-tests/sdist \
		"pytest==$$($(PY) -c 'import pytest; print(pytest.__version__)')"
	tar -xzOf $(VENV)/share/jitterlab-tests/sdist/pytest-*.tar.gz --wildcards \
		'pytest-*/testing/example_scripts/junit-10.xsd' > $@.part && mv $@.part $@
	rm -rf $(VENV)/share/jitterlab-tests/sdist

$(RUN_STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	$(PY) -m pip install -q --no-deps '$(OTAVA)'
	rm -f $(VENV)/.installed-run-* && touch $@

# The run ends on the summary screen; the report is written after it, quietly, so that the screen
# stays the last thing shown (`jitterlab summary --results $(RESULTS)` shows it again).
demo: demo-setup
	@echo "measuring examples/quickstart.toml (about 3 minutes); the figures go to $(RESULTS)/report.html"
	$(VENV)/bin/jitterlab run examples/quickstart.toml --results $(RESULTS) || test $$? -eq 1
	@$(VENV)/bin/jitterlab report --results $(RESULTS) --campaign quickstart -o $(RESULTS)/report.html >/dev/null

# Two lanes, both run by CI (.ci/run): `make test`, everything but the tests that boot an emulator
# (a qemu guest or an emulated board: the `vm` marker), on two workers file by file, the longest
# first; `make test-vm`, the emulator lane, two units of about equal length, one on each worker,
# one emulator file at a time per worker (tests/conftest.py names the units).
test: setup
	$(VENV)/bin/ruff check jitterlab tests bench
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --no-loadscope-reorder -m "not vm"
	@echo "the emulator lane (qemu guests, emulated boards, LAVA and labgrid jobs; CI runs it too): make test-vm"

test-vm: setup
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --no-loadscope-reorder -m vm

bench: setup
	$(PY) bench/analysis.py
	$(PY) bench/storage.py
	$(PY) bench/probe_resolution.py
	$(PY) bench/sigrok_decode.py
	$(PY) bench/loads.py
	$(PY) bench/report.py
	$(PY) bench/compare.py
	$(PY) bench/parallel.py
	$(PY) bench/fidelity.py

clean:
	rm -rf $(VENV) build *.egg-info
	$(MAKE) -C jitterlab/programs/c clean
