"""Does rerank's fluency bound leave a faithful candidate phrased otherwise than the generator would in the running,
and still keep word salad out? Each bound design side by side.

The bound (``faithkit.decoding.rerank.fluency_bound``) is the reference response's fluency minus a tolerance; the
fluency is the generator's mean token log-likelihood of a response under ``fluency_view`` (``history``: log P(r | h),
the default; ``document``: log P(r | d, h)), the reference the ``greedy`` response or the ``best`` (most fluent) one.

* **Dev rows**: the first ``--rows`` "Fully attributable" and ``--rows`` "Not fully attributable" rows of BEGIN's
  Topical-Chat dev file. Per row the candidates are the generator's plain greedy response, the row's BEGIN response
  (written by another system: phrased otherwise) and that response with its words shuffled (seeded: word salad, the
  kind of output a floor is for). Reported per design: the share of attributable responses within the bound (the
  higher the better), of not-attributable ones, and of the shuffled copies (the lower the better).
* **The README's rerank example** (``examples/rows.jsonl``, ``examples/candidates.jsonl``: in each of its 4 rows the
  first hand-written candidate is the faithful one): per design, in how many rows the faithful candidate is within
  the bound, and how many rows keep their greedy response under ``--judges`` (pmi-faith under the generator, and
  faithkit-checker).

The generator decodes and judges fluency in its own layout (SmolLM2: its chat template), as ``faithkit rerank``
does. The last line printed is one JSON object.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/rerank_floor.py --rows 12 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.serving import models
from faithkit.data import Columns, data_root, read_rows
from faithkit.data.corpora.begin import load_begin
from faithkit.decoding import GenerationOptions, generate
from faithkit.decoding.inputs import response_text
from faithkit.decoding.rerank import FLUENCY_VIEWS, Rerank, choose, fluency_bound
from faithkit.generation.rerank import Judges, read_candidates

DESIGNS = [(view, reference) for view in FLUENCY_VIEWS for reference in ("greedy", "best")]
"""The bound designs compared, each at every ``--tolerances`` value."""
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def shuffled(text: str, rng: random.Random) -> str:
    words = text.split()
    for _ in range(10):
        rng.shuffle(words)
        if " ".join(words) != text:
            break
    return " ".join(words)


def within(fluencies: list, index: int, view: str, reference: str, tolerance: float) -> bool:
    """Whether response ``index`` is within the bound of its row's responses (``fluencies``: view -> values)."""
    values = fluencies[view]
    bound = fluency_bound(values, tolerance, reference)
    return bound is None or (values[index] is not None and values[index] >= bound)


def fluencies_of(pmi, documents, histories, responses) -> list[dict]:
    """Each response's fluency under both views, from one PMI-FAITH pass under the generator."""
    rows = pmi.compute_rows(documents, histories, responses)
    return [{view: row[key] for view, key in FLUENCY_VIEWS.items()} for row in rows]


