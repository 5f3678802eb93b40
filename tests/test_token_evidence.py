"""Token-level evidence: the scorer's extra outputs and PMI-FAITH's per-token evidence equal a slow reference
(one unbatched full pass per view, the same definitions computed here from the full distributions)."""

import math

import numpy as np
import pytest
import torch

from faithkit.metrics import PMIFaith
from faithkit.metrics.token_evidence import AGGREGATE_KEYS, NEGATIVE_PMI, TOP_K, aggregates
from faithkit.prompts import PromptTemplate
from faithkit.serving.scoring import TokenScorer, reference_token_evidence

EXAMPLES = dict(
    documents=[
        "The museum opened in 1901 and holds paintings and old maps. " * 3,
        "Cats sleep a lot.",
        "The museum opened in 1901 and holds paintings and old maps. " * 3,
        "Rain is wet.",
    ],
    histories=[["User: When did it open?"], "User: Do cats sleep?", ["User: hi", "User: What does it hold?"], []],
    responses=["It opened in 1901.", "No, cats never sleep.", "Paintings and old maps.", "Yes."],
)


@torch.no_grad()
def _full_logprobs(model, context, target) -> torch.Tensor:
    ids = torch.tensor([list(context) + list(target)])
    return torch.log_softmax(model(input_ids=ids, use_cache=False).logits[0].double(), -1)[len(context) - 1 : -1]


def _reference_evidence(model, tokenizer, document, history, response) -> dict:
    """Each per-token field from the full next-token distributions of the two views, one pass each."""
    template = PromptTemplate()
    target = template.response_ids(tokenizer, response)
    doc = _full_logprobs(model, template.context(tokenizer, document, history).ids, target)
    hist = _full_logprobs(model, template.context(tokenizer, None, history).ids, target)
    rows = torch.arange(len(target))
    top = doc.topk(TOP_K, dim=-1).indices
    p, q = doc.exp()[rows[:, None], top], hist.exp()[rows[:, None], top]
    p = torch.cat([p, 1 - p.sum(-1, keepdim=True)], -1)
    q = torch.cat([q, 1 - q.sum(-1, keepdim=True)], -1)
    m = (p + q) / 2
    js = 0.5 * (p * (p / m).log()).sum(-1) + 0.5 * (q * (q / m).log()).sum(-1)
    best = top[:, 0]
    targets = torch.tensor(target)
    return {
        "token_pmi": (doc[rows, targets] - hist[rows, targets]).tolist(),
        "token_js": js.tolist(),
        "token_prefers_other": (best != targets).int().tolist(),
        "token_top_margin": (doc[rows, best] - doc[rows, targets]).tolist(),
        "token_top_raise": (doc[rows, best] - hist[rows, best]).tolist(),
    }


@pytest.mark.parametrize("batch_size", [1, 3])
def test_scorer_evidence_equals_one_full_pass(tiny_gpt2, batch_size):
    document = list(range(300, 345))
    requests = [(document + [7, 8, 9], [400, 401, 402]), (document + [5], [403, 404]), ([11, 12], [405])]
    extra = [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10]], [[11, 12]]]
    fast = TokenScorer(tiny_gpt2, batch_size=batch_size).evidence(requests, top_k=4, extra_ids=extra)
    for (context, target), ids, got in zip(requests, extra, fast):
        expected = reference_token_evidence(tiny_gpt2, context, target, top_k=4, extra_ids=ids)
        for field in ("logprobs", "top_logprobs", "extra_logprobs"):
            torch.testing.assert_close(getattr(got, field), getattr(expected, field), atol=1e-4, rtol=0)
        assert got.top_ids.tolist() == expected.top_ids.tolist()


def test_scorer_refuses_extra_ids_of_the_wrong_shape(tiny_gpt2):
    scorer = TokenScorer(tiny_gpt2)
    with pytest.raises(ValueError, match="request 0: extra_ids needs one equally long id list per target token"):
        scorer.evidence([([1, 2], [3, 4])], extra_ids=[[[5]]])


def _assert_evidence_matches_reference(model, tokenizer, batch_size):
    rows = PMIFaith(model=model, tokenizer=tokenizer, evidence=True, batch_size=batch_size).compute_rows(**EXAMPLES)
    for i, row in enumerate(rows):
        expected = _reference_evidence(
            model, tokenizer, EXAMPLES["documents"][i], EXAMPLES["histories"][i], EXAMPLES["responses"][i]
        )
        for key, values in expected.items():
            assert row[key] == pytest.approx(values, abs=1e-4), (i, key)
        assert row.keys() >= set(AGGREGATE_KEYS)


@pytest.mark.parametrize("batch_size", [1, 8])
def test_pmi_faith_evidence_equals_slow_reference_gpt2(tiny_gpt2, gpt2_tokenizer, batch_size):
    _assert_evidence_matches_reference(tiny_gpt2, gpt2_tokenizer, batch_size)


@pytest.mark.slow
def test_pmi_faith_evidence_equals_slow_reference_smollm2(smollm2):
    _assert_evidence_matches_reference(*smollm2, batch_size=1)


def test_evidence_leaves_the_scores_unchanged(tiny_gpt2, gpt2_tokenizer):
    plain = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer).compute_rows(**EXAMPLES)
    rich = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer, evidence=True).compute_rows(**EXAMPLES)
    for a, b in zip(plain, rich):
        for key in ("pmi", "uncond_pmi", "logp_doc_history", "logp_history", "logp_doc", "logp_none"):
            assert b[key] == pytest.approx(a[key], abs=1e-5), key


def test_aggregates_by_their_definitions():
    pmi, js = [2.0, -3.0, 0.5, -0.5], [0.1, 0.4, 0.0, 0.2]
    got = aggregates(
        pmi,
        js,
        token_prefers_other=[0, 1, 1, 0],
        token_top_margin=[0.0, 2.0, 0.3, 0.0],
        token_top_raise=[0.5, 1.5, -1.0, 4.0],
    )
    assert got["pmi_min"] == -3.0
    assert got["pmi_softmin"] == pytest.approx(-math.log(np.mean(np.exp([-2.0, 3.0, -0.5, 0.5]))))
    assert got["negative_pmi_share"] == 0.25 and NEGATIVE_PMI == -1.0
    assert got["js_max"] == 0.4 and got["js_mean"] == pytest.approx(0.175)
    assert got["js_weighted_negative_pmi"] == pytest.approx((0.4 * 3.0 + 0.2 * 0.5) / 0.7)
    assert got["conflict_max"] == 1.5 and got["conflict_mean"] == pytest.approx(1.5 / 4)
