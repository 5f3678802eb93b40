"""Knowledge precision's AUROC against BEGIN's human labels, on the three dev files (the metric card's figures).

Positive class ``Fully attributable``, as in ``faithkit meta-eval begin``. A response without
content words has no knowledge precision (None) and is left out; the counts say how many.
The last line printed is one JSON object with every figure.

    python benchmarks/knowledge_precision_begin.py
"""

from __future__ import annotations

import json

from faithkit.data import data_root, read_rows
from faithkit import stats
from faithkit.metrics.registry import load_metric

FILES = ("begin_dev_wow.tsv", "begin_dev_cmu.tsv", "begin_dev_tc.tsv")


def main() -> None:
    metric = load_metric("lexical")
    figures = {}
    for name in FILES:
        rows = [row for row in read_rows(data_root() / "begin" / name) if not row.error]
        scores = metric.compute(documents=[r.document for r in rows], responses=[r.response for r in rows])
        pairs = [
            (score, int(row.extras["begin_label"] == "Fully attributable"))
            for score, row in zip(scores["knowledge_precision"], rows)
            if score is not None
        ]
        figures[name] = {
            "rows": len(rows),
            "scored": len(pairs),
            "auroc": round(stats.auroc([s for s, _ in pairs], [label for _, label in pairs]), 3),
        }
        print(f"{name}: AUROC {figures[name]['auroc']} on {len(pairs)} of {len(rows)} rows")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
