"""`faithkit score` end to end: records and tables, bad rows, warnings, input order, CSV/TSV quoting, row ids."""

import pytest

from faithkit.data import read_results

from .helpers import write_jsonl


@pytest.fixture()
def rows_file(tmp_path):
    rows = [
        {
            "id": f"r{i}",
            "knowledge": f"Fact number {i} is about {'long ' * i}things.",
            "message": f"Tell me fact {i}.",
            "response": f"Fact {i} is about things.",
        }
        for i in range(7)
    ]
    rows[3]["response"] = ""
    return write_jsonl(tmp_path / "rows.jsonl", rows)


def _score(faithkit, model_folder, rows_file, output, *extra):
    return faithkit(
        "score",
        "--metric",
        "pmi-faith",
        "--model",
        model_folder,
        "--input",
        rows_file,
        "--output",
        output,
        "--batch-size",
        "3",
        "--chunk-size",
        "2",
        *extra,
    )


def test_scores_every_row_and_reports_bad_ones(faithkit, model_folder, rows_file, tmp_path):
    output = tmp_path / "scores.jsonl"
    run = _score(faithkit, model_folder, rows_file, output)
    assert run.code == 0
    records = read_results(output)
    assert [r["id"] for r in records] == [f"r{i}" for i in range(7)]  # input order
    assert records[3]["error"] == "row r3: field 'response' (response) is empty"
    assert all(isinstance(records[i]["pmi"], float) for i in (0, 1, 2, 4, 5, 6))
    assert records[0]["history"] == ["Tell me fact 0."] and records[0]["document"].startswith("Fact number 0")
    assert "| id | pmi | uncond_pmi | response | error |" in run.out
    assert "6 scored, 0 already done, 1 errors" in run.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("scores")) == [
        "scores.jsonl",
        "scores.jsonl.meta.json",
        "scores.jsonl.provenance.json",
    ]  # the finished writer took its lock file away
    assert "warning: row r3: field 'response' (response) is empty" in run.err


