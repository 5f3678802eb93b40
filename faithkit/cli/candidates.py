"""``faithkit candidates``: rerank candidates from a running serving engine, over its OpenAI-compatible API."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, fields
from typing import cast

from ..serving.engine import extra_body
from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    add_device_option,
    add_dtype_option,
    add_input_columns,
    add_job_options,
    columns_from_args,
    job_options,
)

logger = logging.getLogger(__name__)

PROMPT_FLAGS = ("max_new_tokens", "max_context_tokens", "chat")
"""The generation options that shape the prompt and the responses (as ``faithkit generate`` has them)."""


@dataclass
class CandidatesFlags:
    server: str | None = option(
        None,
        "the API's base URL, e.g. http://127.0.0.1:8000/v1 (vLLM) or :8080/v1 (llama.cpp)",
        required=True,
        secret="url",
    )
    model: str | None = option(
        None,
        "the served model as faithkit loads it (hub id, folder or offline name): its tokenizer and chat "
        "template build the prompts, and --rerank-output's judge is this model",
        flag_type=PathArg("model"),
        required=True,
    )
    served_model: str | None = option(
        None, "the model's name on the server (unset: the server's only model, from GET /models)"
    )
    api_key: str | None = option(
        None,
        "the server's API key (unset: $OPENAI_API_KEY; local servers need none); never written",
        secret="value",
    )
    input: str | None = option(
        None, "rows with an id, a document and a history", flag_type=PathArg("rows"), required=True
    )
    output: str | None = option(
        None, "the candidates, one JSON object per row (.jsonl)", flag_type=PathArg("output file"), required=True
    )
    rerank_output: str | None = option(
        None,
        "also rerank the candidates into this file, as 'faithkit rerank --candidates OUTPUT' would",
        flag_type=PathArg("output file"),
    )


@dataclass
class EngineRequestFlags:
    extra_body: dict | None = option(
        None,
        "the engine's own request fields as a JSON object, sent with every request and part of the output's "
        "fingerprint, e.g. '{\"repeat_penalty\": 1}' for llama-cpp-python's server, whose default (1.1) "
        "changes even greedy responses",
        flag_type=extra_body,
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "candidates",
        help="draw rerank candidates from a serving engine (vLLM, SGLang, llama.cpp, TGI) and rerank them",
        description="For each (document, history) row of --input, ask the OpenAI-compatible server at --server for "
        "the greedy response and --n sampled ones, with the prompt faithkit decodes from (--model's tokenizer "
        "and chat template), and write the candidates file 'faithkit rerank' reads: one record "
        '{"id", "greedy", "responses"} per row. With --rerank-output, rerank them in the same command, as '
        "'faithkit rerank' does. Requests run --concurrency at a time; failed ones (429, 5xx, timeouts, "
        "refused connections) are retried with backoff; --timeout bounds each request whole, and a reply longer than "
        "--max-new-tokens allows is refused. Rerunning the same command asks only for the rows "
        "not yet written. The API key (--api-key or OPENAI_API_KEY) is sent to the server only.",
    )
    add_flags(parser, CandidatesFlags)
    add_engine_options(parser)
    add_rerank_flags(parser)
    add_device_option(parser)
    add_dtype_option(parser)
    add_job_options(parser, chunk_size=16)
    add_input_columns(parser, response=False)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(
            reads=lambda args: [args.input, args.model],
            writes=lambda args: [Output("--output", args.output), Output("--rerank-output", args.rerank_output)],
        ),
    )


def add_engine_options(parser) -> None:
    """The sampling flags (part of the output's fingerprint), how to reach the server, and the prompt's options."""
    from ..decoding.generation_options import GenerationOptions
    from ..serving.engine import EngineOptions, EngineSampling

    group = parser.add_argument_group("candidates")
    add_flags(group, EngineSampling, names=[f.name for f in fields(EngineSampling) if f.name != "n"])
    add_flags(group, EngineSampling, names=["n"], unset=argparse.SUPPRESS)  # unset: the --strategy's n
    add_flags(group, GenerationOptions, names=PROMPT_FLAGS)
    add_flags(group, EngineRequestFlags)
    add_flags(parser.add_argument_group("server"), EngineOptions)


def add_rerank_flags(parser) -> None:
    """The rerank strategy's and the judge's options (as ``faithkit rerank`` has them) and the judge's
    --batch-size, for --rerank-output."""
    from ..decoding.generation_options import GenerationOptions
    from .rerank import add_judge_flags

    group = add_judge_flags(parser, "reranking (with --rerank-output)")
    add_flags(group, GenerationOptions, names=("batch_size",))


def run(args) -> int:
    from dataclasses import fields

    from ..data import read_rows, unique_ids
    from ..decoding.generation_options import GenerationOptions
    from ..serving.engine import EngineOptions, EngineSampling
    from .. import provenance
    from ..data.jobs import is_main_process, run_job
    from .rerank import rerank_settings

    args.n = getattr(args, "n", None) or sampled_candidates(args.strategy)
    sampling = EngineSampling(**{f.name: getattr(args, f.name) for f in fields(EngineSampling)})
    server = EngineOptions(**{f.name: getattr(args, f.name) for f in fields(EngineOptions)})
    options = GenerationOptions(**{name: getattr(args, name) for name in PROMPT_FLAGS}).validate()
    rerank = rerank_settings(args) if args.rerank_output else None
    rows = list(
        read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting, split=args.split)
    )
    unique_ids(rows)
    job, fingerprint = _candidates_job(args, options, sampling, server)
    counts = run_job(job, rows, args.output, fingerprint=fingerprint, desc="candidates", **job_options(args))
    if is_main_process():
        served = {"served_model": job.engine.model, "server": args.server}
        made_by = provenance.record({"engine": served, "tokenizer": args.model}, args.input)
        provenance.write_sidecar(args.output, made_by)
    logger.info(
        "%d rows' candidates from %s (%s), %d already done, %d errors -> %s",
        counts["done"],
        args.server,
        job.engine.model,
        counts["skipped"],
        counts["errors"],
        args.output,
    )
    if rerank is not None:
        from .rerank import rerank_file

        rerank_file(args, rows, args.output, args.rerank_output, *rerank)
    return 0


def sampled_candidates(strategy: str) -> int:
    """The sampled candidates per row when ``--n`` is not given: the ``--strategy``'s ``n`` (faithful: its recipe's)."""
    from ..decoding.rerank import Rerank
    from ..decoding.strategies import get_strategy

    return cast(Rerank, get_strategy(strategy)()).n


def _candidates_job(args, options, sampling, server) -> tuple:
    """The job that asks the engine for every row's candidates, and its fingerprint: the served model, the
    tokenizer's model and every sampling setting, so a resumed output holds one job's candidates."""
    from dataclasses import asdict

    from ..serving import models
    from ..serving.engine import Engine, api_key
    from ..generation.candidates import EngineCandidatesJob, engine_template
    from ..data.jobs import job_fingerprint

    tokenizer, window = models.load_tokenizer(args.model)
    template = engine_template(tokenizer, options.chat)
    limit = min(options.max_context_tokens or window, window - options.max_new_tokens)
    engine = Engine(args.server, args.served_model, api_key(args.api_key), server)
    settings = {
        **asdict(sampling),
        "max_new_tokens": options.max_new_tokens,
        "max_context_tokens": limit,
        "chat": template.chat,
        "extra_body": args.extra_body,
    }
    fingerprint = job_fingerprint(
        "candidates", served_model=engine.model, model=models.identity(args.model), sampling=settings
    )
    job = EngineCandidatesJob(engine, tokenizer, template, sampling, options.max_new_tokens, limit, args.extra_body)
    return job, fingerprint
