"""faithkit sweep: the grid, resuming after a crash, equality with per-cell generation, settings errors, intervals
and paired tests, best.json, the report, and the PMI-FAITH token colouring it shares with ``faithkit explain``.

Generator and judge are tiny random GPT-2s (two different ones) saved as folders, so the sweep
loads them by name as a user's would.
"""

import argparse
import csv
import json
import logging
import re
from dataclasses import replace
from html import unescape
from pathlib import Path

import pytest
import torch

from faithkit.cli import sweep as sweep_cli
from faithkit.data import ResultWriter, read_results
from faithkit.decoding import PMI, Cell, GenerationOptions, Plain, shared_decode, generate
from faithkit.errors import ConfigError, OutputError
from faithkit.explain import highlight_tokens, is_explained, token_texts, write_explain_html
from faithkit.prompts import DEFAULT_TEMPLATE
from faithkit.metrics.lexical import is_repeated
from faithkit.sweep import SweepConfig, choose_best, load_config, run_sweep, sweep_markdown
from tests.conftest import save_gpt2_folder

ROWS = [
    {
        "id": "eiffel",
        "knowledge": "The Eiffel Tower is 330 metres tall and was finished in 1889.",
        "history": ["How tall is the Eiffel Tower?"],
        "gold": "It is 330 metres tall.",
    },
    {
        "id": "garden",
        "knowledge": "Gardening is considered by many people to be a relaxing activity.",
        "history": ["I just started gardening.", "Nice! Do you like it?", "Yes, a lot."],
        "gold": "Many people find gardening relaxing.",
    },
    {
        "id": "jazz",
        "knowledge": "Jazz originated in New Orleans in the late 19th century.",
        "history": [],
        "gold": "Jazz began in New Orleans.",
    },
    {
        "id": "penguins",
        "knowledge": "Emperor penguins live only in Antarctica.",
        "history": ["Where do emperor penguins live?"],
        "gold": "Only in Antarctica.",
    },
    {
        "id": "tea",
        "knowledge": "Green tea is made from unoxidised leaves of Camellia sinensis.",
        "history": ["What is green tea made of?"],
        "gold": "Unoxidised Camellia sinensis leaves.",
    },
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory, tiny_gpt2, gpt2_tokenizer):
    """The generator (conftest's tiny GPT-2) and a judge (another random tiny GPT-2), saved as model folders."""
    from transformers import GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("models")
    save_gpt2_folder(tiny_gpt2, gpt2_tokenizer, folder / "generator")
    torch.manual_seed(1)
    save_gpt2_folder(GPT2LMHeadModel(tiny_gpt2.config).eval(), gpt2_tokenizer, folder / "judge")
    return folder


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "dev.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


@pytest.fixture
def config(models_dir, rows_file, tmp_path):
    return SweepConfig(
        generator=str(models_dir / "generator"),
        scoring_model=str(models_dir / "judge"),
        input=str(rows_file),
        out=str(tmp_path / "sweep"),
        alpha=(0.0, 0.5),
        top_p=(0.6, 1.0),
        generation=GenerationOptions(num_beams=4, max_new_tokens=5, batch_size=2),
        report_contexts=10,
        metrics=("pmi-faith", "lexical"),
    ).validate()


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


# ---- the grid ------------------------------------------------------------------------------
def pmi(alpha, top_p, search="greedy"):
    return Cell(PMI(alpha, top_p), search)


def test_grid_always_has_the_baseline():
    plain = Cell(Plain(), "greedy")
    assert SweepConfig(alpha=(0.5,), top_p=(0.6, 0.9)).cells() == [plain, pmi(0.5, 0.6), pmi(0.5, 0.9)]
    assert SweepConfig(alpha=(1.0, 0.0), top_p=(1.0,)).cells() == [plain, pmi(1, 1), pmi(0, 1)]
    assert [c.label for c in SweepConfig(alpha=(0.25,), top_p=(0.6,)).cells()] == ["plain", "pmi_a0.25_p0.6"]
    assert len(SweepConfig().cells()) == 17  # PMI-DECODE's default 4 x 4 grid beside the baseline


def test_cells_known_to_decode_alike_run_once():
    assert shared_decode(pmi(0, 0.6)) == shared_decode(pmi(0, 1)) == Cell(Plain(), "greedy")  # argmax is in the nucleus
    assert shared_decode(pmi(0, 1, "beam")) == Cell(Plain(), "beam")
    assert shared_decode(pmi(0, 0.6, "beam")) == pmi(0, 0.6, "beam")  # the nucleus mask drops beam candidates
    assert shared_decode(pmi(0.25, 0.6)) == pmi(0.25, 0.6)


def test_strategies_entries_and_flags():
    config = SweepConfig(
        strategies=(
            {"name": "plain", "search": ["greedy", "beam"]},
            {"name": "pmi", "alpha": [0.25], "top_p": [0.6, 1]},
            {"name": "cad"},
            {"name": "adacad", "search": "sample"},
        )
    )
    assert [c.label for c in config.cells()] == [
        "plain",
        "plain_beam",
        "pmi_a0.25_p0.6",
        "pmi_a0.25_p1",
        "cad_a0.5",
        "cad_a1",
        "adacad_sample",
    ]  # cad: its default grid
    flagged = replace(config, alpha=(0.5,), top_p=(0.6,))  # --alpha/--top-p set the PMI-DECODE grid
    assert [c.label for c in flagged.cells()][2:3] == ["pmi_a0.5_p0.6"]
    written = load_config(
        overrides={
            "strategies": "plain,cad:alpha=1,pmi:alpha=0.5,top_p=0.9,pmi",
            "generator": "g",
            "input": "i",
            "out": "o",
        }
    )
    assert written.strategies == (
        {"name": "plain"},
        {"name": "cad", "alpha": 1.0},
        {"name": "pmi", "alpha": 0.5, "top_p": 0.9},
        {"name": "pmi"},
    )
    assert [c.label for c in written.cells()][:4] == ["plain", "cad_a1", "pmi_a0.5_p0.9", "pmi_a0_p0.6"]
    with pytest.raises(
        ConfigError, match=r"^--strategies cad:alph=1: cad: unknown key 'alph' \(did you mean 'alpha'\?\)"
    ):
        load_config(overrides={"strategies": "plain,cad:alph=1", "generator": "g", "input": "i", "out": "o"})
    with pytest.raises(ConfigError, match=r"strategies\[0\]: unknown strategy 'pmii'; choose one of plain, pmi"):
        SweepConfig(strategies=({"name": "pmii"},)).cells()
    with pytest.raises(ConfigError, match=r"strategies\[0\]: plain: unknown key 'alpha'"):
        SweepConfig(strategies=({"name": "plain", "alpha": [0.5]},)).cells()
    with pytest.raises(ConfigError, match=r"strategies\[0\]: search 'bem' is unknown"):
        SweepConfig(strategies=({"name": "pmi", "search": "bem"},)).cells()
    with pytest.raises(
        ConfigError, match=r"strategies\[1\]: pmi: alpha must be in \[0, 1\], got 2 \(0 = plain decoding"
    ):
        SweepConfig(strategies=({"name": "plain"}, {"name": "pmi", "alpha": [0.5, 2]})).cells()
    with pytest.raises(ConfigError, match=r"strategies\[0\]: strategy cad does not support beam_sample search"):
        SweepConfig(strategies=({"name": "cad", "search": "beam_sample"},)).cells()


# ---- settings errors come before any model loads -----------------------------------------
def parse(argv):
    parser = argparse.ArgumentParser()
    sweep_cli.register(parser.add_subparsers())
    return parser.parse_args(["sweep", *argv])


