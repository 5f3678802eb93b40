"""PMI-FAITH: definition, exactness under batching and caching, pinned values, behaviour on real text."""

import json
import math
from pathlib import Path

import pytest
import torch

from faithkit.metrics import PMIFaith
from faithkit.prompts import PromptTemplate
from faithkit.serving.scoring import reference_token_logprobs

PAIRS = [json.loads(line) for line in (Path(__file__).parent / "data" / "faithful_pairs.jsonl").open()]
AUTHORS_EXAMPLE = dict(
    documents=["Apple is orange in color."] * 2,
    histories=["User: What is the color of an apple?"] * 2,
    responses=["Apple is red in color.", "apple is orange in color"],
)


def _mixed_examples():
    long_document = "The museum opened in 1901 and holds paintings, sculptures and old maps of the region. " * 3
    return dict(
        documents=[long_document, long_document, "Cats sleep a lot.", long_document, "Rain is wet.", "Rain is wet."],
        histories=[
            ["User: When did it open?"],
            ["User: hi", "Agent: hello", "User: What does it hold?"],
            "User: Do cats sleep?",
            [],
            ["User: Is rain wet?"],
            ["User: Is rain wet?"],
        ],
        responses=[
            "It opened in 1901.",
            "Paintings and old maps.",
            "Yes, they sleep a lot every day of the week.",
            "A museum.",
            "Yes.",
            "No, rain is dry and made of sand.",
        ],
    )


def test_definition_matches_four_reference_passes(tiny_gpt2, gpt2_tokenizer):
    """pmi and uncond_pmi are token-mean log-prob differences of the four views, token_pmi their per-token parts."""
    metric = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer)
    document, history, response = "Paris is the capital of France.", ["User: Capital of France?"], "It is Paris."
    result = metric.compute(documents=[document], histories=[history], responses=[response])
    template = PromptTemplate()
    target = template.response_ids(gpt2_tokenizer, response)
    view = {
        name: reference_token_logprobs(tiny_gpt2, template.context(gpt2_tokenizer, d, h).ids, target)
        for name, d, h in (("dh", document, history), ("h", None, history), ("d", document, []), ("0", None, []))
    }
    assert result["pmi"][0] == pytest.approx((view["dh"].mean() - view["h"].mean()).item(), abs=1e-5)
    assert result["uncond_pmi"][0] == pytest.approx((view["d"].mean() - view["0"].mean()).item(), abs=1e-5)
    assert result["token_pmi"][0] == pytest.approx((view["dh"] - view["h"]).tolist(), abs=1e-5)
    assert result["tokens"][0] == gpt2_tokenizer.convert_ids_to_tokens(target)
    assert result["mean_pmi"] == result["pmi"][0]


def test_sum_normalisation_is_mean_times_length(tiny_gpt2, gpt2_tokenizer):
    examples = _mixed_examples()
    mean = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer).compute(**examples)
    total = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer, normalize="sum").compute(**examples)
    for m, s, n in zip(mean["pmi"], total["pmi"], mean["num_tokens"]):
        assert s == pytest.approx(m * n, abs=1e-4)


def _assert_batching_changes_nothing(model, tokenizer):
    examples = _mixed_examples()
    one_at_a_time = PMIFaith(model=model, tokenizer=tokenizer, batch_size=1, share_prefixes=False)
    fast = PMIFaith(model=model, tokenizer=tokenizer, batch_size=4)
    slow_rows = [one_at_a_time.compute(**{k: [v[i]] for k, v in examples.items()}) for i in range(6)]
    fast_result = fast.compute(**examples)
    for key in ("pmi", "uncond_pmi", "logp_doc_history", "logp_history", "logp_doc", "logp_none"):
        assert fast_result[key] == pytest.approx([row[key][0] for row in slow_rows], abs=1e-4), key


def test_batched_and_cached_equal_one_at_a_time_gpt2(tiny_gpt2, gpt2_tokenizer):
    _assert_batching_changes_nothing(tiny_gpt2, gpt2_tokenizer)


def test_batched_and_cached_equal_one_at_a_time_llama(tiny_llama):
    _assert_batching_changes_nothing(*tiny_llama)


@pytest.mark.slow
def test_authors_example_pinned_smollm2(smollm2):
    """The PMI-FAITH authors' notebook example (their BLOOM-560m gave 1.1194 and 1.5961)."""
    model, tokenizer = smollm2
    result = PMIFaith(model=model, tokenizer=tokenizer).compute(**AUTHORS_EXAMPLE)
    assert result["pmi"] == pytest.approx([1.025942, 1.462295], abs=1e-4)
    assert result["uncond_pmi"] == pytest.approx([3.508794, 2.910822], abs=1e-4)


@pytest.mark.slow
def test_faithful_response_scores_higher_in_nine_of_ten_pairs(smollm2):
    model, tokenizer = smollm2
    metric = PMIFaith(model=model, tokenizer=tokenizer, unconditional=False)
    result = metric.compute(
        documents=[p["document"] for p in PAIRS for _ in range(2)],
        histories=[p["history"] for p in PAIRS for _ in range(2)],
        responses=[r for p in PAIRS for r in (p["faithful"], p["unfaithful"])],
    )
    wins = sum(f > u for f, u in zip(result["pmi"][::2], result["pmi"][1::2]))
    assert len(PAIRS) >= 20 and wins / len(PAIRS) >= 0.9, f"{wins}/{len(PAIRS)}"


def test_over_long_document_keeps_its_end_and_is_recorded(tiny_gpt2, gpt2_tokenizer, caplog):
    metric = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer, max_length=64)
    document = " ".join(f"fact{i}" for i in range(100))
    result = metric.compute(documents=[document], histories=[["User: q?"]], responses=["fact99."])
    assert "example 0: context cut by" in caplog.text
    assert result["truncated_tokens"][0] > 0 and math.isfinite(result["pmi"][0])


def test_bad_input_gets_clear_errors(tiny_gpt2, gpt2_tokenizer):
    metric = PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer)
    with pytest.raises(ValueError, match="example 1: field 'response' is empty"):
        metric.compute(documents=["d", "d"], histories=["h", "h"], responses=["ok", " "])
    with pytest.raises(ValueError, match="example 0: field 'document' is empty"):
        metric.compute(documents=[""], histories=["h"], responses=["ok"])
    with pytest.raises(TypeError, match="example 0: field 'response' must be a string, got float"):
        metric.compute(documents=["d"], histories=["h"], responses=[float("nan")])
    with pytest.raises(ValueError, match="same length, got 2, 1, 1"):
        metric.compute(documents=["d", "d"], histories=["h"], responses=["r"])
    with pytest.raises(ValueError, match="field 'response' has .* tokens, more than the model's context"):
        PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer, max_length=8).compute(
            documents=["d"], histories=["h"], responses=["word " * 20]
        )
    with pytest.raises(ValueError, match="also needs tokenizer"):
        PMIFaith(model=tiny_gpt2)
    with pytest.raises(ValueError, match="^normalize must be one of mean, sum, got 'max'$"):
        PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer, normalize="max")


def test_scores_do_not_depend_on_the_device_argument_type(tiny_gpt2, gpt2_tokenizer):
    assert PMIFaith(model=tiny_gpt2, tokenizer=gpt2_tokenizer).model.device == torch.device("cpu")
