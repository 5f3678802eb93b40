#!/bin/sh
# Every code block of README.md and docs/*.md, run as written in a fresh `git clone` of this checkout (its
# committed files only; the benchmark data at $FAITHKIT_DATA, else ../shared/data beside this checkout), slow
# blocks included, by tests/test_docs.py. Prints how many blocks there are, which are not run and why, then
# pytest's result for the ones that run. Usage: sh scripts/docs_in_a_fresh_clone.sh [pytest options, e.g. -x]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
git clone --quiet "$here" "$work/faithkit"
export FAITHKIT_DATA="${FAITHKIT_DATA:-$(cd "$here/.." && pwd)/shared/data}"
export PYTHONPATH="$work/faithkit"
cd "$work/faithkit"
python - <<'PY'
from collections import Counter

from tests.test_docs import BLOCKS, RUNS

code = [block for block in BLOCKS if block.lang in RUNS]
skipped = [block for block in code if block.not_run is not None]
print(f"{len(code)} code blocks in README.md and docs/*.md: {len(code) - len(skipped)} run, {len(skipped)} not run")
for reason, count in Counter(block.not_run for block in skipped).most_common():
    print(f"  not run ({count}): {reason}")
PY
python -m pytest -p no:cacheprovider -q -n 0 -m "" tests/test_docs.py \
    -k "python_blocks or bash_blocks or yaml_blocks or every_block_runs_or_says_why" "$@"
