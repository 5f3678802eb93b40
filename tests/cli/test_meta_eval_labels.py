"""`faithkit meta-eval labels`: a leaderboard on a real labelled file, checked against an independent computation."""

import csv
import json

import numpy as np
import pytest

from faithkit.eval.leaderboard_stats import bootstrap_aurocs, paired_p_value
from faithkit.metrics import lexical
from faithkit.metrics.lexical import knowledge_precision, token_f1_overlap

from .helpers import mann_whitney, write_jsonl

POSITIVE = "Fully attributable"


@pytest.fixture
def begin_wow(data_dir):
    return data_dir / "begin" / "begin_dev_wow.tsv"


def test_aurocs_equal_a_pair_count_on_begin_dev_overall_and_per_group(faithkit, begin_wow, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run = faithkit(
        "meta-eval",
        "labels",
        "--input",
        begin_wow,
        "--label-column",
        "begin_label",
        "--positive",
        POSITIVE,
        "--metrics",
        "lexical,overlap-f1",
        "--group-by",
        "model_name",
        "--resamples",
        "200",
        "--out",
        out,
    )
    assert run.code == 0, run.err
    with open(begin_wow, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(rows) == 430
    scores = {
        "knowledge_precision": [knowledge_precision(r["knowledge"], r["response"]) for r in rows],
        "overlap_f1": [token_f1_overlap(r["knowledge"], r["response"]) for r in rows],
    }
    labels = [r["begin_label"] == POSITIVE for r in rows]
    with open(out / "results.csv", newline="") as handle:
        results = {(r["group"], r["score"]): r for r in csv.DictReader(handle)}
    assert len(results) == 2 * 5  # all and the four generators, two scores each
    for group in ("all", "ctrl", "doha", "gpt2", "t5"):
        inside = [i for i, r in enumerate(rows) if group in ("all", r["model_name"])]
        for name, values in scores.items():
            result = results[group, name]
            expected = mann_whitney([values[i] for i in inside], [labels[i] for i in inside])
            assert float(result["auroc"]) == pytest.approx(expected, abs=1e-12)
            assert int(result["n"]) == len(inside) and int(result["n_positive"]) == sum(labels[i] for i in inside)
            assert float(result["auroc_low"]) <= expected <= float(result["auroc_high"])
    assert float(results["all", "knowledge_precision"]["auroc"]) == pytest.approx(0.9250, abs=5e-5)  # as the README
    # the base rate (180 of 430 positive) and the F1 of calling every row positive, 2 * 180 / (430 + 180), beside F1
    assert "| all | knowledge_precision | higher | 430 | 180 | 0.4186 | 0.9250 |" in run.out
    assert float(results["all", "knowledge_precision"]["f1_always_positive"]) == pytest.approx(2 * 180 / (430 + 180))
    assert float(results["all", "knowledge_precision"]["base_rate"]) == pytest.approx(180 / 430)
    paired = json.loads((out / "results.json").read_text())["paired"]
    assert [(p["group"], p["score_a"], p["score_b"]) for p in paired][0] == ("all", "knowledge_precision", "overlap_f1")
    assert all(p["difference"] == pytest.approx(p["auroc_a"] - p["auroc_b"]) for p in paired)
    for group in ("all", "ctrl", "doha", "gpt2", "t5"):  # one pair per group: Holm over a family of one changes nothing
        assert [p["p_holm"] for p in paired if p["group"] == group] == [
            p["p_value"] for p in paired if p["group"] == group
        ]
    assert "| p (Holm) | survives Holm |" in run.out
    assert (out / "roc.png").stat().st_size

    def unused(*args):
        raise AssertionError("a resumed run computed a score again")

    monkeypatch.setattr(lexical, "knowledge_precision", unused)
    monkeypatch.setattr(lexical, "token_f1_overlap", unused)
    again = faithkit(
        "meta-eval",
        "labels",
        "--input",
        begin_wow,
        "--label-column",
        "begin_label",
        "--positive",
        POSITIVE,
        "--metrics",
        "lexical,overlap-f1",
        "--group-by",
        "model_name",
        "--resamples",
        "200",
        "--out",
        out,
    )

    def timeless(out: str) -> list[str]:  # provenance's "run:" line says when each run started and ended
        return [line for line in out.splitlines() if not line.startswith("run: ")]

    assert again.code == 0 and timeless(again.out) == timeless(run.out)  # resumed from scores/<metric>.jsonl


def _labelled(tmp_path, labels):
    rows = [
        {"id": str(n), "document": "Red apples grow on trees.", "response": text, "verdict": label}
        for n, (text, label) in enumerate(zip(["red apples grow", "blue cars", "apples", "trees fly"], labels))
    ]
    return write_jsonl(tmp_path / "rows.jsonl", rows)


def _labels_run(faithkit, path, tmp_path, *extra):
    return faithkit(
        "meta-eval", "labels", "--input", path, "--metrics", "overlap-f1", "--out", tmp_path / "out", *extra
    )


def test_bad_label_column_positive_value_or_one_class_is_one_error_line(faithkit, tmp_path):
    path = _labelled(tmp_path, ["yes", "no", "yes", "no"])
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "label", "--positive", "yes")
    assert run.code == 2 and run.error_lines == [
        "error: --label-column 'label' is not a column of the input holding labels; its other columns are "
        "'verdict' (the document, history, response and id columns are read as such)"
    ]
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "verdict", "--positive", "Yes")
    assert run.code == 2 and run.error_lines == [
        "error: --positive 'Yes': no row has it in column 'verdict', whose values are 'no', 'yes'; give one of them"
    ]
    one_class = _labelled(tmp_path, ["yes"] * 4)
    run = _labels_run(faithkit, one_class, tmp_path, "--label-column", "verdict", "--positive", "yes")
    assert run.code == 2 and run.error_lines == [
        "error: every row of column 'verdict' is 'yes', so there is no negative class to tell apart; a leaderboard "
        "needs rows of both classes"
    ]
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "verdict", "--positive", "yes", "--group-by", "src")
    assert run.code == 2 and run.error_lines == [
        "error: --group-by 'src' is not a column of the input holding labels; its other columns are 'verdict' "
        "(the document, history, response and id columns are read as such)"
    ]
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "verdict", "--positive", "yes", "--model", "x")
    assert run.code == 2 and run.error_lines == ["error: --model do not apply to --metrics overlap-f1; drop them"]
    assert not (tmp_path / "out").exists()  # every check comes before any scoring


