"""What the faithful-decoding recipe (``--strategy faithful``) costs per response against plain greedy decoding, side
by side, and the claim checker's share of it; and the same for a cheaper setting (``--hurry``: fewer candidates).

On the first ``--contexts`` rows of Topical-Chat valid_rare (as faithkit reads them: two history turns), the generator
decodes every row with plain greedy search, then with the recipe at its defaults (``faithkit.decoding.rerank.Faithful``:
the greedy response, ``n`` samples, the ``also`` decodes, judged by ``judge`` under the fluency bound), then with
the cheaper setting. The recipe's time is split into the candidates' decoding, the generator's fluency pass and the
judge (the claim checker). Each setting runs once, in the same process, at ``--threads`` threads; the checker loads
before the clock starts. Times are the process's CPU seconds (``time.process_time``), which other jobs on a shared
machine do not inflate; at one thread they are the wall time of an idle machine.

The last line printed is one JSON object.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/faithful_cost.py --contexts 8 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.serving import models
from faithkit.data import data_root
from faithkit.data.corpora.topicalchat import load_topicalchat
from faithkit.decoding import GenerationOptions, generate, row_seed
from faithkit.decoding.rerank import Faithful
from faithkit.decoding.strategies import also_decodes
from faithkit.generation.rerank import Judges


class TimedJudges(Judges):
    """Judges that count the seconds of the judge metric's scoring apart from the generator's fluency pass."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seconds = {"fluency": 0.0, "judge": 0.0}

    def metric(self, name: str):
        metric = super().metric(name)
        if not getattr(metric, "_timed", False):
            compute_rows = metric.compute_rows
            part = "fluency" if name == "pmi-faith" else "judge"

            def timed(*args, **kwargs):
                started = time.process_time()
                try:
                    return compute_rows(*args, **kwargs)
                finally:
                    self.seconds[part] += time.process_time() - started

            metric.compute_rows = timed
            metric._timed = True
        return metric


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--contexts", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--hurry", default="n=2,also=", help="the cheaper setting's parameters (default n=2, no also)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = load_topicalchat("valid_rare", data_root() / "topicalchat").select(range(args.contexts))
    documents, histories = list(rows["document"]), list(rows["history"])
    seeds = [row_seed(0, row_id) for row_id in rows["id"]]
    model, tokenizer = models.load(args.model)
    options = GenerationOptions(max_new_tokens=args.max_new_tokens)
    recipe = Faithful()
    hurry = Faithful(**{k: (int(v) if k == "n" else v) for k, v in (p.split("=", 1) for p in args.hurry.split(","))})
    judges = TimedJudges(model, tokenizer)
    judges.metric(recipe.judge)  # loaded before the clock starts
    judges.metric("pmi-faith")

    def timed(strategy) -> tuple[float, dict]:
        judges.seconds = {"fluency": 0.0, "judge": 0.0}
        started = time.process_time()
        extra = {"judge": judges, "seeds": seeds} if strategy != "plain" else {}
        generate(model, tokenizer, documents, histories, strategy=strategy, options=options, **extra)
        return time.process_time() - started, dict(judges.seconds)

    plain, _ = timed("plain")
    full, full_parts = timed(recipe)
    quick, quick_parts = timed(hurry)
    n = args.contexts
    report = {
        "model": args.model,
        "contexts": n,
        "threads": args.threads,
        "max_new_tokens": args.max_new_tokens,
        "plain_s_per_response": round(plain / n, 2),
        "recipe": {
            "label": recipe.label,
            "responses_judged_per_row": 1 + recipe.n + len(also_decodes(recipe)),
            "s_per_response": round(full / n, 2),
            "times_plain": round(full / plain, 1),
            "checker_share": round(full_parts["judge"] / full, 3),
            "fluency_share": round(full_parts["fluency"] / full, 3),
        },
        "hurry": {
            "label": hurry.label,
            "responses_judged_per_row": 1 + hurry.n + len(also_decodes(hurry)),
            "s_per_response": round(quick / n, 2),
            "times_plain": round(quick / plain, 1),
            "checker_share": round(quick_parts["judge"] / quick, 3),
            "fluency_share": round(quick_parts["fluency"] / quick, 3),
        },
    }
    print(
        f"{n} Topical-Chat valid_rare contexts, {args.model}, {args.threads} thread(s), {args.max_new_tokens} new tokens"
    )
    print(f"  plain greedy: {report['plain_s_per_response']:.2f} s per response")
    for name in ("recipe", "hurry"):
        part = report[name]
        print(
            f"  {name} ({part['label']}, {part['responses_judged_per_row']} responses judged per row): "
            f"{part['s_per_response']:.2f} s per response, {part['times_plain']:.1f}x plain; checker "
            f"{100 * part['checker_share']:.0f}% of it, fluency pass {100 * part['fluency_share']:.0f}%"
        )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