def test_a_file_without_history_scores_with_empty_histories_and_a_warning(faithkit, model_folder, tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("document,response\nThe sky is blue.,It is blue.\n")
    output = tmp_path / "scores.jsonl"
    run = faithkit("score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows, "--output", output)
    assert run.code == 0
    assert f"warning: {rows}: no history column found, so every history is empty" in run.err
    [record] = read_results(output)
    assert record["history"] == [] and isinstance(record["pmi"], float)


def test_an_over_long_document_keeps_its_end_and_the_warning_names_the_row(faithkit, model_folder, tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": "long-one", "document": "word " * 400 + "The end.", "history": "h", "response": "The end."}],
    )
    output = tmp_path / "scores.jsonl"
    run = faithkit("score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows, "--output", output)
    assert run.code == 0
    [record] = read_results(output)
    assert record["truncated_tokens"] > 150  # 256 positions in the tiny model
    assert record["truncated_from"] == "start"
    cut = f"warning: row long-one: context cut by {record['truncated_tokens']} tokens from the document's start"
    assert f"{cut} to fit the model" in run.err


def test_rerun_after_a_crash_neither_repeats_nor_loses_rows(faithkit, model_folder, rows_file, tmp_path):
    complete = tmp_path / "complete.jsonl"
    _score(faithkit, model_folder, rows_file, complete)
    crashed = tmp_path / "crashed.jsonl"
    lines = complete.read_text().splitlines(keepends=True)
    crashed.write_text("".join(lines[:3]) + lines[3][:20])  # three rows landed, the fourth was half-written
    (tmp_path / "crashed.jsonl.meta.json").write_bytes((tmp_path / "complete.jsonl.meta.json").read_bytes())
    run = _score(faithkit, model_folder, rows_file, crashed)
    assert run.code == 0 and "3 scored, 3 already done, 1 errors" in run.err
    resumed, expected = read_results(crashed), read_results(complete)
    assert [r["id"] for r in resumed] == [r["id"] for r in expected]
    for a, b in zip(resumed, expected):
        assert a.keys() == b.keys()
        if "pmi" in a:
            assert a["pmi"] == pytest.approx(b["pmi"], abs=1e-5)


def test_output_follows_input_order_though_rows_are_computed_by_document(faithkit, tmp_path):
    # the job groups rows under one document into one chunk; the file must still list them as the input does
    rows = [
        {
            "id": f"q{i}",
            "document": f"Document {'ABC'[i % 3]} about apples.",
            "history": "hi",
            "response": f"apples {i}",
        }
        for i in range(9)
    ]
    output = tmp_path / "scores.jsonl"
    run = faithkit(
        "score",
        "--metric",
        "overlap-f1",
        "--input",
        write_jsonl(tmp_path / "rows.jsonl", rows),
        "--output",
        output,
        "--chunk-size",
        "2",
    )
    assert run.code == 0
    assert [r["id"] for r in read_results(output)] == [f"q{i}" for i in range(9)]


def test_a_row_without_id_in_a_file_with_ids_is_named_by_its_line(faithkit, tmp_path):
    rows = [
        {"id": "1", "document": "D", "response": "R"},
        {"document": "D", "response": "R"},
        {"id": "", "document": "D", "response": "R"},
    ]
    output = tmp_path / "scores.jsonl"
    run = faithkit(
        "score", "--metric", "overlap-f1", "--input", write_jsonl(tmp_path / "rows.jsonl", rows), "--output", output
    )
    assert run.code == 0
    # a bare "2" could collide with a real id such as "1"; the line number says where the row is
    assert [r["id"] for r in read_results(output)] == ["1", "line-2", "line-3"]


def test_a_lone_surrogate_is_a_row_error_naming_the_field(faithkit, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"id": "a", "document": "D", "history": "h", "response": "bad \\ud800 text"}\n'
        '{"id": "b", "document": "D", "history": "h", "response": "fine", "topic": "x\\udc00"}\n'
        '{"id": "c", "document": "D", "history": "h", "response": "D \\ud83d\\ude00"}\n'
    )
    output = tmp_path / "scores.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", output)
    assert run.code == 0 and "Traceback" not in run.err
    a, b, c = read_results(output)
    assert a["id"] == "a" and a["error"].startswith("row a: field 'response' is not valid UTF-8 text")
    assert b["id"] == "b" and b["error"].startswith("row b: field 'topic' is not valid UTF-8 text")
    assert c["response"] == "D \U0001f600" and c["overlap_f1"] > 0  # a surrogate pair is one real character


# a quoted field holding a tab and a newline, a row with one field too many, a row with one too few
QUOTED_TSV = (
    "id\tdocument\thistory\tresponse\n"
    "a\tThe sky is blue.\thi\tIt is blue.\n"
    'b\t"The sea\tis wide\nand deep."\thi\tThe sea is deep.\n'
    "c\tGrass is green.\thi\tIt is green.\tstray\n"
    "d\tSnow is white.\thi\n"
    "e\tCoal is black.\thi\tIt is black.\n"
)


def _score_tsv(faithkit, tmp_path, quoting):
    rows = tmp_path / "rows.tsv"
    rows.write_text(QUOTED_TSV)
    output = tmp_path / f"{quoting}.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", output, "--quoting", quoting)
    assert run.code == 0
    return {r["id"]: r for r in read_results(output)}


def test_quoting_none_reads_a_quoted_tsv_literally_and_names_each_ragged_line(faithkit, tmp_path):
    records = _score_tsv(faithkit, tmp_path, "none")
    # b's quoted tab and newline split it into two short lines (3 and 4): errors, not phantom rows
    assert list(records) == ["a", "line-3", "line-4", "line-5", "line-6", "e"]
    hint = "; if quoted fields hold tabs, commas or newlines, read the file with --quoting csv"
    assert records["line-3"]["error"] == "line 3 has 3 fields where the header has 4" + hint
    assert records["line-4"]["error"] == "line 4 has 3 fields where the header has 4" + hint
    assert records["line-5"]["error"] == "line 5 has 5 fields where the header has 4" + hint
    assert records["line-6"]["error"] == "line 6 has 3 fields where the header has 4" + hint
    assert records["e"]["document"] == "Coal is black." and records["e"]["response"] == "It is black."


