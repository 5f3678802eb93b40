"""Options several commands share, declared once: input columns, job outputs, metrics."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import ConfigError, OutputError
from ..paths import PathArg
from ..metrics.registry import METRIC_NAMES, get_spec, load_metric

# every metric option the command line knows, with its flag's help; a metric takes those its MetricSpec lists
METRIC_OPTIONS = {
    "model": "PMI-FAITH: causal LM, a hub id, a local folder or an offline name (smollm2-135m, gemma3-270m); "
             "default bigscience/bloom-560m, the paper's judge, downloaded from the hub (without a network, name "
             "an offline one)",
    "preset": "Q²/e2e-NLI: 'offline' uses the offline LM backends",
    "qg_model": "Q²: question-generation model",
    "qa_model": "Q²: question-answering model",
    "nli_model": "Q² / e2e-NLI: NLI model",
    "batch_size": "rows per model call (default 8)",
    "device": "torch device (default: cuda if available, else cpu)",
    "normalize": "PMI-FAITH: average (mean, default) or sum log-probabilities over response tokens",
    "max_length": "PMI-FAITH: longest sequence in tokens (default: the model's)",
}
_METRIC_OPTION_TYPES = {"batch_size": "positive", "max_length": "positive"}
_METRIC_OPTION_CHOICES = {"preset": ["offline"], "normalize": ["mean", "sum"]}


def is_main_process() -> bool:
    """False in the other processes of ``accelerate launch``, which neither log progress nor print results."""
    return int(os.environ.get("RANK", "0")) == 0


def positive_int(text: str) -> int:
    """argparse type for counts: a clear message instead of a crash deep inside a job."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def refuse_writing_inputs(inputs, flag: str, outputs=(), folder=None) -> None:
    """Stop before a job writes over what it reads: no file of ``outputs`` may be one of ``inputs`` (also through
    a symlink or a hard link), and ``folder`` may not hold one; ``flag`` names the option to change."""
    for source in (Path(path) for path in inputs if path is not None):
        if not source.is_file():
            continue
        same = next((out for out in outputs if out is not None and Path(out).exists() and os.path.samefile(source, out)),
                    None)
        if same is not None:
            raise OutputError(f"{flag} {same} is the input {source} (the same file), and writing results there "
                              f"would destroy it; choose another {flag}")
        if folder is not None and source.resolve().is_relative_to(Path(folder).resolve()):
            raise OutputError(f"{flag} {folder} holds the input {source}; the results would be written beside "
                              f"(or, with --restart, over) it: choose another {flag}, or move the input out")


def add_input_columns(parser: argparse.ArgumentParser, response: bool = True) -> None:
    group = parser.add_argument_group("input: JSONL, CSV, TSV, Parquet, a save_to_disk folder or hf:OWNER/NAME "
                                      "(columns are found by their usual names when not given)")
    group.add_argument("--document-column", help="column with the grounding document (default: document/knowledge/…)")
    group.add_argument("--history-column", help="column with the history: a string or a JSON list of turns "
                                                "(default: history/message/…; none: empty histories)")
    if response:
        group.add_argument("--response-column", help="column with the response (default: response/…)")
    group.add_argument("--id-column", help="column with a unique row id (default: id, else the line number)")
    group.add_argument("--split", help="the split to read from a hub dataset (--input hf:OWNER/NAME) or a saved "
                                       "DatasetDict folder")
    group.add_argument("--quoting", choices=["none", "csv"],
                       help="CSV/TSV quoting: 'csv' lets quoted fields hold delimiters and newlines, 'none' reads "
                            "every character literally (default: none for .tsv, as BEGIN needs; csv for .csv)")


def columns_from_args(args: argparse.Namespace, required: tuple[str, ...] = ("document", "response")):
    from ..data import Columns

    return Columns(document=args.document_column, history=args.history_column,
                   response=getattr(args, "response_column", None), id=args.id_column, required=required)


def add_job_options(parser: argparse.ArgumentParser, chunk_size: int = 64) -> None:
    group = parser.add_argument_group("job (results are written as rows finish; rerunning the same command resumes)")
    group.add_argument("--restart", action="store_true", help="discard an existing output instead of resuming it")
    group.add_argument("--skip-errors", action="store_true",
                       help="keep the error records of an earlier run instead of retrying those rows")
    group.add_argument("--chunk-size", type=positive_int, default=chunk_size,
                       help=f"most rows computed (and written) together (default {chunk_size}); chunks shrink so "
                            "results are written at least every 30 s")


def job_options(args: argparse.Namespace) -> dict:
    return {"restart": args.restart, "retry_errors": not args.skip_errors, "chunk_size": args.chunk_size}


def add_metric_options(parser: argparse.ArgumentParser, default_metric: str = "pmi-faith") -> None:
    from ..metrics.registry import METRICS

    described = "; ".join(f"{name}: {spec.summary}" for name, spec in METRICS.items())
    parser.add_argument("--metric", default=default_metric, choices=METRIC_NAMES,
                        help=f"which metric to compute (default {default_metric}): {described}")
    for name, text in METRIC_OPTIONS.items():
        kind = _METRIC_OPTION_TYPES.get(name)
        parser.add_argument(f"--{name.replace('_', '-')}", help=text, choices=_METRIC_OPTION_CHOICES.get(name),
                            type=positive_int if kind == "positive" else PathArg("model") if name == "model" else str)


def metric_options(args: argparse.Namespace) -> dict:
    """The metric options given on the command line; one the metric does not take is a ConfigError."""
    spec = get_spec(args.metric)
    given = {name: getattr(args, name) for name in METRIC_OPTIONS if getattr(args, name, None) is not None}
    ignored = [f"--{name.replace('_', '-')}" for name in given if name not in spec.options]
    if ignored:
        raise ConfigError(f"{', '.join(ignored)} do not apply to --metric {args.metric}; drop them")
    return given


def metric_fingerprint(args: argparse.Namespace) -> dict:
    """The metric part of a job fingerprint: its name, options (those at their default left out, as when not
    given), and the model it runs, by identity."""
    from .. import models
    from ..metrics.registry import option_defaults

    defaults = option_defaults(args.metric)
    options = {key: value for key, value in metric_options(args).items()
               if key not in defaults or value != defaults[key]}
    for key in ("model", "qg_model", "qa_model", "nli_model"):
        if key in options:
            options[key] = models.identity(options[key])
    options.pop("device", None)  # where it runs does not change a score
    options.pop("batch_size", None)
    return {"metric": args.metric, "metric_options": options}


def metric_from_args(args: argparse.Namespace):
    return load_metric(args.metric, **metric_options(args))


class LazyMetric:
    """A metric built on first use, so output checks (lock, fingerprint, folder) fail before any model loads."""

    def __init__(self, build):
        self._build, self._metric = build, None

    def compute_rows(self, *columns):
        if self._metric is None:
            try:
                self._metric = self._build()
            except (ValueError, TypeError) as error:  # a bad option value, not a bad row
                raise ConfigError(str(error)) from None
        return self._metric.compute_rows(*columns)