def test_json_labels_match_as_json_writes_them_and_rows_left_out_are_said(faithkit, tmp_path):
    path = _labelled(tmp_path, [True, False, True, False])
    with open(path, "a") as handle:
        handle.write('{"id": "5", "document": "d", "response": "r", "verdict": ""}\n{"id": "6", broken\n')
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "verdict", "--positive", "true")
    assert run.code == 0, run.err
    # overlap F1 with the document: 6/7 and 1/2 (true) against 0 and 2/5 (false): every pair is won
    assert "| all | overlap_f1 | higher | 4 | 2 | 0.5000 | 1.0000 |" in run.out
    assert "warning: 1 rows cannot be read and are left out (the first: line 6 is not valid JSON" in run.err
    assert (
        "warning: 1 rows have no usable label in column 'verdict' (NaN, infinity, empty or null) and are left out, e.g. 5"
        in run.err
    )


def test_the_bootstrap_is_each_resample_s_auroc_on_the_same_draws():
    rng = np.random.default_rng(1)
    labels = np.array([1, 0] * 6)
    scores = rng.normal(size=(2, 12)).round(1)  # rounded: ties
    drawn = bootstrap_aurocs(scores, labels, resamples=50, seed=3)
    draws = np.random.default_rng(3).integers(0, 12, size=(50, 12))
    for r, rows in enumerate(draws):
        for s in range(2):
            if labels[rows].min() == labels[rows].max():
                assert np.isnan(drawn[s, r])
            else:
                assert drawn[s, r] == pytest.approx(mann_whitney(scores[s, rows], labels[rows]), abs=1e-12)


