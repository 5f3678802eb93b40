"""Does the sweep's fluency measure (the scoring model's mean token log P(response | history)) tell word salad apart, and does
it leave faithful responses alone?

On the first ``--rows`` rows of BEGIN's WoW dev file, PMI-FAITH under the scoring model (gemma3-270m,
as in configs/sweep/smollm2-q2wow-strategies.yaml) scores each response and a copy with its
words shuffled (seeded): the same words, no grammar, the kind of output degenerate decoding
settings produce. Reported:

* AUROC of fluency for original (positive) against shuffled responses, beside PMI-FAITH's own
  AUROC on the same pairs (how much the faithfulness score alone would be fooled);
* mean fluency per BEGIN label (fully attributable / generic / not fully attributable), and the
  AUROC of fluency for BEGIN's positive class: a bound on fluency should not be a hidden
  faithfulness criterion.

Each figure is given for the sweep's fluency, log P(r | h), and for the scoring model's log P(r | d, h)
(``*_given_document``), which does not count a response's use of the document against it.

The last line printed is one JSON object.

    python benchmarks/fluency_guard.py --rows 120 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.data import data_root
from faithkit.data.corpora.begin import load_begin
from faithkit.stats import auroc
from faithkit.metrics import PMIFaith

POSITIVE = "Fully attributable"


def shuffled(text: str, rng: random.Random) -> str:
    words = text.split()
    for _ in range(10):  # a different order (responses of one repeated word stay as they are)
        rng.shuffle(words)
        if " ".join(words) != text:
            break
    return " ".join(words)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=120, help="BEGIN WoW dev rows (default 120)")
    parser.add_argument("--scoring-model", default="gemma3-270m")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = [row for row in load_begin([data_root() / "begin" / "begin_dev_wow.tsv"]) if not row.error][: args.rows]
    rng = random.Random(0)
    judge = PMIFaith(model=args.scoring_model, unconditional=False)
    started, cpu = time.perf_counter(), time.process_time()
    responses = [row.response for row in rows] + [shuffled(row.response, rng) for row in rows]
    scores = judge.compute_rows([row.document for row in rows] * 2, [row.history for row in rows] * 2, responses)
    pmi = [s["pmi"] for s in scores]
    kind = [1] * len(rows) + [0] * len(rows)
    labels = [row.extras["begin_label"] for row in rows]
    positive = [label == POSITIVE for label in labels]
    figures = {
        "rows": len(rows),
        "scoring_model": args.scoring_model,
        "pmi_auroc_original_vs_shuffled": round(auroc(pmi, kind), 3),
        "label_counts": {label: labels.count(label) for label in sorted(set(labels))},
    }
    # the sweep's fluency, log P(r | h), beside the candidate that also reads the document, log P(r | d, h)
    for name, key in (("fluency", "logp_history"), ("fluency_given_document", "logp_doc_history")):
        fluency = [s[key] for s in scores]
        figures.update(
            {
                f"{name}_auroc_original_vs_shuffled": round(auroc(fluency, kind), 3),
                f"mean_{name}_original": round(sum(fluency[: len(rows)]) / len(rows), 3),
                f"mean_{name}_shuffled": round(sum(fluency[len(rows) :]) / len(rows), 3),
                f"mean_{name}_by_label": {
                    label: round(sum(f for f, given in zip(fluency, labels) if given == label) / labels.count(label), 3)
                    for label in sorted(set(labels))
                },
                f"{name}_auroc_begin_positive": round(auroc(fluency[: len(rows)], positive), 3),
            }
        )
    figures.update(
        {
            "seconds": round(time.perf_counter() - started, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "threads": args.threads,
            "load_average": round(os.getloadavg()[0], 2),
        }
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
