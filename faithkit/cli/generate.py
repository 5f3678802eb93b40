"""``faithkit generate``: PMI-DECODE responses for every row of a file, written as they finish, resumable."""

from __future__ import annotations

import argparse
import logging

from ..paths import PathArg
from .options import (add_input_columns, add_job_options, columns_from_args, job_options, positive_int,
                      refuse_writing_inputs)

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
    parser.add_argument("--model", required=True, type=PathArg("model"),
                        help="causal or seq2seq LM: hub id, local folder or offline name")
    parser.add_argument("--input", required=True, type=PathArg("rows"),
                        help="rows with a document and a history (.jsonl, .csv or .tsv)")
    parser.add_argument("--output", required=True, type=PathArg("output file"),
                        help="responses, one JSON object per row (.jsonl)")
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
    group.add_argument("--max-context-tokens", type=positive_int, help="cut longer contexts, keeping their end (default and most: what the "
                       "model's context window leaves beside --max-new-tokens)")


def run(args) -> int:
    from dataclasses import asdict

    from .. import models
    from ..data import read_rows, unique_ids
    from ..decoding.job import GeneratorJob
    from ..jobs import job_fingerprint, run_job

    settings = settings_from_args(args)
    refuse_writing_inputs([args.input], "--output", outputs=[args.output])
    rows = list(read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting,
                          split=args.split))
    unique_ids(rows)
    decoding = {key: value for key, value in asdict(settings).items() if key != "batch_size"}  # batching changes no text
    fingerprint = job_fingerprint("generate", model=models.identity(args.model), decoding=decoding)
    job = GeneratorJob(args.model, settings, device=args.device)
    counts = run_job(job, rows, args.output, fingerprint=fingerprint, desc="generate", **job_options(args))
    logger.info("%d generated, %d already done, %d errors -> %s", counts["done"], counts["skipped"],
                counts["errors"], args.output)
    return 0


def settings_from_args(args):
    """The decoding flags as checked :class:`~faithkit.decoding.DecodingSettings`, before any model loads."""
    from dataclasses import fields

    from ..decoding import DecodingSettings

    return DecodingSettings(**{f.name: getattr(args, f.name) for f in fields(DecodingSettings)}).validate()
