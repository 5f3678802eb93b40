"""The rating study's plumbing: contexts to decode, history-only replies, and the items a blind rater reads.

docs/ratings.md gives the whole pipeline with every command; the three steps this script owns:

    python benchmarks/rating_study.py sample ROWS.jsonl OUT_DIR --tasks 6 --per-task 60 --seed 0
        one turn per conversation, conversations disjoint across tasks: OUT_DIR/task<k>.jsonl
    python benchmarks/rating_study.py history-only ROWS.jsonl OUT.jsonl --model smollm2-135m --seed 0
        the model's reply without the document (a `faithkit generate` output with the rows' documents kept, so the
        reply is rated against the document the dialogue had)
    python benchmarks/rating_study.py pick SCORED.jsonl [SCORED.jsonl ...] --output RECIPE.jsonl
        per row, the candidate (one scored file per decoding strategy) the claim checker finds least likely to hold an
        unsupported claim (highest 1 - P(unsupported)); ties keep the earlier file, so list greedy first
    python benchmarks/rating_study.py judges RATED.jsonl SCORED.jsonl [SCORED.jsonl ...]
        how well each judge's score key tells the responses some rater found unfaithful ("disagree") from the rest
        (AUROC, positive = no rater disagreed, with a 95% bootstrap interval) and follows the mean faithfulness
        rating (Spearman), over the rated responses the scored files hold (`faithkit annotate export` rows)
    python benchmarks/rating_study.py reading TRAIN_RATED.jsonl TRAIN_SCORED.jsonl TEST_RATED.jsonl TEST_SCORED.jsonl...
        a logistic reading of the checker's three probabilities (log-odds of not unsupported, of supported vs
        generic) fitted on the first rated set and measured on the second: AUROC, expected calibration error, and
        balanced accuracy at the threshold of best balanced accuracy on the first; beside it 1 - P(unsupported)
    python benchmarks/rating_study.py items TASK_DIR [TASK_DIR ...] --out ITEMS.md
        the items of annotation pages as plain text for a rater: documents, histories and the two responses of each
        item, with the page's own questions; read from the page itself (annotate.html), which holds no system name
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path


def sample(rows_path: Path, out: Path, tasks: int, per_task: int, seed: int, min_history: int) -> None:
    rows = [json.loads(line) for line in rows_path.open(encoding="utf-8") if line.strip()]
    by_conversation: dict[str, list[dict]] = {}
    for row in rows:
        if len(row["history"]) >= min_history and row["document"].strip():
            by_conversation.setdefault(row["conversation_id"], []).append(row)
    rng = random.Random(seed)
    conversations = sorted(by_conversation)
    rng.shuffle(conversations)
    needed = tasks * per_task
    if needed > len(conversations):
        raise SystemExit(f"error: {needed} contexts asked, {len(conversations)} conversations have one")
    out.mkdir(parents=True, exist_ok=True)
    for task in range(tasks):
        chosen = conversations[task * per_task : (task + 1) * per_task]
        with (out / f"task{task + 1}.jsonl").open("w", encoding="utf-8") as file:
            for conversation in chosen:
                file.write(json.dumps(rng.choice(by_conversation[conversation])) + "\n")
    print(json.dumps({"rows": len(rows), "conversations": len(conversations), "tasks": tasks, "per_task": per_task}))


def history_only(rows_path: Path, out: Path, model: str, seed: int, max_new_tokens: int) -> None:
    from faithkit.checker.lm_claims import history_only_replies

    rows = [json.loads(line) for line in rows_path.open(encoding="utf-8") if line.strip()]
    replies = history_only_replies(model, seed, max_new_tokens=max_new_tokens)([row["history"] for row in rows])
    with out.open("w", encoding="utf-8") as file:
        for row, reply in zip(rows, replies):
            record = {key: row[key] for key in ("id", "document", "history")}
            record.update(response=reply.strip(), strategy="history-only", model=model)
            file.write(json.dumps(record) + "\n")
    print(json.dumps({"rows": len(rows), "output": str(out)}))


def pick(scored: list[Path], out: Path) -> None:
    candidates: dict[str, list[dict]] = {}
    for path in scored:
        for line in path.open(encoding="utf-8"):
            record = json.loads(line)
            record["candidate_of"] = path.stem
            candidates.setdefault(str(record["id"]), []).append(record)
    picked = {name.stem: 0 for name in scored}
    with out.open("w", encoding="utf-8") as file:
        for row, records in candidates.items():
            if len(records) != len(scored):
                raise SystemExit(f"error: row {row} is not in every scored file")
            best = max(records, key=lambda r: 1 - r["faithkit_checker_hallucination"])
            picked[best["candidate_of"]] += 1
            file.write(json.dumps(best) + "\n")
    print(json.dumps({"rows": len(candidates), "picked": picked, "output": str(out)}))


ADAPTER_KEY = re.compile(r"^faithkit_checker_(smollm2|gemma)(_|$)")  # a named adapter's keys read as the default's
JUDGE_KEYS = {  # score key -> its sign for "higher = more faithful"
    "faithkit_checker": 1,  # P(faithful), the adapter's reading
    "faithkit_checker_supported": 1,
    "faithkit_checker_generic": 1,
    "faithkit_checker_hallucination": -1,
    "knowledge_precision": 1,
    "pmi": 1,
}


def judges(rated_path: Path, scored: list[Path]) -> None:
    import numpy as np

    from faithkit.stats import auroc, balanced_accuracy, expected_calibration_error, spearman

    by_text: dict[tuple[str, str], dict] = {}
    for path in scored:
        for line in path.open(encoding="utf-8"):
            record = json.loads(line)
            named = {ADAPTER_KEY.sub(r"faithkit_checker\2", key): value for key, value in record.items()}
            by_text[(str(record["id"]), record["response"].strip())] = named
    rows = [json.loads(line) for line in rated_path.open(encoding="utf-8") if line.strip()]
    pairs = [  # a system's scored file names the row; a scored rated file, the rated response
        (row, by_text.get((row["row"], row["response"].strip())) or by_text.get((row["id"], row["response"].strip())))
        for row in rows
    ]
    pairs = [(row, record) for row, record in pairs if record is not None]
    faithful = [int(row["aggregate"]["faithfulness"]["disagree"] == 0) for row, _ in pairs]
    mean = [row["aggregate"]["faithfulness"]["mean"] for row, _ in pairs]
    table = {"rated": len(rows), "scored": len(pairs), "faithful": sum(faithful)}
    if all(isinstance(record.get("faithkit_checker_verdict"), (int, float)) for _, record in pairs):
        verdicts = [int(record["faithkit_checker_verdict"]) for _, record in pairs]
        table["verdict_balanced_accuracy"] = round(balanced_accuracy(verdicts, faithful, 0.5), 3)
        probabilities = [record["faithkit_checker"] for _, record in pairs]  # P(faithful)
        table["expected_calibration_error"] = round(expected_calibration_error(probabilities, faithful), 3)
    for key, sign in JUDGE_KEYS.items():
        if not all(isinstance(record.get(key), (int, float)) for _, record in pairs):
            continue
        score = [sign * record[key] for _, record in pairs]
        draws = np.random.default_rng(0).integers(0, len(score), size=(1000, len(score)))
        values = [
            auroc(np.take(score, d), np.take(faithful, d)) for d in draws if 0 < np.take(faithful, d).sum() < len(d)
        ]
        low, high = np.percentile(values, [2.5, 97.5])
        table[key] = {
            "auroc": round(auroc(score, faithful), 3),
            "interval": [round(low, 3), round(high, 3)],
            "spearman": round(spearman(score, mean), 3),
        }
    print(json.dumps(table))


def _checker_triples(rated_path: Path, scored: list[Path]):
    import math

    import numpy as np

    by_text: dict[tuple[str, str], dict] = {}
    for path in scored:
        for line in path.open(encoding="utf-8"):
            record = json.loads(line)
            by_text[(str(record["id"]), record["response"].strip())] = record
    features, labels, triples = [], [], []
    for line in rated_path.open(encoding="utf-8"):
        row = json.loads(line)
        record = by_text.get((row["row"], row["response"].strip())) or by_text.get((row["id"], row["response"].strip()))
        if record is None:
            continue
        keys = ("faithkit_checker", "faithkit_checker_generic", "faithkit_checker_hallucination")
        supported, generic, unsupported = (max(record[key], 1e-7) for key in keys)
        features.append(
            [math.log(supported + generic) - math.log(unsupported), math.log(supported) - math.log(generic)]
        )
        labels.append(int(row["aggregate"]["faithfulness"]["disagree"] == 0))
        triples.append((supported, generic, unsupported))
    return np.array(features), np.array(labels), np.array(triples)


def reading(train: tuple[Path, list[Path]], test: tuple[Path, list[Path]]) -> None:
    import numpy as np
    from scipy.optimize import minimize

    from faithkit.stats import auroc

    def calibration_error(p, y, bins: int = 10) -> float:
        index = np.minimum((p * bins).astype(int), bins - 1)
        return float(sum((index == b).mean() * abs(p[index == b].mean() - y[index == b].mean()) for b in set(index)))

    def balanced(p, y, threshold: float) -> float:
        verdict = p >= threshold
        return float((verdict[y == 1].mean() + (~verdict[y == 0]).mean()) / 2)

    x_train, y_train, t_train = _checker_triples(*train)
    x_test, y_test, t_test = _checker_triples(*test)

    def loss(w):
        z = x_train @ w[1:] + w[0]
        return np.sum(np.logaddexp(0, z) - y_train * z) + np.sum(w[1:] ** 2)

    w = minimize(loss, np.zeros(3)).x
    fitted_train, fitted_test = (1 / (1 + np.exp(-(x @ w[1:] + w[0]))) for x in (x_train, x_test))
    base_train, base_test = 1 - t_train[:, 2], 1 - t_test[:, 2]
    table = {"train": {"rows": len(y_train), "faithful": int(y_train.sum())}}
    table["test"] = {"rows": len(y_test), "faithful": int(y_test.sum())}
    table["weights"] = {
        "intercept": round(w[0], 4),
        "not_unsupported": round(w[1], 4),
        "supported_vs_generic": round(w[2], 4),
    }
    for name, on_train, on_test in (("fitted", fitted_train, fitted_test), ("1-P(unsupported)", base_train, base_test)):
        threshold = max(np.unique(on_train), key=lambda t: balanced(on_train, y_train, t))
        table[name] = {
            "auroc_train": round(auroc(on_train, y_train), 3),
            "auroc_test": round(auroc(on_test, y_test), 3),
            "calibration_error_test": round(calibration_error(on_test, y_test), 3),
            "threshold": round(float(threshold), 3),
            "balanced_accuracy_test": round(balanced(on_test, y_test, threshold), 3),
        }
    print(json.dumps(table))


PAGE_DATA = re.compile(r"<script id=\"task-data\" type=\"application/json\">(.*?)</script>", re.S)


def page_items(task: Path) -> dict:
    text = (task / "annotate.html").read_text(encoding="utf-8")
    return json.loads(PAGE_DATA.search(text).group(1))


def items(tasks: list[Path], out: Path) -> None:
    lines: list[str] = []
    for task in tasks:
        public = page_items(task)
        lines.append(f"# Task {public['task']} ({len(public['items'])} items)\n")
        for item in public["items"]:
            lines.append(f"## Task {public['task']}, item {item['item']}\n")
            lines.append("Document:\n")
            lines.extend(f"> {line}" for line in item["document"].splitlines())
            lines.append("\nDialogue history (oldest first):\n")
            lines.extend(f"- {turn}" for turn in item["history"])
            cuts = item.get("cut") or [False] * len(item["responses"])
            for side, (response, cut) in enumerate(zip(item["responses"], cuts), 1):
                lines.append(f"\nResponse {side}: {response}" + (" [cut at the length limit]" if cut else ""))
            lines.append("")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"tasks": len(tasks), "output": str(out)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("sample", allow_abbrev=False)
    one.add_argument("rows", type=Path)
    one.add_argument("out", type=Path)
    one.add_argument("--tasks", type=int, default=6)
    one.add_argument("--per-task", type=int, default=60)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--min-history", type=int, default=1)
    two = commands.add_parser("history-only", allow_abbrev=False)
    two.add_argument("rows", type=Path)
    two.add_argument("out", type=Path)
    two.add_argument("--model", default="smollm2-135m")
    two.add_argument("--seed", type=int, default=0)
    two.add_argument("--max-new-tokens", type=int, default=40)
    four = commands.add_parser("pick", allow_abbrev=False)
    four.add_argument("scored", type=Path, nargs="+")
    four.add_argument("--output", type=Path, required=True)
    five = commands.add_parser("judges", allow_abbrev=False)
    five.add_argument("rated", type=Path)
    five.add_argument("scored", type=Path, nargs="+")
    six = commands.add_parser("reading", allow_abbrev=False)
    six.add_argument("train_rated", type=Path)
    six.add_argument("train_scored", type=Path)
    six.add_argument("test_rated", type=Path)
    six.add_argument("test_scored", type=Path, nargs="+")
    three = commands.add_parser("items", allow_abbrev=False)
    three.add_argument("tasks", type=Path, nargs="+")
    three.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.rows, args.out, args.tasks, args.per_task, args.seed, args.min_history)
    elif args.command == "history-only":
        history_only(args.rows, args.out, args.model, args.seed, args.max_new_tokens)
    elif args.command == "judges":
        judges(args.rated, args.scored)
    elif args.command == "reading":
        reading((args.train_rated, [args.train_scored]), (args.test_rated, args.test_scored))
    elif args.command == "pick":
        pick(args.scored, args.output)
    else:
        items(args.tasks, args.out)


if __name__ == "__main__":
    main()
