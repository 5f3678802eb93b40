"""Every signal the faithfulness judge may use, computed once per dev row and cached, so fitting is cheap.

Rows: BEGIN dev (WoW, CMU-DoG, Topical-Chat; label 1 = ``Fully attributable``) and the Q² dodeca
sets (label 1 = consistent). Per row: PMI-FAITH with token-level evidence (``evidence=True``,
one scorer pass per view pair; see faithkit/metrics/token_evidence.py) under the judge LM, plus
knowledge precision, overlap F1 and the response's length in words. Written row by row to
``OUT/features.jsonl`` (resumable: run it again to continue), then ``benchmarks/judge_fit.py``
fits and evaluates from that file alone.

    nice -n 5 python benchmarks/judge_features.py --out runs/judge_features [--model smollm2-135m] [--sets wow,cmu]

Several processes (``--sets`` groups, or ``--shard i/n`` by document) can run into separate folders, ``--skip``
naming folders whose rows are done already; the fit reads them all.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

from faithkit.data import data_root, read_results
from faithkit.data.corpora.begin import POSITIVE_LABEL, load_begin
from faithkit.data.corpora.q2_wow import SETS, load_q2_wow, set_of
from faithkit.data.jobs import job_fingerprint, score_rows
from faithkit.metrics.lexical import knowledge_precision, token_f1_overlap
from faithkit.metrics.pmi_faith import PMIFaith

BEGIN_FILES = {"wow": "begin_dev_wow.tsv", "cmu": "begin_dev_cmu.tsv", "tc": "begin_dev_tc.tsv"}


DEV_SETS = (*BEGIN_FILES, "dodeca")


def dev_rows(sets=DEV_SETS, limit: int | None = None) -> list[tuple[str, int, object]]:
    """``(dev set, label, row)`` for every row of ``sets``: BEGIN's three files, dodeca's two sets."""
    root = data_root()
    rows = []
    for name, file in BEGIN_FILES.items():
        if name not in sets:
            continue
        begin = [row for row in load_begin([root / "begin" / file]) if not row.error][:limit]
        rows += [(name, int(row.extras["begin_label"] == POSITIVE_LABEL), row) for row in begin]
    for set_name in SETS if "dodeca" in sets else ():
        dodeca = load_q2_wow(root / "q2_wow" / f"dodeca_{set_name}.csv", set_name, limit)
        rows += [("dodeca", SETS[set_of(row.id)], row) for row in dodeca if not row.error]
    return rows


class _WithLexical:
    """PMI-FAITH with evidence, plus the word-level signals, in one output row (stored and resumed together)."""

    def __init__(self, metric):
        self.metric = metric

    def compute_rows(self, documents, histories, responses) -> list[dict]:
        rows = self.metric.compute_rows(documents, histories, responses)
        return [
            {
                **row,
                "knowledge_precision": knowledge_precision(document, response),
                "overlap_f1": token_f1_overlap(document, response),
                "words": len(response.split()),
            }
            for row, document, response in zip(rows, documents, responses)
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--sets", default=",".join(DEV_SETS), help=f"comma-separated, of {', '.join(DEV_SETS)}")
    parser.add_argument("--shard", default="0/1", help="i/n: only rows whose document hashes to i mod n (n processes)")
    parser.add_argument("--skip", nargs="*", default=[], help="folders whose features.jsonl rows are not redone")
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each file (a quick look)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labelled = dev_rows(args.sets.split(","), args.limit)
    index, count = map(int, args.shard.split("/"))
    done = {
        record["id"]
        for folder in args.skip
        for record in read_results(Path(folder) / "features.jsonl")
        if "error" not in record
    }
    labelled = [
        (name, label, row)
        for name, label, row in labelled
        if row.id not in done and zlib.crc32(row.document.encode()) % count == index
    ]
    (out / "labels.json").write_text(json.dumps({row.id: [name, label] for name, label, row in labelled}))
    metric = _WithLexical(PMIFaith(model=args.model, evidence=True))
    counts = score_rows(
        metric,
        [row for _, _, row in labelled],
        out / "features.jsonl",
        fingerprint=job_fingerprint("judge-features", model=args.model),
        desc="judge features",
        flag="--out",
        chunk_size=16,
    )
    print(json.dumps({"rows": len(labelled), **counts}))


if __name__ == "__main__":
    main()