def test_the_bootstrap_draws_the_same_rows_in_blocks(monkeypatch):
    from faithkit.eval import leaderboard_stats

    rng = np.random.default_rng(2)
    labels, scores = np.array([1, 0, 0] * 5), rng.normal(size=(1, 15))
    whole = bootstrap_aurocs(scores, labels, resamples=40, seed=5)
    monkeypatch.setattr(leaderboard_stats, "BOOTSTRAP_BLOCK", 15 * 7)  # blocks of 7 resamples: 5 of them and one of 5
    np.testing.assert_array_equal(bootstrap_aurocs(scores, labels, resamples=40, seed=5), whole)


def test_paired_p_value():
    assert paired_p_value(np.zeros(99)) == 1.0  # the same score twice
    assert paired_p_value(np.ones(99)) == pytest.approx(2 / 100)  # never 0: 99 resamples show no p below 0.02
    assert paired_p_value(np.array([-1.0] * 10 + [1.0] * 89)) == pytest.approx(2 * 11 / 100)


def test_the_id_column_is_no_label_column_and_the_hint_says_why(faithkit, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "document": "d", "response": "r"}])
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "id", "--positive", "1")
    assert run.code == 2 and run.error_lines == [
        "error: --label-column 'id' is not a column of the input holding labels; the input has no other column "
        f"{HINT_TEXT}: add a label column"
    ]


HINT_TEXT = "(the document, history, response and id columns are read as such)"
LABELLED = [  # overlap F1 with "Red apples grow on trees.": 6/7, 1/2 (positive) against 0, 2/5 (negative)
    ("red apples grow", "yes"),
    ("apples", "yes"),
    ("blue cars", "no"),
    ("trees fly", "no"),
]
NO_LABEL = [("red apples", "no"), ("on trees", "no"), ("grow", "no")]  # scores that would lose to the positives


def _with_missing_labels(tmp_path, kind: str, missing: list):
    """LABELLED and NO_LABEL rows, the latter with ``missing`` labels, as a ``kind`` file."""
    rows = [
        {"id": str(n), "document": "Red apples grow on trees.", "response": text, "verdict": label}
        for n, (text, label) in enumerate(LABELLED + [(text, value) for (text, _), value in zip(NO_LABEL, missing)])
    ]
    path = tmp_path / f"rows.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))  # NaN and Infinity as JSON has them
    elif kind == "parquet":
        import pandas

        pandas.DataFrame(rows).to_parquet(path)
    else:
        with open(path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter="\t" if kind == "tsv" else ",")
            writer.writeheader()
            writer.writerows(rows)
    return path


