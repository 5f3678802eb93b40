"""The rerank strategy: its choice rule, its parameters, and the fast path against a slow reference.

The reference decodes every candidate on its own (one context, one generator) and scores every
response with one full unpadded pass per view; the strategy decodes a batch of contexts at
once and judges all their candidates in one prefix-sharing scorer call.
"""

import math

import pytest
import torch

from faithkit.decoding import generate, generate_grid, row_seed
from faithkit.decoding.rerank import Rerank, candidate_seeds, choose, rerank, why_chosen
from faithkit.decoding.strategies import Cell, strategy_from_dict
from faithkit.decoding.sampling import RowSampler
from faithkit.errors import ConfigError
from faithkit.prompts import DEFAULT_TEMPLATE, as_history
from faithkit.generation.rerank import Judges
from faithkit.serving.scoring import reference_token_logprobs

DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "Apples grow on trees in orchards.",
    "Paris is the capital of France.",
]
HISTORIES = [["How tall is the tower?"], ["Where do apples grow?", "On trees.", "Which trees?"], ["Where is Paris?"]]
NEW_TOKENS = 6


def test_choose_takes_the_best_score_within_the_fluency_bound_of_the_greedy_response():
    # greedy fluency -2: the bound is -3 at tolerance 1
    assert choose([0.1, 0.9, 0.5], [-2.0, -3.5, -2.9], 1.0) == 2  # 0.9 is too disfluent
    assert choose([0.1, 0.9, 0.5], [-2.0, -3.5, -2.9], 2.0) == 1
    assert choose([0.4, 0.4, 0.1], [-2.0, -2.0, -2.0], 1.0) == 0  # ties go to the earlier response
    assert choose([0.1, None, 0.3], [-2.0, None, -9.0], 1.0) == 0  # no score: not eligible; none better in bound
    assert choose([None, 0.2, 0.3], [None, -9.0, -1.0], 0.0) == 2  # empty greedy response: no bound
    assert choose([None, None], [None, None], 1.0) == 0
    assert choose([0.1, math.nan], [-1.0, -1.0], 1.0) == 0


def test_why_chosen_gives_the_bound_and_the_reason_in_the_indexing_of_scores():
    scores, fluencies = [0.1, 0.9, 0.5, 0.7], [-2.0, -3.5, -2.9, -3.2]  # bound -3 at tolerance 1
    assert why_chosen(scores, fluencies, 1.0, choose(scores, fluencies, 1.0)) == {
        "fluency_bound": -3.0,
        "reason": "candidate 2: the highest score, 0.500 (greedy 0.100), of the 2 responses within the fluency "
        "bound -3.000 (greedy -2.000 - 1); 2 scoring higher fell below the bound, the best candidate 1 "
        "(0.900, fluency -3.500)",
        "excluded_by_bound": 2,
    }
    scores, fluencies = [0.6, 0.9, 0.5], [-2.0, -3.5, -2.1]
    assert why_chosen(scores, fluencies, 1.0, choose(scores, fluencies, 1.0)) == {
        "fluency_bound": -3.0,
        "reason": "greedy kept: no other of the 2 responses within the fluency bound -3.000 (greedy -2.000 - 1) "
        "scores higher than its 0.600; 1 scoring higher fell below the bound, the best candidate 1 (0.900, "
        "fluency -3.500)",
        "excluded_by_bound": 1,
    }
    assert why_chosen([0.6, 0.2], [-2.0, -2.0], 1.0, 0)["excluded_by_bound"] == 0  # the bound changed nothing
    assert why_chosen([None, 0.2, 0.3], [None, -9.0, -1.0], 0.0, 2) == {
        "fluency_bound": None,
        "reason": "candidate 2: the highest score, 0.300 (greedy no score), of the 2 responses",
        "excluded_by_bound": 0,
    }
    assert why_chosen([None, None], [None, None], 1.0, 0)["reason"] == "greedy kept: no response has a score"


def test_the_bound_from_the_best_response_lets_a_candidate_more_fluent_than_greedy_set_it():
    scores, fluencies = [0.1, 0.9, 0.5], [-2.0, -1.2, -2.5]  # candidate 1 is the most fluent: bound -2.2 at 1
    assert choose(scores, [-2.0, -3.5, -2.9], 1.0, "best") == 2  # greedy the most fluent: the greedy rule's pick
    assert choose([0.1, 0.5, 0.9], [-2.0, -1.2, -2.5], 1.0, "greedy") == 2
    assert choose([0.1, 0.5, 0.9], [-2.0, -1.2, -2.5], 1.0, "best") == 1  # -2.5 < -1.2 - 1
    assert why_chosen(scores, fluencies, 1.0, 1, "best")["reason"] == (
        "candidate 1: the highest score, 0.900 (greedy 0.100), of the 2 responses within the fluency bound -2.200 "
        "(best -1.200 - 1)"
    )
    assert choose([None, 0.2, 0.3], [None, -9.0, -1.0], 0.0, "best") == 2  # the bound from the most fluent scored