def test_metric_lists_read_the_same_from_the_flag_and_the_config(capsys):
    """As ``faithkit score --metric``: the flag and the config key read one list, and a name of none is refused."""
    assert parse(["--metrics", "document-bleu,lexical"]).metrics == ("document-bleu", "lexical")
    given = {"generator": "g", "input": "i", "out": "o"}
    metrics = ["document-bleu", "pmi-faith", "lexical"]
    assert load_config(None, {**given, "metrics": metrics}).metrics == ("document-bleu", "pmi-faith", "lexical")
    for old in ("blue", "bleu"):
        with pytest.raises(SystemExit):
            parse(["--metrics", old])
        assert "argument --metrics: must be one of pmi-faith, " in capsys.readouterr().err


@pytest.fixture
def no_model_loads(monkeypatch):
    from faithkit.serving import models

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the settings were checked")

    monkeypatch.setattr(models, "load", refuse)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--search", "greedy", "--temperature", "0.7"], "--temperature applies to sampling only"),
        (["--search", "beam", "--num-beams", "1"], "beam search needs --num-beams of at least 2, got 1"),
        (
            ["--fluency", "fluency", "--metrics", "lexical", "--faithfulness", "knowledge_precision"],
            "--fluency fluency needs the metric pmi-faith",
        ),
        (["--metrics", "pmi-faith", "--relevance", "bleu"], "--relevance bleu needs the metric lexical"),
        (
            ["--metrics", "lexical"],
            "no faithfulness measure: add faith-judge or pmi-faith to --metrics, or name the measure",
        ),
        (
            ["--metrics", "llm-judge,lexical", "--faithfulness", "llm_judge"],
            "llm-judge asks a served model: give the API's base URL with --server",
        ),
        (
            ["--faithfulness", "words"],
            "--faithfulness words: the measure has no better direction",
        ),
    ],
)
def test_bad_values_fail_before_a_model_loads(no_model_loads, rows_file, tmp_path, argv, message):
    args = parse(["--generator", "g", "--input", str(rows_file), "--out", str(tmp_path / "o"), *argv])
    with pytest.raises(ConfigError, match=message):
        sweep_cli.run(args)


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["--alpha", "0,1.5"],
            "argument --alpha: must be in [0, 1], got 1.5 (0 = plain decoding, 1 = rank by PMI alone)",
        ),
        (["--top-p", "0"], "argument --top-p: must be in (0, 1], got 0 (1 keeps every token)"),
        (["--alpha", "0,x"], "argument --alpha: expected a number, got 'x'"),
        (
            ["--metrics", "pmi-faith,rouge"],
            "argument --metrics: must be one of pmi-faith, minimal-edit, faith-judge, q2, e2e-nli, "
            "nli-roberta-large-mnli, minicheck-roberta-large, minicheck-deberta-v3-large, "
            "minicheck-flan-t5-large, hhem-2.1-open, alignscore-style, faithkit-checker, faithkit-checker-smollm2, "
            "faithkit-checker-gemma, llm-judge, overlap-f1, document-bleu, lexical, got 'rouge'",
        ),
        (["--significance", "1"], "argument --significance: must be in (0, 1), got 1"),
        (
            ["--faithfulness", "faith"],
            "argument --faithfulness: must be one of pmi_faith, fluency, minimal_edit, faith_judge, q2, q2_no_nli, "
            "e2e_nli, nli_roberta_large_mnli, minicheck_roberta_large, minicheck_deberta_v3_large, "
            "minicheck_flan_t5_large, hhem_2_1_open, alignscore_style, faithkit_checker, faithkit_checker_smollm2, "
            "faithkit_checker_gemma, llm_judge, overlap_f1, document_bleu, knowledge_precision, bleu, token_f1, words, "
            "empty, repeated, got 'faith'",
        ),
        (["--max-new-tokens", "0"], "argument --max-new-tokens: must be at least 1, got 0"),
    ],
)
def test_bad_flag_values_fail_as_they_parse(no_model_loads, rows_file, tmp_path, capsys, argv, message):
    from faithkit.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["sweep", "--generator", "g", "--input", str(rows_file), "--out", str(tmp_path / "o"), *argv])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"error: faithkit sweep: {message}\n"


def test_config_file_keys_and_overrides(no_model_loads, rows_file, tmp_path, monkeypatch):
    path = tmp_path / "sweep.yaml"
    path.write_text("generator: g\ninput: ${data}/dev.jsonl\nout: o\nalpha: [0, 0.25]\ntop-p: 0.6\nlimit: 3\n")
    monkeypatch.setenv("FAITHKIT_DATA", str(rows_file.parent))
    config = load_config(path, {"alpha": "0.5,1", "scoring_model": None, "generator": None})
    assert config.alpha == (0.5, 1.0) and config.top_p == (0.6,) and config.limit == 3 and config.generator == "g"
    assert config.input_path() == rows_file and config.scoring_model == SweepConfig.scoring_model  # None: not given
    path.write_text("generator: g\ninput: x\nout: o\ntop_pp: 0.6\nbeams: 2\n")
    with pytest.raises(ConfigError, match=r"^config file .*: unknown key 'top_pp' \(did you mean 'top_p'\?\); the"):
        load_config(path)  # the first unknown key (tests/test_options.py: the whole message)
    with pytest.raises(
        ConfigError, match=r"^unknown key 'top_pp' \(did you mean 'top_p'\?\); the accepted keys are gen"
    ):
        load_config(None, {"generator": "g", "top_pp": 0.6})
    path.with_name("bad.yaml").write_text("generator: g\ninput: x\nout: o\ntop_p: 0\n")
    path.write_text("generator: g\ninput: x\nout: o\n")  # the flags given win; the file keeps the rest
    with pytest.raises(
        ConfigError, match=r"^config file .*: top_p must be in \(0, 1\], got 0"
    ):  # the file's value, named as its key
        sweep_cli.run(parse(["--config", str(path.with_name("bad.yaml"))]))
    with pytest.raises(SystemExit):  # the flag: as it parses (test_bad_flag_values_fail_as_they_parse)
        parse(["--config", str(path), "--top-p", "0"])
    path.write_text("generator: g\ninput: x\nout: o\ndtype: bfloat16\n")
    assert load_config(path).dtype == "bfloat16"
    with pytest.raises(ConfigError, match=r"^dtype must be one of auto, float32, bfloat16, float16, got 'half'"):
        load_config(path, {"dtype": "half"})
    path.write_text("generator: g\ninput: x\nout: o\nlimit: 2.5\n")
    with pytest.raises(ConfigError, match="limit must be an integer, got 2.5"):
        load_config(path)


def test_the_search_reads_from_the_config_the_entries_and_the_flag_and_the_old_key_is_refused(tmp_path, rows_file):
    """``search`` (the config key, a strategies entry's key) and its flag ``--search``; the old key ``search_mode``
    is an unknown key."""
    path = tmp_path / "sweep.yaml"
    path.write_text("generator: g\ninput: x\nout: o\nsearch: beam\nstrategies: [{name: plain, search: sample}]\n")
    config = load_config(path)
    assert config.search == "beam" and config.strategies == ({"name": "plain", "search": "sample"},)
    assert [c.label for c in config.cells()] == ["plain_beam", "plain_sample"]
    path.write_text("generator: g\ninput: x\nout: o\nsearch_mode: beam\n")
    with pytest.raises(ConfigError, match=rf"^config file {re.escape(str(path))}: unknown key 'search_mode'"):
        load_config(path)
    assert parse(["--search", "sample"]).search == "sample"
    assert (
        sweep_cli._config(
            parse(["--generator", "g", "--input", str(rows_file), "--out", "o", "--search", "beam"])
        ).search
        == "beam"
    )


