"""Options several commands share, declared once: input columns, job outputs, metrics."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from ..serving import precision
from ..data.rows import InputOptions
from ..errors import ConfigError, OutputError
from ..metrics.metric_options import MetricOptions
from ..metrics.registry import METRICS, get_spec, load_metric, metric_name
from ..settings.options import add_flags, field_of, flag_help, mark_declared, option

METRIC_FLAGS = (
    "model",
    "preset",
    "qg_model",
    "qa_model",
    "nli_model",
    "batch_size",
    "device",
    "dtype",
    "normalize",
    "max_length",
    "window",
    "stride",
    "server",
    "served_model",
    "api_key",
)
"""The metric options (:class:`~faithkit.metrics.metric_options.MetricOptions`) the command line takes as flags; the
others (``unconditional``, ``max_edits``, ``threshold``) are set in config files."""


def refuse_writing_inputs(inputs, flag: str, outputs=(), folder=None) -> None:
    """Stop before a job writes over what it reads: no file of ``outputs`` nor its sidecars (``.meta.json``,
    ``.lock``, part files) may be one of ``inputs`` (also through a symlink or a hard link), and ``folder`` may
    not hold one, nor a link to one; ``flag`` names the option to change."""
    sources = [Path(path) for path in inputs if path is not None and Path(path).is_file()]
    in_folder = list(_files_in(Path(folder))) if folder is not None and sources else []  # walked once for all inputs
    for source in sources:
        for out in (Path(path) for path in outputs if path is not None):
            same = next((file for file in with_sidecars(out) if _same_file(source, file)), None)
            if same is not None:
                what = "" if same == out else f" (through {same.name}, which a job writes beside it)"
                raise OutputError(
                    f"{flag} {out}{what} is the input {source} (the same file), and writing results "
                    f"there would destroy it; choose another {flag}"
                )
        if folder is None:
            continue
        if source.resolve().is_relative_to(Path(folder).resolve()):
            raise OutputError(
                f"{flag} {folder} holds the input {source}; the results would be written beside "
                f"(or, with --restart, over) it: choose another {flag}, or move the input out"
            )
        link = next((path for path in in_folder if _same_file(source, path)), None)
        if link is not None:
            raise OutputError(
                f"{flag} {folder} holds {link}, a link to the input {source}, and writing results "
                f"there would destroy it; remove the link, or choose another {flag}"
            )


def refuse_shared_outputs(outputs: dict) -> None:
    """Stop when two output options of one command (``{flag: path}``) name the same file, or one names the other's
    sidecar file: the second write would destroy the first."""
    given = [(flag, Path(path)) for flag, path in outputs.items() if path is not None]
    for index, (flag, path) in enumerate(given):
        for other_flag, other in given[index + 1 :]:
            if any(_same_path(file, other) for file in with_sidecars(path)) or any(
                _same_path(file, path) for file in with_sidecars(other)
            ):
                raise OutputError(
                    f"{flag} {path} and {other_flag} {other} are the same file, and one would "
                    f"overwrite the other; give them different names"
                )


def with_sidecars(output: Path) -> list[Path]:
    """A result file and the files that a job writes beside it: its fingerprint, its lock, its provenance, its part
    files and a several-metric score's files of each metric (``OUT.metrics/``)."""
    sidecars = [output.with_name(output.name + suffix) for suffix in (".meta.json", ".lock", ".provenance.json")]
    parts = sorted(output.parent.glob(f"{output.name}.part*")) if output.parent.is_dir() else []
    stores = output.with_name(output.name + ".metrics")
    return [output, *sidecars, *parts, *(sorted(stores.iterdir()) if stores.is_dir() else [])]


def _same_file(source: Path, path: Path) -> bool:
    return path.exists() and os.path.samefile(source, path)


def _same_path(a: Path, b: Path) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or (a.exists() and b.exists() and os.path.samefile(a, b))


def _files_in(folder: Path):
    """Every entry under ``folder`` (links included, not followed into)."""
    if not folder.is_dir():
        return
    for root, directories, files in os.walk(folder):
        for name in [*files, *directories]:
            yield Path(root) / name


def add_input_columns(parser: argparse.ArgumentParser, response: bool = True) -> None:
    group = parser.add_argument_group(
        "input: JSONL, CSV, TSV, Parquet, a save_to_disk folder or hf:OWNER/NAME "
        "(columns are found by their usual names when not given)"
    )
    names = [field.name for field in fields(InputOptions) if response or field.name != "response_column"]
    add_flags(group, InputOptions, names=names)


