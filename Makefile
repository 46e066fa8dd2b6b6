# Two commands for a newcomer: `make run` (demo study) and `make test` (whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast test-changed lint setup setup-test system-deps clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# unbabel-comet's metadata pins transformers<5 and numpy<2: it goes in without its pins (its
# real dependencies are in requirements.txt; services/metrics/comet.py adapts it to transformers 5).
COMET := unbabel-comet==2.2.7
# mistral-common (Voxtral's tokenizer and audio) caps numpy<2.4 on Python <= 3.12 and works with
# the numpy 2.4 here: it goes in without its pins too (its dependencies are in requirements.txt).
MISTRAL_COMMON := mistral-common==1.13.1

setup: $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps $(COMET) $(MISTRAL_COMMON)

# A stamp, as the extra environments have: `make lint` and `make test` both need the test venv, and
# pip's check that nothing is missing takes seconds; a changed requirements file installs again.
setup-test: $(VENV)/.test-installed
$(VENV)/.test-installed: requirements.txt requirements-test.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-test.txt
	$(BIN)/pip install -q --no-deps $(COMET) $(MISTRAL_COMMON)
	touch $@

# Debian/Ubuntu packages the tests use (headless Chromium, espeak-ng, FFmpeg for datasets' audio
# loading through torchcodec) and lint's syntax check of the pages' scripts (Node.js); skipped where
# apt is absent.
system-deps:
	@if command -v apt-get >/dev/null 2>&1; then \
	  if ! command -v chromium >/dev/null 2>&1 || ! command -v espeak-ng >/dev/null 2>&1 || ! command -v ffmpeg >/dev/null 2>&1 \
	     || ! command -v node >/dev/null 2>&1 || [ ! -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    NODE=$$(command -v node >/dev/null 2>&1 || echo nodejs); \
	    $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium espeak-ng sox ffmpeg fonts-dejavu-core $$NODE >/dev/null; \
	  fi; \
	else echo "no apt-get: install Chromium, espeak-ng and Node.js yourself (e.g. brew install --cask chromium; brew install espeak-ng node)"; fi

run: setup
	$(BIN)/python app.py --demo

# The layering contracts (import-linter, pyproject.toml), the types of services and storage (mypy,
# pyproject.toml [tool.mypy]), no cycle between services' packages nor a function-local project
# import (tools/import_graph.py), ruff check and ruff format --check, and `node --check` of the
# pages' scripts (assets/js, each wrapped as the browser runs it: tools/check_scripts.py); CI runs
# this before the tests.
lint: setup-test
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python tools/import_graph.py
	$(BIN)/python tools/check_scripts.py
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# `make test` and `make test-changed` run the tests in TEST_WORKERS pytest-xdist processes, a test
# file to one worker (its module fixtures, an app or a browser, made once), in the order the workers
# collect them (heaviest first: tests/helpers/session.py), not xdist's by test count: 3 on the
# 2-core reference machine, where the app and browser tests wait on their subprocesses much of the
# time (docs/development.md, Running the tests). TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= 3
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The whole suite (CI's command): prints the 15 slowest tests and the suite's wall time, and fails
# past its budget on CI (tests/helpers/session.py).
test: system-deps setup-test
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=15

# The suite without browser tests, tests that launch the app (a subprocess server) and the few
# marked slow (markers: pytest.ini, given by tests/conftest.py); after `make setup-test`. Under two
# minutes on a 2-core machine in TEST_WORKERS processes (100 s; 137 s in one: docs/development.md);
# CI runs `make test`.
test-fast:
	$(BIN)/python -m pytest -m "not browser and not app and not slow" -q $(PYTEST_PARALLEL) --durations=15

# The tests of the packages a change touches (tools/changed_tests.py: the files that differ from the
# merge base with origin/main, or from BASE=<commit>, untracked ones included), in TEST_WORKERS
# processes; FAST=1 leaves out the browser, app and slow tests as test-fast does.
test-changed:
	@files="$$($(BIN)/python tools/changed_tests.py $(if $(BASE),--base $(BASE)))"; \
	if [ -z "$$files" ]; then echo "no test file imports what changed"; \
	else $(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=15 $(if $(FAST),-m "not browser and not app and not slow") $$files; fi

clean:
	rm -rf $(VENV) data .pytest_cache

# DeSTA2 (paper 000) as an OpenAI-compatible server in its own environment: its remote code needs
# transformers 4.x (requirements-desta2.txt). The weights must be in the hub cache beforehand
# (docs/speech-pipeline.md). DESTA2_ARGS, e.g. --port 8004 --api-key-env TRADLAB_KEY_REMOTE.
# tests/test_desta2_server.py runs the server in .venv-desta2 on a tiny DeSTA-like model.
DESTA2_VENV := .venv-desta2
.PHONY: desta2-venv desta2-server
desta2-venv: $(DESTA2_VENV)/.installed
$(DESTA2_VENV)/.installed: requirements-desta2.txt
	@test -x $(DESTA2_VENV)/bin/python || $(PY) -m venv $(DESTA2_VENV)
	$(DESTA2_VENV)/bin/pip install -q --upgrade pip
	$(DESTA2_VENV)/bin/pip install -q -r requirements-desta2.txt
	touch $@
desta2-server: desta2-venv
	HF_HUB_OFFLINE=1 $(DESTA2_VENV)/bin/python tools/desta2_server.py $(DESTA2_ARGS)

# Phi-4-multimodal's tiny twin (tests/test_paper_phi4.py) in its own environment: its processor
# needs torchvision, which needs a torch newer than the app's (requirements-phi4.txt).
PHI4_VENV := .venv-phi4
.PHONY: phi4-venv
phi4-venv: $(PHI4_VENV)/.installed
# A stamp file, not bin/python: that is a link to the system interpreter, which touch would change.
$(PHI4_VENV)/.installed: requirements-phi4.txt
	@test -x $(PHI4_VENV)/bin/python || $(PY) -m venv $(PHI4_VENV)
	$(PHI4_VENV)/bin/pip install -q --upgrade pip
	$(PHI4_VENV)/bin/pip install -q -r requirements-phi4.txt
	touch $@
