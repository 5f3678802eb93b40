"""`faithkit explain` end to end: a scores file rendered as it is, or rows scored first (and resumed)."""

import copy

import pytest

from .helpers import write_jsonl

RECORDS = [
    {
        "id": "a",
        "document": "The Eiffel Tower is 330 metres tall.",
        "history": ["User: how tall?"],
        "response": "The Eiffel Tower is 300 metres tall.",
        "q2": 0.5,
        "q2_no_nli": 0.5,
        "fallback": False,
        "explanations": [
            {
                "span": "The Eiffel Tower",
                "start": 0,
                "end": 16,
                "question": "What is 300 metres tall?",
                "response_answer": "The Eiffel Tower",
                "knowledge_answer": "The Eiffel Tower",
                "f1": 1.0,
                "nli": None,
                "score": 1.0,
            },
            {
                "span": "300 metres",
                "start": 20,
                "end": 30,
                "question": "How tall is the Eiffel Tower?",
                "response_answer": "300 metres",
                "knowledge_answer": "330 metres",
                "f1": 0.5,
                "nli": "contradiction",
                "score": 0.0,
            },
        ],
    },
    {
        "id": "b",
        "document": "Bob Ross painted.",
        "history": [],
        "response": "I like to paint",
        "q2": 0.0,
        "q2_no_nli": 0.0,
        "fallback": True,
        "explanations": [],
    },
    {
        "id": "c",
        "document": "Gardening relaxes.",
        "history": "User: hi",
        "response": "gardening is relaxing",
        "q2": 1.0,
        "q2_no_nli": 1.0,
        "fallback": False,
        "explanations": [
            {
                "span": "gardening",
                "start": 0,
                "end": 9,
                "question": "What is relaxing?",
                "response_answer": "gardening",
                "knowledge_answer": "Gardening",
                "f1": 1.0,
                "nli": None,
                "score": 1.0,
            }
        ],
    },
    {"id": "d", "error": "row d: field 'response' is empty"},
]


def test_renders_a_scores_file_as_it_is(faithkit, tmp_path):
    scores = write_jsonl(tmp_path / "scores.jsonl", RECORDS)
    run = faithkit("explain", "--metric", "q2", "--input", scores, "--html", tmp_path / "report.html")
    assert run.code == 0
    assert run.out == f"3 responses, mean q2 0.500, 1 below 0.5, 1 not scored -> {tmp_path / 'report.html'}\n"
    page = (tmp_path / "report.html").read_text()
    assert "300 metres" in page and "How tall is the Eiffel Tower?" in page


def test_scores_rows_first_then_resumes_them(faithkit, tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {
                "id": "1",
                "knowledge": "Red apples grow on trees.",
                "message": "hi",
                "response": "red apples grow on trees",
            },
            {"id": "2", "knowledge": "Red apples grow on trees.", "message": "hi", "response": "red apples"},
            {"id": "3", "knowledge": "Red apples grow on trees.", "message": "hi", "response": "blue cars"},
        ],
    )
    argv = ["explain", "--metric", "overlap-f1", "--input", rows, "--html", tmp_path / "r.html"]
    run = faithkit(*argv)
    assert run.code == 0
    assert run.out.startswith("3 responses, mean overlap_f1 0.556, 1 below 0.5, 0 not scored")  # (1 + 2/3 + 0) / 3
    page = (tmp_path / "r.html").read_text()
    assert (tmp_path / "r.scores.jsonl").exists() and "red apples" in page
    assert "question coverage" not in page  # overlap F1 has no questions and no fallback
    again = faithkit(*argv)
    assert "overlap-f1: 3/3 rows" in run.err
    assert again.out == run.out and "rows/s" not in again.err  # nothing left to score
    assert len((tmp_path / "r.scores.jsonl").read_text().splitlines()) == 3


