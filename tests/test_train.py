"""Fine-tuning (faithkit.train) on tiny random BART and GPT-2: learning, checkpoints, exact resumption, evaluation
hooks and config errors (two processes under accelerate launch: tests/cli/test_parallel.py)."""

import csv
import json
import re
import runpy
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
import yaml
from accelerate.state import AcceleratorState, GradientState
from safetensors.torch import load_file

from faithkit.serving import models
from faithkit.cli.train import add_arguments
from faithkit.decoding import CAD, PMI, AdaCAD, Plain, generate
from faithkit.errors import ConfigError, InputError, ModelNotAvailableError, OutputError
from faithkit.train import load_config, loop, train
from faithkit.train.config import evaluation_decoders, overrides_from_args
from faithkit.train.data import load_rows

REPO = Path(__file__).resolve().parents[1]
TINY_GPT2 = REPO / "configs" / "train" / "tiny-gpt2.yaml"
TINY_BART = REPO / "configs" / "train" / "tiny-bart.yaml"


@contextmanager
def training_in_this_process():
    """Where training runs in the test process: in the repository (the tiny configs name their rows files relative
    to it), on one thread; accelerate's singletons are left fresh for the next run."""
    threads = torch.get_num_threads()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(REPO)
            torch.set_num_threads(1)
            yield
    finally:
        torch.set_num_threads(threads)
        AcceleratorState._reset_state(True)
        GradientState._reset_state()


@pytest.fixture(autouse=True)
def repo_cwd():
    with training_in_this_process():
        yield


def metrics_csv(folder: Path) -> dict[str, dict[int, float]]:
    """``{key: {step: value}}`` from a run's metrics.csv."""
    values: dict[str, dict[int, float]] = {}
    with (folder / "metrics.csv").open() as handle:
        for row in csv.DictReader(handle):
            values.setdefault(row["key"], {})[int(row["step"])] = float(row["value"])
    return values


def interrupted_at_step(monkeypatch, step: int, run) -> None:
    """``run()`` with Ctrl-C arriving as optimizer step ``step`` begins; the loop's own step is back afterwards."""
    real_step, calls = loop.train_step, []

    def interrupted_step(*args, **kwargs):
        calls.append(1)
        if len(calls) == step:
            raise KeyboardInterrupt
        return real_step(*args, **kwargs)

    monkeypatch.setattr(loop, "train_step", interrupted_step)
    with pytest.raises(KeyboardInterrupt):
        run()
    monkeypatch.setattr(loop, "train_step", real_step)


