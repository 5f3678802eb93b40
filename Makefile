# Two commands from a fresh clone: `make demo` runs the README's demo, `make test` the whole test suite.
# Both install what they need first (once: scripts/install.sh --if-needed skips a complete install).
PYTHON ?= python

.PHONY: install demo test

install:
	PYTHON=$(PYTHON) bash scripts/install.sh --if-needed

demo: install
	$(PYTHON) -m faithkit score --metric pmi-faith --model smollm2-135m --input examples/demo.jsonl \
		--output demo_scores.jsonl --restart

test: install
	$(PYTHON) -m pytest -q
