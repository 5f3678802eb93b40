"""The contexts of the checker's rating study: dev-half Topical-Chat rows whose document holds a section the checker
never trained on, so its agreement with the ratings is measured on unseen documents.

Reads a ``faithkit data export topicalchat --split valid_freq --half dev`` file and writes a seeded sample of the
rows that have at least one held-out section (``faithkit.checker.contexts.section_split`` with the recipe's
``test_share``). Both systems then decode these rows and ``faithkit annotate build`` makes the page:

    faithkit data export topicalchat --split valid_freq --half dev --output runs/human/vf_dev.jsonl
    python benchmarks/checker_rating_rows.py runs/human/vf_dev.jsonl runs/human/rows.jsonl --sample 48
    faithkit generate --model smollm2-135m --strategy plain --input runs/human/rows.jsonl --output runs/human/plain.jsonl
    faithkit generate --model smollm2-135m --strategy pmi --alpha 0.25 --top-p 0.6 \\
        --input runs/human/rows.jsonl --output runs/human/pmi.jsonl
    faithkit annotate build --a-file runs/human/plain.jsonl --b-file runs/human/pmi.jsonl --out runs/human/task
"""

from __future__ import annotations

import argparse
import json
import random

from faithkit.checker.contexts import MIN_SECTION_CHARS, section_split


def held_out(document: str, test_share: float) -> bool:
    """Whether one of the document's sections (lines as the checker's data reads them) is in its test split."""
    sections = [s.strip() for s in document.split("\n") if len(s.strip()) > MIN_SECTION_CHARS]
    return any(section_split(s, test_share) == "test" for s in sections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", help="an exported dev-half rows file (JSONL)")
    parser.add_argument("output", help="where to write the sampled rows (JSONL)")
    parser.add_argument("--sample", type=int, default=48, help="rows to sample (default 48)")
    parser.add_argument("--test-share", type=float, default=0.1, help="the checker recipe's test_share (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    args = parser.parse_args()
    with open(args.rows, encoding="utf-8") as file:
        rows = [json.loads(line) for line in file if line.strip()]
    pool = [row for row in rows if held_out(row["document"], args.test_share)]
    sample = random.Random(args.seed).sample(pool, min(args.sample, len(pool)))
    with open(args.output, "w", encoding="utf-8") as file:
        file.writelines(json.dumps(row) + "\n" for row in sample)
    print(json.dumps({"rows": len(rows), "held_out": len(pool), "sampled": len(sample)}))


if __name__ == "__main__":
    main()
