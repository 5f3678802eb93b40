"""``faithkit rerank``: the rerank strategy's choice over candidates from a file, under the job contract."""

import shlex

import pytest

from faithkit.generation import rerank as reranking
from faithkit.data import read_results
from faithkit.decoding import generate
from faithkit.decoding.rerank import Rerank
from faithkit.generation.rerank import Judges

from .helpers import crash_after, write_jsonl

ROWS = [
    {
        "id": f"r{i}",
        "document": f"Document {i % 3} says apples number {i} grow on tall trees.",
        "history": ["Tell me about apples.", f"Are there {i}?"],
        **({"gold": f"There are {i} apples."} if i % 2 else {}),
    }
    for i in range(10)
]
NEW_TOKENS = ("--max-new-tokens", "4")
BEAMS = 3


@pytest.fixture(scope="module")
def files(tmp_path_factory, model_folder):
    """The rows, their beam candidates written as an engine would ({id, responses}), and the strategy's picks."""
    from faithkit.serving import models

    folder = tmp_path_factory.mktemp("rerank")
    model, tokenizer = models.load(model_folder)
    documents, histories = [r["document"] for r in ROWS], [r["history"] for r in ROWS]
    beams = generate(
        model,
        tokenizer,
        documents,
        histories,
        strategy="plain",
        num_beams=BEAMS,
        num_return_sequences=BEAMS,
        max_new_tokens=4,
    )
    candidates = write_jsonl(folder / "cands.jsonl", [{"id": r["id"], "responses": b} for r, b in zip(ROWS, beams)])
    strategy = Rerank(n=BEAMS, candidate_search="beam", fluency_tolerance=2.0)
    picks = generate(
        model, tokenizer, documents, histories, strategy=strategy, judge=Judges(model, tokenizer), max_new_tokens=4
    )
    return {
        "rows": write_jsonl(folder / "rows.jsonl", ROWS),
        "candidates": candidates,
        "picks": picks,
        "folder": folder,
    }


def _rerank(model_folder, files, output, *extra):
    return [
        "rerank",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--candidates",
        files["candidates"],
        "--output",
        output,
        "--fluency-tolerance",
        "2",
        *NEW_TOKENS,
        *extra,
    ]