def parse(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def write_config(tmp_path: Path, base: Path, **sections) -> Path:
    """``base`` with some keys replaced, section by section."""
    raw = yaml.safe_load(base.read_text())
    for section, values in sections.items():
        if isinstance(raw.get(section), dict) and isinstance(values, dict):
            raw[section] = {**raw[section], **values}
        else:
            raw[section] = values
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


# ---- learning, checkpoints, logs -------------------------------------------------------------------
@pytest.mark.slow  # a real training run
def test_tiny_bart_learns_logs_and_its_best_checkpoint_decodes_with_pmi_decode(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = load_config(TINY_BART, {"training.max_steps": 8})
    summary = train(config, tmp_path / "run")

    assert summary["steps"] == 8
    assert summary["train_loss_last"] < summary["train_loss_first"] - 0.3
    logged = metrics_csv(tmp_path / "run")
    dev = logged["dev_loss"]
    assert sorted(dev) == [0, 4, 8]  # before training, then every eval_steps
    assert summary["dev_loss_first"] == dev[0] and summary["dev_loss_best"] == min(dev.values()) < dev[0]
    best_step = min(dev, key=dev.get)
    info = json.loads((tmp_path / "run" / "best" / "trainer_info.json").read_text())
    assert info["step"] == best_step and info["dev_loss"] == summary["dev_metrics"]["dev_loss"]
    assert {"plain/mean_token_f1", "pmi_a0.25_p0.6/corpus_bleu"} <= set(summary["dev_metrics"])

    events = EventAccumulator(str(tmp_path / "run" / "tensorboard" / "faithkit"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == set(logged)  # every key of metrics.csv, dev metrics too
    for key, values in logged.items():
        assert {event.step: event.value for event in events.Scalars(key)} == pytest.approx(values, rel=1e-6), key
    assert sorted(logged["train_loss"]) == list(range(1, 9))

    card = (tmp_path / "run" / "best" / "README.md").read_text()
    front, body = card.removeprefix("---\n").split("\n---\n", 1)
    metadata = yaml.safe_load(front)
    assert metadata["library_name"] == "transformers" and "base_model" not in metadata  # a random init
    (result,) = metadata["model-index"][0]["results"]
    assert result["dataset"] == {
        "name": "tests/data/train/tiny_dev.jsonl",
        "type": "tests/data/train/tiny_dev.jsonl",
        "split": "all",
    }
    assert {m["type"]: m["value"] for m in result["metrics"]} == pytest.approx(summary["dev_metrics"])
    assert f"at step {best_step}:\n- dev_loss: {summary['dev_metrics']['dev_loss']:.4f}\n" in body
    assert "generate(model, tokenizer" in body and "strategy={'name': 'pmi', 'alpha': 0.25, 'top_p': 0.6}" in body
    assert "--strategy pmi\n--alpha 0.25 --top-p 0.6`" in body
    assert body.count(f"\n| {best_step} ") == 1  # its row in the table of every evaluation
    assert "### Training results" in body and "pmi_a0.25_p0.6/mean_token_f1" in body
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert len(generations) == 3 * 2 * 4  # evaluations x decoders x generate_rows
    assert {(g["step"], g["decoder"]) for g in generations} == {
        (s, d) for s in dev for d in ("plain", "pmi_a0.25_p0.6")
    }

    model, tokenizer = models.load(summary["checkpoint"], kind="seq2seq")
    rows = load_rows(config.data, "dev")[:2]
    responses = generate(
        model,
        tokenizer,
        [r.document for r in rows],
        [r.history for r in rows],
        {"name": "pmi", "alpha": 0.5, "top_p": 0.9},
        max_new_tokens=6,
    )
    assert len(responses) == 2 and all(isinstance(text, str) for text in responses)
    saved = load_file(str(Path(summary["checkpoint"]) / "model.safetensors"))
    assert all(torch.equal(saved[name], tensor) for name, tensor in model.state_dict().items() if name in saved)


# ---- resumption --------------------------------------------------------------------------------------
@pytest.mark.slow  # a real training run
def test_interrupted_run_resumes_to_the_same_parameters_as_an_uninterrupted_one(tmp_path, monkeypatch):
    """Dropout is on, so the restored RNG matters as much as the data order, optimizer and schedule."""
    config_file = write_config(
        tmp_path,
        TINY_GPT2,
        model={
            "init": "random",
            "tokenizer": "gpt2-bpe",
            "config": {
                "model_type": "gpt2",
                "n_layer": 2,
                "n_head": 2,
                "n_embd": 32,
                "n_positions": 256,
                "resid_pdrop": 0.1,
                "embd_pdrop": 0.1,
                "attn_pdrop": 0.1,
            },
        },
    )
    overrides = {
        "training.max_steps": 6,
        "training.save_steps": 2,
        "evaluation.eval_steps": 3,
        "evaluation.generate_rows": 0,
    }
    config = load_config(config_file, overrides)
    whole = train(config, tmp_path / "whole")

    # steps 1-3 ran; the state was saved after step 2, the model evaluated at step 3
    interrupted_at_step(monkeypatch, 4, lambda: train(config, tmp_path / "split"))
    with pytest.raises(OutputError, match="pass --resume"):
        train(config, tmp_path / "split")
    resumed = train(config, tmp_path / "split", resume=True)

    assert resumed["steps"] == whole["steps"] == 6
    a = load_file(str(tmp_path / "whole" / "last" / "model.safetensors"))
    b = load_file(str(tmp_path / "split" / "last" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert max((a[name] - b[name]).abs().max().item() for name in a) < 1e-6
    for key in ("train_loss_first", "train_loss_last", "dev_loss_first", "dev_loss_best"):
        assert resumed[key] == pytest.approx(whole[key], abs=1e-6)
    logged_whole, logged_split = metrics_csv(tmp_path / "whole"), metrics_csv(tmp_path / "split")
    assert logged_split.keys() == logged_whole.keys()
    for key in logged_whole:  # the steps redone after the saved state are logged once
        assert logged_split[key] == pytest.approx(logged_whole[key], abs=1e-6)

    model, tokenizer = models.load(resumed["last_checkpoint"])  # an ordinary causal LM folder
    responses = generate(
        model, tokenizer, ["The kite is green."], [["What colour is the kite?"]], "pmi", max_new_tokens=5
    )
    assert len(responses) == 1 and isinstance(responses[0], str)


class _Marker:
    """A pickle that, when unpickled, writes a marker file: what a crafted state file would do."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.path}",)


@pytest.mark.slow  # a real training run
def test_resuming_never_unpickles_code_from_the_run_folder(tmp_path, capsys):
    import pickle
    import shutil

    from tests.cli.helpers import run_main

    out, marker = tmp_path / "run", tmp_path / "ran"
    argv = ["train", "--config", TINY_GPT2, "--output-dir", out, "--max-steps", "1", "--generate-rows", "0"]
    assert run_main(*argv) == 0
    state = out / "state"
    assert sorted(p.name for p in state.iterdir()) == [
        "model.safetensors",
        "optimizer.bin",
        "random_states_0.pkl",
        "run_state.json",
        "scheduler.bin",
    ]
    capsys.readouterr()

    def refused(start: str) -> None:
        assert run_main(*argv, "--resume") == 2
        err = capsys.readouterr().err
        assert [line for line in err.splitlines() if line.startswith("error:")] == [err.strip().splitlines()[-1]]
        assert err.strip().splitlines()[-1].startswith(f"error: {start}") and "Traceback" not in err, err
        assert "Warning" not in err and "warning:" not in err, err  # nothing of torch's before faithkit's line
        assert "safe loader" not in err or "GLOBAL" in err  # the line of torch's refusal that names what, whole
        assert err.strip().endswith(", or start the run again")  # the message whole, not cut mid-word
        assert not marker.exists()

    (state / "custom_checkpoint_0.pkl").write_bytes(pickle.dumps(_Marker(marker), protocol=2))
    refused(
        f"{state / 'custom_checkpoint_0.pkl'} is a pickle, which can run code when it is read, and faithkit "
        f"does not read it (its own state is run_state.json)"
    )
    (state / "custom_checkpoint_0.pkl").unlink()
    for name in ("random_states_0.pkl", "optimizer.bin"):
        shutil.copy(state / name, tmp_path / name)
        (state / name).write_bytes(pickle.dumps(_Marker(marker), protocol=2))
        refused(
            f"{state / name} holds objects other than tensors and plain values, which could run code when read, "
            f"so faithkit does not load it (torch's safe loader: "
        )
        shutil.copy(tmp_path / name, state / name)
    assert run_main(*argv, "--resume") == 0 and not marker.exists()


# ---- evaluation hooks ---------------------------------------------------------------------------------
class ScriptedMetric:
    """Stands for a registry metric: records what it scores and returns a scripted mean per evaluation."""

    def __init__(self, means: list[float]):
        self.means = means
        self.calls = []

    def compute(self, documents, histories, responses, references=None):
        self.calls.append({"documents": documents, "responses": responses, "references": references})
        evaluation = (len(self.calls) - 1) // 2  # plain, then PMI-DECODE
        return {"mean_score": self.means[evaluation], "score": [self.means[evaluation]] * len(responses)}


@pytest.mark.slow  # a real training run
def test_best_checkpoint_by_a_dev_metric_and_early_stopping(tmp_path, monkeypatch):
    metric = ScriptedMetric([0.1, 0.5, 0.4, 0.3, 0.9])
    monkeypatch.setattr(loop, "load_hook_metrics", lambda evaluation: {"scripted": metric})
    config = load_config(
        TINY_GPT2,
        {"evaluation.eval_steps": 2, "evaluation.best_metric": "pmi_a0.25_p0.6/mean_score", "training.patience": 2},
    )
    summary = train(config, tmp_path / "run")

    assert summary["steps"] == 6  # evaluations at 0, 2 (best), 4 and 6 (worse twice): stopped early
    assert json.loads((tmp_path / "run" / "best" / "trainer_info.json").read_text())["step"] == 2
    assert summary["dev_metrics"]["pmi_a0.25_p0.6/mean_score"] == 0.5
    logged = metrics_csv(tmp_path / "run")
    assert logged["plain/mean_score"] == logged["pmi_a0.25_p0.6/mean_score"] == {0: 0.1, 2: 0.5, 4: 0.4, 6: 0.3}
    dev = load_rows(config.data, "dev")[:4]
    assert metric.calls[0]["references"] == [row.response for row in dev]
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert metric.calls[1]["responses"] == [
        g["response"] for g in generations if g["step"] == 0 and g["decoder"] == "pmi_a0.25_p0.6"
    ]
    assert train(config, tmp_path / "run", resume=True)["steps"] == 6  # a stopped run stays stopped


# ---- config and its errors ------------------------------------------------------------------------------
def test_flags_override_the_file():
    args = parse(
        [
            "--config",
            str(TINY_GPT2),
            "--learning-rate",
            "1e-4",
            "--max-steps",
            "10",
            "--metrics",
            "lexical",
            "pmi-faith",
            "--eval-at-start",
            "false",
            "--patience",
            "none",
        ]
    )
    config = load_config(args.config, overrides_from_args(args))
    assert config.training.learning_rate == 1e-4 and config.training.max_steps == 10
    assert config.evaluation.metrics == ["lexical", "pmi-faith"] and config.evaluation.eval_at_start is False
    assert config.training.patience is None
    assert config.training.batch_size == 4  # not given: the file's value
    with pytest.raises(SystemExit):
        parse(["--config", str(TINY_GPT2), "--max-steps", "ten"])


def test_strategies_flag_takes_names_parameters_and_mappings():
    args = parse(
        [
            "--config",
            str(TINY_GPT2),
            "--strategies",
            "plain",
            "cad:alpha=1",
            "pmi:alpha=0.5,top_p=0.9",
            "{name: adacad}",
        ]
    )
    config = load_config(args.config, overrides_from_args(args))
    assert evaluation_decoders(config.evaluation) == {
        "plain": Plain(),
        "cad_a1": CAD(1.0),
        "pmi_a0.5_p0.9": PMI(0.5, 0.9),
        "adacad": AdaCAD(),
    }


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "cad:alph=1",
            "argument --strategies: cad:alph=1: cad: unknown key 'alph' (did you mean 'alpha'?); the accepted keys are alpha",
        ),
        (
            "cad:alpha=2,top_p=1",
            "argument --strategies: cad:alpha=2,top_p=1: cad: unknown key 'top_p'; the accepted keys are alpha",
        ),
        (
            "pmi:alpha=2",
            "argument --strategies: pmi:alpha=2: pmi: alpha must be in [0, 1], got 2 "
            "(0 = plain decoding, 1 = rank by PMI alone)",
        ),
        ("cad:alpha", "argument --strategies: cad:alpha: 'alpha' is no PARAMETER=VALUE; write e.g. cad:alpha=1"),
        ("{name: cad", "argument --strategies: {name: cad: not a mapping; write {name: cad, alpha: 1}, or cad:alpha=1"),
    ],
)
def test_strategies_flag_mistakes_name_the_flag_not_the_file(value, message, capsys):
    from faithkit.cli import main

    with pytest.raises(SystemExit, match="2"):
        main(["train", "--config", str(TINY_GPT2), "--strategies", "plain", value])
    assert capsys.readouterr().err == f"error: faithkit train: {message}\n"


@pytest.mark.slow  # a real training run
def test_train_from_the_command_line_logs_each_flag_strategy_under_its_label(tmp_path, capsys):
    from faithkit.cli import main

    assert (
        main(
            [
                "train",
                "--config",
                str(TINY_GPT2),
                "--output-dir",
                str(tmp_path / "run"),
                "--max-steps",
                "1",
                "--eval-steps",
                "1",
                "--generate-rows",
                "2",
                "--strategies",
                "plain",
                "cad:alpha=1",
            ]
        )
        == 0
    )
    logged = metrics_csv(tmp_path / "run")
    assert {key.partition("/")[0] for key in logged if "/" in key} == {"plain", "cad_a1"}
    assert sorted(logged["cad_a1/mean_token_f1"]) == [0, 1]
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert {g["decoder"] for g in generations} == {"plain", "cad_a1"}
    card = (tmp_path / "run" / "best" / "README.md").read_text()  # the card's table: each value under its column
    table = card.split("### Training results\n\n")[1].split("\n\n")[0].splitlines()
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    for row in cells[2:]:
        step = int(row[0])
        for key, shown in zip(cells[0][1:], row[1:]):
            if step in logged.get(key, {}):
                assert float(shown) == pytest.approx(logged[key][step], abs=5e-5), key
            else:
                assert shown == "", key


@pytest.mark.parametrize(
    "sections, message",
    [
        (
            {"training": {"learnig_rate": 1e-4}},
            "unknown key 'training.learnig_rate' (did you mean 'training.learning_rate'?)",
        ),
        ({"training": {"batch_size": "eight"}}, "training.batch_size must be an integer, got 'eight'"),
        ({"optimizer": {"name": "adam"}}, "unknown key 'optimizer'"),
        ({"model": {"dtype": "half"}}, "model.dtype must be one of auto, float32, bfloat16, float16, got 'half'"),
        (
            {"model": {"dtype": "auto"}},
            "model.dtype: auto means the checkpoint's dtype, and model.init: random has none",
        ),
        ({"data": {"corpus": "topicalchat"}}, "exactly one of data.corpus"),
        ({"evaluation": {"best_metric": "beam/mean_pmi"}}, "evaluation.best_metric must be dev_loss or DECODER/KEY"),
        (
            {"evaluation": {"strategies": ["plain", {"name": "pmi", "alpha": 2}]}},
            "evaluation.strategies[1]: pmi: alpha must be in [0, 1], got 2 (0 = plain decoding, 1 = rank by PMI alone)",
        ),
        ({"evaluation": {"strategies": [{"name": "beam"}]}}, "unknown strategy 'beam'; choose one of plain, pmi, cad"),
        ({"evaluation": {"strategies": ["cad", {"name": "cad", "alpha": 0.5}]}}, "lists a strategy twice"),
        (
            {"evaluation": {"alpha": 0.5}},
            "evaluation.alpha are now parameters of a strategy: write evaluation.strategies",
        ),
        (
            {"evaluation": {"max_new_tokens": 0}},
            "evaluation.max_new_tokens must be at least 1, got 0",
        ),
        ({"evaluation": {"metrics": ["rouge"]}}, "evaluation.metrics: unknown metric 'rouge'; choose one of pmi-faith"),
        (
            {"evaluation": {"metrics": ["pmi-faith"], "metric_options": {"pmi-faith": {"modle": "gemma3-270m"}}}},
            "evaluation.metrics: metric 'pmi-faith' takes no option modle; its options are model, batch_size",
        ),
    ],
)
def test_bad_config_names_the_key(tmp_path, sections, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(write_config(tmp_path, TINY_GPT2, **sections))


@pytest.mark.parametrize("path", sorted((REPO / "configs" / "train").glob("*.yaml")), ids=lambda path: path.stem)
def test_shipped_configs_are_valid(path):
    config = load_config(path)
    assert config.model.name or config.model.init == "random"
    assert "plain" in evaluation_decoders(config.evaluation)


def test_hook_strategies_default_to_plain_and_pmi_decode_at_its_defaults(tmp_path):
    config = load_config(TINY_GPT2)  # names no strategies
    assert evaluation_decoders(config.evaluation) == {"plain": Plain(), "pmi_a0.25_p0.6": PMI(0.25, 0.6)}
    config = load_config(write_config(tmp_path, TINY_GPT2, evaluation={"strategies": ["adacad", {"name": "cad"}]}))
    assert evaluation_decoders(config.evaluation) == {"adacad": AdaCAD(), "cad_a0.5": CAD(0.5)}


def test_the_card_table_keys_cells_by_column_when_a_step_lacks_a_metric():
    from faithkit.train.card import model_card

    evaluations = [
        {"step": 0, "dev_loss": 9.5, "plain/knowledge_precision": 0.25, "plain/mean_token_f1": 0.125},
        {"step": 3, "dev_loss": 8.25, "plain/mean_token_f1": 0.0625, "plain/corpus_bleu": 4.0655},
        {"step": 6, "dev_loss": 7.5, "plain/knowledge_precision": 0.5, "plain/mean_token_f1": 0.25},
    ]
    card = model_card(load_config(TINY_GPT2), "tiny", 6, {"dev_loss": 7.5}, evaluations)
    table = card.split("### Training results\n\n")[1].split("\n\n")[0].splitlines()
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table]
    header, rows = cells[0], [dict(zip(cells[0], row)) for row in cells[2:]]
    assert header == ["Step", "dev_loss", "plain/knowledge_precision", "plain/mean_token_f1", "plain/corpus_bleu"]
    assert all(len(row) == len(header) for row in cells)
    assert rows[1] == {
        "Step": "3",
        "dev_loss": "8.25",
        "plain/knowledge_precision": "",
        "plain/mean_token_f1": "0.0625",
        "plain/corpus_bleu": "4.0655",
    }  # no knowledge precision at step 3: an empty cell, not a shift
    assert rows[0]["plain/corpus_bleu"] == rows[2]["plain/corpus_bleu"] == ""


@pytest.fixture
def no_model(monkeypatch):
    """Fails the test if training gets as far as loading a model."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the configuration error was raised")

    monkeypatch.setattr(loop, "build_model", refuse)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"corpus": "nosuch", "train_file": None, "dev_file": None}, "unknown corpus 'nosuch'"),
        (
            {"corpus": "topicalchat", "train_split": "nosplit", "train_file": None, "dev_file": None},
            "topicalchat has no split 'nosplit'",
        ),
    ],
)
def test_unknown_corpus_or_split_fails_before_any_model_loads(tmp_path, no_model, data, message):
    config = load_config(write_config(tmp_path, TINY_GPT2, data=data))
    with pytest.raises(ConfigError, match=message):
        train(config, tmp_path / "run")


def test_a_rows_file_without_a_response_column_names_what_to_rename(tmp_path, no_model):
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps({"id": "a", "knowledge": "Sky.", "answer": "Blue."}) + "\n")
    config = load_config(write_config(tmp_path, TINY_GPT2, data={"dev_file": str(dev)}))
    with pytest.raises(InputError) as error:
        train(config, tmp_path / "run")
    assert str(error.value).endswith(
        "no column for 'response'; looked for ['response', 'generated_response', "
        "'prediction', 'hypothesis'] among ['id', 'knowledge', 'answer']. "
        "Rename that column to one of those names."
    )


