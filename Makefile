# Two commands from a fresh clone: `make demo` runs the README's demo, `make test` the test suite's inner loop.
# Both install what they need first (once: scripts/install.sh --if-needed skips a complete install).
# The tests run on every core (pytest-xdist; tests/conftest.py groups the work). `make test` runs every test not marked
# `slow` (280 s of CPU: docs/contributing.md); `make test-slow` runs the slow ones (real models, training runs, browsers,
# subprocesses); CI (.ci/run) runs both, so every test runs there.
PYTHON ?= python
TEST_WORKERS ?= auto

.PHONY: install demo test test-slow

install:
	PYTHON=$(PYTHON) bash scripts/install.sh --if-needed

demo: install
	$(PYTHON) -m faithkit score --metric pmi-faith --model smollm2-135m --input examples/demo.jsonl \
		--output demo_scores.jsonl --restart

test: install
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) -m "not slow"

test-slow: install
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) -m slow
