"""The minimal-edit contrast: which spans and edits it finds, that its margins equal a slow reference, and that
with SmolLM2 a response contradicting its document gets the larger margin."""

import json
import math
from pathlib import Path

import pytest

from faithkit.metrics.minimal_edit import (
    EditPolicy,
    MinimalEdit,
    candidate_edits,
    checkable_spans,
    ScoringLM,
    contrast_features,
    negation_edits,
)
from faithkit.metrics.registry import load_metric
from faithkit.prompts import DEFAULT_TEMPLATE, as_history
from faithkit.serving.scoring import TokenScorer, reference_token_logprobs

DATA = Path(__file__).parent / "data"
PAIRS = [json.loads(line) for line in (DATA / "contrast_pairs.jsonl").open()]
"""Entity swaps, number changes and negations written for the contrast. With SmolLM2 11 of these 12 go the right
way; with faithful_pairs.jsonl's 24 too, 33 of 36 (docs/contrast.md), which cost the suite three times as long."""


def _edits(nlp, response: str, document: str, max_edits: int = 8) -> list[tuple[str, str, str]]:
    edits = candidate_edits(nlp(response), nlp(document), max_edits)
    return [(e.span.text, e.span.label, e.replacement) for e in edits]


def test_spans_are_entities_dates_and_numbers_outside_entities(nlp):
    assert [
        (s.text, s.label, s.start, s.end) for s in checkable_spans(nlp("The Eiffel Tower is 330 metres tall."))
    ] == [("The Eiffel Tower", "LOC", 0, 16), ("330 metres", "QUANTITY", 20, 30)]
    assert [(s.text, s.label) for s in checkable_spans(nlp("She won it in 1911. He was born in Paris."))] == [
        ("1911", "DATE"),
        ("Paris", "GPE"),
    ]


def test_negations_are_removed_or_put_in_after_the_auxiliary(nlp):
    def flipped(text):
        return [edit.apply(text) for edit in negation_edits(nlp(text))]

    assert flipped("The Eiffel Tower isn't 330 metres tall, and I can't climb it.") == [
        "The Eiffel Tower is 330 metres tall, and I can't climb it.",
        "The Eiffel Tower isn't 330 metres tall, and I can climb it.",
    ]
    assert flipped("There is no water on Mars and it never rains.") == [
        "There is water on Mars and it never rains.",
        "There is no water on Mars and it rains.",
    ]
    assert flipped("She won it in 1911. He was born in Paris.") == [
        "She did not win it in 1911. He was born in Paris.",
        "She won it in 1911. He was not born in Paris.",
    ]
    assert flipped("Penguins can fly.") == ["Penguins cannot fly."]
    assert flipped("A spider has six legs.") == ["A spider does not have six legs."]


def test_candidates_come_from_the_documents_spans_of_the_same_kind(nlp):
    document = "The Titanic sank on 15 April 1912 after hitting an iceberg; 1,500 people died."
    assert _edits(nlp, "It sank on 3 June 1925 and 700 people died.", document) == [
        ("3 June 1925", "DATE", "15 April 1912"),
        ("700", "CARDINAL", "1,500"),
        ("died", "NEG", "did not die"),
    ]
    # the response's own text is no candidate, and a span the document has comes after those it lacks
    assert _edits(
        nlp,
        "It was founded by Sam Wilson.",
        "Sun Records was founded in Memphis by Sam Phillips, who first recorded Elvis Presley.",
    ) == [
        ("was", "NEG", "was not"),
        ("Sam Wilson", "PERSON", "Sam Phillips"),
        ("Sam Wilson", "PERSON", "Elvis Presley"),
        ("Sam Wilson", "PERSON", "Sun Records"),
        ("Sam Wilson", "PERSON", "Memphis"),
    ]


def test_no_edit_merely_refines_or_restyles_a_span_nor_flips_what_the_speakers_say(nlp):
    document = "The film came out in early 2011 in New York City and made 25% of its money in March."
    # "early 2011" only adds a word to "2011", "25%" restyles "25 %"; a lowercase span gets lowercase replacements
    assert _edits(nlp, "it came out in 2011 in michigan, i think.", document) == [
        ("michigan", "GPE", "new york city"),
        ("2011", "DATE", "March"),
    ]
    assert _edits(nlp, "it made 25 % of its money in may.", document) == [("made", "NEG", "did not make")]
    assert [
        edit.apply(text) for text in ["I haven't seen it. It is not red."] for edit in negation_edits(nlp(text))
    ] == ["I haven't seen it. It is red."]


