"""``faithkit generate``: PMI-DECODE responses for every row of a file, written as they finish, resumable."""

from __future__ import annotations

import argparse
import logging

from .options import add_input_columns, add_job_options, columns_from_args, job_options, positive_int

logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate", help="generate responses with PMI-DECODE",
        description="Generate a response for each (document, history) row of a JSONL/CSV/TSV file with PMI-DECODE. "
                    "Each output record keeps the row's id, document and history, its reference response as "
                    "'gold' (a gold/reference column, else the input's response column) and the generated "
                    "'response', so the file feeds 'faithkit score' directly. Rerunning the same command "
                    "continues where it stopped; bad rows get an 'error' record naming the row and field. Runs "
                    "data-parallel under 'accelerate launch -m faithkit generate …'.",
    )
    parser.add_argument("--model", required=True, help="causal or seq2seq LM: hub id, local folder or offline name")
    parser.add_argument("--input", required=True, help="rows with a document and a history (.jsonl, .csv or .tsv)")
    parser.add_argument("--output", required=True, help="responses, one JSON object per row (.jsonl)")
    add_generation_options(parser)
    parser.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    add_job_options(parser, chunk_size=8)
    add_input_columns(parser)
    parser.set_defaults(run=run)


def add_generation_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("decoding")
    group.add_argument("--alpha", type=float, default=0.25, help="weight of the PMI term in [0, 1] (default 0.25)")
    group.add_argument("--top-p", type=float, default=0.6, help="nucleus of P(y | document, history) (default 0.6)")
    group.add_argument("--num-beams", type=positive_int, default=1)
    group.add_argument("--num-return-sequences", type=positive_int, default=1,
                       help="responses per row (a list in 'responses')")
    group.add_argument("--do-sample", action="store_true", help="sample inside the top-p set instead of the best token")
    group.add_argument("--seed", type=int, help="random seed for --do-sample; each row's draw depends only on the seed "
                                                "and the row id, so a resumed run writes what an uninterrupted one would")
    group.add_argument("--temperature", type=float, help="sampling temperature on the PMI-DECODE scores")
    group.add_argument("--top-k", type=positive_int, help="sample among the k best PMI-DECODE scores")
    group.add_argument("--max-new-tokens", type=positive_int, default=40)
    group.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                       help="use the tokenizer's chat template with the document in the system turn "
                            "(default: when the tokenizer has one and the model is decoder-only)")
    group.add_argument("--batch-size", type=positive_int, default=8, help="contexts per generate call (default 8)")
    group.add_argument("--max-context-tokens", type=positive_int, help="cut longer contexts, keeping their end")


def run(args) -> int:
    from .. import models
    from ..data import read_rows, unique_ids
    from ..decoding.job import GeneratorJob
    from ..jobs import job_fingerprint, run_job

    options = generate_options(args)
    rows = list(read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting))
    unique_ids(rows)
    decoding = {key: value for key, value in options.items() if key != "batch_size"}  # batching changes no output
    fingerprint = job_fingerprint("generate", model=models.identity(args.model), chat=args.chat, decoding=decoding)
    job = GeneratorJob(args.model, options, chat=args.chat, device=args.device)
    counts = run_job(job, rows, args.output, fingerprint=fingerprint, desc="generate", **job_options(args))
    logger.info("%d generated, %d already done, %d errors -> %s", counts["done"], counts["skipped"],
                counts["errors"], args.output)
    return 0


def generate_options(args) -> dict:
    """faithkit.decoding.generate's keyword arguments from the flags, checked before any model loads."""
    from ..errors import ConfigError

    if not 0 <= args.alpha <= 1:
        raise ConfigError(f"--alpha must lie in [0, 1], got {args.alpha}")
    if not 0 < args.top_p <= 1:
        raise ConfigError(f"--top-p must lie in (0, 1], got {args.top_p}")
    sampling_only = [f"--{name.replace('_', '-')}" for name in ("seed", "temperature", "top_k")
                     if getattr(args, name) is not None]
    if sampling_only and not args.do_sample:
        raise ConfigError(f"{', '.join(sampling_only)} apply to sampling; add --do-sample")
    if args.do_sample and args.num_beams > 1:
        raise ConfigError("PMI-DECODE cannot sample with beams (--do-sample with --num-beams > 1); drop one")
    if not args.do_sample and args.num_return_sequences > args.num_beams:
        raise ConfigError(f"--num-return-sequences {args.num_return_sequences} needs at least as many --num-beams "
                          f"(or --do-sample)")
    if args.temperature is not None and args.temperature <= 0:
        raise ConfigError(f"--temperature must be positive, got {args.temperature}")
    options = {"alpha": args.alpha, "top_p": args.top_p, "num_beams": args.num_beams,
               "num_return_sequences": args.num_return_sequences, "max_new_tokens": args.max_new_tokens,
               "batch_size": args.batch_size, "max_context_tokens": args.max_context_tokens}
    if args.do_sample:
        options.update(do_sample=True, seed=args.seed, temperature=args.temperature, top_k=args.top_k)
    return {key: value for key, value in options.items() if value is not None}