def test_shipped_configs_are_valid(data_dir):
    root = Path(__file__).parents[1] / "configs" / "sweep"
    smollm2 = load_config(root / "smollm2-q2wow.yaml")
    assert len(smollm2.cells()) == 17 and smollm2.limit == 40 and smollm2.scoring_model != smollm2.generator
    assert len({shared_decode(cell) for cell in smollm2.cells()}) == 13  # alpha 0 at four top_p: plain greedy, once
    assert smollm2.input_path().exists() and smollm2.gold_column == "gold"
    paper = load_config(root / "paper-grid.yaml", {"input": "dev.jsonl"})
    assert len(paper.cells()) == 21 and paper.generation.num_beams == 4
    assert len({shared_decode(cell) for cell in paper.cells()}) == 20  # beam: only alpha 0, top_p 1 is plain


# ---- running, resuming --------------------------------------------------------------------
@pytest.mark.slow  # sweeps crashed at random and resumed, and one uninterrupted: 6-8 s of CPU
@pytest.mark.parametrize("search", ["greedy", "sample"])
def test_resume_after_crashes_equals_an_uninterrupted_run(config, tmp_path, monkeypatch, search):
    config = replace(
        config,
        search=search,
        generation=replace(config.generation, temperature=1.5 if search == "sample" else None),
    )
    whole = run_sweep(replace(config, out=str(tmp_path / "whole")))

    crashed = replace(config, out=str(tmp_path / "crashed"))
    runs = list(dict.fromkeys(shared_decode(cell) for cell in config.cells()))  # alpha 0 (greedy: any top_p) is plain
    names = [cell.label for cell in runs]
    assert names == (
        ["plain", "pmi_a0.5_p0.6", "pmi_a0.5_p1"]
        if search == "greedy"
        else ["plain_sample", "pmi_a0_p0.6_sample", "pmi_a0.5_p0.6_sample", "pmi_a0.5_p1_sample"]
    )
    first = 2 * len(runs) + 4  # batches of 2 contexts: the second cell's second row of batch 2
    second = first + (3 * len(runs) - 3) + 8  # the rest of the responses, then 7 of the scores
    real_write = ResultWriter.write
    calls = [0]

    def crashing_write(self, record):
        calls[0] += 1
        if calls[0] in (first, second):
            raise RuntimeError("simulated crash")
        real_write(self, record)

    monkeypatch.setattr(ResultWriter, "write", crashing_write)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_sweep(crashed)
    assert [len(read_jsonl(tmp_path / "crashed" / "cells" / f"{name}.jsonl")) for name in names] == [4, 3] + [2] * (
        len(runs) - 2
    )
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_sweep(crashed)
    assert len(read_jsonl(tmp_path / "crashed" / "scores.jsonl")) == 7
    resumed = run_sweep(crashed)

    assert (tmp_path / "crashed" / "sweep.csv").read_text() == (tmp_path / "whole" / "sweep.csv").read_text()
    assert resumed.table == whole.table
    assert {f"{m}_{part}" for m in ("pmi_faith", "bleu", "fluency") for part in ("ci_low", "ci_high", "p")} <= set(
        resumed.table[1]
    )
    for name in names:  # every row once, the same responses and scores, to the last bit
        records = read_jsonl(tmp_path / "crashed" / "cells" / f"{name}.jsonl")
        assert sorted(r["id"] for r in records) == sorted(r["id"] for r in ROWS)
        expected = {r["id"]: r for r in read_jsonl(tmp_path / "whole" / "cells" / f"{name}.jsonl")}
        assert {r["id"]: r for r in records} == expected
    scores = {r["id"]: r for r in read_jsonl(tmp_path / "crashed" / "scores.jsonl")}
    assert scores == {r["id"]: r for r in read_jsonl(tmp_path / "whole" / "scores.jsonl")}


FOUR_STRATEGIES = """
metrics: [pmi-faith, lexical]
strategies:
  - {name: plain, search: [greedy, beam, beam_sample]}
  - {name: pmi, alpha: [0.5], top_p: [0.6, 1]}
  - {name: cad, alpha: [0, 1]}
  - {name: adacad}
num_beams: 2
seed: 3
max_new_tokens: 5
batch_size: 2
resamples: 200
"""


@pytest.mark.slow  # sweeps interrupted and resumed: 7 s of CPU
def test_all_four_strategies_resume_after_ctrl_c_to_the_same_table(config, tmp_path, monkeypatch, capsys):
    """One config with plain (three searches), PMI-DECODE, CAD and AdaCAD: Ctrl-C during generation and again during
    scoring, then a rerun of the same command ends with the sweep.csv of an uninterrupted run, CI and p columns
    included; CAD alpha 0 is decoded once, as plain greedy."""
    from tests.cli.helpers import run_main

    def command(out):
        path = tmp_path / f"{out}.yaml"
        path.write_text(
            f"generator: {config.generator}\nscoring_model: {config.scoring_model}\ninput: {config.input}\n"
            f"out: {tmp_path / out}\n{FOUR_STRATEGIES}"
        )
        return ["-q", "sweep", "--config", path]

    assert run_main(*command("whole")) == 0
    table = (tmp_path / "whole" / "sweep.csv").read_text()
    header, *rows = table.splitlines()
    assert [row.split(",")[0] for row in rows] == [
        "plain",
        "plain_beam",
        "plain_beam_sample",
        "pmi_a0.5_p0.6",
        "pmi_a0.5_p1",
        "cad_a0",
        "cad_a1",
        "adacad",
    ]
    assert header.startswith(
        "cell,strategy,search,alpha,top_p,n,pmi_faith,pmi_faith_ci_low,pmi_faith_ci_high,pmi_faith_p,fluency,"
    )
    assert rows[5].endswith(",plain") and sorted(
        p.stem for p in (tmp_path / "whole" / "cells").iterdir() if p.suffix == ".jsonl"
    ) == sorted(["plain", "plain_beam", "plain_beam_sample", "pmi_a0.5_p0.6", "pmi_a0.5_p1", "cad_a1", "adacad"])

    real_write = ResultWriter.write
    calls = [0]

    def interrupted_write(self, record):  # 7 decodes x 5 rows are 35 responses, then 35 scores
        calls[0] += 1
        if calls[0] in (12, 35 + 20):
            raise KeyboardInterrupt
        real_write(self, record)

    monkeypatch.setattr(ResultWriter, "write", interrupted_write)
    capsys.readouterr()
    assert run_main(*command("stopped")) == 130
    said = capsys.readouterr().err.splitlines()[-1]  # what is saved, and the command that continues
    assert said == (
        f"interrupted: 11 of 35 generations and 0 scores are saved in {tmp_path / 'stopped'}; rerun the same "
        f"command to continue: faithkit -q sweep --config {tmp_path / 'stopped.yaml'}"
    )
    assert run_main(*command("stopped")) == 130
    assert len(read_jsonl(tmp_path / "stopped" / "scores.jsonl")) == 18  # 11 + 24 responses, then 18 scores
    assert run_main(*command("stopped")) == 0
    assert (tmp_path / "stopped" / "sweep.csv").read_text() == table