def test_the_cap_gives_every_span_a_candidate_before_any_gets_a_second(nlp):
    document = "Toyota is a Japanese car maker with its headquarters in Toyota City, Aichi."
    assert _edits(nlp, "Toyota is a German company.", document, max_edits=4) == [
        ("is", "NEG", "is not"),
        ("German", "NORP", "Japanese"),
        ("Toyota", "ORG", "Japanese"),
        ("German", "NORP", "Toyota"),
    ]


def _reference_margins(model, tokenizer, document, history, response, nlp) -> list[tuple]:
    """(edit, margin in log P(.|d,h), margin in PMI) for each edit, each version scored alone by one full pass."""
    views = [DEFAULT_TEMPLATE.context(tokenizer, d, as_history(history)).ids for d in (document, None)]

    def logps(text):
        target = DEFAULT_TEMPLATE.response_ids(tokenizer, text)
        return [float(reference_token_logprobs(model, view, target).double().sum()) for view in views]

    original = logps(response)
    margins = []
    for edit in candidate_edits(nlp(response), nlp(document)):
        conditioned, history_only = logps(edit.apply(response))
        margins.append((edit, conditioned - original[0], (conditioned - history_only) - (original[0] - original[1])))
    return margins


def test_margins_equal_each_edit_scored_alone(tiny_gpt2, gpt2_tokenizer, nlp):
    pairs = PAIRS[:3] + PAIRS[-4:]
    documents = [p["document"] for p in pairs for _ in range(2)]
    histories = [p["history"] for p in pairs for _ in range(2)]
    responses = [r for p in pairs for r in (p["faithful"], p["unfaithful"])]
    every_span = EditPolicy(threshold=-math.inf)  # every span reported, with its best edit
    rows = contrast_features(
        ScoringLM(TokenScorer(tiny_gpt2, batch_size=4), gpt2_tokenizer),
        documents,
        histories,
        responses,
        policy=every_span,
        nlp=nlp,
    )
    for document, history, response, row in zip(documents, histories, responses, rows):
        reference = _reference_margins(tiny_gpt2, gpt2_tokenizer, document, history, response, nlp)
        assert row["contrast_edits"] == len(reference) > 0
        assert row["contrast_logp_margin"] == pytest.approx(max(m for _, m, _ in reference), abs=1e-4)
        assert row["contrast_pmi_margin"] == pytest.approx(max(p for _, _, p in reference), abs=1e-4)
        best = {}
        for edit, margin, _ in reference:
            if margin > best.get(edit.span, (None, -math.inf))[1]:
                best[edit.span] = (edit.replacement, margin)
        assert [(s["text"], s["replacement"]) for s in row["contradicted_spans"]] == [
            (span.text, best[span][0]) for span in sorted(best, key=lambda span: span.start)
        ]
        assert [s["margin"] for s in row["contradicted_spans"]] == pytest.approx(
            [best[span][1] for span in sorted(best, key=lambda span: span.start)], abs=1e-4
        )


def test_registered_metric_scores_and_rejects_empty_fields(model_folder):
    metric = load_metric("minimal-edit", model=model_folder, max_edits=2)
    assert isinstance(metric, MinimalEdit)
    result = metric.compute(
        documents=["The Eiffel Tower is 330 metres tall.", "Rain is wet."],
        histories=[["User: How tall is it?"], []],
        responses=["It is 150 metres tall.", "Yes."],
    )
    assert result["contrast_edits"] == [2, 0]
    assert result["contrast_logp_margin"][1] is None and result["minimal_edit"][1] == 0.0
    assert result["minimal_edit"][0] == -max(result["contrast_logp_margin"][0], 0.0)
    assert result["mean_minimal_edit"] == result["minimal_edit"][0] / 2
    with pytest.raises(ValueError, match="^example 1: field 'response' is empty$"):
        metric.compute_rows(["Rain is wet.", "Rain is wet."], None, ["It is wet.", "  "])


def test_contradicting_responses_get_the_larger_margin(smollm2):
    model, tokenizer = smollm2
    rows = MinimalEdit(model=model, tokenizer=tokenizer).compute_rows(
        [p["document"] for p in PAIRS for _ in range(2)],
        [p["history"] for p in PAIRS for _ in range(2)],
        [r for p in PAIRS for r in (p["faithful"], p["unfaithful"])],
    )
    margins = [-math.inf if row["contrast_logp_margin"] is None else row["contrast_logp_margin"] for row in rows]
    wins = sum(faithful < unfaithful for faithful, unfaithful in zip(margins[::2], margins[1::2]))
    assert wins / len(PAIRS) >= 0.85, f"{wins}/{len(PAIRS)}"
