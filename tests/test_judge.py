"""The faithfulness judge: its logistic fit against a slow reference, its weights file, the registered metric on a tiny
model (offline), evaluate.load, explain's evidence, and (slow, SmolLM2) faithful hand-written pairs ranked first."""

import json
import logging
import math
from pathlib import Path

import evaluate
import numpy as np
import pytest
from scipy import optimize

from faithkit.explain import highlight_tokens
from faithkit.metrics import evaluate_path, load_metric
from faithkit.metrics.faith_judge import CANDIDATES, WEIGHTS, JudgeWeights, fit_judge, signals
from faithkit.stats import fit_logistic

PAIRS = [json.loads(line) for line in (Path(__file__).parent / "data" / "contradiction_pairs.jsonl").open()]
FAITHFUL_PAIRS = [json.loads(line) for line in (Path(__file__).parent / "data" / "faithful_pairs.jsonl").open()]
EXAMPLES = dict(
    documents=["Paris is the capital of France.", "Cats sleep a lot."],
    histories=[["User: Capital of France?"], []],
    responses=["It is Paris.", "Cats never sleep."],
)


def test_logistic_fit_is_the_penalised_minimum():
    """The analytic-gradient fit equals a derivative-free minimisation of the same objective."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = (x @ [1.5, -1.0, 0.2] + rng.normal(size=60) > 0).astype(float)
    coefficients, intercept = fit_logistic(x, y, l2=0.1)

    def objective(theta):
        z = x @ theta[1:] + theta[0]
        return np.mean(np.logaddexp(0, z) - y * z) + 0.05 * theta[1:] @ theta[1:]

    slow = optimize.minimize(
        objective, np.zeros(4), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000}
    ).x
    assert np.allclose([intercept, *coefficients], slow, atol=1e-4)


def test_weights_round_trip_and_standardise(tmp_path):
    table = [
        {"pmi": 1.0, "knowledge_precision": 0.9},
        {"pmi": -1.0, "knowledge_precision": 0.1},
        {"pmi": 0.5, "knowledge_precision": 0.7},
        {"pmi": -0.2, "knowledge_precision": 0.6},
    ]
    weights = fit_judge(table, [1, 0, 1, 0], ("pmi", "knowledge_precision"), 0.1, "smollm2-135m", "four rows")
    weights.save(tmp_path / "w.json")
    loaded = JudgeWeights.load(tmp_path / "w.json")
    assert loaded == weights and loaded.means == pytest.approx((0.075, 0.575))
    x = (np.array([1.0, 0.9]) - loaded.means) / loaded.stds
    assert loaded.logit(table[0]) == pytest.approx(loaded.intercept + x @ loaded.coefficients)
    (tmp_path / "bad.json").write_text(
        json.dumps({**json.loads((tmp_path / "w.json").read_text()), "features": ["pmi", "rouge"]})
    )
    with pytest.raises(ValueError, match=r"unknown judge features \['rouge'\]"):
        JudgeWeights.load(tmp_path / "bad.json")


def test_shipped_weights_name_their_lm_and_known_features():
    weights = JudgeWeights.load(WEIGHTS)
    assert weights.model == "smollm2-135m" and set(weights.features) <= set(CANDIDATES)
    assert len(weights.features) == len(weights.means) == len(weights.stds) == len(weights.coefficients)


def test_registered_judge_is_the_logistic_of_its_signals(model_folder, caplog):
    with caplog.at_level(logging.WARNING, logger="faithkit.metrics.faith_judge"):
        metric = load_metric("faith-judge", model=model_folder)
    assert "its weights were fitted with judge LM 'smollm2-135m'" in caplog.text
    rows = metric.compute_rows(**EXAMPLES)
    plain = load_metric("pmi-faith", model=model_folder).compute_rows(**EXAMPLES)
    for row, reference, document, response in zip(rows, plain, EXAMPLES["documents"], EXAMPLES["responses"]):
        assert row["pmi"] == pytest.approx(reference["pmi"], abs=1e-5)
        logit = metric.weights.logit(signals(row, document, response))
        assert row["faith_judge"] == pytest.approx(1 / (1 + math.exp(-logit)))
        assert {f"signal_{name}" for name in metric.weights.features} <= row.keys()
    result = evaluate.load(evaluate_path("faith-judge"), model=model_folder).compute(**EXAMPLES)
    assert result["faith_judge"] == pytest.approx([row["faith_judge"] for row in rows], abs=1e-6)
    assert result["mean_faith_judge"] == pytest.approx(np.mean([row["faith_judge"] for row in rows]), abs=1e-6)


def test_explain_marks_the_tokens_the_document_contradicts():
    html = highlight_tokens(
        ["ĠIt", "Ġis", "ĠLyon"],
        [0.5, 0.1, -2.5],
        evidence={
            "token_js": [0.01, 0.02, 0.4],
            "token_prefers_other": [0, 0, 1],
            "token_top_margin": [0.0, 0.0, 3.0],
            "token_top_raise": [0.2, 0.1, 4.0],
        },
    )
    spans = html.split("</span>")
    assert "border-bottom" not in spans[0] and "border-bottom" in spans[2]
    assert 'title="-2.50 · JS 0.400 · the document prefers another token by 3.00, raising it by +4.00"' in spans[2]


@pytest.mark.slow
def test_judge_ranks_the_faithful_response_first_in_hand_pairs(smollm2):
    """Entity swaps, number changes and negations written for the tests, and the PMI-FAITH test's pairs."""
    from faithkit.metrics.faith_judge import FaithJudge

    model, tokenizer = smollm2
    judge = FaithJudge(model=model, tokenizer=tokenizer)
    pairs = PAIRS + FAITHFUL_PAIRS
    rows = judge.compute_rows(
        [p["document"] for p in pairs for _ in range(2)],
        [[p["history"]] for p in pairs for _ in range(2)],
        [r for p in pairs for r in (p["faithful"], p["unfaithful"])],
    )
    scores = [row["faith_judge"] for row in rows]
    losses = [p["faithful"] for p, f, u in zip(pairs, scores[::2], scores[1::2]) if f <= u]
    assert len(losses) <= len(pairs) // 10, losses
