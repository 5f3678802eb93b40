"""``faithkit train``: fine-tune a dialogue model from a YAML config (also ``train.py`` at the top level)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..data.files import to_json
from ..settings.options import add_flags, option
from ..data.paths import PathArg

DESCRIPTION = (
    "Fine-tune a seq2seq or causal LM on grounded dialogue with accelerate. Settings come from --config "
    "(YAML sections model, data, training, evaluation); every scalar setting can be overridden by a flag named "
    "after it (--learning-rate 1e-4 sets training.learning_rate, --model sets model.name; 'none' unsets an "
    "optional one). Run under `accelerate launch` for several processes or mixed precision. The last line "
    "printed is one JSON object: best and last checkpoint, steps, first/last train loss, first/best dev loss "
    "and the best evaluation's metrics."
)


@dataclass
class TrainRun:
    config: str | None = option(
        None, "YAML config, e.g. configs/train/tiny-gpt2.yaml", flag_type=PathArg("text"), required=True
    )
    output_dir: str | None = option(
        None,
        "where checkpoints, state and logs go (unset: runs/train/CONFIG_NAME)",
        flag_type=PathArg("output folder"),
    )
    resume: bool = option(False, "continue the run in --output-dir from its last saved state")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..train.config import add_override_arguments

    add_flags(parser, TrainRun)
    add_override_arguments(parser)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="fine-tune a dialogue model from a YAML config", description=DESCRIPTION
    )
    add_arguments(parser)
    parser.set_defaults(run=run)
    from .declared_files import Files, Output, declare_files

    declare_files(
        parser,
        Files(reads=reads, writes=lambda args: [Output("--output-dir", output_dir(args), folder=True)]),
    )


def _config(args: argparse.Namespace):
    from ..train import load_config
    from ..train.config import overrides_from_args

    from ..settings.options import check_paths

    config = load_config(args.config, overrides_from_args(args))
    check_paths(config, f"config file {args.config}: ")  # the file's paths as the flags'
    return config


def output_dir(args: argparse.Namespace) -> Path:
    """--output-dir, else runs/train/CONFIG_NAME."""
    return Path(args.output_dir) if args.output_dir else Path("runs/train") / Path(args.config).stem


def reads(args: argparse.Namespace) -> list:
    """The config, the rows or corpus folder (a corpus's default one under the data root) and the model."""
    from ..data import data_root
    from ..data.corpora import CORPORA

    config = _config(args)
    data = config.data
    corpus = CORPORA.get(data.corpus or "")
    default_folder = corpus and corpus.folder and data_root() / corpus.folder
    return [args.config, data.train_file, data.dev_file, data.corpus_path or default_folder, config.model.name]


def run(args: argparse.Namespace) -> int:
    """Train, then print the summary as one JSON line (main process only); errors propagate as FaithkitError."""
    from ..data.jobs import is_main_process
    from ..metrics.registry import MODEL_OPTIONS
    from .shared_flags import check_models

    config = _config(args)
    judges = {
        f"evaluation.metric_options.{metric}.{key}": options[key]
        for metric, options in (config.evaluation.metric_options or {}).items()
        for key in MODEL_OPTIONS
        if isinstance(options, dict) and key in options
    }
    if config.model.init == "pretrained":  # a random model loads no weights by name
        check_models({"model.name (--model)": config.model.name, **judges})
    else:
        check_models(judges)
    from ..train import train  # torch, accelerate: after the checks

    summary = train(config, output_dir(args), resume=args.resume)
    if is_main_process():
        print(to_json(summary), flush=True)
    return 0
