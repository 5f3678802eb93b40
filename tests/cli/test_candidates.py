"""``faithkit candidates`` against a server that answers as OpenAI's API does, and against the ways servers fail.

The server here is tests/cli/fake_engine.py (a real engine, llama.cpp's server, is in tests/test_llama_server.py):
its replies name the prompt, whether the request was greedy and the seed, so a test sees what was asked.
"""

import json
from pathlib import Path

import pytest

from faithkit.data import read_results
from faithkit.generation.candidates import request_seeds
from faithkit.prompts import DEFAULT_TEMPLATE

from .fake_engine import FakeEngine, reply_text
from .helpers import write_jsonl

ROWS = [
    {"id": f"r{i}", "document": f"Apples number {i} grow on tall trees.", "history": ["Tell me about apples.", f"{i}?"]}
    for i in range(8)
]
N = 2


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


def _candidates(url, model_folder, rows, output, *extra):
    return ["candidates", "--server", url, "--model", model_folder, "--input", rows, "--output", output], [
        "--n",
        str(N),
        "--max-new-tokens",
        "5",
        "--retries",
        "1",
        *extra,
    ]


def _run(faithkit, url, model_folder, rows, output, *extra):
    head, tail = _candidates(url, model_folder, rows, output, *extra)
    return faithkit(*head, *tail)


def test_each_row_gets_the_greedy_response_and_n_seeded_samples_of_faithkits_own_prompt(
    faithkit, model_folder, gpt2_tokenizer, rows, tmp_path
):
    output = tmp_path / "cands.jsonl"
    with FakeEngine() as fake:
        run = _run(faithkit, fake.url, model_folder, rows, output, "--seed", "3", "--temperature", "0.7")
    assert run.code == 0, run.err
    records = read_results(output)
    assert [r["id"] for r in records] == [r["id"] for r in ROWS]
    for row, record in zip(ROWS, records):
        prompt = DEFAULT_TEMPLATE.context(gpt2_tokenizer, row["document"], row["history"]).ids
        assert record["greedy"] == reply_text(prompt, 0, 0).strip()
        assert record["responses"] == [reply_text(prompt, 0.7, seed).strip() for seed in request_seeds(3, row["id"], N)]
    asked = fake.requests
    assert len(asked) == len(ROWS) * (N + 1)
    assert {(r["max_tokens"], r["model"]) for r in asked} == {(5, "fake-model")}
    assert sorted({r["temperature"] for r in asked}) == [0, 0.7]


def test_a_rerun_asks_only_for_the_rows_not_yet_written_and_other_settings_are_refused(
    faithkit, model_folder, rows, tmp_path
):
    whole, stopped = tmp_path / "whole.jsonl", tmp_path / "stopped.jsonl"
    with FakeEngine() as fake:
        assert _run(faithkit, fake.url, model_folder, rows, whole).code == 0
    # the server dies after 7 answers: the first chunk of 2 rows (6 requests) is written, the second is not
    with FakeEngine("crash", answers=7) as crashing:
        run = _run(faithkit, crashing.url, model_folder, rows, stopped, "--chunk-size", "2", "--concurrency", "1")
    assert run.code == 2
    assert len(run.error_lines) == 1 and "cannot connect" in run.error_lines[0], run.err
    assert "Traceback" not in run.err
    assert [r["id"] for r in read_results(stopped)] == ["r0", "r1"]
    with FakeEngine() as restarted:  # another port: the server's address is no part of the job
        run = _run(faithkit, restarted.url, model_folder, rows, stopped, "--chunk-size", "2")
        assert run.code == 0, run.err
        assert len(restarted.requests) == 6 * (N + 1)
        again = _run(faithkit, restarted.url, model_folder, rows, stopped, "--temperature", "0.5")
    assert read_results(stopped) == read_results(whole)  # every id once, as the uninterrupted run wrote them
    assert again.code == 2 and "temperature" in again.error_lines[0], again.err


@pytest.mark.parametrize(
    ("fake", "extra", "said"),
    [
        (
            {"behaviour": "slow", "delay": 2.0},
            ("--timeout", "0.3"),
            "no whole reply within --timeout 0.3 s (connecting and the whole reply), after 1 retries",
        ),
        ({"behaviour": "malformed"}, (), "the reply is not OpenAI's"),
        ({"behaviour": "alien"}, (), "the reply is not OpenAI's (no choices[0] text in a completions reply)"),
        ({"key": "the-right-key"}, ("--api-key", "sekret-4711"), "the server refused the API key (HTTP 401)"),
        ({}, ("--served-model", "llama-70b"), "does not serve the model 'llama-70b'; it serves fake-model"),
    ],
    ids=["slow-past-timeout", "malformed-json", "not-openai", "wrong-key", "wrong-model"],
)
def test_a_bad_server_is_one_error_line_and_status_2(faithkit, model_folder, rows, tmp_path, fake, extra, said):
    output = tmp_path / "cands.jsonl"
    with FakeEngine(**fake) as server:
        run = _run(faithkit, server.url, model_folder, rows, output, *extra)
    assert run.code == 2
    assert len(run.error_lines) == 1 and said in run.error_lines[0], run.err
    assert "Traceback" not in run.err
    written = "".join(path.read_text() for path in tmp_path.glob("cands.jsonl*") if path.is_file())
    assert "sekret-4711" not in run.err + run.out + written