def test_parameters_are_declared_once_and_checked():
    strategy = strategy_from_dict({"name": "rerank", "n": 4, "candidate_search": "beam", "fluency_tolerance": 0.5})
    assert strategy == Rerank(n=4, candidate_search="beam", judge="pmi-faith", fluency_tolerance=0.5)
    assert strategy.label == "rerank_n4_beam_pmi-faith_f0.5"
    assert (
        Rerank(fluency_view="document", fluency_reference="best").label == "rerank_n8_sample_pmi-faith_f1_document_best"
    )
    with pytest.raises(ConfigError, match=r"fluency_view must be one of history, document, got 'both'"):
        strategy_from_dict({"name": "rerank", "fluency_view": "both"})
    assert not Cell(strategy).sampled and Cell(Rerank()).sampled
    assert Cell(Rerank()).option_searches == ("greedy", "sample")
    with pytest.raises(
        ConfigError, match=r"^rerank: --candidate-search 'nucleus' is unknown; choose one of sample, beam$"
    ):
        Rerank(candidate_search="nucleus")
    with pytest.raises(ConfigError, match=r"^rerank: n must be at least 1, got 0$"):
        strategy_from_dict({"name": "rerank", "n": 0})
    with pytest.raises(ConfigError, match="strategy rerank does not support beam search"):
        Cell(Rerank(), "beam").check()


def test_rerank_cells_need_a_judge(tiny_gpt2, gpt2_tokenizer):
    with pytest.raises(ValueError, match=r"^rerank cells need a judge: pass judge=faithkit.generation.rerank.Judges"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, strategy="rerank", max_new_tokens=2)


def _alone(model, tokenizer, index, **kwargs):
    """One context decoded on its own (plain decoding), its texts."""
    return generate(
        model,
        tokenizer,
        [DOCUMENTS[index]],
        [HISTORIES[index]],
        strategy="plain",
        batch_size=1,
        max_new_tokens=NEW_TOKENS,
        min_new_tokens=NEW_TOKENS,
        template=DEFAULT_TEMPLATE,
        **kwargs,
    )[0]


def _sampled_alone(model, tokenizer, index, seed):
    """One candidate: the context alone, drawing from the candidate's own generator."""
    top_k = model.generation_config.top_k or None  # the draw's warper, as the strategy applies it
    sampler = RowSampler(top_k=top_k, generators=[torch.Generator().manual_seed(seed)])
    return _alone(model, tokenizer, index, do_sample=True, logits_processor=[sampler])


def _reference_values(model, tokenizer, document, history, response):
    """(PMI-FAITH, fluency) of one response: one full pass per view, mean over the response's tokens."""
    target = DEFAULT_TEMPLATE.response_ids(tokenizer, response)
    means = []
    for with_document in (True, False):
        context = DEFAULT_TEMPLATE.context(tokenizer, document if with_document else None, as_history(history))
        means.append(float(reference_token_logprobs(model, context.ids, target).double().mean()))
    return means[0] - means[1], means[1]