@pytest.mark.slow  # a whole sweep with every output: 5 s of CPU
def test_sweep_outputs(config, models_dir, tmp_path, capsys, caplog):
    args = parse(
        [
            "--generator",
            config.generator,
            "--scoring-model",
            config.scoring_model,
            "--input",
            config.input,
            "--out",
            config.out,
            "--alpha",
            "0,0.5",
            "--top-p",
            "0.6,1",
            "--max-new-tokens",
            "5",
            "--batch-size",
            "2",
            "--report-contexts",
            "10",
        ]
    )
    with caplog.at_level(logging.INFO, logger="faithkit"):
        assert sweep_cli.run(args) == 0
    out = Path(config.out)
    printed = capsys.readouterr().out
    plans = [record.getMessage() for record in caplog.records if record.getMessage().startswith("plan: ")]
    assert plans == [  # said before the first batch: 5 cells, alpha 0 decoded once as plain
        f"plan: 5 cells (3 distinct decodes) on {len(ROWS)} contexts: {3 * len(ROWS)} generations (3 decodes x "
        f"{len(ROWS)}), then {3 * len(ROWS)} responses judged by pmi-faith, faith-judge ({6 * len(ROWS)} scorings) "
        f"-> {out}"
    ]
    assert caplog.records.index(next(r for r in caplog.records if r.getMessage().startswith("plan: "))) < next(
        i for i, r in enumerate(caplog.records) if r.getMessage().startswith("generate: batch")
    )
    assert "| alpha \\ top_p | 0.6 | 1 |" in printed and "\n| 0.5 | " in printed and "best: " in printed
    plain = "| plain greedy | "
    assert plain in printed and "| pmi greedy alpha=0.5 top_p=0.6 | " in printed  # alpha 0 folded into plain
    assert (
        "decoded alike, shown once: plain greedy = pmi greedy alpha=0 top_p=0.6; pmi greedy alpha=0 top_p=1" in printed
    )
    assert "| pmi greedy alpha=0 top_p=0.6 |" not in printed
    assert "[" in printed.split(plain)[1].split("\n")[0]  # values with their intervals
    assert "| pmi_faith | pmi_faith p |" in printed and "| bleu | bleu p |" in printed  # and p against plain
    assert not list(out.rglob("*.lock"))  # every finished writer took its lock file away

    # every cell keeps the rows' ids, inputs and gold, and equals generate() with the cell's settings
    from transformers import AutoTokenizer, GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(models_dir / "generator").eval()
    tokenizer = AutoTokenizer.from_pretrained(models_dir / "generator")
    cells = config.cells()
    assert [c.label for c in cells] == ["plain", "pmi_a0_p0.6", "pmi_a0_p1", "pmi_a0.5_p0.6", "pmi_a0.5_p1"]
    runs = list(dict.fromkeys(shared_decode(cell) for cell in cells))
    assert sorted(p.stem for p in (out / "cells").glob("*.jsonl")) == sorted(cell.label for cell in runs)
    for cell in cells:  # alpha 0 is decoded once, as plain greedy, and equals PMI-DECODE alpha 0 at each top_p
        records = {r["id"]: r for r in read_jsonl(out / "cells" / f"{shared_decode(cell).label}.jsonl")}
        assert {key: records["eiffel"][key] for key in ("document", "history", "gold")} == {
            "document": ROWS[0]["knowledge"],
            "history": ROWS[0]["history"],
            "gold": ROWS[0]["gold"],
        }
        expected = generate(
            model,
            tokenizer,
            [r["knowledge"] for r in ROWS],
            [r["history"] for r in ROWS],
            cell.strategy,
            template=DEFAULT_TEMPLATE,
            batch_size=2,
            max_new_tokens=5,
        )
        assert [records[r["id"]]["response"] for r in ROWS] == expected

    with open(out / "sweep.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    measures = (
        "pmi_faith",
        "fluency",
        "faith_judge",
        "knowledge_precision",
        "bleu",
        "token_f1",
        "words",
        "empty",
        "repeated",
    )
    assert list(table[0]) == [
        "cell",
        "strategy",
        "search",
        "alpha",
        "top_p",
        "n",
        *[column for m in measures for column in (m, f"{m}_ci_low", f"{m}_ci_high", f"{m}_p")],
        "decodes_as",
    ]
    assert [(row["cell"], row["strategy"], row["alpha"], row["top_p"], row["decodes_as"]) for row in table] == [
        ("plain", "plain", "", "", ""),
        ("pmi_a0_p0.6", "pmi", "0.000000", "0.600000", "plain"),
        ("pmi_a0_p1", "pmi", "0.000000", "1.000000", "plain"),
        ("pmi_a0.5_p0.6", "pmi", "0.500000", "0.600000", ""),
        ("pmi_a0.5_p1", "pmi", "0.500000", "1.000000", ""),
    ]
    assert all(row["n"] == "5" and row["pmi_faith"] and row["bleu"] and row["fluency"] for row in table)
    for row in table:  # the interval holds the value; the baseline's paired test against itself finds nothing
        for m in measures:
            assert float(row[f"{m}_ci_low"]) <= float(row[m]) + 1e-9 <= float(row[f"{m}_ci_high"]) + 2e-9
    assert all(float(table[i][f"{m}_p"]) == 1.0 for i in range(3) for m in measures)  # alpha 0 = the baseline

    # the mean PMI-FAITH of a cell is the mean of its responses' scores, each scored once for the whole grid
    scores = read_jsonl(out / "scores.jsonl")
    assert len(scores) == len(runs) * len(ROWS)
    baseline = [s for s in scores if s["cell"] == "plain" and s.get("pmi") is not None]
    assert float(table[0]["pmi_faith"]) == pytest.approx(sum(s["pmi"] for s in baseline) / len(baseline), abs=1e-6)
    assert float(table[0]["fluency"]) == pytest.approx(
        sum(s["logp_history"] for s in baseline) / len(baseline), abs=1e-6
    )
    best = json.loads((out / "best.json").read_text())
    eligible = [
        row
        for row in table
        if float(row["bleu"]) >= float(table[0]["bleu"]) - 1.0
        and float(row["fluency"]) >= float(table[0]["fluency"]) - 0.5
    ]
    # faith-judge's weights were fitted with smollm2-135m, not this judge: the choice fell back to PMI-FAITH, and says so
    assert best["faithfulness"] == "pmi_faith" and best["faithfulness_note"] == (
        f"faith-judge's weights were fitted with 'smollm2-135m', not the scoring model {config.scoring_model!r}, so faith_judge is on "
        "another scale (refit it: docs/judge.md); the choice maximises pmi_faith instead"
    )
    assert f"note: {best['faithfulness_note']}" in printed
    assert best["best"]["pmi_faith"] == pytest.approx(max(float(row["pmi_faith"]) for row in eligible), abs=1e-6)
    assert best["eligible"] == [row["cell"] for row in eligible] and isinstance(best["significant"], bool)
    assert sorted(p.name for p in (out / "heatmaps").iterdir()) == sorted(f"{m}.png" for m in measures)

    # report.html shows every cell's response to every (sampled) context, coloured by token
    page = (out / "report.html").read_text()
    text = unescape(re.sub(r"<[^>]+>", "", page))
    for cell in runs:
        for record in read_jsonl(out / "cells" / f"{cell.label}.jsonl"):
            assert record["response"].strip() in text if record["response"].strip() else "(empty response)" in text
    by_id = {s["id"]: s for s in scores}  # every distinct decode once: alpha 0 is on plain's line
    assert page.count('class="tok"') == sum(
        len(by_id[f"{cell.label}/{r['id']}"].get("token_pmi", [])) for cell in runs for r in ROWS
    )


class FakeQ2:
    """Q² stand-in: the share of the response's words found in the document; q2_no_nli is half of it."""

    calls = 0

    def compute_rows(self, documents, histories, responses):
        FakeQ2.calls += 1
        rows = []
        for document, response in zip(documents, responses):
            words = response.lower().split()
            share = sum(word in document.lower() for word in words) / len(words)
            rows.append({"q2": share, "q2_no_nli": share / 2, "explanations": []})
        return rows