def test_output_folder_and_resume_errors_come_before_any_model_loads(tmp_path, no_model):
    config = load_config(TINY_GPT2)
    with pytest.raises(ConfigError, match="--resume: no saved state"):
        train(config, tmp_path / "fresh", resume=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no faithkit training run"):
        train(config, tmp_path / "other")
    held = tmp_path / "held"
    held.mkdir()
    other = load_config(TINY_GPT2, {"training.learning_rate": 0.1})
    rows = load_rows(other.data, "train"), load_rows(other.data, "dev")
    (held / "run_config.yaml").write_text(yaml.safe_dump(loop.run_record(other, *rows)))
    (held / "metrics.csv").write_text("step,key,value\n")  # it trained (a config alone is a failed start: reused)
    with pytest.raises(OutputError, match=r"holds a different run \(training.learning_rate: 0.1 there, 0.003 here\)"):
        train(config, held)


@pytest.mark.slow  # a real training run
def test_resuming_after_the_dev_file_was_edited_is_refused_naming_it(tmp_path, monkeypatch):
    """Else the earlier steps' generations.jsonl and metrics, made on the old rows, would sit beside new ones."""
    dev = tmp_path / "dev.jsonl"
    dev.write_text((REPO / "tests/data/train/tiny_dev.jsonl").read_text())
    config = load_config(
        write_config(tmp_path, TINY_GPT2, data={"dev_file": str(dev)}),
        {"training.max_steps": 4, "evaluation.eval_steps": 2, "evaluation.generate_rows": 2},
    )
    interrupted_at_step(monkeypatch, 3, lambda: train(config, tmp_path / "run"))  # saved after step 2
    generations = (tmp_path / "run" / "generations.jsonl").read_bytes()
    first = json.loads(dev.read_text().splitlines()[0])
    dev.write_text(dev.read_text().replace(first["response"], "Something else entirely.", 1))

    with pytest.raises(
        OutputError,
        match=r"holds a different run \(the dev rows' content changed since that run "
        r"started \(an edited file\?\)\)",
    ):
        train(config, tmp_path / "run", resume=True)
    assert (tmp_path / "run" / "generations.jsonl").read_bytes() == generations  # untouched
    dev.write_text((REPO / "tests/data/train/tiny_dev.jsonl").read_text())
    assert train(config, tmp_path / "run", resume=True)["steps"] == 4  # the same rows again: it resumes


def test_a_model_that_cannot_be_loaded_names_the_fix(tmp_path):
    config = load_config(
        TINY_GPT2,
        {
            "model.name": "no-such-org/no-such-model",
            "model.init": "pretrained",
            "model.tokenizer": None,
            "model.config": {},
        },
    )
    with pytest.raises(ModelNotAvailableError, match="no-such-org/no-such-model"):
        train(config, tmp_path / "run")


def test_train_script_prints_one_error_line_and_exits_2(tmp_path, capsys, monkeypatch):
    bad = write_config(tmp_path, TINY_GPT2, training={"warmup_ratio": 1.5})
    monkeypatch.setattr(sys, "argv", ["train.py", "--config", str(bad), "--output-dir", str(tmp_path / "run")])
    with pytest.raises(SystemExit) as exit_status:
        runpy.run_path(str(REPO / "train.py"), run_name="__main__")
    assert exit_status.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: config file {bad}: training.warmup_ratio must be in [0, 1), got 1.5"
    ]
    assert not (tmp_path / "run").exists()