@pytest.mark.parametrize("search", ["sample", "beam"])
def test_rerank_matches_the_slow_reference(tiny_gpt2, gpt2_tokenizer, search):
    model, tokenizer = tiny_gpt2, gpt2_tokenizer
    strategy = Rerank(n=3, candidate_search=search, fluency_tolerance=0.5)
    seeds = [row_seed(7, f"row{i}") for i in range(len(DOCUMENTS))]
    expected = []
    for i in range(len(DOCUMENTS)):
        greedy = _alone(model, tokenizer, i)
        if search == "sample":
            candidates = [_sampled_alone(model, tokenizer, i, seed) for seed in candidate_seeds(seeds[i], strategy.n)]
        else:
            candidates = _alone(model, tokenizer, i, num_beams=3, num_return_sequences=3)
        values = [_reference_values(model, tokenizer, DOCUMENTS[i], HISTORIES[i], r) for r in [greedy, *candidates]]
        bound = values[0][1] - strategy.fluency_tolerance
        best = max((k for k, (_, fluency) in enumerate(values) if fluency >= bound), key=lambda k: (values[k][0], -k))
        expected.append(([greedy, *candidates], values, best))
    assert any(best > 0 for _, _, best in expected)  # a candidate beat greedy somewhere: the test can tell

    judges = Judges(model, tokenizer, DEFAULT_TEMPLATE)
    kwargs = {
        "max_new_tokens": NEW_TOKENS,
        "min_new_tokens": NEW_TOKENS,
        "template": DEFAULT_TEMPLATE,
        "batch_size": 3,
        "judge": judges,
    }
    kwargs.update({"seeds": seeds} if search == "sample" else {})
    got = generate_grid(model, tokenizer, DOCUMENTS, HISTORIES, [Cell(strategy)], **kwargs)[0]
    assert got == [responses[best] for responses, _, best in expected]
    choices = rerank(
        strategy,
        judges,
        DOCUMENTS,
        HISTORIES,
        [responses[0] for responses, _, _ in expected],
        [responses[1:] for responses, _, _ in expected],
    )
    for choice, (responses, values, best) in zip(choices, expected):
        assert choice.index == best and choice.response == responses[best]
        assert choice.scores == pytest.approx([v[0] for v in values], abs=1e-6)
        assert choice.fluencies == pytest.approx([v[1] for v in values], abs=1e-6)


def test_rerank_cells_share_candidates_and_the_greedy_decode_in_a_grid(tiny_gpt2, gpt2_tokenizer):
    strict, loose = (
        Rerank(n=3, candidate_search="beam", fluency_tolerance=0.0),
        Rerank(n=3, candidate_search="beam", fluency_tolerance=50.0),
    )
    kwargs = {
        "max_new_tokens": NEW_TOKENS,
        "template": DEFAULT_TEMPLATE,
        "judge": Judges(tiny_gpt2, gpt2_tokenizer, DEFAULT_TEMPLATE),
    }
    plain, *reranked = generate_grid(
        tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, ["plain", strict, loose], **kwargs
    )
    alone = [generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, strategy=s, **kwargs) for s in (strict, loose)]
    assert reranked == alone
    assert plain != reranked[1]  # the loose bound lets the judge move off greedy


def test_also_decodes_join_the_candidates_as_each_decodes_alone(tiny_gpt2, gpt2_tokenizer):
    """``also``: the beam candidate is plain beam search's best beam (4 beams), PMI-DECODE's is its greedy decode."""
    from faithkit.decoding import PMI

    model, tokenizer = tiny_gpt2, gpt2_tokenizer
    strategy = Rerank(n=2, candidate_search="beam", also="beam+pmi:alpha=0.5,top_p=0.9", fluency_tolerance=50.0)
    kwargs = {"max_new_tokens": NEW_TOKENS, "min_new_tokens": NEW_TOKENS, "template": DEFAULT_TEMPLATE}
    from faithkit.decoding import GenerationOptions, iter_grid

    pools: list = [None] * len(DOCUMENTS)
    options = GenerationOptions(max_new_tokens=NEW_TOKENS)
    grid = iter_grid(model, tokenizer, DOCUMENTS, HISTORIES, [Cell(strategy)], options, template=DEFAULT_TEMPLATE,
                     min_new_tokens=NEW_TOKENS)  # fmt: skip
    for _, indices, responses in grid:  # no judge: each context's [greedy, *candidates]
        for i, pool in zip(indices, responses):
            pools[i] = pool
    beam = [_alone(model, tokenizer, i, num_beams=4) for i in range(len(DOCUMENTS))]
    pmi = generate(model, tokenizer, DOCUMENTS, HISTORIES, strategy=PMI(alpha=0.5, top_p=0.9), **kwargs)
    drawn = [_alone(model, tokenizer, i, num_beams=2, num_return_sequences=2) for i in range(len(DOCUMENTS))]
    greedy = [_alone(model, tokenizer, i) for i in range(len(DOCUMENTS))]
    assert pools == [[g, *d, b, p] for g, d, b, p in zip(greedy, drawn, beam, pmi)]
    assert strategy.label == "rerank_n2_beam_pmi-faith_f50+beam+pmi_alpha0.5_top_p0.9"
    judged = generate_grid(model, tokenizer, DOCUMENTS, HISTORIES, [Cell(strategy)], **kwargs,
                           judge=Judges(model, tokenizer, DEFAULT_TEMPLATE))[0]  # fmt: skip
    assert all(response in pool for response, pool in zip(judged, pools))
    assert any(response in (pool[3], pool[4]) for response, pool in zip(judged, pools))  # an also decode can win