def test_rerank_chooses_as_the_strategy_does_on_the_same_candidates(faithkit, model_folder, files, tmp_path):
    output = tmp_path / "out.jsonl"
    run = faithkit(*_rerank(model_folder, files, output))
    assert run.code == 0, run.err
    records = read_results(output)
    assert [r["id"] for r in records] == [r["id"] for r in ROWS]
    assert [r["response"] for r in records] == files["picks"]
    assert any(r["candidate"] != 0 for r in records)  # the judge moved off greedy somewhere
    for record, row in zip(records, ROWS):
        assert len(record["scores"]) == len(record["fluencies"]) == BEAMS + 1
        options = [record["greedy"], *read_candidates(files)[record["id"]]]  # the indexing of scores
        assert record["response"] == options[record["candidate"]]
        assert record["fluency_bound"] == pytest.approx(record["fluencies"][0] - 2)
        picked = record["scores"][record["candidate"]]
        assert record["excluded_by_bound"] == sum(
            score > picked and fluency < record["fluency_bound"]
            for score, fluency in zip(record["scores"], record["fluencies"])
        )
        assert record["reason"].startswith(
            "greedy kept" if record["candidate"] == 0 else f"candidate {record['candidate']}:"
        )
        assert record.get("gold") == row.get("gold") and "extras" not in record  # a top-level field, where given
    kept = sum(r["candidate"] == 0 for r in records)
    gains = sorted(r["scores"][r["candidate"]] - r["scores"][0] for r in records if r["candidate"])
    median = (gains[(len(gains) - 1) // 2] + gains[len(gains) // 2]) / 2
    bounded = sum(r["excluded_by_bound"] > 0 for r in records)
    assert run.out.splitlines() == [
        f"rerank: 10 rows (0 errors): {kept} kept their greedy response, {10 - kept} took a candidate "
        f"(median score gain over greedy {median:+.3f})",
        f"the fluency bound left out a higher-scoring candidate in {bounded} rows (per row: 'reason', "
        "'fluency_bound'; 'candidate' indexes 'scores', 0 = greedy)",
    ]
    assert (
        "self-judging is biased. Name a judge with a model of its own that runs offline: --judge faithkit-checker "
        "or --judge faith-judge or --judge e2e-nli --preset offline"
    ) in " ".join(run.err.split())


def test_a_judge_with_a_model_of_its_own_gets_no_self_judging_warning():
    from faithkit.generation.rerank import self_judging

    assert self_judging("pmi-faith", "smollm2-135m").endswith(
        "a model of its own that runs offline: --judge faithkit-checker or --judge e2e-nli --preset offline"
    )  # faith-judge's judge LM is smollm2-135m too; every judge named runs without a network
    assert "--judge faithkit-checker or --judge faith-judge or --judge e2e-nli" in self_judging(
        "pmi-faith", "gemma3-270m"
    )
    assert "the judge faith-judge runs the generator smollm2-135m" in self_judging("faith-judge", "smollm2-135m")
    assert self_judging("faith-judge", "gemma3-270m") is None
    assert self_judging("e2e-nli", "smollm2-135m") is None


def read_candidates(files):
    return {key: value["responses"] for key, value in reranking.read_candidates(files["candidates"]).items()}


def test_ctrl_c_and_rerun_gives_the_uninterrupted_output(faithkit, monkeypatch, model_folder, files, tmp_path):
    whole, stopped = tmp_path / "whole.jsonl", tmp_path / "stopped.jsonl"
    assert faithkit(*_rerank(model_folder, files, whole)).code == 0
    argv = _rerank(model_folder, files, stopped, "--chunk-size", "2")
    crash_after(monkeypatch, reranking, "rerank", 2, 4, KeyboardInterrupt())
    run = faithkit(*argv)
    monkeypatch.undo()
    assert run.code == 130
    assert run.err.splitlines()[-1] == (
        f"interrupted: 4 rows are in {stopped}; rerun the same command to continue: faithkit {shlex.join(map(str, argv))}"
    )
    run = faithkit(*argv)
    assert run.code == 0 and "6 reranked, 4 already done, 0 errors" in run.err
    for got, want in zip(read_results(stopped), read_results(whole), strict=True):  # batching moves scores by ulps
        noisy = ("scores", "fluencies", "fluency_bound", "reason")  # the reason quotes scores to 3 decimals
        assert {k: v for k, v in got.items() if k not in noisy} == {k: v for k, v in want.items() if k not in noisy}
        assert got["fluency_bound"] == pytest.approx(want["fluency_bound"], abs=1e-5)
        assert got["scores"] == pytest.approx(want["scores"], abs=1e-5)
        assert got["fluencies"] == pytest.approx(want["fluencies"], abs=1e-5)


def test_a_row_without_candidates_gets_its_error_and_a_bad_file_one_line(faithkit, model_folder, files, tmp_path):
    partial = write_jsonl(tmp_path / "partial.jsonl", [{"id": "r0", "responses": ["Apples grow."], "greedy": "Trees."}])
    output = tmp_path / "out.jsonl"
    run = faithkit(
        "rerank",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--candidates",
        partial,
        "--output",
        output,
        *NEW_TOKENS,
    )
    assert run.code == 0 and "1 reranked, 0 already done, 9 errors" in run.err
    records = read_results(output)
    assert records[1]["error"] == (
        'row r1: no candidates for this id in --candidates; add a record {"id": ..., "responses": [...]} for it'
    )
    assert records[0]["greedy"] == "Trees." and records[0]["response"] in ("Trees.", "Apples grow.")

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "r0", "responses": "Apples grow."}\n')
    run = faithkit(
        "rerank",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--candidates",
        bad,
        "--output",
        tmp_path / "never.jsonl",
    )
    assert run.code == 2 and run.error_lines == [
        (
            f'error: {bad}, line 1: responses is "Apples grow." where a list is expected; write one object per '
            'line: {"id": "r1", "responses": ["...", "..."], "greedy": "..."}'
        )
    ]
    run = faithkit(
        "rerank",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--candidates",
        partial,
        "--output",
        tmp_path / "never.jsonl",
        "--judge",
        "nonsense",
    )
    assert run.code == 2 and run.error_lines[0].startswith("error: rerank: --judge nonsense: unknown metric")


@pytest.mark.parametrize("command", ["rerank", "candidates"])
def test_the_judge_s_options_are_flags_and_one_it_does_not_take_is_one_error_line(faithkit, files, tmp_path, command):
    shown = faithkit(command, "--help").out
    for flag in ("--nli-model", "--preset", "--qg-model", "--max-windows", "--fluency-view", "--fluency-reference"):
        assert flag in shown
    where = ["--server", "http://127.0.0.1:9/v1", "--rerank-output", tmp_path / "picks.jsonl"]
    run = faithkit(
        command, "--model", "smollm2-135m", "--input", files["rows"], "--output", tmp_path / "out.jsonl",
        *(["--candidates", files["candidates"]] if command == "rerank" else where),
        "--judge", "e2e-nli", "--preset", "offline", "--max-windows", "4", "--window", "64",
    )  # fmt: skip
    assert run.code == 2 and run.error_lines == [
        "error: --window, --max-windows do not apply to --judge e2e-nli (its options: --preset, --nli-model); "
        "drop them or name another judge"
    ]
    assert not (tmp_path / "out.jsonl").exists()


def test_generate_with_the_rerank_strategy_picks_the_same(faithkit, model_folder, files, tmp_path):
    output = tmp_path / "generated.jsonl"
    run = faithkit(
        "generate",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--output",
        output,
        "--strategy",
        "rerank",
        "--n",
        "3",
        "--candidate-search",
        "beam",
        "--fluency-tolerance",
        "2",
        *NEW_TOKENS,
    )
    assert run.code == 0, run.err
    assert [r["response"] for r in read_results(output)] == files["picks"]
    run = faithkit(
        "generate",
        "--model",
        model_folder,
        "--input",
        files["rows"],
        "--output",
        output,
        "--strategy",
        "rerank",
        "--candidate-search",
        "nucleus",
    )
    assert run.code == 2 and run.error_lines == [
        "error: rerank: --candidate-search 'nucleus' is unknown; choose one of sample, beam"
    ]


@pytest.mark.slow  # the faithful recipe's decodes and the checker: 3.3 s of CPU
def test_generate_with_the_faithful_recipe_picks_as_the_strategy_does(faithkit, model_folder, files, tmp_path):
    """``--strategy faithful`` in one command: its defaults with the flags given (here a judge that runs on the tiny
    model, for speed), the same picks as the strategy in Python; and ``faithkit rerank --strategy faithful`` takes its
    judge and bound."""
    from faithkit.decoding import row_seed
    from faithkit.decoding.rerank import Faithful
    from faithkit.serving import models

    output = tmp_path / "faithful.jsonl"
    run = faithkit("generate", "--model", model_folder, "--input", files["rows"], "--output", output,
                   "--strategy", "faithful", "--n", "2", "--judge", "pmi-faith", "--also", "beam+pmi",
                   "--seed", "3", *NEW_TOKENS)  # fmt: skip
    assert run.code == 0, run.err
    model, tokenizer = models.load(model_folder)
    strategy = Faithful(n=2, judge="pmi-faith", also="beam+pmi")
    expected = generate(
        model, tokenizer, [r["document"] for r in ROWS], [r["history"] for r in ROWS], strategy=strategy,
        judge=Judges(model, tokenizer), seeds=[row_seed(3, r["id"]) for r in ROWS], max_new_tokens=4,
    )  # fmt: skip
    assert [r["response"] for r in read_results(output)] == expected
    picks = tmp_path / "picks.jsonl"
    run = faithkit(*_rerank(model_folder, files, picks, "--strategy", "faithful", "--judge", "pmi-faith"))
    assert run.code == 0, run.err
    records = read_results(picks)
    assert all(r["reason"].startswith("greedy kept") or " (greedy " in r["reason"] for r in records)
    document_view = Judges(model, tokenizer)(
        Faithful(judge="pmi-faith"), [r["document"] for r in ROWS], [r["history"] for r in ROWS],
        [r["greedy"] for r in records],
    )  # fmt: skip
    assert [r["fluencies"][0] for r in records] == pytest.approx([f for _, f in document_view], abs=1e-6)
