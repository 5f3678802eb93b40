"""``faithkit score --metric llm-judge`` against a server that answers as OpenAI's API does (tests/cli/fake_engine.py):
the expected score from the first token's logprobs, the parsed answer without them, the prompt, the fingerprint, and
the bad-server cases as one error line. The real engine, llama.cpp's server, is in tests/test_llama_server.py.
"""

import json
import math

import pytest

from faithkit.annotate.task import DIMENSIONS
from faithkit.data import read_results
from faithkit.metrics.llm_judge import LLMJudge, judge_messages

from .fake_engine import FakeEngine
from .helpers import write_jsonl

ROWS = [
    {"id": "a", "document": "Apples ripen in autumn.", "history": ["Hi!", "Hello.", "When are apples ripe?"], "response": "In autumn."},
    {"id": "b", "document": "Jazz began in New Orleans.", "history": ["Where did jazz start?"], "response": "In Paris, in 1950."},
]  # fmt: skip


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


def _score(faithkit, url, rows, output, *extra):
    return faithkit("score", "--metric", "llm-judge", "--server", url, "--input", rows, "--output", output, *extra)


def test_the_score_is_the_expected_answer_value_under_the_first_tokens_probabilities(faithkit, rows, tmp_path):
    # agree 0.5, neutral 0.1 (two spellings), disagree 0.2 ("dis" begins only it); "The" begins no answer
    top = {
        " agree": math.log(0.5),
        " Neutral": math.log(0.05),
        "neutral": math.log(0.05),
        "dis": math.log(0.2),
        "The": -1.0,
    }
    output = tmp_path / "scores.jsonl"
    with FakeEngine(answer="Agree.", top_logprobs=top) as server:
        run = _score(faithkit, server.url, rows, output)
        bodies = server.requests
    assert run.code == 0, run.err
    records = read_results(output)
    assert [r["llm_judge"] for r in records] == pytest.approx([(0.5 + 0.5 * 0.1) / 0.8] * 2)
    assert records[0]["answer"] == "agree"
    assert records[0]["answer_probs"] == pytest.approx({"agree": 0.625, "neutral": 0.125, "disagree": 0.25})
    assert {(body["logprobs"], body["top_logprobs"], body["temperature"]) for body in bodies} == {(True, 10, 0.0)}


def test_the_prompt_holds_the_document_dialogue_response_and_the_pages_question(faithkit, rows, tmp_path):
    with FakeEngine(answer="disagree") as server:
        run = _score(faithkit, server.url, rows, tmp_path / "scores.jsonl", "--chunk-size", "1")
        bodies = server.requests
    assert run.code == 0, run.err
    statement, definition = DIMENSIONS["faithfulness"]
    [asked] = [body["messages"][-1]["content"] for body in bodies if "Apples" in body["messages"][-1]["content"]]
    assert asked == (
        "Document:\nApples ripen in autumn.\n\nDialogue:\nUser: Hi!\nAssistant: Hello.\nUser: When are apples ripe?\n\n"
        f"Response:\nIn autumn.\n\nStatement: {statement}\n{definition}\n"
        "Do you agree with the statement? Answer with one word: agree, neutral or disagree."
    )
    assert [body["messages"] for body in bodies] == [
        judge_messages(r["document"], r["history"], r["response"]) for r in ROWS
    ]


@pytest.mark.parametrize(
    ("answer", "named", "score"),
    [("Disagree: it says Paris.", "disagree", 0.0), ("I would say neutral", "neutral", 0.5), ("Yes.", "Yes.", None)],
)
def test_without_logprobs_the_score_is_the_answer_the_reply_names(faithkit, rows, tmp_path, answer, named, score):
    output = tmp_path / "scores.jsonl"
    with FakeEngine(answer=answer) as server:
        run = _score(faithkit, server.url, rows, output)
    assert run.code == 0, run.err
    record = read_results(output)[0]
    assert record["llm_judge"] == score
    assert "answer_probs" not in record
    assert record["answer"] == named


def test_the_fingerprint_and_provenance_hold_the_served_model_and_the_key_is_written_nowhere(faithkit, rows, tmp_path):
    output = tmp_path / "scores.jsonl"
    with FakeEngine(answer="agree", key="sekret-4711") as server:
        run = _score(faithkit, server.url, rows, output, "--api-key", "sekret-4711")
    assert run.code == 0, run.err
    meta = json.loads((tmp_path / "scores.jsonl.meta.json").read_text())
    assert meta["metric"] == "llm-judge" and meta["metric_options"] == {"served_model": "fake-model"}
    made_by = json.loads((tmp_path / "scores.jsonl.provenance.json").read_text())["provenance"]
    assert made_by["models"] == {"llm-judge --server": {"served_model": "fake-model", "server": server.url}}
    assert made_by["command"].endswith("--api-key ***")
    written = "".join(path.read_text() for path in tmp_path.iterdir() if path.is_file())
    assert "sekret-4711" not in run.err + run.out + written


@pytest.mark.parametrize(
    ("fake", "extra", "said"),
    [
        ({"behaviour": "alien"}, (), "the reply is not OpenAI's (no choices[0] text in a chat completions reply)"),
        ({"key": "the-right-key"}, ("--api-key", "wrong"), "the server refused the API key (HTTP 401)"),
        ({}, ("--served-model", "llama-70b"), "does not serve the model 'llama-70b'; it serves fake-model"),
    ],
    ids=["not-openai", "wrong-key", "wrong-model"],
)
def test_a_bad_server_is_one_error_line_and_status_2(faithkit, rows, tmp_path, fake, extra, said):
    with FakeEngine(**fake) as server:
        run = _score(faithkit, server.url, rows, tmp_path / "scores.jsonl", *extra)
    assert run.code == 2
    assert len(run.error_lines) == 1 and said in run.error_lines[0], run.err
    assert "Traceback" not in run.err


def test_no_server_is_one_error_line(faithkit, rows, tmp_path):
    run = faithkit("score", "--metric", "llm-judge", "--input", rows, "--output", tmp_path / "scores.jsonl")
    assert run.code == 2
    assert run.error_lines == [
        "error: llm-judge asks a served model: give the API's base URL with --server, e.g. http://127.0.0.1:8080/v1"
    ]


@pytest.mark.parametrize(
    ("document", "response", "field"), [("Jazz began in New Orleans.", " ", "response"), ("", "Yes.", "document")]
)
def test_a_blank_response_or_document_is_refused_before_the_server_is_asked(document, response, field):
    with FakeEngine(answer="agree") as server:
        judge = LLMJudge(server=server.url)
        with pytest.raises(ValueError, match=f"^example 1: field '{field}' is empty$"):
            judge.compute_rows(["Apples ripen in autumn.", document], [[], []], ["In autumn.", response])
        asked = server.requests
    assert asked == []