def test_quoting_csv_reads_the_quoted_field_whole(faithkit, tmp_path):
    records = _score_tsv(faithkit, tmp_path, "csv")
    assert list(records) == ["a", "b", "line-5", "line-6", "e"]
    assert records["b"]["document"] == "The sea\tis wide\nand deep." and records["b"]["response"] == "The sea is deep."
    assert records["b"]["overlap_f1"] > 0
    assert records["line-5"]["error"].startswith("line 5 has 5 fields where the header has 4; check the quoting")
    assert records["line-6"]["error"].startswith("line 6 has 3 fields where the header has 4; check the quoting")
    assert records["e"]["response"] == "It is black." and "error" not in records["e"]


def test_score_table_summarises_many_rows(faithkit, tmp_path):
    rows = [
        {"id": str(i), "document": "red apples grow", "response": "red apples" if i % 2 else "blue"} for i in range(40)
    ]
    run = faithkit(
        "score",
        "--metric",
        "overlap-f1",
        "--input",
        write_jsonl(tmp_path / "rows.jsonl", rows),
        "--output",
        tmp_path / "scores.jsonl",
    )
    assert run.code == 0
    # half the rows score 0.8 (P 1, R 2/3), half 0
    assert "| overlap_f1 | 40 | 0.4000 | 0.0000 | 0.8000 |" in run.out


def test_dtype_chooses_the_precision_and_belongs_to_the_job(faithkit, model_folder, rows_file, tmp_path):
    """--dtype bfloat16 scores in bfloat16 (close to float32 on the tiny model), and its output is another job's."""
    full, half = tmp_path / "float32.jsonl", tmp_path / "bfloat16.jsonl"
    assert _score(faithkit, model_folder, rows_file, full).code == 0
    assert _score(faithkit, model_folder, rows_file, half, "--dtype", "bfloat16").code == 0
    pairs = [(a["pmi"], b["pmi"]) for a, b in zip(read_results(full), read_results(half)) if "pmi" in a]
    assert len(pairs) == 6 and all(abs(a - b) < 0.05 for a, b in pairs) and any(a != b for a, b in pairs)
    refused = _score(faithkit, model_folder, rows_file, half)
    assert refused.code == 2 and "was written by a different job" in refused.error_lines[0]
    assert "dtype" in refused.error_lines[0]
    unknown = _score(faithkit, model_folder, rows_file, half, "--dtype", "half")
    assert unknown.code == 2 and "argument --dtype: invalid choice: 'half'" in unknown.err


@pytest.mark.slow
def test_gemma_in_float16_is_one_error_naming_the_dtype(faithkit, tmp_path):
    """Gemma 3's logits overflow in float16: one error line with the fix, not NaN scores."""
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {
                "id": "a",
                "knowledge": "Paris is the capital of France.",
                "message": "What is the capital of France?",
                "response": "Paris is.",
            }
        ],
    )
    run = faithkit(
        "score", "--model", "gemma3-270m", "--dtype", "float16", "--input", rows, "--output", tmp_path / "scores.jsonl"
    )
    assert run.code == 2 and run.error_lines == [
        "error: the model's logits are NaN or infinite: the model runs in float16, and half precision overflows in "
        "some models (Gemma 3 in float16 does). Load it in bfloat16 or float32: --dtype bfloat16 on the command "
        "line, dtype='bfloat16' in faithkit.serving.models.load"
    ]
    assert "Traceback" not in run.err