# ---- memory options ---------------------------------------------------------------------------------------
@pytest.mark.slow  # real training runs
def test_activation_checkpointing_gives_the_same_losses_to_the_last_digit(tmp_path):
    overrides = {
        "training.max_steps": 4,
        "evaluation.eval_steps": 2,
        "evaluation.generate_rows": 0,
        "evaluation.log_with": [],
    }
    with training_in_this_process():  # accelerate's singletons fresh for the second run
        kept = train(load_config(TINY_GPT2, overrides), tmp_path / "kept")
    recomputed = train(
        load_config(TINY_GPT2, {**overrides, "training.activation_checkpointing": True}), tmp_path / "recomputed"
    )
    assert (tmp_path / "kept" / "metrics.csv").read_text() == (tmp_path / "recomputed" / "metrics.csv").read_text()
    assert kept["train_loss_last"] == recomputed["train_loss_last"] < kept["train_loss_first"]


def test_hooks_ask_pmi_faith_for_its_two_views_unless_told_otherwise(monkeypatch):
    from faithkit.metrics import registry
    from faithkit.train.hooks import load_hook_metrics

    asked = []
    monkeypatch.setattr(registry, "load_metrics", lambda names, options: asked.append(options) or {})
    config = load_config(TINY_GPT2, {"evaluation.metrics": ["pmi-faith", "lexical"]})
    load_hook_metrics(config.evaluation)
    config.evaluation.metric_options = {"pmi-faith": {"model": "gemma3-270m", "unconditional": True}}
    load_hook_metrics(config.evaluation)
    assert asked == [
        {"pmi-faith": {"unconditional": False}, "lexical": {}},
        {"pmi-faith": {"model": "gemma3-270m", "unconditional": True}, "lexical": {}},
    ]


@pytest.mark.slow  # a real training run
def test_training_onto_a_full_disk_is_one_line(tmp_path, capsys):
    import subprocess

    from tests.cli.helpers import run_main

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        code = run_main(
            "-q",
            "train",
            "--config",
            TINY_GPT2,
            "--output-dir",
            small / "run",
            "--max-steps",
            "1",
            "--generate-rows",
            "0",
        )
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)
    err = capsys.readouterr().err.strip().splitlines()  # transformers' progress bars, then faithkit's line
    errors = [line for line in err if line.startswith("error:")]
    assert code == 2 and errors == err[-1:] and "Traceback" not in "".join(err), err
    assert (
        errors[0].startswith(f"error: cannot write {small / 'run' / 'best.tmp'}: ")
        and "bytes free on its disk); " in errors[0]
        and errors[0].endswith("free space and rerun, with --resume if a state was saved")
    )
