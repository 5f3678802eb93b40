"""``faithkit rerank``: pick among candidates another engine drew, by a faithfulness judge under a fluency bound."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    add_device_option,
    add_dtype_option,
    add_input_columns,
    add_job_options,
    check_models,
    columns_from_args,
    job_options,
)

logger = logging.getLogger(__name__)

GENERATION_FLAGS = ("max_new_tokens", "batch_size", "max_context_tokens", "chat")
"""The generation options of the greedy responses faithkit decodes itself (for rows whose candidates lack one)."""
RERANK_FLAGS = ("judge", "fluency_tolerance", "fluency_view", "fluency_reference")
"""The rerank strategy's options a command takes (the candidates come from a file, not from n and candidate_search)."""
JUDGE_FLAGS = (
    "preset",
    "qg_model",
    "qa_model",
    "nli_model",
    "window",
    "stride",
    "max_windows",
    "max_edits",
    "threshold",
)
"""The judge metric's options rerank takes as flags (``--nli-model``, ``--preset``, …), as the registry declares
them; the judge runs on ``--device`` with ``--dtype``. Options that name the judge's own LM or server (``model``,
``server``) are not among them: ``--model`` is the generator (and ``faithkit candidates``' ``--server`` its engine)."""


@dataclass
class RerankFlags:
    model: str | None = option(
        None,
        "causal LM that generated the candidates (or one like it): the fluency reference, the greedy decoder and, "
        "with --judge pmi-faith, the judge",
        flag_type=PathArg("model"),
        required=True,
    )
    input: str | None = option(
        None,
        "rows with an id, a document and a history (.jsonl, .csv or .tsv)",
        flag_type=PathArg("rows"),
        required=True,
    )
    candidates: str | None = option(
        None,
        'JSON lines {"id": ..., "responses": [...]} with the ids of --input',
        flag_type=PathArg("text"),
        required=True,
    )
    output: str | None = option(
        None, "the choices, one JSON object per row (.jsonl)", flag_type=PathArg("output file"), required=True
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "rerank",
        help="pick the most faithful of N candidates from any engine (vLLM, TGI, …), within a fluency bound",
        description="For each (document, history) row of --input, pick one of its candidates in --candidates "
        '(JSON lines {"id": ..., "responses": [text, ...]}, optionally "greedy": text): the one '
        "--judge scores most faithful among those whose fluency (--model's mean token log-likelihood of it "
        "under --fluency-view) is at least the --fluency-reference response's minus --fluency-tolerance; the greedy response is a candidate too, "
        "and is faithkit's greedy decode with --model when the record has none. The same choice as "
        "the 'rerank' strategy on the same candidates. Each output record keeps the row's id and has "
        "the chosen 'response', its 'candidate' index into 'scores' (0: the greedy response), the "
        "'fluency_bound', the 'reason' it won, the 'greedy' response, every response's 'scores' and "
        "'fluencies' (greedy first) and the row's 'gold' response where the input has one. Prints how many "
        "rows kept their greedy response, the median score gain and how often the bound left a "
        "higher-scoring candidate out. Rerunning the same command continues where it stopped; bad rows get "
        "an 'error' record.",
    )
    add_flags(parser, RerankFlags)
    add_rerank_options(parser)
    add_device_option(parser)
    add_dtype_option(parser)
    add_job_options(parser, chunk_size=8)
    add_input_columns(parser, response=False)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(
            reads=lambda args: [args.input, args.candidates, args.model, getattr(args, "judge", None)],
            writes=lambda args: [Output("--output", args.output)],
        ),
    )


def add_rerank_options(parser) -> None:
    """The rerank strategy's options and the judge's, as they are declared, and the greedy decode's options."""
    from ..decoding.generation_options import GenerationOptions

    group = add_judge_flags(parser, "reranking")
    add_flags(group, GenerationOptions, names=GENERATION_FLAGS)


@dataclass
class RerankStrategyFlags:
    strategy: str = option(
        "rerank",
        "whose defaults the reranking flags not given take: rerank's, or faithful's (faithkit's faithful-decoding "
        "recipe: --judge faithkit-checker, the bound under the document)",
        choices=("rerank", "faithful"),
    )


def add_judge_flags(parser, title: str):
    """``--strategy``, :data:`RERANK_FLAGS` as the rerank strategy declares them (unset: the ``--strategy``'s
    defaults) and :data:`JUDGE_FLAGS` as the metric registry does, in a new argument group ``title`` (returned)."""
    import argparse

    from ..decoding.rerank import Rerank
    from ..metrics.metric_options import MetricOptions

    group = parser.add_argument_group(title)
    add_flags(group, RerankStrategyFlags)
    add_flags(group, Rerank, names=RERANK_FLAGS, unset=argparse.SUPPRESS)
    add_flags(group, MetricOptions, names=JUDGE_FLAGS, unset=None)
    return group


