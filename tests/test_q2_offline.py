"""Offline Q² backends: contracts checked fast with a tiny random GPT-2, and once with the real SmolLM2 (slow)."""

import json

import pytest

from faithkit.metrics.q2.metric import Q2
from faithkit.metrics.q2.stages import NO_ANSWER, Candidate
from faithkit.metrics.q2.offline import (
    CheckerNLI,
    FewShotQuestionGenerator,
    LabelWordNLI,
    RuleQuestionGenerator,
    SpanScoringQA,
    _CausalLM,
    statement_parts,
)
from faithkit.metrics.q2.backends import build_backend

PASSAGES = ["The show aired on PBS from 1983 to 1994.", "Bob Ross hosted The Joy of Painting."]
QUESTIONS = ["When did the show air?", "Who hosted The Joy of Painting?"]


@pytest.fixture(scope="module")
def lm(tiny_gpt2, gpt2_tokenizer):
    return _CausalLM(tiny_gpt2, gpt2_tokenizer)


def test_span_scoring_answers_are_passage_spans_and_batch_invariant(lm, nlp):
    qa = SpanScoringQA(lm, nlp, batch_size=8)
    answers = qa.answer(QUESTIONS, PASSAGES)
    candidates = qa.candidates(PASSAGES)
    assert all(a == NO_ANSWER or a in c for a, c in zip(answers, candidates))
    one_at_a_time = [SpanScoringQA(lm, nlp, batch_size=1).answer([q], [p])[0] for q, p in zip(QUESTIONS, PASSAGES)]
    assert answers == one_at_a_time


def test_span_scoring_candidates_are_entities_and_noun_chunks(lm, nlp):
    [candidates] = SpanScoringQA(lm, nlp).candidates(["Bob Ross hosted the show in 1983."])
    assert candidates == ["Bob Ross", "1983", "the show"]


@pytest.mark.parametrize(
    "question, parts",
    [
        ("it aired when in paris?", ("it aired", " in paris")),
        ("there are how many kinds of cheese?", ("there are", " kinds of cheese")),
        ("Who hosted the show?", ("", " hosted the show")),
        ("purple is nice?", ("purple is nice", "")),  # no wh-word: the answer is appended
    ],
)
def test_statement_parts(question, parts):
    assert statement_parts(question) == parts


def test_label_word_nli_returns_labels_and_calibrates_once(lm):
    nli = LabelWordNLI(lm)
    labels = nli.predict(["It aired in 1983.", "It aired in 1983."], ["It aired in 1983.", "It aired in 1990."])
    assert set(labels) <= {"entailment", "neutral", "contradiction"}
    calibration = nli._calibration
    nli.predict(["a"], ["b"])
    assert nli._calibration is calibration and nli.predict([], []) == []


def test_few_shot_questions_are_one_line(lm):
    questions = FewShotQuestionGenerator(lm, max_new_tokens=6).generate(
        [Candidate("1983", "it aired in 1983 ."), Candidate("pbs", "on pbs")]
    )
    assert len(questions) == 2 and all(len(q) <= 1 and all("\n" not in x for x in q) for q in questions)


def test_build_backend_specs(lm, nlp):
    def load(name):
        return lm

    assert isinstance(build_backend("qg", "rules", nlp=nlp, load_lm=load), RuleQuestionGenerator)
    assert isinstance(build_backend("qg", "fewshot:x", nlp=nlp, load_lm=load), FewShotQuestionGenerator)
    assert isinstance(build_backend("qa", "scoring:x", nlp=nlp, load_lm=load), SpanScoringQA)
    with pytest.raises(ValueError) as removed:
        build_backend("qa", "constrained:x", nlp=nlp, load_lm=load)
    assert str(removed.value) == (
        "qa_model='constrained:x': span-constrained decoding was removed (it gave a valid "
        "question for 0.019 of the spans, benchmarks/q2_offline_stages.py); use 'scoring:LM'"
    )
    assert isinstance(build_backend("nli", "labels:x", nlp=nlp, load_lm=load), LabelWordNLI)
    with pytest.raises(ValueError, match="not a QG method"):
        build_backend("qg", "scoring:x", nlp=nlp, load_lm=load)


def test_checker_nli_reads_the_checkers_likeliest_class(monkeypatch, gpt2_tokenizer):
    """supported → entailment, generic → neutral, unsupported → contradiction; "checker:FOLDER" loads FOLDER."""
    by_claim = {"Yes.": [0.6, 0.3, 0.1], "Maybe.": [0.3, 0.4, 0.3], "No.": [0.2, 0.3, 0.5]}
    loaded = []

    def load_support_model(preset, name, device, batch_size, dtype):
        def support(windows, claims, histories):
            assert all(window == "The show aired on PBS." for window in windows)
            return [by_claim[claim] for claim in claims]

        loaded.append(name)
        support.tokenizer = gpt2_tokenizer
        return support

    monkeypatch.setattr("faithkit.metrics.claim_checkers.load_support_model", load_support_model)
    nli = build_backend("nli", "checker")
    assert isinstance(nli, CheckerNLI) and nli.compare_answers is False  # Q² asks it end to end only
    assert nli.predict(["The show aired on PBS."] * 3, ["Yes.", "Maybe.", "No."]) == [
        "entailment",
        "neutral",
        "contradiction",
    ]
    assert nli.predict([], []) == []
    build_backend("nli", "checker:runs/checker/adapter")
    assert loaded == [None, "runs/checker/adapter"]
    with pytest.raises(ValueError) as wrong:
        build_backend("nli", "scoring:x")
    assert str(wrong.value) == (
        "nli_model='scoring:x': method 'scoring' is not a NLI method; use one of ['labels:LM', 'checker:ADAPTER'] "
        'or "checker"'
    )


def test_q2_shares_one_lm_across_stages(monkeypatch, lm):
    loads = []
    monkeypatch.setattr(
        "faithkit.metrics.q2.metric.models.load",
        lambda name, device=None, dtype=None: loads.append(name) or (lm.model, lm.tokenizer),
    )
    metric = Q2(preset="offline", qa_model="scoring:tiny", nli_model="labels:tiny")
    assert loads == ["tiny"]
    result = metric.compute(knowledge=PASSAGES, responses=["it aired on pbs in 1983 .", "ok"])
    assert len(result["q2"]) == 2 and result["fallback"][1] is True


@pytest.mark.slow
def test_offline_preset_with_smollm2():
    metric = Q2(preset="offline")
    rows = metric.compute_rows(
        ["The show aired from 1983 to 1994 on PBS.", "Tennis is a racket sport."],
        [[], []],
        ["the show aired on pbs from 1983 to 1994 .", "tennis is played with a bat ."],
    )
    json.dumps(rows)
    for row in rows:
        assert 0.0 <= row["q2"] <= 1.0 and 0.0 <= row["q2_no_nli"] <= 1.0
        for item in row["explanations"]:
            assert set(item) == {
                "span",
                "start",
                "end",
                "question",
                "response_answer",
                "knowledge_answer",
                "f1",
                "nli",
                "score",
            }