def columns_from_args(args: argparse.Namespace, required: tuple[str, ...] = ("document", "response")):
    from ..data import Columns

    return Columns(
        document=args.document_column,
        history=args.history_column,
        response=getattr(args, "response_column", None),
        id=args.id_column,
        required=required,
        naming="Name it with --{field}-column.",
    )


@dataclass
class JobFlags:
    """How a long command runs its job: results are written as rows finish, and rerunning resumes."""

    restart: bool = option(False, "discard an existing output instead of resuming it")
    skip_errors: bool = option(False, "keep the error records of an earlier run instead of retrying those rows")
    chunk_size: int = option(
        64, "most rows computed (and written) together; chunks shrink so results are written at least every 30 s", low=1
    )


def add_job_options(parser: argparse.ArgumentParser, chunk_size: int = 64) -> None:
    group = parser.add_argument_group("job (results are written as rows finish; rerunning the same command resumes)")
    add_flags(group, JobFlags, defaults=JobFlags(chunk_size=chunk_size))


def job_options(args: argparse.Namespace) -> dict:
    return {"restart": args.restart, "retry_errors": not args.skip_errors, "chunk_size": args.chunk_size}


@dataclass
class MetricChoice:
    """The metric a command computes."""

    metric: str = option(
        "pmi-faith",
        "which metric to compute\n" + "\n".join(f"  {name}: {spec.summary}" for name, spec in METRICS.items()),
        flag_type=metric_name,
        metavar="METRIC",
    )


def add_metric_options(parser: argparse.ArgumentParser, default_metric: str = "pmi-faith") -> None:
    add_flags(parser, MetricChoice, defaults=MetricChoice(default_metric))
    add_metric_option_flags(parser)


def add_metric_option_flags(parser: argparse.ArgumentParser) -> None:
    """A flag per metric option of :data:`METRIC_FLAGS` (``--model``, ``--preset``, …), as the registry declares it;
    unset, each metric's own default applies."""
    add_flags(parser, MetricOptions, names=[name for name in METRIC_FLAGS if name != "dtype"], unset=None)
    add_dtype_option(parser)


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device``, where the models a command loads run (:class:`faithkit.serving.precision.Placement`)."""
    add_flags(parser, precision.Placement, names=("device",))


def add_dtype_option(parser: argparse.ArgumentParser) -> None:
    """``--dtype``, the precision of the models a command loads (:data:`faithkit.serving.precision.DTYPES`)."""
    declaration = field_of(precision.Placement, "dtype")
    action = parser.add_argument("--dtype", choices=precision.DTYPES, help=flag_help(declaration))
    mark_declared(action, [(precision.Placement, declaration)], None)


def given_metric_options(args: argparse.Namespace) -> dict:
    """Every metric option given on the command line."""
    return {name: getattr(args, name) for name in METRIC_FLAGS if getattr(args, name, None) is not None}


def metric_options(args: argparse.Namespace, name: str | None = None) -> dict:
    """The metric options given on the command line for ``--metric``, where one it does not take is a ConfigError;
    or, for a metric ``name`` among several, those that it takes."""
    spec = get_spec(name or args.metric)
    given = given_metric_options(args)
    if name is not None:
        return {key: value for key, value in given.items() if key in spec.options}
    ignored = [f"--{key.replace('_', '-')}" for key in given if key not in spec.options]
    if ignored:
        raise ConfigError(f"{', '.join(ignored)} do not apply to --metric {args.metric}; drop them")
    return given


def refuse_unused_metric_flags(args: argparse.Namespace, names: Sequence[str], flag: str) -> None:
    """A ConfigError naming the metric options given that none of the metrics ``names`` (given as ``flag``) takes."""
    unused = [
        f"--{key.replace('_', '-')}"
        for key in given_metric_options(args)
        if not any(key in get_spec(name).options for name in names)
    ]
    if len(names) == 1 and unused:
        raise ConfigError(f"{', '.join(unused)} do not apply to {flag} {names[0]}; drop them")
    if unused:
        raise ConfigError(f"{', '.join(unused)} apply to none of {flag} {','.join(names)}; drop them")


def metric_fingerprint_from_args(args: argparse.Namespace, name: str | None = None) -> dict:
    """The metric part of a job fingerprint (:func:`faithkit.metrics.registry.metric_fingerprint`) of the options
    given on the command line; ``name`` as for :func:`metric_options`."""
    from ..metrics.registry import metric_fingerprint

    return metric_fingerprint(name or args.metric, metric_options(args, name))


def metric_models(args: argparse.Namespace, names, defaults: bool = True) -> dict:
    """The models each of the metrics ``names`` reads (given, else with ``defaults`` its default), by role
    ``"<metric> --<option>"`` (``"pmi-faith --model"``), for :func:`check_models` and :mod:`faithkit.provenance`.
    The defaults are read off the metrics' constructors, which imports them (and torch)."""
    from ..metrics.registry import MODEL_OPTIONS, option_defaults

    found = {}
    for name in names:
        options = {**(option_defaults(name) if defaults else {}), **metric_options(args, name)}
        found.update(
            {f"{name} --{key.replace('_', '-')}": options[key] for key in MODEL_OPTIONS if options.get(key) is not None}
        )
    return found


