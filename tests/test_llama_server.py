"""``faithkit candidates`` + rerank against a real serving engine: llama.cpp's OpenAI-compatible server
(llama-cpp-python[server], the ``serve`` extra) on the SmolLM2 GGUF that the offline model ships.

The server runs in its own process on a free port of 127.0.0.1 for this module's tests, started once and always
stopped. Two claims: the greedy candidate is llama.cpp's own greedy completion of faithkit's prompt (llama.cpp run
in this process on the same GGUF and token ids), and the reranked choice is the ``rerank`` strategy's on the same
candidates. (Seeded samples asked again of llama-cpp-python 0.3.36's server came back different: it does not make
a request's seed reproducible, so a resumed run against it re-draws only the missing rows, as any engine.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from faithkit.data import read_results
from faithkit.decoding.inputs import response_text
from faithkit.prompts import CHAT_TEMPLATE

from tests.cli.helpers import free_port, run_main, write_jsonl

llama_cpp = pytest.importorskip("llama_cpp", reason="llama.cpp's server is the serve extra: pip install -e .[serve]")

ROWS = [
    {"id": "wow-1", "document": "The Eiffel Tower is 330 metres tall and was finished in 1889.", "history": ["How tall is the Eiffel Tower?"]},
    {"id": "wow-2", "document": "Apples bloom in spring; the fruit ripens in autumn.", "history": ["Hi!", "Hello! Ask me about apples.", "When are apples ripe?"]},
    {"id": "wow-3", "document": "Jazz began in New Orleans in the late 19th century.", "history": ["Where did jazz start?"]},
    {"id": "wow-4", "document": "The Nile is about 6,650 km long and flows north into the Mediterranean.", "history": ["Which way does the Nile flow?"]},
]  # fmt: skip
N, NEW_TOKENS = 3, 16
PURE = ("--extra-body", '{"repeat_penalty": 1.0}')  # the server's default 1.1 would change even greedy responses
READY_SECONDS = 600  # about 5 s on an idle machine; minutes when the machine is shared


def _gguf() -> str:
    from faithkit.serving.models import OFFLINE_MODELS

    return str(OFFLINE_MODELS["smollm2-135m"].gguf_path())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """llama.cpp's server on a free port; its base URL once it answers GET /v1/models. Stopped whatever happens."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"  # a file: a full pipe would stall the server
    handle = log.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", _gguf(), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "2048", "--n_threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=handle,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp's server stopped with status {process.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server did not answer within {READY_SECONDS} s")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        handle.close()


@pytest.fixture(scope="module")
def served(server, tmp_path_factory):
    """``faithkit candidates --rerank-output`` over the rows: the files it wrote."""
    folder = tmp_path_factory.mktemp("served")
    rows = write_jsonl(folder / "rows.jsonl", ROWS)
    cands, picks = folder / "cands.jsonl", folder / "picks.jsonl"
    code = run_main(
        "candidates", "--server", server, "--model", "smollm2-135m", "--input", rows, "--output", cands,
        "--prompt", "text", "--n", N, "--temperature", "1.0", "--top-p", "0.95", "--seed", "0",
        "--max-new-tokens", NEW_TOKENS, "--concurrency", "2", "--rerank-output", picks, *PURE,
    )  # fmt: skip
    assert code == 0
    return {"rows": rows, "candidates": read_results(cands), "picks": read_results(picks)}


def test_the_greedy_candidate_is_llama_cpps_own_greedy_completion(served, smollm2):
    _, tokenizer = smollm2
    llm = llama_cpp.Llama(model_path=_gguf(), n_ctx=2048, n_threads=1, verbose=False)
    for row, record in zip(ROWS, served["candidates"], strict=True):
        ids = CHAT_TEMPLATE.context(tokenizer, row["document"], row["history"]).ids
        text = tokenizer.decode(ids)
        # the server reads faithkit's prompt text back as faithkit's token ids
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == ids
        own = llm.create_completion(prompt=ids, max_tokens=NEW_TOKENS, temperature=0.0)["choices"][0]["text"]
        assert record["greedy"] == response_text(own, CHAT_TEMPLATE)
        assert record["greedy"]
        assert len(record["responses"]) == N and len(set(record["responses"])) > 1  # seeded samples differ


def test_the_reranked_choice_is_the_rerank_strategys_on_the_same_candidates(served, smollm2):
    from faithkit.decoding.rerank import Rerank, rerank
    from faithkit.generation.rerank import Judges

    model, tokenizer = smollm2
    candidates = served["candidates"]
    choices = rerank(
        Rerank(n=N),
        Judges(model, tokenizer),
        [r["document"] for r in ROWS],
        [r["history"] for r in ROWS],
        [c["greedy"] for c in candidates],
        [c["responses"] for c in candidates],
    )
    picks = served["picks"]
    assert [p["id"] for p in picks] == [r["id"] for r in ROWS]
    assert [p["response"] for p in picks] == [choice.response for choice in choices]
    assert [p["candidate"] for p in picks] == [choice.index for choice in choices]  # as scores: 0 is the greedy
    for pick, choice in zip(picks, choices):
        assert pick["scores"] == pytest.approx(choice.scores, abs=1e-5)


@pytest.mark.slow
def test_llm_judge_scores_rows_with_the_served_models_logprobs(server, tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{**row, "response": response} for row, response in zip(ROWS, ("It is 330 metres tall.", "In winter.", "Jazz began in Paris."))],
    )  # fmt: skip
    output = tmp_path / "judged.jsonl"
    code = run_main("score", "--metric", "llm-judge", "--server", server, "--input", rows, "--output", output)
    assert code == 0
    records = read_results(output)
    assert [r["id"] for r in records] == [r["id"] for r in ROWS[:3]]
    for record in records:
        assert 0 <= record["llm_judge"] <= 1
        assert sum(record["answer_probs"].values()) == pytest.approx(1)  # llama.cpp's server returns logprobs
    meta = json.loads((tmp_path / "judged.jsonl.meta.json").read_text())
    [served] = [entry["id"] for entry in json.load(urllib.request.urlopen(f"{server}/models"))["data"]]
    assert meta["metric_options"] == {"served_model": served}
