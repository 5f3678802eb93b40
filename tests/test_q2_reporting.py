"""Q² evaluation and reporting: the WoW meta-evaluation table, resume, system-level pools, the explain page.

No model is loaded: a fake metric reads each row's score from its message column, so
every number in the table can be worked out by hand.
"""

import csv
import json
import re
from html import unescape

import pytest

from faithkit.errors import InputError, OutputError
from faithkit.explain import highlight_response, summarize_records, write_explain_html
from faithkit.eval.q2_wow import meta_eval_q2_wow
from faithkit.eval.system_level import default_score_keys, load_score_pools, system_level_table, write_system_level

KNOWLEDGE = "Red apples grow on trees."  # content tokens: red apples grow trees
# (metric score, response); overlap F1 with the knowledge worked out beside each
CONSISTENT = [
    (0.9, "red apples grow on trees"),  # F1 1
    (0.6, "red apples"),  # P 1, R 1/2 -> 2/3
    (0.4, "blue cars"),
]  # 0
INCONSISTENT = [
    (0.7, "green pears"),  # 0
    (0.3, "apples fly"),  # P 1/2, R 1/4 -> 1/3
    (0.1, "trees"),
]  # P 1, R 1/4 -> 2/5


class FakeQ2:
    """Scores a row with the number in its message; q2_no_nli is half of it; 0.1 marks a fallback."""

    def __init__(self):
        self.scored = 0

    def compute_rows(self, documents, histories, responses):
        self.scored += len(responses)
        rows = []
        for history, response in zip(histories, responses):
            score = float(history[-1])
            rows.append(
                {
                    "q2": score,
                    "q2_no_nli": score / 2,
                    "fallback": score == 0.1,
                    "explanations": [
                        {
                            "span": response.split()[0],
                            "start": 0,
                            "end": len(response.split()[0]),
                            "question": "what?",
                            "response_answer": response.split()[0],
                            "knowledge_answer": "red",
                            "f1": score,
                            "nli": None,
                            "score": score,
                        }
                    ],
                }
            )
        return rows


def _write_wow_csv(path, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "episode_idx", "round", "topic", "message", "response", "knowledge", "gold"])
        for index, (score, response) in enumerate(rows):
            writer.writerow([index, index, 1, "Apples", str(score), response, KNOWLEDGE, "gold reply"])
    return path


@pytest.fixture
def wow_files(tmp_path):
    return (
        _write_wow_csv(tmp_path / "consistent.csv", CONSISTENT),
        _write_wow_csv(tmp_path / "inconsistent.csv", INCONSISTENT),
    )