@pytest.mark.slow  # a whole sweep: 3 s of CPU
def test_the_judge_is_the_default_faithfulness_and_pmi_faith_stays_in_the_table(config):
    defaults = SweepConfig(scoring_model="smollm2-135m")  # the LM faith-judge's weights were fitted with
    assert (
        defaults.metrics == ("faith-judge", "pmi-faith", "lexical") and defaults.faithfulness_measure == "faith_judge"
    )
    assert defaults.faithfulness_note is None
    other = replace(defaults, scoring_model="gemma3-270m")  # other scales: PMI-FAITH is chosen instead
    assert other.faithfulness_measure == "pmi_faith" and other.faithfulness_note.endswith("maximises pmi_faith instead")
    assert replace(other, faithfulness="faith_judge").faithfulness_note.endswith("still maximises faith_judge")
    assert replace(other, metrics=("faith-judge", "lexical")).faithfulness_measure == "faith_judge"  # nothing else
    assert replace(defaults, metrics=("pmi-faith", "lexical")).faithfulness_measure == "pmi_faith"  # as before
    result = run_sweep(replace(config, alpha=(0.5,), top_p=(0.6,), metrics=defaults.metrics))
    judged = read_jsonl(Path(config.out) / "faith-judge.jsonl")
    baseline = [r["faith_judge"] for r in judged if r["id"].startswith("plain/") and r.get("faith_judge") is not None]
    assert result.table[0]["faith_judge"] == pytest.approx(sum(baseline) / len(baseline), abs=1e-9)
    assert all(row["pmi_faith"] is not None for row in result.table)
    header = (Path(config.out) / "sweep.csv").read_text().splitlines()[0]
    assert ",faith_judge,faith_judge_ci_low,faith_judge_ci_high,faith_judge_p," in header


@pytest.mark.slow  # a whole sweep with Q²: 2.5 s of CPU
def test_q2_columns_when_asked(config, monkeypatch):
    from faithkit.metrics.registry import METRICS

    monkeypatch.setitem(METRICS, "q2", replace(METRICS["q2"], build=lambda **options: FakeQ2()))
    result = run_sweep(replace(config, metrics=("lexical", "q2"), faithfulness="q2", fluency=None))
    q2 = {r["id"]: r for r in read_jsonl(Path(config.out) / "q2.jsonl")}
    assert FakeQ2.calls == 1  # every cell's responses in one call
    for row, cell in zip(result.table, config.cells()):
        values = [q2[f"{shared_decode(cell).label}/{r['id']}"].get("q2") for r in ROWS]
        values = [v for v in values if v is not None]
        assert row["q2"] == pytest.approx(sum(values) / len(values)) and row["q2_no_nli"] == pytest.approx(
            row["q2"] / 2
        )
        assert "pmi_faith" not in row  # only the measures of the metrics asked for
    header = (Path(config.out) / "sweep.csv").read_text().splitlines()[0]
    assert ",q2,q2_ci_low,q2_ci_high,q2_p,q2_no_nli," in header and "best: " in result.markdown


def test_each_cell_record_says_what_was_cut_of_its_context_as_generate_does(config, gpt2_tokenizer):
    """A 14-token room cuts the contexts; each cell's record holds the cut of its row, the same in every cell, as
    :func:`context_cuts` gives it and ``faithkit generate`` writes it."""
    options = replace(config.generation, max_context_tokens=14)
    cut = replace(config, generation=options, alpha=(0.5,), top_p=(1.0,), metrics=("lexical",), fluency=None)
    run_sweep(replace(cut, faithfulness="knowledge_precision"))
    keys = ("document_chars", "truncated_chars", "truncated_tokens", "context_tokens")
    expected = {}
    for row in ROWS:
        context = DEFAULT_TEMPLATE.context(gpt2_tokenizer, row["knowledge"], row["history"], max_tokens=14)
        if context.truncated_tokens or context.truncated_chars:
            expected[row["id"]] = {
                "document_chars": len(row["knowledge"]),
                "truncated_chars": context.truncated_chars,
                "truncated_tokens": context.truncated_tokens,
                "context_tokens": len(context.ids),
            }
    assert len(expected) >= 3
    for label in ("plain", "pmi_a0.5_p1"):
        records = read_jsonl(Path(config.out) / "cells" / f"{label}.jsonl")
        assert {r["id"]: {key: r[key] for key in keys} for r in records if "truncated_tokens" in r} == expected


def test_a_served_judge_scores_every_decoded_response_and_the_provenance_names_it(config):
    from tests.cli.fake_engine import FakeEngine

    served = replace(
        config, alpha=(0.5,), top_p=(0.6,), metrics=("llm-judge", "lexical"), faithfulness="llm_judge", fluency=None
    )
    with FakeEngine(answer="neutral") as server:
        result = run_sweep(replace(served, server=server.url))
        asked = [body["messages"][-1]["content"] for body in server.requests]
    scored = read_jsonl(Path(config.out) / "llm-judge.jsonl")
    assert len(asked) == len(scored) == 2 * len(ROWS)  # the baseline and one PMI-DECODE cell, each row once
    assert [row["llm_judge"] for row in result.table] == [0.5, 0.5]
    assert result.best["provenance"]["models"]["llm-judge --server"] == {
        "served_model": "fake-model",
        "server": server.url,
    }


def test_judging_with_the_generator_warns_and_loading_models_says_so(config, caplog):
    with caplog.at_level("INFO", logger="faithkit.sweep"):
        run_sweep(
            replace(
                config, scoring_model=config.generator, alpha=(0.5,), top_p=(0.6,), metrics=("pmi-faith", "lexical")
            )
        )
    assert "favours the PMI-DECODE cells" in caplog.text
    assert caplog.messages[0].startswith("plan: 2 cells (2 distinct decodes) on 5 contexts")  # before any work
    assert caplog.messages[1] == f"loading generator {config.generator}…"  # before the first batch's minutes
    assert caplog.messages[2].startswith("generate: batch 1/3 (2 contexts x 2 cells) in ")
    assert f"loading scoring model {config.generator} for pmi-faith…" in caplog.messages


def test_without_gold_relevance_stays_empty(config, rows_file, caplog):
    rows_file.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "gold"}) + "\n" for row in ROWS))
    with caplog.at_level("WARNING", logger="faithkit.sweep"):
        result = run_sweep(replace(config, alpha=(0.5,), top_p=(0.6,)))
    assert "5 of 5 rows have no gold response" in caplog.text
    assert all(
        row["bleu"] is None and row["token_f1"] is None and row["knowledge_precision"] is not None
        for row in result.table
    )
    assert "no bleu for the baseline, so no bleu bound" in result.best["rule"]


@pytest.mark.parametrize("quoting, document", [("none", '"Pears" ripen'), ("csv", "Pears ripen")])
def test_quoting_reaches_the_reader(tmp_path, quoting, document):
    from faithkit.sweep.run import read_contexts

    path = tmp_path / "dev.tsv"
    path.write_text('id\tdocument\thistory\tgold\nr1\t"Pears" ripen\tAnd pears?\tThey do.\n')
    config = SweepConfig(generator="g", input=str(path), out=str(tmp_path / "out"), quoting=quoting).validate()
    assert [(c.id, c.document, c.gold) for c in read_contexts(config)] == [("r1", document, "They do.")]


def test_unknown_quoting_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="^quoting must be one of none, csv, got 'tsv'"):
        SweepConfig(generator="g", input="dev.tsv", out=str(tmp_path), quoting="tsv").validate()


@pytest.mark.slow  # three sweeps: 7 s of CPU
def test_resuming_onto_other_rows_recomputes_them(config, rows_file, tmp_path, caplog):
    """Ids moved onto other contexts: their records are stale, so they are computed again, never reused."""
    cells = replace(config, alpha=(0.5,), top_p=(0.6,))
    run_sweep(cells)
    shifted = [dict(row, id=ROWS[(i + 1) % len(ROWS)]["id"]) for i, row in enumerate(ROWS)]  # ids moved by one
    rows_file.write_text("".join(json.dumps(row) + "\n" for row in shifted))
    with caplog.at_level("WARNING"):
        run_sweep(cells)
    assert f"plain.jsonl: {len(ROWS)} rows changed since their records were written" in caplog.text
    fresh = replace(cells, out=str(tmp_path / "fresh"))
    run_sweep(fresh)
    assert (Path(cells.out) / "sweep.csv").read_text() == (tmp_path / "fresh" / "sweep.csv").read_text()
    for name in ("plain", "pmi_a0.5_p0.6"):
        assert read_results(Path(cells.out) / "cells" / f"{name}.jsonl") == read_results(
            tmp_path / "fresh" / "cells" / f"{name}.jsonl"
        )


