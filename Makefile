# Two commands from a fresh clone: `make demo` runs the README's demo, `make test` the whole test suite.
# Both install what they need first (once: scripts/install.sh --if-needed skips a complete install).
# The tests run on every core (pytest-xdist; tests/conftest.py groups the work); `make test-fast` leaves out
# the `slow` ones (real models, training runs, subprocesses) for the inner loop.
PYTHON ?= python
TEST_WORKERS ?= auto

.PHONY: install demo test test-fast

install:
	PYTHON=$(PYTHON) bash scripts/install.sh --if-needed

demo: install
	$(PYTHON) -m faithkit score --metric pmi-faith --model smollm2-135m --input examples/demo.jsonl \
		--output demo_scores.jsonl --restart

test: install
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS)

test-fast: install
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) -m "not slow"
