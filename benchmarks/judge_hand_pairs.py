"""How often faith-judge, PMI-FAITH and knowledge precision rank the faithful response of a hand-written pair first.

Pairs: tests/data/contradiction_pairs.jsonl (negations, entity swaps, number changes; ``kind``) and
tests/data/faithful_pairs.jsonl (PMI-FAITH's test pairs). A tie counts as a loss. SmolLM2-135M.
The last line is one JSON object: per kind, pairs and wins of each measure.

    python benchmarks/judge_hand_pairs.py
"""

from __future__ import annotations

import json
from pathlib import Path

from faithkit.metrics.faith_judge import FaithJudge
from faithkit.metrics.lexical import knowledge_precision

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def main() -> None:
    pairs = [
        json.loads(line)
        for name in ("contradiction_pairs.jsonl", "faithful_pairs.jsonl")
        for line in (DATA / name).open()
    ]
    rows = FaithJudge(model="smollm2-135m").compute_rows(
        [p["document"] for p in pairs for _ in range(2)],
        [[p["history"]] for p in pairs for _ in range(2)],
        [r for p in pairs for r in (p["faithful"], p["unfaithful"])],
    )
    figures: dict[str, dict] = {}
    for pair, faithful, unfaithful in zip(pairs, rows[::2], rows[1::2]):
        kind = figures.setdefault(
            pair.get("kind", "faithful_pairs"), {"pairs": 0, "faith_judge": 0, "pmi": 0, "knowledge_precision": 0}
        )
        kind["pairs"] += 1
        kind["faith_judge"] += faithful["faith_judge"] > unfaithful["faith_judge"]
        kind["pmi"] += faithful["pmi"] > unfaithful["pmi"]
        kind["knowledge_precision"] += (knowledge_precision(pair["document"], pair["faithful"]) or 0) > (
            knowledge_precision(pair["document"], pair["unfaithful"]) or 0
        )
        if faithful["faith_judge"] <= unfaithful["faith_judge"]:
            print(f"judge ranks the unfaithful one first: {pair['faithful']!r} vs {pair['unfaithful']!r}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