@pytest.mark.parametrize(
    "kind, missing",
    [
        ("jsonl", [float("nan"), float("inf"), None]),
        ("jsonl", ["NaN", "", "null"]),
        ("csv", ["NaN", "nan", ""]),
        ("tsv", ["NaN", "-inf", " "]),
        ("parquet", [float("nan"), float("nan"), float("nan")]),
    ],
)
def test_rows_without_a_label_are_left_out_never_negatives(faithkit, tmp_path, kind, missing):
    """The AUROC with rows whose label is NaN/inf/empty/null is the AUROC without those rows, with one warning."""
    if kind == "parquet":
        missing = [float("nan")] * 3  # a float column: parquet holds NaN, not text
        rows = _with_missing_labels(tmp_path, kind, missing)
        path = tmp_path / "numeric.parquet"
        import pandas

        frame = pandas.read_parquet(rows)
        frame["verdict"] = [1.0, 1.0, 0.0, 0.0, *missing]
        frame.to_parquet(path)
        positive = "1.0"
    else:
        path, positive = _with_missing_labels(tmp_path, kind, missing), "yes"
    run = _labels_run(faithkit, path, tmp_path, "--label-column", "verdict", "--positive", positive)
    assert run.code == 0, run.err
    scores = [token_f1_overlap("Red apples grow on trees.", text) for text, _ in LABELLED]
    expected = mann_whitney(scores, [label == "yes" for _, label in LABELLED])
    assert expected == 1.0
    assert (
        f"| all | overlap_f1 | higher | 4 | 2 | 0.5000 | {expected:.4f} |" in run.out
    )  # rows, positives, base rate, AUROC
    warnings = [line for line in run.err.splitlines() if line.startswith("warning:") and "usable label" in line]
    assert warnings == [
        "warning: 3 rows have no usable label in column 'verdict' (NaN, infinity, empty or null) and are left out, "
        "e.g. 4, 5, 6 (--strict-labels refuses them instead)"
    ]
    strict = _labels_run(
        faithkit, path, tmp_path, "--label-column", "verdict", "--positive", positive, "--strict-labels", "--restart"
    )
    assert strict.code == 2 and strict.error_lines == [
        "error: 3 rows have no usable label in column 'verdict' (NaN, infinity, empty or null), e.g. 4, 5, 6; give "
        "them a label or remove them, or drop --strict-labels to leave them out"
    ]