def test_lexical_scores_relevance_against_the_gold_of_generate_and_rerank_outputs(faithkit, model_folder, tmp_path):
    from sacrebleu.metrics import BLEU

    from faithkit.metrics.lexical import token_f1

    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"id": "a", "document": "Apples grow on tall trees.", "history": ["Where?"], "gold": "On tall trees."},
            {"id": "b", "document": "Pears are sweet.", "history": ["Taste?"], "gold": "They are sweet."},
            {"id": "c", "document": "Plums are purple.", "history": ["Colour?"]},  # no gold: no relevance
        ],
    )
    generated = tmp_path / "generated.jsonl"
    run = faithkit(
        "generate", "--model", model_folder, "--input", rows, "--output", generated, "--strategy", "plain",
        "--max-new-tokens", "4",
    )  # fmt: skip
    assert run.code == 0, run.err
    scored = tmp_path / "scored.jsonl"
    run = faithkit("score", "--metric", "lexical", "--input", generated, "--output", scored)
    assert run.code == 0, run.err
    assert "1 of 3 rows have no reference response in a gold or reference column" in run.err
    bleu = BLEU(lowercase=True, effective_order=True)
    for record in read_results(scored):
        gold = {"a": "On tall trees.", "b": "They are sweet."}.get(record["id"])
        if gold is None:
            assert "token_f1" not in record and "bleu" not in record and "knowledge_precision" in record
            continue
        assert record["token_f1"] == token_f1(gold, record["response"])
        assert record["bleu"] == bleu.sentence_score(record["response"], [gold]).score
    assert "| token_f1 | bleu |" in run.out

    # a rerank output holds the gold top-level too; another column is named with --reference-column
    reranked = write_jsonl(
        tmp_path / "reranked.jsonl",
        [
            {"id": "a", "document": "d", "response": "on tall trees", "candidate": 2, "gold": "On tall trees.",
             "wanted": "apples on trees"},
        ],
    )  # fmt: skip
    run = faithkit("score", "--metric", "lexical", "--input", reranked, "--output", tmp_path / "r.jsonl")
    assert run.code == 0 and read_results(tmp_path / "r.jsonl")[0]["token_f1"] == 1.0
    out = tmp_path / "w.jsonl"
    run = faithkit("score", "--metric", "lexical", "--input", reranked, "--output", out, "--reference-column", "wanted")
    assert run.code == 0 and read_results(out)[0]["token_f1"] == token_f1("apples on trees", "on tall trees")

    run = faithkit("score", "--metric", "lexical", "--input", reranked, "--output", out, "--reference-column", "x")
    assert run.code == 2 and run.error_lines == [
        "error: --reference-column 'x' is not a column of the input; its other columns are "
        "['candidate', 'gold', 'wanted']"
    ]
    run = faithkit("score", "--metric", "overlap-f1", "--input", reranked, "--output", out, "--reference-column", "x")
    assert run.code == 2 and run.error_lines == [
        "error: --reference-column applies to --metric lexical (relevance) only; drop it"
    ]
    run = faithkit("score", "--metric", "lexical", "--input", rows_without_gold(tmp_path), "--output", out, "--restart")
    assert run.code == 0 and "knowledge precision only; name the column of reference responses" in run.err


def rows_without_gold(tmp_path):
    return write_jsonl(tmp_path / "plain.jsonl", [{"id": "a", "document": "Apples.", "response": "Apples grow."}])


@pytest.mark.parametrize("command", ["score", "explain"])
def test_a_run_that_fails_before_its_first_row_leaves_no_file(faithkit, monkeypatch, tmp_path, command):
    """A hub-only claim checker with the hub off: the model fails to load once the output is open (its name passes the
    early check here, as when the hub answers for it and the download then fails), and nothing is left that would
    read as a result."""
    from huggingface_hub import constants

    from faithkit.serving import model_names

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(model_names, "check_model_name", lambda *args, **kwargs: None)
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "a", "document": "Apples grow.", "response": "They grow."}])
    output = ["--output", tmp_path / "out.jsonl"] if command == "score" else ["--html", tmp_path / "out.html"]
    run = faithkit(command, "--metric", "minicheck-roberta-large", "--input", rows, *output)
    assert run.code == 2 and run.error_lines == [
        "error: claim checker minicheck-roberta-large: 'lytang/MiniCheck-RoBERTa-Large' is not a local folder or in "
        "the Hugging Face cache, and could not be downloaded; give a local copy of a minicheck-roberta-large "
        "checkpoint (nli_model=FOLDER, --nli-model FOLDER), or check claims offline with faithkit-checker, or "
        "download it where the hub is reachable (`hf download lytang/MiniCheck-RoBERTa-Large`) and copy the cache"
    ]  # not the offline causal LMs, which it cannot read
    assert sorted(path.name for path in tmp_path.iterdir()) == ["rows.jsonl"]
