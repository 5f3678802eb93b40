"""`faithkit meta-eval q2-wow | system-level | begin` end to end on the overlap baseline, numbers by hand."""

import json

import pytest

from faithkit.data import read_results

from .helpers import write_jsonl, write_wow_csv

KNOWLEDGE = "Red apples grow on trees."  # content tokens: red apples grow trees
# overlap F1 of each response with the knowledge: 1, 2/3, 0 (consistent); 0, 1/3, 2/5 (inconsistent)
CONSISTENT = ["red apples grow on trees", "red apples", "blue cars"]
INCONSISTENT = ["green pears", "apples fly", "trees"]


@pytest.fixture
def wow_files(tmp_path):
    return (
        write_wow_csv(tmp_path / "consistent.csv", CONSISTENT, KNOWLEDGE),
        write_wow_csv(tmp_path / "inconsistent.csv", INCONSISTENT, KNOWLEDGE),
    )


def test_q2_wow_then_system_level_from_its_folder(faithkit, wow_files, tmp_path):
    out = tmp_path / "out"
    run = faithkit(
        "meta-eval",
        "q2-wow",
        "--consistent",
        wow_files[0],
        "--inconsistent",
        wow_files[1],
        "--metric",
        "overlap-f1",
        "--out",
        out,
    )
    assert run.code == 0
    # means 5/9 and 11/45; accuracy@0.5: all but "blue cars"; AUROC 6.5 of 9 pairs
    assert "| overlap_f1 | 0.5556 | 0.2444 | 0.8333 | 0.7222 |" in run.out
    # ids: the set and the row's line in its CSV (the header is line 1)
    assert [r["id"] for r in read_results(out / "scores.jsonl")] == (
        [f"consistent:{n}" for n in (1, 2, 3)] + [f"inconsistent:{n}" for n in (1, 2, 3)]
    )

    run = faithkit("meta-eval", "system-level", "--scores", out, "--repetitions", "50", "--out", out)
    assert run.code == 0
    assert run.out.startswith("| score | Spearman (mean)") and "| overlap_f1 |" in run.out
    assert json.loads((out / "system_level.json").read_text())[0]["repetitions"] == 50
    # three scores per pool against 350 responses per system: the spread is understated, and said so
    assert "warning: overlap_f1: each simulated system draws 350 responses from only 3 consistent scores" in run.err


def test_q2_wow_rerun_resumes_and_a_changed_metric_is_refused(faithkit, wow_files, tmp_path):
    argv = [
        "meta-eval",
        "q2-wow",
        "--consistent",
        wow_files[0],
        "--inconsistent",
        wow_files[1],
        "--out",
        tmp_path / "out",
    ]
    first = faithkit(*argv, "--metric", "overlap-f1")
    again = faithkit(*argv, "--metric", "overlap-f1")
    assert again.code == 0 and again.out == first.out
    assert len((tmp_path / "out" / "scores.jsonl").read_text().splitlines()) == 6
    run = faithkit(*argv, "--metric", "document-bleu")
    assert run.code == 2
    assert run.error_lines == [
        f"error: {tmp_path / 'out' / 'scores.jsonl'} was written by a different job "
        '(metric: "overlap-f1" then, "document-bleu" now); to continue it, rerun with its settings; '
        "otherwise rerun with --restart to start it over, or choose another --out"
    ]
    restarted = faithkit(*argv, "--metric", "document-bleu", "--restart")  # the fix the message names exists
    assert restarted.code == 0 and "| document_bleu |" in restarted.out
    assert {"document_bleu" in record for record in read_results(tmp_path / "out" / "scores.jsonl")} == {True}


def test_system_level_from_two_score_files(faithkit, tmp_path):
    for name, scores in (("c", [1.0] * 20), ("i", [0.0] * 20)):
        write_jsonl(
            tmp_path / f"{name}.jsonl",
            [{"id": str(n), "q2": s} for n, s in enumerate(scores)] + [{"id": "x", "error": "bad"}],
        )
    run = faithkit(
        "meta-eval",
        "system-level",
        "--consistent-scores",
        tmp_path / "c.jsonl",
        "--inconsistent-scores",
        tmp_path / "i.jsonl",
        "--repetitions",
        "20",
    )
    assert run.code == 0
    assert "| q2 | 1.0000 | 0.0000 | 1.0000 | 1.0000 | 0 |" in run.out


def test_system_level_settings_the_simulation_cannot_use(faithkit, tmp_path):
    for name in ("c", "i"):
        write_jsonl(tmp_path / f"{name}.jsonl", [{"id": str(n), "q2": n / 10} for n in range(10)])
    run = faithkit(
        "meta-eval",
        "system-level",
        "--consistent-scores",
        tmp_path / "c.jsonl",
        "--inconsistent-scores",
        tmp_path / "i.jsonl",
        "--proportions",
        "0.1",
        "1.5",
    )
    assert run.code == 2 and run.error_lines == ["error: inconsistency proportions must lie in [0, 1], got [0.1, 1.5]"]


def _write_begin_tsv(path, rows):
    header = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    path.write_text(
        header
        + "".join(f"t5\twow\t{KNOWLEDGE}\tDo you like apples?\t{response}\t{label}\n" for response, label in rows)
    )
    return path


def test_begin_thresholds_on_dev_and_reports_dev_and_test(faithkit, tmp_path):
    yes, no = "Fully attributable", "Not fully attributable"
    # overlap F1 with the knowledge: 1, 2/3 (attributable) against 0, 2/5 on dev; 2/3 against 0 on test
    dev = _write_begin_tsv(
        tmp_path / "dev.tsv", [("red apples grow on trees", yes), ("red apples", yes), ("blue cars", no), ("trees", no)]
    )
    test = _write_begin_tsv(tmp_path / "test.tsv", [("apples grow", yes), ("green pears", no)])
    out = tmp_path / "out"
    run = faithkit("meta-eval", "begin", "--metric", "overlap-f1", "--dev", dev, "--test", test, "--out", out)
    assert run.code == 0, run.err
    results = {(r["split"], r["score"]): r for r in json.loads((out / "results.json").read_text())}
    assert results["dev", "overlap_f1"]["n"] == 4 and results["test", "overlap_f1"]["n"] == 2
    assert results["dev", "overlap_f1"]["auroc"] == results["test", "overlap_f1"]["auroc"] == 1.0
    assert results["dev", "overlap_f1"]["accuracy"] == 1.0
    assert run.out.count("| overlap_f1 |") == 2  # dev and test, printed once
    assert (out / "roc_dev.png").stat().st_size and (out / "roc_test.png").stat().st_size


def test_begin_with_one_class_in_a_split_says_so(faithkit, tmp_path):
    yes, no = "Fully attributable", "Not fully attributable"
    dev = _write_begin_tsv(tmp_path / "dev.tsv", [("red apples", yes), ("blue cars", no)])
    test = _write_begin_tsv(tmp_path / "test.tsv", [("apples grow", yes), ("red apples", yes)])
    run = faithkit(
        "meta-eval", "begin", "--metric", "overlap-f1", "--dev", dev, "--test", test, "--out", tmp_path / "o"
    )
    assert run.code == 2
    assert run.error_lines == [
        f"error: --test {test}: all 2 scored rows are labelled 'Fully attributable'; the meta-evaluation compares "
        "attributable responses with the others, so the test rows need both"
    ]