def test_the_faithful_recipe_is_rerank_with_its_own_defaults():
    from faithkit.decoding.rerank import Faithful

    recipe = strategy_from_dict({"name": "faithful"})
    assert isinstance(recipe, Faithful) and isinstance(recipe, Rerank)
    assert (recipe.judge, recipe.fluency_view, recipe.also, recipe.n) == (
        "faithkit-checker",
        "document",
        "beam+pmi+cad",
        4,
    )
    assert strategy_from_dict({"name": "faithful", "n": 2, "judge": "pmi-faith"}).label.startswith("faithful_n2_")
    with pytest.raises(ConfigError, match=r"--also pmi:alpha=2: pmi: alpha must be in \[0, 1\]"):
        strategy_from_dict({"name": "faithful", "also": "beam+pmi:alpha=2"})
    with pytest.raises(ConfigError, match=r"^rerank: --also faithful: a candidate is one decode, not another rerank$"):
        strategy_from_dict({"name": "rerank", "also": "faithful"})
    assert recipe.label == "faithful_n4_sample_faithkit-checker_f2_document+beam+pmi+cad"


def test_training_hooks_decode_rerank_as_generate_does(tiny_gpt2, gpt2_tokenizer):
    from faithkit.data import Row
    from faithkit.train.hooks import GenerationHook

    rows = [
        Row(id=f"r{i}", document=d, history=list(h), response="Yes.")
        for i, (d, h) in enumerate(zip(DOCUMENTS, HISTORIES))
    ]
    decoders = {"plain": "plain", "rerank": Rerank(n=2, fluency_tolerance=50.0)}
    hook = GenerationHook(
        rows,
        load_metrics=dict,
        decoders={k: strategy_from_dict(v) for k, v in decoders.items()},
        max_new_tokens=3,
        batch_size=2,
        max_context_tokens=64,
    )
    _, responses = hook(tiny_gpt2, gpt2_tokenizer)
    expected = generate(
        tiny_gpt2,
        gpt2_tokenizer,
        DOCUMENTS,
        HISTORIES,
        strategy=decoders["rerank"],
        judge=Judges(tiny_gpt2, gpt2_tokenizer),
        seeds=[row_seed(0, row.id) for row in rows],
        max_new_tokens=3,
        batch_size=2,
        max_context_tokens=64,
    )
    assert responses["rerank"] == expected


@pytest.mark.parametrize(
    "text,cleaned",
    [
        ("Agent: It is 330 metres tall.", "It is 330 metres tall."),
        ("User: August 14, 1889", "August 14, 1889"),  # the model wrote the user's turn: its text, unlabelled
        ("User: When was it built?\nAgent: In 1889.\nUser: Thanks!", "In 1889."),  # the answering side's turn
        ("It is 330 metres tall. User: And when was it built?", "It is 330 metres tall."),  # a next turn begun
        ("Assistant: Sure. Document: The Eiffel Tower is", "Sure."),
        ("Captain: Emperor penguins live in Antarctica.", "Emperor penguins live in Antarctica."),
        ("User: How tall is the Eiffel Tower? It is 330 metres tall.", "It is 330 metres tall."),  # the turn echoed
        ("How tall is the Eiffel Tower?\nIt is tall.", "It is tall."),
        ("According to the document: it is tall.", "According to the document: it is tall."),  # no speaker
        ("User:", ""),
    ],
)
def test_responses_lose_speaker_labels_echoes_and_next_turns_in_one_place(text, cleaned):
    from faithkit.decoding.inputs import response_text

    assert response_text(text, DEFAULT_TEMPLATE, ["User: How tall is the Eiffel Tower?"]) == cleaned
    assert response_text(response_text(text, DEFAULT_TEMPLATE), DEFAULT_TEMPLATE) == response_text(
        text, DEFAULT_TEMPLATE
    )  # cleaning twice changes nothing


def test_candidates_from_a_file_are_cleaned_before_they_are_judged():
    from faithkit.data import Row
    from faithkit.generation.rerank import _cleaned

    row = Row(id="r", document="d", history=["User: When was it finished?"])
    record = {"id": "r", "responses": ["User: August 14, 1889", "In 1889. User: thanks"], "greedy": "Agent: 1889."}
    assert _cleaned(record, row, DEFAULT_TEMPLATE) == {
        "id": "r",
        "responses": ["August 14, 1889", "In 1889."],
        "greedy": "1889.",
    }