@pytest.mark.slow  # sweeps in one folder: 4.5 s of CPU
def test_other_settings_in_the_same_folder_stop(config):
    run_sweep(
        replace(
            config,
            alpha=(0.5,),
            top_p=(0.6,),
            metrics=("lexical",),
            relevance="bleu",
            faithfulness="knowledge_precision",
        )
    )
    longer = replace(config, generation=replace(config.generation, max_new_tokens=6))
    with pytest.raises(
        OutputError,
        match=r"plain.jsonl was written by a different job \(max_new_tokens: 5 then, 6 now\)"
        r"; .* --restart",
    ):
        run_sweep(longer)
    assert run_sweep(longer, restart=True).table[0]["n"] == 5


# ---- best.json ------------------------------------------------------------------------------
def test_best_rule_on_a_hand_made_table():
    def row(name, faith, bleu, fluency=-2.0, p=0.01):
        return {"cell": name, "pmi_faith": faith, "bleu": bleu, "fluency": fluency, "pmi_faith_p": p}

    table = [
        row("plain", 0.30, 4.0, p=1.0),
        row("a", 0.70, 3.5),
        row("b", 0.90, 2.9),
        row("c", 1.40, 1.0),
        row("d", 0.90, 3.2, p=0.2),
    ]
    best = choose_best(table, tolerance=1.0)  # bound 3.0: 1.4 and the first 0.9 fall below it
    assert best["best"]["cell"] == "d" and not best["significant"] and best["p"] == 0.2
    assert best["bounds"] == {"bleu": pytest.approx(3.0)} and best["eligible"] == ["plain", "a", "d"]
    assert choose_best(table, tolerance=1.1)["best"]["cell"] == "d"  # a tie on 0.9: higher BLEU wins
    assert choose_best(table, tolerance=3.0)["best"]["cell"] == "c"
    assert choose_best(table, tolerance=3.0)["significant"]  # p 0.01 < 0.05, and more faithful
    assert not choose_best(table, tolerance=3.0, significance=0.01)["significant"]
    assert choose_best(table, tolerance=0.0)["best"]["cell"] == "plain"  # only the baseline qualifies
    assert not choose_best(table, tolerance=0.0)["significant"]
    assert choose_best(table, relevance="token_f1")["best"]["cell"] == "c"  # no relevance: no bound
    assert "bleu >= baseline bleu - 1 = 3" in best["rule"]


def test_a_measure_where_lower_is_better_is_minimised_and_bounded_from_above():
    """``repeated`` (share of looping responses) is declared lower-is-better: choosing by it, or bounding by it, reads
    it that way round."""
    table = [
        {"cell": "plain", "repeated": 0.30, "empty": 0.10, "bleu": 2.0, "repeated_p": 1.0},
        {"cell": "a", "repeated": 0.10, "empty": 0.50, "bleu": 2.0, "repeated_p": 0.01},
        {"cell": "b", "repeated": 0.20, "empty": 0.15, "bleu": 2.0, "repeated_p": 0.20},
        {"cell": "c", "repeated": 0.60, "empty": 0.00, "bleu": 2.0, "repeated_p": 0.01},
    ]
    best = choose_best(table, faithfulness="repeated")
    assert best["best"]["cell"] == "a" and best["significant"]  # the least looping, significantly below plain's
    bounded = choose_best(table, faithfulness="repeated", fluency="empty", fluency_tolerance=0.1)
    assert bounded["bounds"]["empty"] == pytest.approx(0.2) and bounded["eligible"] == ["plain", "b", "c"]
    assert bounded["best"]["cell"] == "b" and not bounded["significant"]
    assert "empty <= baseline empty + 0.1 = 0.2" in bounded["rule"]


def test_the_fluency_bound_keeps_degenerate_cells_out():
    """The one-word "Documentrees" cell: most faithful by PMI-FAITH, and far less fluent than the baseline."""
    table = [
        {"cell": "plain", "pmi_faith": 0.30, "bleu": 1.8, "fluency": -2.1, "pmi_faith_p": 1.0},
        {"cell": "pmi-a0.5", "pmi_faith": 0.90, "bleu": 4.0, "fluency": -2.4, "pmi_faith_p": 0.001},
        {"cell": "pmi-a1", "pmi_faith": 2.00, "bleu": 4.5, "fluency": -5.3, "pmi_faith_p": 0.001},
    ]
    assert choose_best(table)["best"]["cell"] == "pmi-a1"  # without the fluency bound
    guarded = choose_best(table, fluency="fluency", fluency_tolerance=0.5)
    assert guarded["best"]["cell"] == "pmi-a0.5" and guarded["eligible"] == ["plain", "pmi-a0.5"]
    assert "fluency >= baseline fluency - 0.5 = -2.6" in guarded["rule"]


def test_the_table_tests_key_measures_folds_alike_cells_and_says_why_cells_are_out():
    def row(cell, faith, fluency, p_faith, p_fluency, alpha=None, decodes_as=None):
        values = {
            "cell": cell,
            "strategy": "plain" if alpha is None else "pmi",
            "search": "greedy",
            "alpha": alpha,
            "n": 12,
            "decodes_as": decodes_as,
        }
        for measure in (
            "pmi_faith",
            "fluency",
            "knowledge_precision",
            "bleu",
            "token_f1",
            "words",
            "empty",
            "repeated",
        ):
            values.update({measure: None, f"{measure}_ci_low": None, f"{measure}_ci_high": None, f"{measure}_p": None})
        values.update(
            {
                "pmi_faith": faith,
                "pmi_faith_ci_low": faith - 0.5,
                "pmi_faith_ci_high": faith + 0.5,
                "pmi_faith_p": p_faith,
                "fluency": fluency,
                "fluency_p": p_fluency,
                "bleu": 2.0,
                "bleu_p": 1.0,
            }
        )
        return values

    table = [
        row("plain", 0.426, -2.1, 1.0, 1.0),
        row("pmi_a0", 0.426, -2.1, 1.0, 1.0, 0.0, "plain"),
        row("pmi_a0.5", 1.239, -2.69, 0.002, 0.007, 0.5),
        row("pmi_a1", 2.0, -5.3, 0.001, 0.001, 1.0),
    ]
    config = SweepConfig(alpha=(0.0, 0.5, 1.0), top_p=(1.0,), metrics=("pmi-faith", "lexical"))
    best = choose_best(table, fluency="fluency")
    lines = sweep_markdown(table, config, best).splitlines()
    assert lines[:5] == [
        "| cell | pmi_faith | pmi_faith p | fluency | fluency p | knowledge_precision | knowledge_precision p | choice |",
        "|---|---|---|---|---|---|---|---|",
        "| plain greedy | 0.426 [-0.07, 0.93] | baseline | -2.100 | baseline | — | baseline |  |",
        "| pmi greedy alpha=0.5 | 1.239 [0.74, 1.74] | 0.002 ▲ | -2.690 | 0.007 ▼ | — | — | best |",
        "| pmi greedy alpha=1 | 2.000 [1.50, 2.50] | 0.001 ▲ | -5.300 | 0.001 ▼ | — | — "
        "| excluded: fluency -5.300 < bound -3.100 |",
    ]  # no line of its own for alpha 0
    assert lines[6:9] == [  # every measure with its p, MEASURES_PER_TABLE a table: relevance with its p too
        "| cell | bleu | bleu p | token_f1 | token_f1 p | words |",
        "|---|---|---|---|---|---|",
        "| plain greedy | 2.00 | baseline | — | baseline | — |",
    ]
    assert lines[12].startswith("| cell | empty | empty p | repeated | repeated p |")
    assert lines[17:19] == ["", "decoded alike, shown once: plain greedy = pmi greedy alpha=0"]
    assert max(len(line) for line in lines[:17]) <= 122  # readable in a terminal; sweep.csv has the full numbers
    assert lines[-1].startswith(
        "best: pmi greedy alpha=0.5 (1.239 [0.739, 1.739] / 2.00), significantly more "
        "faithful than the baseline (p = 0.002); trade-offs: significantly worse than the "
        "baseline on "
        "fluency -0.59 (p = 0.007): highest pmi_faith"
    )