def judge_options(args, judge: str) -> dict:
    """The judge's options given as :data:`JUDGE_FLAGS` (with ``--dtype``, where it takes it); one it does not take is a
    ConfigError naming the flag."""
    from ..errors import ConfigError
    from ..metrics.registry import get_spec

    spec = get_spec(judge)
    given = {name: getattr(args, name) for name in JUDGE_FLAGS if getattr(args, name, None) is not None}
    refused = [f"--{name.replace('_', '-')}" for name in given if name not in spec.options or judge == "pmi-faith"]
    if refused:
        raise ConfigError(
            f"{', '.join(refused)} do not apply to --judge {judge} (its options: "
            f"{', '.join(f'--{name}'.replace('_', '-') for name in spec.options if name in JUDGE_FLAGS) or 'none'}); "
            "drop them or name another judge"
        )
    if judge != "pmi-faith" and "dtype" in spec.options and getattr(args, "dtype", None) is not None:
        given["dtype"] = args.dtype
    return given


def run(args) -> int:
    from ..data import read_results, read_rows, unique_ids
    from ..data.jobs import is_main_process
    from ..generation.rerank import rerank_summary

    check_models({"--model": args.model})  # before torch loads: an unknown name is an error within a second
    strategy, options, judging = rerank_settings(args)
    rows = list(
        read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting, split=args.split)
    )
    unique_ids(rows)
    rerank_file(args, rows, args.candidates, args.output, strategy, options, judging)
    if is_main_process():
        print("\n".join(rerank_summary(read_results(args.output))))
    return 0


def rerank_settings(args):
    """The checked (rerank strategy, generation options, judge options) of the reranking flags, before any model
    loads."""
    from dataclasses import fields

    from ..decoding.generation_options import GenerationOptions
    from ..decoding.rerank import Rerank
    from ..generation.rerank import check_judge, self_judging

    from ..decoding.strategies import get_strategy

    given = {name: getattr(args, name) for name in RERANK_FLAGS if hasattr(args, name)}
    strategy = cast(Rerank, get_strategy(args.strategy)(**given))
    check_judge(strategy)
    judging = judge_options(args, strategy.judge)
    warning = self_judging(strategy.judge, args.model)
    if warning:
        logger.warning(warning)
    options = GenerationOptions(
        **{f.name: getattr(args, f.name) for f in fields(GenerationOptions) if f.name in GENERATION_FLAGS}
    ).validate()
    return strategy, options, judging


def rerank_file(args, rows, candidates_path, output, strategy, options, judging) -> dict:
    """Rerank ``rows`` over the candidates file into ``output`` with ``args.model`` (``faithkit rerank``'s job,
    also run by ``faithkit candidates --rerank-output``), the judge built with the options ``judging``; returns the
    job's counts."""
    from .. import provenance
    from ..data.jobs import is_main_process, job_fingerprint, run_job
    from ..data.results import content_digest
    from ..generation.rerank import CandidatesJob, read_candidates, report_missing_ids
    from ..metrics.registry import metric_fingerprint
    from ..serving import models

    candidates = read_candidates(candidates_path)
    report_missing_ids(candidates, [row.id for row in rows], candidates_path)
    defaults = {
        "fluency_view": "history",
        "fluency_reference": "greedy",
    }  # left out at their defaults: old outputs resume
    settings = {
        "judge": strategy.judge,
        "fluency_tolerance": strategy.fluency_tolerance,
        **{key: getattr(strategy, key) for key, default in defaults.items() if getattr(strategy, key) != default},
        **({"judge_options": metric_fingerprint(strategy.judge, judging)["metric_options"]} if judging else {}),
        **{key: value for key, value in options.fingerprint().items() if key in GENERATION_FLAGS},
        "candidates": content_digest(sorted(candidates.items())),
    }
    fingerprint = job_fingerprint("rerank", model=models.identity(args.model), reranking=settings, dtype=args.dtype)
    job = CandidatesJob(
        args.model, strategy, options, candidates, device=args.device, dtype=args.dtype, judge_options=judging
    )
    counts = run_job(job, rows, output, fingerprint=fingerprint, desc="rerank", **job_options(args))
    judged_by = {"generator": args.model, f"judge ({strategy.judge} under the generator)": args.model}
    if strategy.judge != "pmi-faith":  # another judge reads its own models: given, else its defaults
        from ..metrics.model_roles import models_read

        judged_by = {"generator": args.model, **models_read(strategy.judge, judging)}
    if is_main_process():
        provenance.write_sidecar(output, provenance.record(judged_by, [args.input, candidates_path]))
    logger.info(
        "%d reranked, %d already done, %d errors -> %s",
        counts["done"],
        counts["skipped"],
        counts["errors"],
        output,
    )
    return counts