def per_row(values: list[dict], size: int) -> list[dict]:
    """Flat per-response fluencies as one {view: [values of the row's responses]} per row of ``size`` responses."""
    return [
        {view: [v[view] for v in values[i : i + size]] for view in FLUENCY_VIEWS} for i in range(0, len(values), size)
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, default=12, help="BEGIN TC dev rows of each label (default 12)")
    parser.add_argument("--tolerances", default="1,2", help="the bound's tolerances in nats (default 1,2)")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--judges", default="pmi-faith,faithkit-checker", help="judges of the README example")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.monotonic()
    model, tokenizer = models.load(args.model)
    judges = Judges(model, tokenizer)
    pmi = judges.metric("pmi-faith")
    options = GenerationOptions(max_new_tokens=args.max_new_tokens)

    begin = [row for row in load_begin([data_root() / "begin" / "begin_dev_tc.tsv"]) if not row.error]
    labels = ("Fully attributable", "Not fully attributable")
    rows = [row for label in labels for row in [r for r in begin if r.extras["begin_label"] == label][: args.rows]]
    greedy = generate(model, tokenizer, [r.document for r in rows], [r.history for r in rows], "plain", options)
    rng = random.Random(0)
    candidates = [
        [g, response_text(r.response, judges.template), shuffled(r.response, rng)] for g, r in zip(greedy, rows)
    ]
    flat = [(r.document, r.history, c) for r, row_candidates in zip(rows, candidates) for c in row_candidates]
    fluent = per_row(fluencies_of(pmi, *map(list, zip(*flat))), 3)
    dev = {}
    tolerances = [float(value) for value in args.tolerances.split(",")]
    designs = [(view, reference, tolerance) for tolerance in tolerances for view, reference in DESIGNS]
    for view, reference, tolerance in designs:
        name = f"{view}/{reference}/{tolerance:g}"
        kept = {label: 0 for label in labels}
        salad = 0
        for row, values in zip(rows, fluent):
            kept[row.extras["begin_label"]] += within(values, 1, view, reference, tolerance)
            salad += within(values, 2, view, reference, tolerance)
        dev[name] = {
            "attributable_kept": kept[labels[0]] / args.rows,
            "not_attributable_kept": kept[labels[1]] / args.rows,
            "shuffled_kept": salad / len(rows),
        }

    example_rows = list(read_rows(EXAMPLES / "rows.jsonl", Columns(required=("document",))))
    records = read_candidates(EXAMPLES / "candidates.jsonl")
    example_greedy = generate(
        model, tokenizer, [r.document for r in example_rows], [r.history for r in example_rows], "plain", options
    )
    responses = [[g, *records[r.id]["responses"]] for g, r in zip(example_greedy, example_rows)]
    size = len(responses[0])
    flat = [(r.document, r.history, c) for r, row_responses in zip(example_rows, responses) for c in row_responses]
    example_fluent = per_row(fluencies_of(pmi, *map(list, zip(*flat))), size)
    judge_seconds, scores = {}, {}
    for judge in args.judges.split(","):
        began = time.monotonic()
        judged = judges(Rerank(judge=judge), *map(list, zip(*flat)))
        judge_seconds[judge] = round(time.monotonic() - began, 1)
        scores[judge] = [[score for score, _ in judged[i : i + size]] for i in range(0, len(judged), size)]
    example = {}
    for view, reference, tolerance in designs:
        name = f"{view}/{reference}/{tolerance:g}"
        faithful_within = sum(within(values, 1, view, reference, tolerance) for values in example_fluent)
        greedy_kept = {
            judge: sum(
                choose(row_scores, values[view], tolerance, reference) == 0
                for row_scores, values in zip(scores[judge], example_fluent)
            )
            for judge in scores
        }
        faithful_picked = {
            judge: sum(
                choose(row_scores, values[view], tolerance, reference) == 1
                for row_scores, values in zip(scores[judge], example_fluent)
            )
            for judge in scores
        }
        example[name] = {
            "faithful_within": faithful_within,
            "greedy_kept": greedy_kept,
            "faithful_picked": faithful_picked,
        }

    print(f"{args.model}, BEGIN TC dev {args.rows} + {args.rows} rows; share of each kind within the bound")
    print(f"{'view/ref/tolerance':<18} {'attributable':>12} {'not attrib.':>11} {'shuffled':>9}   README example")
    for name, row in dev.items():
        picks = ", ".join(
            f"{judge}: greedy kept {example[name]['greedy_kept'][judge]}/4, faithful picked "
            f"{example[name]['faithful_picked'][judge]}/4"
            for judge in scores
        )
        print(
            f"{name:<18} {row['attributable_kept']:>12.3f} {row['not_attributable_kept']:>11.3f} "
            f"{row['shuffled_kept']:>9.3f}   faithful within {example[name]['faithful_within']}/4; {picks}"
        )
    print(
        json.dumps(
            {
                "model": args.model,
                "rows_per_label": args.rows,
                "tolerances": tolerances,
                "dev": dev,
                "example": example,
                "judge_seconds": judge_seconds,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