def test_repeated_responses():
    assert is_repeated("no no no, I said")
    assert is_repeated("I love it. I love it! I love it")
    assert not is_repeated("I love it. I love it. Do you?")
    assert not is_repeated("It is 330 metres tall, and it is in Paris, it is said.")
    assert not is_repeated("")


# ---- PMI-FAITH colouring (report.html and faithkit explain) -------------------------------
def test_token_texts_join_to_the_decoded_text(gpt2_tokenizer):
    text = " Café — naïve 😀 tea\nand 東京"
    ids = gpt2_tokenizer(text)["input_ids"]
    pieces = token_texts(gpt2_tokenizer.convert_ids_to_tokens(ids))
    assert len(pieces) == len(ids) and "".join(pieces) == gpt2_tokenizer.decode(ids) == text
    # SentencePiece (Gemma): ▁ is a space, <0xNN> a raw byte of a character split over tokens
    assert token_texts(["▁Hello", ",", "▁world", "<0xE2>", "<0x82>", "<0xAC>"]) == [
        " Hello",
        ",",
        " world",
        "",
        "",
        "€",
    ]


def test_explain_page_colours_pmi_faith_tokens(tmp_path):
    records = [
        {
            "id": "a",
            "document": "d",
            "history": ["h"],
            "response": "It is <tall>",
            "pmi": 0.8,
            "tokens": ["ĠIt", "Ġis", "Ġ<", "tall", ">"],
            "token_pmi": [0.1, -0.5, 2.5, 0.0, -3.0],
        },
        {
            "id": "b",
            "document": "d",
            "history": [],
            "response": "No",
            "pmi": -0.2,
            "tokens": ["ĠNo"],
            "token_pmi": [-0.2],
        },
        {"id": "c", "error": "row c: field 'response' is empty"},
    ]
    page = write_explain_html(records, tmp_path / "page.html", score_key="pmi", low_threshold=0.0).read_text()
    assert page.index("row b") < page.index("row a") < page.index("row c")  # lowest first, errors last
    assert '<span class="tok" style="background:hsl(120,75%,72%)"' in page  # +2.5 nats: full green
    assert 'style="background:hsl(0,75%,72%)"' in page and "hsl(0,75%,93%)" in page  # -3 full red, -0.5 light
    assert "&lt;" in page and "<tall>" not in page
    assert 'title="+2.50"' in page and "token colour: log P(token | document, history)" in page
    assert highlight_tokens(["ĠIt"], [0.0]).count("<span") == 1
    scores = tmp_path / "scores.jsonl"  # faithkit explain renders a PMI-FAITH scores file as it is
    scores.write_text("".join(json.dumps(record) + "\n" for record in records[::-1]))
    assert is_explained(scores)


@pytest.mark.slow  # a rerank sweep beside generate per cell: 7 s of CPU
@pytest.mark.parametrize("judge", ["generator", "judge"])
def test_rerank_cells_choose_as_generate_does_and_share_the_judge_pass(
    config, models_dir, tmp_path, monkeypatch, judge
):
    """With the generator as the sweep's judge its candidates are scored in the sweep's own pass: one scorer call for
    the grid's responses and every candidate; with another judge they get a pass of their own under the generator.
    Either way each rerank cell picks what ``generate(strategy=rerank)`` picks, and what ``faithkit rerank`` picks from
    the candidates file the sweep keeps; a rerun scores nothing again."""
    from faithkit.generation.generate import GeneratorJob
    from faithkit.generation.rerank import CandidatesJob, read_candidates
    from faithkit.data import Row
    from faithkit.metrics.pmi_faith import PMIFaith

    strategies = ({"name": "rerank", "n": [3], "candidate_search": ["sample", "beam"], "fluency_tolerance": [0.5, 50]},)
    config = replace(
        config,
        scoring_model=str(models_dir / judge),
        alpha=None,
        top_p=None,
        strategies=strategies,
        generation=replace(config.generation, seed=3),
    ).validate()
    calls = []
    real = PMIFaith.compute_rows

    def counting(self, documents, histories, responses, *args, **kwargs):
        calls.append((Path(self.model.name_or_path).name, len(responses)))
        return real(self, documents, histories, responses, *args, **kwargs)

    monkeypatch.setattr(PMIFaith, "compute_rows", counting)
    result = run_sweep(config)
    candidates = read_jsonl(tmp_path / "sweep" / "candidates" / "rerank_n3_sample.jsonl")
    assert [len(r["responses"]) for r in candidates] == [3] * len(ROWS)
    shared = judge == "generator"
    assert (tmp_path / "sweep" / "candidates" / "pmi-faith.jsonl").exists() is not shared
    judged = {r["id"] for r in read_jsonl(tmp_path / "sweep" / "scores.jsonl")}
    assert any("#" in i for i in judged) is shared  # the candidates' records are in the sweep's own scores
    assert [name for name, _ in calls] == (["generator"] if shared else ["generator", "judge"])

    rows = [Row(id=r["id"], document=r["knowledge"], history=r["history"]) for r in ROWS]
    moved = 0
    greedy = replace(config.generation, num_beams=1)  # the rerank cell's own search
    for cell in config.cells()[1:]:
        expected = [record["response"] for record in GeneratorJob(config.generator, cell.strategy, greedy)(rows)]
        got = {r["id"]: r for r in read_jsonl(tmp_path / "sweep" / "cells" / f"{cell.label}.jsonl")}
        assert [got[r.id]["response"] for r in rows] == expected, cell.label
        drawn = read_candidates(tmp_path / "sweep" / "candidates" / f"rerank_n3_{cell.strategy.candidate_search}.jsonl")
        reranked = CandidatesJob(config.generator, cell.strategy, greedy, drawn)(rows)  # faithkit rerank on them
        assert [record["response"] for record in reranked] == expected, cell.label
        moved += sum(got[r.id]["candidate"] != 0 for r in rows)
    assert moved  # some context left the greedy response: the test can tell a choice from the fallback

    calls.clear()
    assert run_sweep(config).table == result.table
    assert calls == []


def count_forwards(monkeypatch, folder: str) -> list:
    """A list that gains an item at each forward call of a GPT-2 loaded from a folder named ``folder``."""
    import functools

    from transformers import GPT2LMHeadModel

    calls: list = []
    real = GPT2LMHeadModel.forward

    @functools.wraps(real)
    def counted(self, *args, **kwargs):
        if Path(self.name_or_path).name == folder:
            calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GPT2LMHeadModel, "forward", counted)
    return calls