def check_metric_models(args: argparse.Namespace, names) -> dict:
    """:func:`check_models` of the models the metrics ``names`` read: those given first (before torch loads, so a
    mistyped name is an error within a second), then their defaults; returns every model each metric reads, by role
    (:func:`faithkit.metrics.model_roles.models_read`: defaults and adapters' base models included), with the
    :func:`served_models` they ask, for :mod:`faithkit.provenance`. A hub claim checker's default checkpoint is checked
    too, its error suggesting what fits a checker (not the offline LMs)."""
    from ..metrics.claim_checkers import PRESETS as CLAIM_CHECKERS
    from ..metrics.model_roles import models_read

    check_models(metric_models(args, names, defaults=False))
    check_models(metric_models(args, names))
    read = {role: model for name in names for role, model in models_read(name, metric_options(args, name)).items()}
    check_models({role: model for role, model in read.items() if _instead_of_offline(role, CLAIM_CHECKERS)})
    return {**read, **served_models(args, names)}


def metric_settings(args: argparse.Namespace, names) -> dict[str, dict]:
    """Each metric's options as it is built from the command line, its defaults included: provenance's
    ``metric_options``. Imports the metrics (and torch), to read their defaults."""
    from ..metrics.registry import option_defaults

    return {name: {**option_defaults(name), **metric_options(args, name)} for name in names}


def served_models(args: argparse.Namespace, names) -> dict:
    """The served model each of the metrics ``names`` asks (``llm-judge``), by role ``"<metric> --server"``: the
    model id its server gives and the server's URL, for :mod:`faithkit.provenance` (never the API key).
    The server is asked now, so one that is down is its one-line error before any row is read."""
    from ..metrics.llm_judge import served_engine

    found = {}
    for name in names:
        if "server" in get_spec(name).options:
            options = metric_options(args, name)
            engine = served_engine(options.get("server"), options.get("served_model"), options.get("api_key"))
            found[f"{name} --server"] = {"served_model": engine.model, "server": options["server"]}
    return found


def check_models(roles: Mapping[str, str | None]) -> None:
    """Each model named (role -> name, e.g. ``{"--scoring-model": "gemma3-270m"}``) can be loaded, or one error naming it,
    before the command reads a row or writes a file (:func:`faithkit.serving.model_names.check_model_name`)."""
    from ..metrics.claim_checkers import PRESETS as CLAIM_CHECKERS
    from ..metrics.q2.specs import named_model
    from ..serving.model_names import check_model_name

    for role, name in roles.items():
        if isinstance(name, str) and role.endswith(("--qg-model", "--qa-model", "--nli-model")):
            name = named_model(name)  # Q²'s stage specs: "scoring:LM" names LM, "rules" no model
        if isinstance(name, str):
            check_model_name(name, role, _instead_of_offline(role, CLAIM_CHECKERS))


def _instead_of_offline(role: str, checkers) -> str | None:
    """What a missing model of ``role`` can be replaced by when the offline names (causal LMs) cannot: a hub claim
    checker's own checkpoint, or faithkit's offline checker; None for the other roles."""
    metric = role.split(" --")[0]
    if metric not in checkers or checkers[metric].three_way or not role.endswith("--nli-model"):
        return None
    return (
        f"give a local copy of a {metric} checkpoint (--nli-model FOLDER), or check claims offline with "
        "faithkit's own checker (--metric faithkit-checker)"
    )


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

    def release(self) -> None:
        """Let the built metric (and its models) go; the next row builds it again."""
        self._metric = None
