"""The claim checker beside knowledge precision, PMI-FAITH and faith-judge, on every labelled set faithkit has.

Sets (label 1 = faithful):

* BEGIN dev WoW / CMU-DoG / TC (1 = ``Fully attributable``) and Q² dodeca (1 = consistent): the checker never
  saw any of their rows or documents; PMI-FAITH, knowledge precision and faith-judge come from
  ``benchmarks/judge_features.py``'s cache (``--features``);
* ``synthetic``: the checker data's held-out sections (``test.jsonl``; 1 = ``supported``);
* ``pairs``: the 40 hand pairs of tests/data (contradiction_pairs, faithful_pairs) and the 20 entity/number swaps
  that reuse the document's words (swap_pairs): a pair counts as won when the faithful response scores higher.

The checker's and faith-judge's scores of the synthetic and pair rows are computed here, written row by row
under ``--out`` (rerun to resume). Per set: AUROC with a 95% bootstrap interval and paired bootstrap p-values
against the checker (:func:`faithkit.eval.leaderboard_stats.group_table`, 1,000 resamples). The refitted faith-judge
(``--weights``, written by ``benchmarks/judge_fit.py``) is scored from the cached features and the checker's
scores on the sets it was not fitted on (dodeca, synthetic, pairs); its BEGIN figures are judge_fit.py's
cross-source ones (fitted on the other two sources).
The last line is one JSON object with every figure.

    OMP_NUM_THREADS=1 python benchmarks/checker_eval.py --out runs/checker_eval --features runs/judge_features \\
        --data runs/checker-data
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from faithkit.data import Row, read_results
from faithkit.eval.leaderboard_stats import group_table
from faithkit.data.jobs import job_fingerprint, score_rows
from faithkit.metrics.claim_checkers import ClaimChecker
from faithkit.metrics.faith_judge import WEIGHTS, FaithJudge, JudgeWeights, signals
from faithkit.metrics.lexical import knowledge_precision

from judge_features import DEV_SETS, dev_rows

SETS = (*DEV_SETS, "synthetic", "pairs")

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PAIR_FILES = ("contradiction_pairs.jsonl", "faithful_pairs.jsonl", "swap_pairs.jsonl")


def pair_rows() -> list[tuple[str, int, Row]]:
    rows = []
    for name in PAIR_FILES:
        for number, line in enumerate((DATA / name).open()):
            pair = json.loads(line)
            kind = pair.get("kind", "faithful_pairs")
            for label, key in ((1, "faithful"), (0, "unfaithful")):
                row = Row(f"{name}:{number}:{key}", pair["document"], [pair["history"]], pair[key])
                rows.append((kind, label, row))
    return rows


def synthetic_rows(folder: Path) -> list[tuple[str, int, Row]]:
    from faithkit.checker.examples import read

    return [
        ("synthetic", int(e.label == "supported"), Row(e.id, e.document, e.history, e.response))
        for e in read(folder / "test.jsonl")
    ]


def scored(metric_factory, rows: list[Row], path: Path, name: str) -> dict[str, dict]:
    """``{row id: record}`` of ``metric`` on ``rows``, computed into ``path`` (resumed where it stopped)."""
    if rows:
        done = {record["id"] for record in read_results(path)} if path.exists() else set()
        if any(row.id not in done for row in rows):
            score_rows(
                metric_factory(), rows, path, fingerprint=job_fingerprint(name), desc=name, flag="--out", chunk_size=16
            )
    return {record["id"]: record for record in read_results(path)} if path.exists() else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--features", type=Path, help="judge_features.py's folder (PMI-FAITH, knowledge precision)")
    parser.add_argument("--data", type=Path, help="the checker data folder (its test.jsonl is the synthetic set)")
    parser.add_argument("--adapter", help="checker adapter folder (default: the one faithkit ships)")
    parser.add_argument("--weights", help="refitted faith-judge weights (judge_fit.py --write)")
    parser.add_argument("--baseline-weights", help="today's faith-judge weights (default: the shipped file)")
    parser.add_argument("--dtype", default=None, help="checker dtype (default float32 on a CPU)")
    parser.add_argument(
        "--sets", default=",".join(SETS), help=f"comma-separated sets to measure (default all: {','.join(SETS)})"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    sets = args.sets.split(",")
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        parser.error(f"--sets: unknown {', '.join(unknown)}; choose from {', '.join(SETS)}")
    dev = dev_rows([name for name in sets if name in DEV_SETS])
    extra = pair_rows() + (synthetic_rows(args.data) if args.data else [])

    def checker():
        return ClaimChecker("faithkit-checker", nli_model=args.adapter, dtype=args.dtype)

    checked = scored(checker, [row for _, _, row in dev], args.out / "dev_checker.jsonl", "checker-dev")
    checked |= scored(checker, [row for _, _, row in extra], args.out / "extra_checker.jsonl", "checker-extra")
    baseline = args.baseline_weights or WEIGHTS
    judged = scored(
        lambda: FaithJudge(model="smollm2-135m", weights=baseline),
        [row for _, _, row in extra],
        args.out / "extra_judge.jsonl",
        "judge-extra",
    )
    features = {r["id"]: r for r in read_results(args.features / "features.jsonl")} if args.features else {}
    today = JudgeWeights.load(baseline)
    refit = JudgeWeights.load(args.weights) if args.weights else None

    figures: dict = {}
    for name in sets:
        labelled = [
            (s, y, r)
            for s, y, r in (dev + extra)
            if s == name or (name == "pairs" and r.id.split(":")[0] in PAIR_FILES)
        ]
        columns: dict[str, list[float]] = {
            k: []
            for k in (
                "checker_faithful",
                "checker",
                "checker_not_unsupported",
                "knowledge_precision",
                "pmi_faith",
                "faith_judge",
            )
        }
        if refit and name not in ("wow", "cmu", "tc"):  # fitted on BEGIN: judge_fit.py reports its transfer figures
            columns["faith_judge_refit"] = []
        labels = []
        for _, label, row in labelled:
            check = checked.get(row.id)
            lm = features.get(row.id) or judged.get(row.id)
            if check is None or lm is None:
                continue
            values = signals(lm, row.document, row.response) if "pmi_softmin" in lm else None
            columns["checker_faithful"].append(check["faithkit_checker"])
            columns["checker"].append(check["faithkit_checker_supported"])
            columns["checker_not_unsupported"].append(1 - check["faithkit_checker_hallucination"])
            columns["knowledge_precision"].append(knowledge_precision(row.document, row.response) or 0.0)
            columns["pmi_faith"].append(lm["pmi"])
            columns["faith_judge"].append(today.logit(values) if values else lm["faith_judge"])
            if "faith_judge_refit" in columns:
                columns["faith_judge_refit"].append(
                    refit.logit({**values, **checker_signals(check)}) if values else math.nan
                )
            labels.append(label)
        if not labels:
            continue
        results, paired = group_table(name, {k: np.array(v) for k, v in columns.items()}, np.array(labels))
        figures[name] = {
            "rows": len(labels),
            "results": results,
            "paired": [p for p in paired if "checker" in (p.get("a"), p.get("b"))],
        }
        print(f"\n## {name} ({len(labels)} rows)")
        for result in results:
            print(json.dumps(result))
    figures["pairs_won"] = pair_wins(checked, judged)
    print(json.dumps(figures, default=float))


def checker_signals(record: dict) -> dict[str, float]:
    return {
        "checker_supported": record["faithkit_checker_supported"],
        "checker_hallucination": record["faithkit_checker_hallucination"],
    }


def pair_wins(checked: dict, judged: dict) -> dict:
    """Per pair kind: pairs, and how many each measure ranks the faithful response above the unfaithful one."""
    rows = {row.id: (kind, row) for kind, _, row in pair_rows()}  # the pair files read once
    wins: dict[str, dict] = {}
    for good, (kind, faithful) in rows.items():
        if not good.endswith(":faithful"):
            continue
        bad = good.replace(":faithful", ":unfaithful")
        unfaithful = rows[bad][1]
        entry = wins.setdefault(
            kind, {"pairs": 0, "checker": 0, "pmi_faith": 0, "faith_judge": 0, "knowledge_precision": 0}
        )
        entry["pairs"] += 1
        entry["checker"] += checked[good]["faithkit_checker_supported"] > checked[bad]["faithkit_checker_supported"]
        entry["pmi_faith"] += judged[good]["pmi"] > judged[bad]["pmi"]
        entry["faith_judge"] += judged[good]["faith_judge"] > judged[bad]["faith_judge"]
        entry["knowledge_precision"] += (knowledge_precision(faithful.document, faithful.response) or 0) > (
            knowledge_precision(unfaithful.document, unfaithful.response) or 0
        )
    total = {
        key: sum(entry[key] for entry in wins.values())
        for key in ("pairs", "checker", "pmi_faith", "faith_judge", "knowledge_precision")
    }
    return {**wins, "all": total}


if __name__ == "__main__":
    main()