def test_table_numbers_match_hand_computation(wow_files, tmp_path, capsys):
    summary = meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out")
    results = {r["score"]: r for r in summary["results"]}
    assert list(results) == ["q2", "q2_no_nli", "overlap_f1"]

    q2 = results["q2"]
    assert q2["mean_consistent"] == pytest.approx((0.9 + 0.6 + 0.4) / 3)
    assert q2["mean_inconsistent"] == pytest.approx((0.7 + 0.3 + 0.1) / 3)
    # >= 0.5 is consistent: 0.9, 0.6 right, 0.4 wrong; 0.7 wrong, 0.3, 0.1 right
    assert q2["accuracy"] == pytest.approx(4 / 6)
    # 0.9 beats all 3 inconsistent, 0.6 and 0.4 beat 0.3 and 0.1: 7 of 9 pairs
    assert q2["auroc"] == pytest.approx(7 / 9)

    # halving every score keeps the ranking but puts everything below 0.5: only the 3 inconsistent are right
    assert results["q2_no_nli"]["auroc"] == pytest.approx(7 / 9)
    assert results["q2_no_nli"]["accuracy"] == pytest.approx(3 / 6)

    overlap = results["overlap_f1"]
    assert overlap["mean_consistent"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert overlap["mean_inconsistent"] == pytest.approx((0 + 1 / 3 + 2 / 5) / 3)
    assert overlap["accuracy"] == pytest.approx(5 / 6)  # only "blue cars" (0) is on the wrong side
    # 1 and 2/3 beat all three; 0 ties with 0 (half) and loses to the rest: 6.5 of 9
    assert overlap["auroc"] == pytest.approx(6.5 / 9)

    # the fake metric flags 0.1 as a fallback: coverage 3/3 consistent, 2/3 inconsistent
    assert summary["coverage"]["consistent"]["share"] == 1.0
    assert summary["coverage"]["inconsistent"]["covered"] == 2

    table = capsys.readouterr().out
    assert "| q2 | 0.6333 | 0.3667 | 0.6667 | 0.7778 |" in table
    assert "accuracy@0.5" in table and "question coverage" in table


def test_outputs_are_written(wow_files, tmp_path):
    out = tmp_path / "out"
    meta_eval_q2_wow(*wow_files, FakeQ2(), out)
    with open(out / "summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["score"] for r in rows] == ["q2", "q2_no_nli", "overlap_f1"]
    assert float(rows[0]["auroc"]) == pytest.approx(7 / 9)
    assert json.loads((out / "summary.json").read_text())["rows"] == {"consistent": 3, "inconsistent": 3}
    for figure in ("roc.png", "histograms.png"):
        assert (out / figure).stat().st_size > 10_000
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    # ids: the set and the row's line in its CSV (line 1 is the header)
    assert sorted(r["id"] for r in records) == sorted(
        [f"consistent:{n}" for n in (1, 2, 3)] + [f"inconsistent:{n}" for n in (1, 2, 3)]
    )
    assert all("overlap_f1" in r and "explanations" in r for r in records)


def test_rerun_resumes_without_rescoring(wow_files, tmp_path):
    first_metric, second_metric = FakeQ2(), FakeQ2()
    first = meta_eval_q2_wow(*wow_files, first_metric, tmp_path / "out")
    second = meta_eval_q2_wow(*wow_files, second_metric, tmp_path / "out")
    assert first_metric.scored == 6 and second_metric.scored == 0
    assert second["newly_scored"] == 0
    assert second["results"] == first["results"]
    assert len((tmp_path / "out" / "scores.jsonl").read_text().splitlines()) == 6


def test_interrupted_run_scores_only_the_rest(wow_files, tmp_path):
    meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out", limit=1)  # as if stopped after one row per set
    metric = FakeQ2()
    summary = meta_eval_q2_wow(*wow_files, metric, tmp_path / "out")
    assert metric.scored == 4
    assert summary["results"][0]["auroc"] == pytest.approx(7 / 9)


def test_limit_takes_the_first_rows_of_each_file(wow_files, tmp_path):
    summary = meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out", limit=2)
    assert summary["rows"] == {"consistent": 2, "inconsistent": 2}


def test_missing_score_key_is_a_clear_error(wow_files, tmp_path):
    with pytest.raises(ValueError, match="no 'e2e_nli' field; its fields are .*'q2'"):
        meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out", score_keys=("e2e_nli",))


def test_scores_of_another_job_are_not_resumed(wow_files, tmp_path):
    q2 = {"command": "meta-eval q2-wow", "metric": "q2"}
    meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out", fingerprint=q2)
    metric = FakeQ2()
    assert meta_eval_q2_wow(*wow_files, metric, tmp_path / "out", fingerprint=q2)["newly_scored"] == 0
    with pytest.raises(OutputError, match=r'written by a different job \(metric: "q2" then, "e2e-nli" now\)'):
        meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out", fingerprint={**q2, "metric": "e2e-nli"})
    assert metric.scored == 0


# ---- system level from scored records ---------------------------------------------------------
def _records(name, scores, **extra):
    return [{"id": f"{name}:{n}", "q2": s, "q2_no_nli": s / 2, **extra} for n, s in enumerate(scores)]


def test_score_pools_from_a_meta_eval_folder_or_two_files(wow_files, tmp_path):
    meta_eval_q2_wow(*wow_files, FakeQ2(), tmp_path / "out")
    consistent, inconsistent = load_score_pools(tmp_path / "out")
    assert sorted(r["q2"] for r in consistent) == [0.4, 0.6, 0.9] and len(inconsistent) == 3
    for name, records in (("c", _records("consistent", [1.0])), ("i", _records("inconsistent", [0.0]))):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert load_score_pools(None, tmp_path / "c.jsonl", tmp_path / "i.jsonl") == (
        _records("consistent", [1.0]),
        _records("inconsistent", [0.0]),
    )


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({}, "no scores given: pass --scores DIR"),
        ({"scores_dir": "x", "consistent_scores": "c"}, "either --scores DIR or"),
        ({"scores_dir": "nowhere"}, r"nowhere/scores.jsonl not found; --scores takes the --out folder"),
        ({"consistent_scores": "c.jsonl", "inconsistent_scores": "i.jsonl"}, "score file not found: c.jsonl"),
    ],
)
def test_score_pools_name_what_is_missing(arguments, message):
    with pytest.raises(InputError, match=message):
        load_score_pools(**arguments)


