"""``faithkit rerank``: pick among candidates another engine drew, by a faithfulness judge under a fluency bound."""

from __future__ import annotations

import logging
from dataclasses import dataclass

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
        "--judge scores highest among those whose fluency (--model's mean token log P(r | h)) is at "
        "least the greedy response's minus --fluency-tolerance; the greedy response is a candidate too, "
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
    """--judge and --fluency-tolerance as the rerank strategy declares them, and the greedy decode's options."""
    import argparse

    from ..decoding.generation_options import GenerationOptions
    from ..decoding.rerank import Rerank

    group = parser.add_argument_group("reranking")
    add_flags(group, Rerank, names=("judge", "fluency_tolerance"), unset=argparse.SUPPRESS)
    add_flags(group, GenerationOptions, names=GENERATION_FLAGS)


def run(args) -> int:
    from ..data import read_results, read_rows, unique_ids
    from ..data.jobs import is_main_process
    from ..generation.rerank import rerank_summary

    check_models({"--model": args.model})  # before torch loads: an unknown name is an error within a second
    strategy, options = rerank_settings(args)
    rows = list(
        read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting, split=args.split)
    )
    unique_ids(rows)
    rerank_file(args, rows, args.candidates, args.output, strategy, options)
    if is_main_process():
        print("\n".join(rerank_summary(read_results(args.output))))
    return 0


def rerank_settings(args):
    """The checked (rerank strategy, generation options) of the reranking flags, before any model loads."""
    from dataclasses import fields

    from ..decoding.generation_options import GenerationOptions
    from ..decoding.rerank import Rerank
    from ..generation.rerank import check_judge, self_judging

    given = {name: getattr(args, name) for name in ("judge", "fluency_tolerance") if hasattr(args, name)}
    strategy = Rerank(**given)
    check_judge(strategy)
    warning = self_judging(strategy.judge, args.model)
    if warning:
        logger.warning(warning)
    options = GenerationOptions(
        **{f.name: getattr(args, f.name) for f in fields(GenerationOptions) if f.name in GENERATION_FLAGS}
    ).validate()
    return strategy, options


def rerank_file(args, rows, candidates_path, output, strategy, options) -> dict:
    """Rerank ``rows`` over the candidates file into ``output`` with ``args.model`` (``faithkit rerank``'s job,
    also run by ``faithkit candidates --rerank-output``); returns the job's counts."""
    from ..serving import models
    from .. import provenance
    from ..data.results import content_digest
    from ..data.jobs import is_main_process, job_fingerprint, run_job
    from ..generation.rerank import CandidatesJob, read_candidates, report_missing_ids

    candidates = read_candidates(candidates_path)
    report_missing_ids(candidates, [row.id for row in rows], candidates_path)
    settings = {
        "judge": strategy.judge,
        "fluency_tolerance": strategy.fluency_tolerance,
        **{key: value for key, value in options.fingerprint().items() if key in GENERATION_FLAGS},
        "candidates": content_digest(sorted(candidates.items())),
    }
    fingerprint = job_fingerprint("rerank", model=models.identity(args.model), reranking=settings, dtype=args.dtype)
    job = CandidatesJob(args.model, strategy, options, candidates, device=args.device, dtype=args.dtype)
    counts = run_job(job, rows, output, fingerprint=fingerprint, desc="rerank", **job_options(args))
    judged_by = {"generator": args.model, f"judge ({strategy.judge} under the generator)": args.model}
    if strategy.judge != "pmi-faith":  # another judge reads its own models, at their defaults
        from ..metrics.model_roles import models_read

        judged_by = {"generator": args.model, **models_read(strategy.judge, {})}
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