def test_pmi_faith_pages_colour_tokens(faithkit, model_folder, tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": "x", "document": "The sky is blue.", "history": "What colour is the sky?", "response": "It is blue."}],
    )
    run = faithkit(
        "explain",
        "--metric",
        "pmi-faith",
        "--model",
        model_folder,
        "--input",
        rows,
        "--html",
        tmp_path / "p.html",
        "--low-threshold",
        "0",
    )
    assert run.code == 0 and run.out.startswith("1 responses, mean pmi ")
    page = (tmp_path / "p.html").read_text()
    assert "token colour" in page and "blue" in page


def test_a_scores_file_of_another_metric_is_named(faithkit, tmp_path):
    scores = write_jsonl(tmp_path / "scores.jsonl", RECORDS)
    run = faithkit("explain", "--metric", "e2e-nli", "--input", scores, "--html", tmp_path / "r.html")
    assert run.code == 2
    assert run.error_lines == [
        f"error: no record in {scores} has a 'e2e_nli' score; is it a scores file of --metric e2e-nli?"
    ]


@pytest.mark.parametrize("low, expected", [("0.4", "1 below 0.4"), ("1.5", "3 below 1.5")])
def test_low_threshold(faithkit, tmp_path, low, expected):
    scores = write_jsonl(tmp_path / "scores.jsonl", RECORDS)
    run = faithkit("explain", "--input", scores, "--html", tmp_path / "r.html", "--low-threshold", low)
    assert run.code == 0 and expected in run.out


CHECKED = [
    {
        "id": "swap",
        "document": "Elvis's producer was Sam Phillips. Scotty Moore played guitar.",
        "history": ["Who produced Elvis?"],
        "response": "He loved Memphis. His producer was Scotty Moore.",
        "faithkit_checker": 0.2,
        "faithkit_checker_verdict": 0.0,
        "faithkit_checker_supported": 0.1,
        "faithkit_checker_generic": 0.1,
        "faithkit_checker_hallucination": 0.8,
        "sentences": [
            {
                "text": "His producer was Scotty Moore.",
                "start": 18,
                "end": 48,
                "supported": 0.1,
                "generic": 0.1,
                "unsupported": 0.8,
                "window_start": 0,
                "window_end": 34,
            },
            {
                "text": "He loved Memphis.",
                "start": 0,
                "end": 17,
                "supported": 0.2,
                "generic": 0.7,
                "unsupported": 0.1,
                "window_start": 35,
                "window_end": 62,
            },
        ],
    },
    {"id": "broken", "error": "row broken: field 'response' is empty"},
]


def test_the_checkers_page_draws_its_sentences_from_the_scored_file(faithkit, tmp_path):
    scores = write_jsonl(tmp_path / "scores.jsonl", CHECKED)
    argv = ["explain", "--metric", "faithkit-checker", "--input", scores, "--html", tmp_path / "r.html"]
    run = faithkit(*argv)
    assert run.code == 0, run.err
    assert run.out == f"1 responses, mean faithkit_checker 0.200, 1 below 0.5, 1 not scored -> {tmp_path / 'r.html'}\n"
    assert not (tmp_path / "r.scores.jsonl").exists()  # drawn from the file, not scored again
    page = (tmp_path / "r.html").read_text()
    assert "question(s)" not in page and "2 sentence(s) · verdict: not faithful" in page
    assert '<mark style="background:hsl(24,75%,78%)" title="P(supported) 0.10 · P(generic) 0.10 · ' in page
    table = page[page.index("<table>") :]
    assert table.index("His producer was Scotty Moore.") < table.index("He loved Memphis.")  # unsupported first
    assert (
        "<td>Elvis&#x27;s producer was Sam Phillips.</td>" in table and "<td>Scotty Moore played guitar.</td>" in table
    )
    spoiled = copy.deepcopy(CHECKED)
    spoiled[0]["sentences"][1]["window_end"] = None
    write_jsonl(scores, spoiled)
    assert faithkit(*argv).error_lines == [
        f'error: {scores}: record \'swap\' has sentences [{{"text": "His producer was Scotty Moore.", "start": 18, "en where a '
        "list of objects with numbers for start, end, supported, generic, unsupported, window_start, window_end is "
        "expected; fix the file, or score its rows again"
    ]