def test_default_score_keys_are_known_scores_every_scored_record_has():
    records = _records("consistent", [0.5, 0.7], overlap_f1=0.2) + [{"id": "x", "error": "bad"}]
    assert default_score_keys(records) == ["q2", "q2_no_nli", "overlap_f1"]
    records[1]["q2_no_nli"] = None
    assert default_score_keys(records) == ["q2", "overlap_f1"]
    assert default_score_keys([{"id": "x", "error": "bad"}]) == []


def test_system_level_table_of_a_perfect_score_and_its_files(tmp_path, caplog):
    consistent, inconsistent = _records("consistent", [1.0] * 20), _records("inconsistent", [0.0] * 20)
    results = system_level_table(
        consistent, inconsistent + [{"id": "inconsistent:x", "error": "bad"}], ["q2"], repetitions=20, samples=50
    )
    assert [(r["score"], r["mean"], r["std"], r["consistent"], r["inconsistent"]) for r in results] == [
        ("q2", 1.0, 0.0, 20, 20)
    ]
    assert "q2: each simulated system draws 50 responses from only 20 consistent scores" in caplog.text
    with pytest.raises(InputError, match="no consistent record has a 'bleu' score; check --key"):
        system_level_table(consistent, inconsistent, ["bleu"])
    write_system_level(tmp_path / "new", results)
    assert json.loads((tmp_path / "new" / "system_level.json").read_text()) == results
    with open(tmp_path / "new" / "system_level.csv") as handle:
        [row] = csv.DictReader(handle)
    assert (row["score"], float(row["mean"]), row["repetitions"]) == ("q2", 1.0, "20")


# ---- explain page ---------------------------------------------------------------------------
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
        "document": "Bob <Ross> & PBS",
        "history": [],
        "response": "I like <script>x</script> & paint",
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


def test_explain_page_highlights_spans_and_escapes(tmp_path):
    page = write_explain_html(RECORDS, tmp_path / "report.html").read_text()
    marks = re.findall(r'<mark style="background:([^"]+)" title="([^"]*)">(.*?)</mark>', page)
    by_text = {re.sub(r"<sub>.*</sub>", "", text): (colour, unescape(title)) for colour, title, text in marks}
    assert by_text["300 metres"][0] == "hsl(0,75%,78%)"  # score 0: red
    assert by_text["The Eiffel Tower"][0] == "hsl(120,75%,78%)"  # score 1: green
    assert "How tall is the Eiffel Tower?" in by_text["300 metres"][1]
    assert "knowledge answer: 330 metres" in by_text["300 metres"][1]
    assert "NLI: contradiction" in by_text["300 metres"][1]
    # the same details are listed beneath the response
    assert "<td>330 metres</td>" in page and "<td>contradiction</td>" in page
    # text from the data never becomes markup
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "Bob &lt;Ross&gt; &amp; PBS" in page
    # self-contained: no scripts, no external links
    assert "<script" not in page and "http" not in page and "<link" not in page


def test_explain_page_summary_order_and_flags(tmp_path):
    page = write_explain_html(RECORDS, tmp_path / "report.html").read_text()
    assert "responses <b>3</b>" in page and "mean q2 <b>0.500</b>" in page
    assert "question coverage <b>67%</b>" in page and "below 0.5 <b>1</b>" in page and "not scored <b>1</b>" in page
    # lowest score first, errors last
    order = [page.index(f'id="row-{i}"') for i in ("b", "a", "c")]
    assert order == sorted(order) and page.index("row d") > order[-1]
    assert 'class="card low" id="row-b"' in page and "fallback: no valid question" in page
    assert "row d: field &#x27;response&#x27; is empty" in page


def test_overlapping_spans_take_the_lowest_score():
    html = highlight_response(
        "the city of Paris",
        [
            {"span": "the city of Paris", "start": 0, "end": 17, "score": 1.0, "question": "q1"},
            {"span": "Paris", "start": 12, "end": 17, "score": 0.0, "question": "q2"},
        ],
    )
    assert html.count("<mark") == 2
    last = html[html.rindex("<mark") :]
    assert "hsl(0," in last and "q1" in last and "q2" in last


def test_span_found_by_text_when_offsets_are_missing():
    html = highlight_response("I saw Paris.", [{"span": "Paris", "start": None, "end": None, "score": 1.0}])
    assert re.search(r"<mark[^>]*>Paris<sub>1.0</sub></mark>", html)


def test_summarize_records_counts():
    assert summarize_records(RECORDS) == {"responses": 3, "errors": 1, "mean": 0.5, "coverage": 2 / 3, "low": 1}
