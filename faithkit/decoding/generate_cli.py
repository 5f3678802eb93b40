"""``faithkit generate``: PMI-DECODE responses for every row of a file, written as they finish, resumable."""

from __future__ import annotations

import argparse
import sys


def add_generate_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate", help="generate responses with PMI-DECODE",
        description="Generate a response for each (document, history) row of a JSONL/CSV/TSV file with PMI-DECODE "
                    "and append {id, response} records to a JSONL file. Rerunning with the same --output continues "
                    "where it stopped; bad rows get an 'error' record naming the row and field.",
    )
    parser.add_argument("--model", required=True, help="causal or seq2seq LM: hub id, local folder or offline name")
    parser.add_argument("--input", required=True, help="rows with a document and a history (.jsonl, .csv or .tsv)")
    parser.add_argument("--output", required=True, help="responses, one JSON object per row (.jsonl)")
    parser.add_argument("--restart", action="store_true", help="discard an existing --output instead of resuming")
    parser.add_argument("--alpha", type=float, default=0.25, help="weight of the PMI term in [0, 1] (default 0.25)")
    parser.add_argument("--top-p", type=float, default=0.6, help="nucleus of P(y | document, history) (default 0.6)")
    parser.add_argument("--num-beams", type=int, default=1)
    parser.add_argument("--num-return-sequences", type=int, default=1, help="responses per row (a list in 'responses')")
    parser.add_argument("--do-sample", action="store_true", help="sample inside the top-p set instead of the best token")
    parser.add_argument("--seed", type=int, help="random seed for --do-sample (set once, before the first row)")
    parser.add_argument("--temperature", type=float, help="sampling temperature on the PMI-DECODE scores")
    parser.add_argument("--top-k", type=int, help="sample among the k best PMI-DECODE scores")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                        help="use the tokenizer's chat template with the document in the system turn "
                             "(default: when the tokenizer has one and the model is decoder-only)")
    parser.add_argument("--batch-size", type=int, default=8, help="contexts per generate call (default 8)")
    parser.add_argument("--max-context-tokens", type=int, help="cut longer contexts, keeping their end")
    parser.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    group = parser.add_argument_group("input columns (found by their usual names when not given)")
    group.add_argument("--document-column", help="column with the grounding document (default: document/knowledge/…)")
    group.add_argument("--history-column", help="column with the history: a string or a JSON list of turns")
    group.add_argument("--id-column", help="column with a unique row id (default: id, else the line number)")
    parser.set_defaults(func=run_generate)


def run_generate(args) -> None:
    import torch

    from .. import models
    from ..data import Columns, ResultWriter, read_rows, unique_ids
    from ..jobs import run_rows
    from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE
    from .generate import default_template, generate, pmi_processor

    if not args.do_sample and (args.seed is not None or args.temperature is not None or args.top_k is not None):
        raise SystemExit("error: --seed, --temperature and --top-k apply to sampling; add --do-sample")
    generate_kwargs = {"max_new_tokens": args.max_new_tokens, "num_beams": args.num_beams,
                       "num_return_sequences": args.num_return_sequences}
    if args.do_sample:
        generate_kwargs["do_sample"] = True
        for name in ("temperature", "top_k"):
            if getattr(args, name) is not None:
                generate_kwargs[name] = getattr(args, name)

    columns = Columns(document=args.document_column, history=args.history_column, id=args.id_column,
                      required=("document", "history"))
    rows = list(read_rows(args.input, columns))
    unique_ids(rows)
    model, tokenizer = models.load(args.model, kind=_model_kind(args.model), device=args.device)
    try:  # bad settings fail before any row is written
        pmi_processor(model, args.alpha, args.top_p, dict(generate_kwargs))
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None
    template = {None: default_template(model, tokenizer), True: CHAT_TEMPLATE, False: DEFAULT_TEMPLATE}[args.chat]
    if args.seed is not None:
        torch.manual_seed(args.seed)

    def run(chunk):
        return generate(model, tokenizer, [r.document for r in chunk], [r.history for r in chunk], alpha=args.alpha,
                        top_p=args.top_p, template=template, batch_size=args.batch_size,
                        max_context_tokens=args.max_context_tokens, **generate_kwargs)

    key = "response" if args.num_return_sequences == 1 else "responses"
    with ResultWriter(args.output, resume=not args.restart) as writer:
        counts = run_rows(lambda chunk: [{key: response} for response in run(chunk)], rows, writer,
                          chunk_size=args.batch_size, desc="generate")
    print(f"{counts['done']} generated, {counts['skipped']} already done, {counts['errors']} errors "
          f"-> {args.output}", file=sys.stderr)


def _model_kind(name: str) -> str:
    """``seq2seq`` for encoder-decoder models, else ``causal``; an unreadable config is left to models.load to report."""
    from transformers import AutoConfig

    from .. import models

    try:
        config = AutoConfig.from_pretrained(models.resolve(name))
    except (OSError, ValueError):
        return "causal"
    return "seq2seq" if config.is_encoder_decoder else "causal"