@pytest.mark.slow  # two whole sweeps: 6.5 s of CPU
def test_pmi_faith_is_read_off_the_judges_rows_with_one_lm_pass(config, tmp_path, monkeypatch):
    """faith-judge's rows carry PMI-FAITH's under the same judge LM: measuring both runs the LM once per group, and
    scores.jsonl holds what a sweep measuring PMI-FAITH alone writes (within float noise, the fields alike)."""
    from faithkit.metrics.pmi_faith import PMIFaith

    config = replace(config, alpha=(0.5,), top_p=(0.6,))
    alone = run_sweep(replace(config, out=str(tmp_path / "alone"), metrics=("pmi-faith", "lexical")))
    calls = []
    real = PMIFaith.compute_rows

    def counting(self, *args, **kwargs):
        calls.append(self.evidence)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PMIFaith, "compute_rows", counting)
    judge_forwards = count_forwards(monkeypatch, "judge")
    judge_only = run_sweep(replace(config, out=str(tmp_path / "judge"), metrics=("faith-judge", "lexical")))
    assert judge_only.table and calls == [True] and judge_forwards
    calls.clear()
    forwards_of_the_judge_alone = len(judge_forwards)
    judge_forwards.clear()
    both = run_sweep(replace(config, out=str(tmp_path / "both"), metrics=("pmi-faith", "faith-judge", "lexical")))
    assert calls == [True]  # one group, one LM pass: the judge's (with its evidence)
    assert len(judge_forwards) == forwards_of_the_judge_alone  # PMI-FAITH costs no judge forward of its own
    expected = {r["id"]: r for r in read_jsonl(tmp_path / "alone" / "scores.jsonl")}
    got = {r["id"]: r for r in read_jsonl(tmp_path / "both" / "scores.jsonl")}
    assert got.keys() == expected.keys()
    for key, record in expected.items():
        assert got[key].keys() == record.keys(), key
        if "pmi" in record:  # an empty response has no score
            assert got[key]["pmi"] == pytest.approx(record["pmi"], abs=1e-6)
    for row_alone, row_both in zip(alone.table, both.table):
        assert row_both["pmi_faith"] == pytest.approx(row_alone["pmi_faith"], abs=1e-6)
        assert row_both["fluency"] == pytest.approx(row_alone["fluency"], abs=1e-6)


@pytest.mark.slow  # rerank sweeps crashed and resumed: 5 s of CPU
def test_rerank_cells_resume_after_crashes_to_the_uninterrupted_table(config, models_dir, tmp_path, monkeypatch):
    """A crash while the candidates are drawn, and another while the generator judges them, then a rerun: the same
    candidates, candidate scores, choices and table as a sweep that ran through, every record once."""
    strategies = ({"name": "rerank", "n": [3], "candidate_search": ["sample", "beam"], "fluency_tolerance": [0.5, 50]},)
    config = replace(
        config, alpha=None, top_p=None, strategies=strategies, generation=replace(config.generation, seed=3)
    ).validate()
    whole = run_sweep(replace(config, out=str(tmp_path / "whole")))
    crashed = replace(config, out=str(tmp_path / "crashed"))
    real_write = ResultWriter.write
    calls = [0]

    def crashing_write(self, record):
        calls[0] += 1
        if calls[0] in (9, 40):  # the second batch of candidates; the candidates' scores of the first group
            raise RuntimeError("simulated crash")
        real_write(self, record)

    monkeypatch.setattr(ResultWriter, "write", crashing_write)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="simulated crash"):
            run_sweep(crashed)
    assert len(read_jsonl(tmp_path / "crashed" / "candidates" / "pmi-faith.jsonl")) < 2 * 4 * len(ROWS)
    resumed = run_sweep(crashed)
    assert resumed.table == whole.table
    for name in ("candidates/rerank_n3_sample", "candidates/rerank_n3_beam", "candidates/pmi-faith", "scores"):
        records = read_jsonl(tmp_path / "crashed" / f"{name}.jsonl")
        assert len({r["id"] for r in records}) == len(records), name  # every record once
        assert records == read_jsonl(tmp_path / "whole" / f"{name}.jsonl"), name
    for cell in config.cells()[1:]:
        path = f"cells/{cell.label}.jsonl"
        assert read_jsonl(tmp_path / "crashed" / path) == read_jsonl(tmp_path / "whole" / path)


def test_the_report_shows_each_cell_s_share_of_responses_the_checker_flags_with_a_flagged_sentence():
    from types import SimpleNamespace

    from faithkit.sweep.report import SweepOutcome, checker_flags

    contexts = [SimpleNamespace(id=f"r{i}") for i in range(3)]
    table = [{"cell": "plain", "decodes_as": None}, {"cell": "pmi_a0_p1", "decodes_as": "plain"},
             {"cell": "cad_a1", "decodes_as": None}]  # fmt: skip
    responses = {
        "plain": {"r0": "It is 330 metres tall.", "r1": "It is tall. It was built in 1925.", "r2": "Hi."},
        "pmi_a0_p1": {"r0": "It is 330 metres tall.", "r1": "It is tall. It was built in 1925.", "r2": "Hi."},
        "cad_a1": {"r0": "Yes.", "r1": "No.", "r2": ""},
    }
    checker = {  # a hub preset's rows: each sentence's P(supported)
        "plain/r0": {"sentence_scores": [0.9]},
        "plain/r1": {"sentence_scores": [0.8, 0.2]},  # its second sentence is flagged
        "plain/r2": {"sentence_scores": [0.4]},
        "cad_a1/r0": {"sentence_scores": [0.7]},
        "cad_a1/r1": {"sentence_scores": [0.6]},  # r2: empty, no scores
    }
    outcome = SweepOutcome(contexts, responses, None, None, table, {}, checker)
    assert checker_flags(outcome) == {
        "plain": (2, 3, "It was built in 1925.", "P(supported) 0.20"),
        "pmi_a0_p1": (2, 3, "It was built in 1925.", "P(supported) 0.20"),  # decodes as plain: its scores
        "cad_a1": (0, 2, None, None),
    }
    assert checker_flags(SweepOutcome(contexts, responses, None, None, table, {})) == {}

    def three_way(verdict, *unsupported):  # faithkit's checker: a verdict and its sentences, the unsupported first
        texts = ["It was built in 1925.", "It is tall."]
        sentences = [{"text": text, "unsupported": p} for text, p in zip(texts, unsupported)]
        return {"c": 0.5, "c_verdict": verdict, "sentences": sentences}

    checker = {"plain/r0": three_way(1.0, 0.3), "plain/r1": three_way(0.0, 0.81, 0.1), "plain/r2": three_way(0.0, 0.6)}
    assert checker_flags(SweepOutcome(contexts, responses, None, None, table, {}, checker))["plain"] == (
        2, 3, "It was built in 1925.", "P(unsupported) 0.81"
    )  # fmt: skip


@pytest.mark.slow
def test_the_sweep_chooses_by_the_checker_when_it_is_measured_and_its_report_shows_the_flags(config):
    measured = replace(config, alpha=(0.5,), top_p=(0.6,), metrics=("faithkit-checker", "pmi-faith", "lexical"),
                       limit=3, report_contexts=3)  # fmt: skip
    assert measured.faithfulness_measure == "faithkit_checker"
    result = run_sweep(measured)
    best = json.loads((Path(config.out) / "best.json").read_text())
    assert best["faithfulness"] == "faithkit_checker" and "highest faithkit_checker" in best["rule"]
    records = {r["id"]: r for r in read_jsonl(Path(config.out) / "faithkit-checker.jsonl")}
    page = unescape((Path(config.out) / "report.html").read_text())
    for row in result.table:
        own = [r for key, r in records.items() if key.startswith(f"{row['decodes_as'] or row['cell']}/")]
        flagged = sum(r["faithkit_checker_verdict"] == 0 for r in own if r.get("sentences"))
        scored = sum(bool(r.get("sentences")) for r in own)
        assert f"<td>{row['cell']}</td><td>{flagged / scored:.0%} ({flagged} of {scored})</td>" in page