def test_a_server_that_is_down_is_one_error_line(faithkit, model_folder, rows, tmp_path):
    server = FakeEngine()
    server.stop()  # its port, closed
    run = _run(faithkit, server.url, model_folder, rows, tmp_path / "cands.jsonl")
    assert run.code == 2
    assert run.error_lines == [
        f"error: {server.url}: listing its models (GET /models): cannot connect, after 1 retries; "
        "start the server or fix --server (e.g. http://127.0.0.1:8000/v1)"
    ]


def test_500_then_200_is_retried_to_the_same_candidates(faithkit, model_folder, rows, tmp_path):
    calm, flaky = tmp_path / "calm.jsonl", tmp_path / "flaky.jsonl"
    with FakeEngine() as server:
        assert _run(faithkit, server.url, model_folder, rows, calm).code == 0
    with FakeEngine("flaky", failures=1) as server:
        run = _run(faithkit, server.url, model_folder, rows, flaky, "--concurrency", "1")
        assert len(server.requests) == len(ROWS) * (N + 1) + 1  # the failed one, asked again
    assert run.code == 0, run.err
    assert read_results(flaky) == read_results(calm)


def test_the_api_key_goes_to_the_server_and_nowhere_else(faithkit, model_folder, rows, tmp_path, monkeypatch):
    output = tmp_path / "cands.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", "sekret-0815")
    with FakeEngine(key="sekret-0815") as server:
        head, tail = _candidates(server.url, model_folder, rows, output)
        run = faithkit("--verbose", *head, *tail)
    assert run.code == 0, run.err
    written = "".join(path.read_text() for path in tmp_path.iterdir() if path.is_file())
    assert "sekret-0815" not in run.err + run.out + written
    assert json.loads((tmp_path / "cands.jsonl.meta.json").read_text())["served_model"] == "fake-model"
    record = json.loads((tmp_path / "cands.jsonl.provenance.json").read_text())["provenance"]
    assert record["models"]["engine"] == {"served_model": "fake-model", "server": server.url}
    assert record["models"]["tokenizer"]["name"] == str(Path(model_folder).resolve())


def test_chat_endpoint_sends_the_chat_layouts_messages(faithkit, rows, tmp_path, tiny_llama):
    model, tokenizer = tiny_llama
    folder = tmp_path / "llama"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    output = tmp_path / "cands.jsonl"
    with FakeEngine() as server:
        run = _run(faithkit, server.url, str(folder), rows, output, "--endpoint", "chat", "--concurrency", "1")
        bodies = server.requests  # one request at a time: in the rows' order
    assert run.code == 0, run.err
    from faithkit.prompts import CHAT_TEMPLATE

    expected = [CHAT_TEMPLATE.messages(row["document"], row["history"]) for row in ROWS]
    assert len(bodies) == len(ROWS) * (N + 1)  # requests arrive in any order (--concurrency)
    assert {json.dumps(body["messages"]) for body in bodies} == {json.dumps(messages) for messages in expected}
    assert read_results(output)[0]["greedy"] == reply_text(expected[0], 0, 0).strip()


def test_rerank_output_is_faithkit_reranks_choice_on_the_same_candidates(faithkit, model_folder, rows, tmp_path):
    cands, both, alone = tmp_path / "cands.jsonl", tmp_path / "both.jsonl", tmp_path / "alone.jsonl"
    with FakeEngine() as server:
        run = _run(faithkit, server.url, model_folder, rows, cands, "--rerank-output", both, "--fluency-tolerance", "3")
    assert run.code == 0, run.err
    run = faithkit(
        "rerank", "--model", model_folder, "--input", rows, "--candidates", cands, "--output", alone,
        "--fluency-tolerance", "3", "--max-new-tokens", "5",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert read_results(both) == read_results(alone)
    assert {r["response"] for r in read_results(both)} <= {
        text for r in read_results(cands) for text in [r["greedy"], *r["responses"]]
    }
