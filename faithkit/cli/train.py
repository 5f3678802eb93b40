"""``faithkit train``: fine-tune a dialogue model from a YAML config (also ``train.py`` at the top level)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..files import to_json

DESCRIPTION = (
    "Fine-tune a seq2seq or causal LM on grounded dialogue with accelerate. Settings come from --config "
    "(YAML sections model, data, training, evaluation); every scalar setting can be overridden by a flag named "
    "after it (--learning-rate 1e-4 sets training.learning_rate, --model sets model.name; 'none' unsets an "
    "optional one). Run under `accelerate launch` for several processes or mixed precision. The last line "
    "printed is one JSON object: best and last checkpoint, steps, first/last train loss, first/best dev loss "
    "and the best evaluation's metrics."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..paths import PathArg
    from ..train.config import add_override_arguments

    parser.add_argument(
        "--config", required=True, type=PathArg("text"), help="YAML config, e.g. configs/train/tiny-gpt2.yaml"
    )
    parser.add_argument(
        "--output-dir",
        type=PathArg("output folder"),
        help="where checkpoints, state and logs go (default: runs/train/CONFIG_NAME)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --output-dir from its last saved state"
    )
    add_override_arguments(parser)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train", help="fine-tune a dialogue model from a YAML config", description=DESCRIPTION
    )
    add_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Train, then print the summary as one JSON line (main process only); errors propagate as FaithkitError."""
    from ..jobs import is_main_process
    from ..metrics.registry import MODEL_OPTIONS
    from ..train import load_config
    from ..train.config import overrides_from_args
    from .options import check_models, refuse_writing_inputs

    config = load_config(args.config, overrides_from_args(args))
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
    output_dir = Path(args.output_dir) if args.output_dir else Path("runs/train") / Path(args.config).stem
    refuse_writing_inputs([config.data.train_file, config.data.dev_file], "--output-dir", folder=output_dir)
    from ..train import train  # torch, accelerate: after the checks

    summary = train(config, output_dir, resume=args.resume)
    if is_main_process():
        print(to_json(summary), flush=True)
    return 0