def test_begin_rows_without_a_label_are_left_out_or_refused(faithkit, tmp_path):
    header = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    lines = [
        ("Red apples grow on trees.", "red apples grow", POSITIVE),
        ("Red apples grow on trees.", "apples", POSITIVE),
        ("Red apples grow on trees.", "blue cars", "Not fully attributable"),
        ("Red apples grow on trees.", "trees fly", "Generic"),
        ("Red apples grow on trees.", "red apples", "NaN"),
        ("Red apples grow on trees.", "on trees", ""),
    ]
    path = tmp_path / "begin.tsv"
    path.write_text(header + "".join(f"m\twow\t{k}\thi\t{r}\t{label}\n" for k, r, label in lines))
    run = faithkit("meta-eval", "begin", "--metric", "overlap-f1", "--dev", path, "--out", tmp_path / "out")
    assert run.code == 0, run.err
    assert "warning: 2 rows have no usable label in column 'begin_label' (NaN, infinity, empty or null)" in run.err
    records = [json.loads(line) for line in (tmp_path / "out" / "scores_dev.jsonl").read_text().splitlines()]
    assert sorted(record["id"] for record in records) == ["begin:1", "begin:2", "begin:3", "begin:4"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    overall = next(r for r in results if r["score"] == "overlap_f1" and r["source"] == "all")
    scores = [token_f1_overlap(k, r) for k, r, _ in lines[:4]]
    assert overall["auroc"] == pytest.approx(mann_whitney(scores, [label == POSITIVE for *_, label in lines[:4]]))
    strict = faithkit(
        "meta-eval", "begin", "--metric", "overlap-f1", "--dev", path, "--out", tmp_path / "o2", "--strict-labels"
    )
    assert strict.code == 2 and strict.error_lines[0].startswith("error: 2 rows have no usable label")


JUDGED = [
    ("Apples grow on tall trees in the north.", ["Where do apples grow?"], "On tall trees in the north.", "yes"),
    ("Apples grow on tall trees in the north.", ["Where do apples grow?"], "Under the sea, mostly.", "no"),
    ("Pears are sweet and green.", ["What are pears like?"], "Sweet and green.", "yes"),
    ("Pears are sweet and green.", ["What are pears like?"], "Sour and blue, I think.", "no"),
    ("Plums are purple.", ["Colour?"], "They are purple.", "yes"),
    ("Plums are purple.", ["Colour?"], "Bright orange.", "no"),
]


def test_faith_judge_and_pmi_faith_under_one_lm_run_it_once_and_report_pmi_once(
    faithkit, model_folder, tmp_path, monkeypatch
):
    import functools

    from transformers import GPT2LMHeadModel

    from faithkit.metrics.faith_judge import FaithJudge
    from faithkit.metrics.pmi_faith import PMIFaith

    path = write_jsonl(
        tmp_path / "judged.jsonl",
        [
            {"id": str(i), "document": d, "history": h, "response": r, "verdict": v}
            for i, (d, h, r, v) in enumerate(JUDGED)
        ],
    )
    forwards = []
    real = GPT2LMHeadModel.forward

    @functools.wraps(real)
    def counted(self, *args, **kwargs):
        forwards.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GPT2LMHeadModel, "forward", counted)
    out = tmp_path / "out"
    run = faithkit(
        "meta-eval", "labels", "--input", path, "--label-column", "verdict", "--positive", "yes",
        "--metrics", "pmi-faith,faith-judge", "--model", model_folder, "--resamples", "100", "--out", out,
    )  # fmt: skip
    assert run.code == 0, run.err
    both = len(forwards)
    documents, histories, responses = ([row[k] for row in JUDGED] for k in range(3))
    forwards.clear()
    judge = FaithJudge(model=model_folder, unconditional=True)  # one pass: the judge with PMI-FAITH's four views
    judged = judge.compute_rows(documents, histories, responses)
    assert both == len(forwards) > 0
    forwards.clear()
    alone = PMIFaith(model=model_folder).compute_rows(documents, histories, responses)
    pmi_faith_alone = len(forwards)
    forwards.clear()
    FaithJudge(model=model_folder).compute_rows(documents, histories, responses)
    assert both < pmi_faith_alone + len(forwards)  # what two passes cost

    results = json.loads((out / "results.json").read_text())["results"]
    assert [r["score"] for r in results] == ["faith_judge", "pmi", "uncond_pmi"]  # pmi once, not faith-judge:pmi
    records = [json.loads(line) for line in (out / "scores" / "pmi-faith.jsonl").read_text().splitlines()]
    for record, fresh, own in zip(records, judged, alone):
        assert record["pmi"] == fresh["pmi"] and record["uncond_pmi"] == fresh["uncond_pmi"]
        assert record["pmi"] == pytest.approx(own["pmi"], abs=1e-5)  # PMI-FAITH alone, within float noise
        assert record["uncond_pmi"] == pytest.approx(own["uncond_pmi"], abs=1e-5)
        assert set(record) - {"id", "document", "history", "response", "extras", "row_digest"} == set(own)


def test_graded_labels_get_spearman_and_kendall_with_intervals_and_holm_corrected_pairs(faithkit, tmp_path):
    from scipy import stats as scipy_stats

    from faithkit.metrics.lexical import bleu_vs_knowledge

    document = "Red apples grow on tall trees in cold northern orchards."
    responses = ["red apples grow on tall trees", "apples grow in orchards", "cold orchards", "trees are tall",
                 "blue cars drive fast", "red apples", "northern orchards grow apples", "purple bananas"]  # fmt: skip
    grades = [5, 4, 2, 3, 1, 4, 3, 1]
    path = write_jsonl(
        tmp_path / "graded.jsonl",
        [
            {"id": str(i), "document": document, "response": r, "grade": g}
            for i, (r, g) in enumerate(zip(responses, grades))
        ],
    )
    out = tmp_path / "out"
    run = faithkit(
        "meta-eval", "labels", "--input", path, "--label-column", "grade", "--metrics",
        "overlap-f1,document-bleu,lexical", "--resamples", "200", "--out", out,
    )  # fmt: skip
    assert run.code == 0, run.err
    saved = json.loads((out / "results.json").read_text())
    expected = {
        "overlap_f1": [token_f1_overlap(document, r) for r in responses],
        "document_bleu": [bleu_vs_knowledge(document, r) for r in responses],
        "knowledge_precision": [knowledge_precision(document, r) for r in responses],
    }
    assert [r["score"] for r in saved["results"]] == list(expected)
    for result in saved["results"]:
        values = expected[result["score"]]
        assert result["spearman"] == pytest.approx(scipy_stats.spearmanr(values, grades)[0], abs=1e-12)
        assert result["kendall"] == pytest.approx(scipy_stats.kendalltau(values, grades)[0], abs=1e-12)
        assert result["spearman_low"] <= result["spearman"] <= result["spearman_high"]
        assert result["kendall_low"] <= result["kendall"] <= result["kendall_high"]
    paired = saved["paired"]
    assert len(paired) == 3 and all(p["difference"] == pytest.approx(p["spearman_a"] - p["spearman_b"]) for p in paired)
    ranked = sorted(p["p_value"] for p in paired)  # Holm over the three pairs, by the rank of each p
    assert sorted(p["p_holm"] for p in paired) == pytest.approx(
        [
            min(1, 3 * ranked[0]),
            min(1, max(3 * ranked[0], 2 * ranked[1])),
            min(1, max(3 * ranked[0], 2 * ranked[1], ranked[2])),
        ]
    )
    assert "| group | score | faithful | n | Spearman | 95% interval | Kendall | 95% interval |" in run.out
    assert "paired bootstrap of the Spearman difference" in run.out and not (out / "roc.png").exists()
    header = (out / "paired.csv").read_text().splitlines()[0]
    assert (
        header == "group,score_a,score_b,spearman_a,spearman_b,difference,difference_low,difference_high,p_value,p_holm"
    )

    words = write_jsonl(tmp_path / "words.jsonl", [{"id": "1", "document": document, "response": "x", "grade": "good"}])
    run = faithkit("meta-eval", "labels", "--input", words, "--label-column", "grade", "--metrics", "overlap-f1",
                   "--out", tmp_path / "out2")  # fmt: skip
    assert run.code == 2 and run.error_lines == [
        "error: row 1: label 'good' in column 'grade' is no number; without --positive the labels are graded "
        "(numbers on a scale): give --positive for the positive class of categories"
    ]


def test_a_score_where_lower_is_faithful_is_ranked_low_first_with_its_threshold_in_its_own_units(faithkit, tmp_path):
    texts = ["It is red.", "no no no no no no, I said", "Apples grow on trees.", "Red red red red red red red, yes",
             "They are red apples.", "It grows."]  # fmt: skip
    faithful = [True, False, True, False, True, True]
    rows = [
        {"id": str(n), "document": "Red apples grow on trees.", "response": text, "verdict": "yes" if label else "no"}
        for n, (text, label) in enumerate(zip(texts, faithful))
    ]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    out = tmp_path / "out"
    run = faithkit("meta-eval", "labels", "--input", path, "--label-column", "verdict", "--positive", "yes",
                   "--metrics", "form", "--resamples", "100", "--out", out)  # fmt: skip
    assert run.code == 0, run.err
    form = lexical.ResponseForm().compute_rows(["d"] * len(texts), None, texts)
    with open(out / "results.csv", newline="") as handle:
        results = {r["score"]: r for r in csv.DictReader(handle)}
    repeated = [row["repeated"] for row in form]
    assert repeated == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]  # the two looping responses are the unfaithful ones
    assert results["repeated"]["direction"] == "lower"
    assert float(results["repeated"]["auroc"]) == mann_whitney([-v for v in repeated], faithful) == 1.0
    assert float(results["repeated"]["threshold"]) == 0.0  # faithful at or below 0: in the score's own units
    words = [row["words"] for row in form]
    assert results["words"]["direction"] == "as given"  # words per response: neither direction, ranked as it is
    assert float(results["words"]["auroc"]) == pytest.approx(mann_whitney(words, faithful), abs=1e-12)
    assert "| repeated | lower |" in run.out
