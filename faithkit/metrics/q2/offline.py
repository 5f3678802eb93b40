"""Q²'s offline backends: the paper's three models approximated with a small causal LM or with rules, so Q² runs
without the hub. How good they are is measured in ``benchmarks/q2_offline_stages.py``, which chose the offline
preset: rules for QG, ``scoring:smollm2-135m`` for QA, ``checker`` (faithkit's claim checker) for NLI."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import torch

from ...serving import models
from ...prompts import start_ids
from ...serving.scoring import Request, TokenScorer
from .stages import NO_ANSWER, Candidate, batches


WH_BY_ENTITY = {
    "PERSON": "who",
    "NORP": "what",
    "FAC": "where",
    "ORG": "what",
    "GPE": "where",
    "LOC": "where",
    "PRODUCT": "what",
    "EVENT": "what",
    "WORK_OF_ART": "what",
    "LAW": "what",
    "LANGUAGE": "what",
    "DATE": "when",
    "TIME": "when",
    "PERCENT": "how much",
    "MONEY": "how much",
    "QUANTITY": "how much",
    "ORDINAL": "which",
    "CARDINAL": "how many",
}
PERSON_PRONOUNS = {"he", "she", "him", "her", "they", "them", "we", "us", "you", "me", "i", "who"}


class RuleQuestionGenerator:
    """A wh-question made from the span's sentence: the span is replaced by a wh-word.

    The wh-word comes from the entity label (DATE → "when", PERSON → "who", CARDINAL →
    "how many", …) or, for noun chunks, "who" for personal pronouns and "what"
    otherwise; an article in front goes too, and "where"/"when" also absorb a preposition ("in 1983" → "when").
    No inversion is attempted ("it aired when?"): extractive answerers read such cloze
    questions well, and the rule cannot loop or hallucinate. Pronoun spans get no
    question: their answer on the knowledge is never the pronoun, so with an answerer
    that cannot resolve references they only add F1 zeros to consistent responses.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import extract_spans, load_spacy
    >>> from faithkit.metrics.q2.offline import RuleQuestionGenerator
    >>> from faithkit.metrics.q2.stages import Candidate
    >>> response = "it aired on pbs from 1983 ."
    >>> candidates = [Candidate(span.text, response, span.spacy_span) for span in extract_spans(load_spacy()(response))]
    >>> RuleQuestionGenerator().generate(candidates)  # none about "it"
    [['it aired on what from 1983?'], ['it aired on pbs when?'], []]
    ```
    """

    def generate(self, candidates: Sequence[Candidate]) -> list[list[str]]:
        return [[rule_question(c.span)] if c.span is not None and not is_pronoun(c.span) else [] for c in candidates]


def is_pronoun(span) -> bool:
    """ "it", "they", "that": the knowledge never contains such an answer, so the rules ask nothing about it.

    Args:
        span (`spacy.tokens.Span`): a response's span.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import extract_spans, load_spacy
    >>> from faithkit.metrics.q2.offline import is_pronoun
    >>> [(span.text, is_pronoun(span.spacy_span)) for span in extract_spans(load_spacy()("it aired on pbs ."))]
    [('pbs', False), ('it', True)]
    ```
    """
    return all(token.pos_ in ("PRON", "DET") for token in span)


def rule_question(span) -> str:
    """The span's sentence as a cloze question: the span (with its article, and its preposition for where/when)
    replaced by the wh-word of its label (:class:`RuleQuestionGenerator`).

    Args:
        span (`spacy.tokens.Span`): a response's entity or noun chunk.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import extract_spans, load_spacy
    >>> spans = [span.spacy_span for span in extract_spans(load_spacy()("The show aired on PBS from 1983."))]
    >>> from faithkit.metrics.q2.offline import rule_question
    >>> [rule_question(span) for span in spans]
    ['The show aired on what from 1983?', 'The show aired on PBS when?', 'what aired on PBS from 1983?']
    ```
    """
    doc, sentence = span.doc, span.sent
    wh = WH_BY_ENTITY.get(span.label_) if span.label_ else None
    if wh is None:
        wh = "who" if span.root.lower_ in PERSON_PRONOUNS else "what"
    if wh == "where" and span.root.dep_ in ("nsubj", "nsubjpass"):  # "The Eiffel Tower is tall" asks what, not where
        wh = "what"
    start = span.start
    if start > sentence.start and doc[start - 1].lower_ in ("the", "a", "an"):  # entities leave their article out
        start -= 1
    if wh in ("where", "when") and start > sentence.start and doc[start - 1].dep_ == "prep":
        start -= 1
    before = doc[sentence.start : start].text
    after = doc[span.end : sentence.end].text.rstrip(" .!?")
    return " ".join(part for part in (before, wh, after) if part).strip() + "?"


class _CausalLM:
    """A causal LM with its tokenizer, and the few helpers the offline backends share."""

    def __init__(self, model, tokenizer):
        models.require_causal(model, "Q² (offline backends)")
        self.model, self.tokenizer = model, tokenizer
        self.start = start_ids(tokenizer)
        self.newline = self.encode("\n")[-1]
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    @torch.no_grad()
    def generate(self, prompts: Sequence[list[int]], max_new_tokens: int, **options) -> list[list[int]]:
        """Greedy continuation of each prompt (token ids), left-padded in one batch, up to a newline."""
        width, device = max(len(p) for p in prompts), models.input_device(self.model)
        ids = torch.tensor([[self.pad_id] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        output = self.model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            eos_token_id=self.newline,
            pad_token_id=self.pad_id,
            **options,
        )
        results = []
        for row in output[:, width:].tolist():
            results.append(row[: row.index(self.newline)] if self.newline in row else row)
        return results


def cut_passage(text: str, max_words: int = 1500) -> str:
    """Offline LMs read at most ``max_words`` words of a passage (its start), with a warning.

    Args:
        text (`str`): the passage.
        max_words (`int`, defaults to 1500): words kept at most.

    Examples:

    ```python
    >>> import warnings
    >>> from faithkit.metrics.q2.offline import cut_passage
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cut_passage("The show aired on PBS.", max_words=3), str(caught[0].message)
    ('The show aired', 'passage of 5 words cut to its first 3 for the offline QA/NLI prompt')
    ```
    """
    words = text.split()
    if len(words) <= max_words:
        return text
    warnings.warn(
        f"passage of {len(words)} words cut to its first {max_words} for the offline QA/NLI prompt", stacklevel=2
    )
    return " ".join(words[:max_words])


QG_EXAMPLES = (
    (
        "bob ross hosted the joy of painting , which aired on pbs from 1983 to 1994 .",
        "pbs",
        "On which network did the joy of painting air?",
    ),
    (
        "tennis is a racket sport that can be played by two or four players .",
        "a racket sport",
        "What kind of sport is tennis?",
    ),
    ("The Eiffel Tower is 330 metres tall and was finished in 1889.", "1889", "When was the Eiffel Tower finished?"),
)


class FewShotQuestionGenerator:
    """QG by few-shot completion with a causal LM: ``Text: … Answer: … Question:``, greedy.

    Chat prompts make small instruct models chat instead of asking; completion prompts
    with three worked examples work for some spans, and often ask about something else
    (on the dodeca responses 24% of SmolLM2's and 26% of Gemma-3-270M's questions were
    answered by their span, against 91% for :class:`RuleQuestionGenerator`).
    ``no_repeat_ngram_size=3`` (as the paper's beam search) stops the loops small LMs
    fall into; the question ends at its first "?".
    """

    def __init__(self, lm: _CausalLM, batch_size=8, max_new_tokens=32):
        self.lm, self.batch_size, self.max_new_tokens = lm, batch_size, max_new_tokens
        self.header = "".join(f"Text: {t}\nAnswer: {a}\nQuestion: {q}\n\n" for t, a, q in QG_EXAMPLES)

    def generate(self, candidates: Sequence[Candidate]) -> list[list[str]]:
        questions: list[list[str]] = []
        for batch in batches(list(candidates), self.batch_size):
            prompts = [
                self.lm.start + self.lm.encode(f"{self.header}Text: {c.context}\nAnswer: {c.text}\nQuestion:")
                for c in batch
            ]
            for ids in self.lm.generate(prompts, self.max_new_tokens, no_repeat_ngram_size=3):
                text = self.lm.tokenizer.decode(ids, skip_special_tokens=True).strip()
                question = text[: text.index("?") + 1] if "?" in text else text
                questions.append([question] if question else [])
        return questions


WH_PHRASE = re.compile(r"\b(how many|how much|who|whom|what|when|where|which)\b", re.IGNORECASE)


def statement_parts(question: str) -> tuple[str, str]:
    """Split a question at its wh-phrase: ``("it aired", " in paris")`` for "it aired when in paris?".

    A candidate answer put between the two parts turns the question into a statement
    ("it aired 1983 in paris"); a question without a wh-word gets the answer appended.

    Args:
        question (`str`): a generated question.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.offline import statement_parts
    >>> statement_parts("it aired when in paris?"), statement_parts("is it true?")
    (('it aired', ' in paris'), ('is it true', ''))
    ```
    """
    text = question.strip().rstrip("?").strip()
    match = WH_PHRASE.search(text)
    if match is None:
        return text, ""
    return text[: match.start()].rstrip(), text[match.end() :]


class SpanScoringQA:
    """Extractive QA by ranking candidate spans of the passage (its entities and noun chunks).

    Each candidate fills the question's wh-slot, and the LM scores the resulting
    statement after the passage: ``Passage: … Statement: it aired [1983] in paris``. The
    score is the mean log-probability of the tokens from the candidate on (the text
    before the slot is the same for every candidate and is the shared, cached prefix),
    so long spans are not penalised for their length. Tiny LMs copy well and answer
    questions badly: on the dodeca responses, scoring the candidates as answers after
    "Question: … Passage: … Answer:" gave back the response's own span for 22% of the
    questions, filling the slot for 91% (``benchmarks/q2_offline_stages.py``). Unlike SQuAD-2 models this answerer never
    abstains (a wrong span then scores F1 0); a passage without candidates answers "".
    """

    def __init__(self, lm: _CausalLM, nlp, batch_size=8):
        self.lm, self.nlp = lm, nlp
        self.scorer = TokenScorer(lm.model, batch_size=batch_size)

    def candidates(self, passages: Sequence[str]) -> list[list[str]]:
        spans = []
        for doc in self.nlp.pipe(passages):
            seen, texts = set(), []
            for span in list(doc.ents) + list(doc.noun_chunks):
                if span.text.lower() not in seen:
                    seen.add(span.text.lower())
                    texts.append(span.text)
            spans.append(texts)
        return spans

    def answer(self, questions: Sequence[str], passages: Sequence[str]) -> list[str]:
        passages = [cut_passage(p) for p in passages]
        unique = list(dict.fromkeys(passages))
        options = dict(zip(unique, self.candidates(unique)))
        requests: list[Request] = []
        for question, passage in zip(questions, passages):
            before, after = statement_parts(question)
            context = self.lm.start + self.lm.encode(
                f"Passage: {passage}\nStatement:" + (f" {before}" if before else "")
            )
            requests.extend((context, self.lm.encode(f" {option}{after}\n")) for option in options[passage])
        scores = iter([float(logprobs.mean()) for logprobs in self.scorer(requests)])
        answers = []
        for passage in passages:
            scored = [(next(scores), option) for option in options[passage]]
            answers.append(max(scored)[1] if scored else NO_ANSWER)
        return answers


class CheckerNLI:
    """NLI by faithkit's claim checker (``faithkit-checker``): its likeliest label, supported → entailment,
    generic → neutral, unsupported → contradiction. The checker windows the premise and judges the hypothesis
    sentence by sentence itself.

    It is the offline preset's NLI for the end-to-end fallback only: on the 300 dodeca responses Q²'s AUROC is
    0.669 with it and 0.621 with :class:`LabelWordNLI` (p = 0.17), and 0.572 with it on answer pairs too
    (``compare_answers``; ``benchmarks/q2_offline_stages.py``, docs/q2.md).

    Only labels come back: what the checker's window limit left unread of a long premise is not reported (the
    ``faithkit-checker`` metric's rows say it).
    """

    LABELS = ("entailment", "neutral", "contradiction")
    """The NLI label of each of the checker's classes (supported, generic, unsupported)."""

    def __init__(self, adapter: str | None = None, device=None, batch_size=8, dtype=None, compare_answers=False):
        from ..claim_checkers import ClaimChecker

        self.compare_answers = compare_answers
        self.checker = ClaimChecker(
            "faithkit-checker", nli_model=adapter, device=device, batch_size=batch_size, dtype=dtype
        )

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        if not premises:
            return []
        keys = self.checker.score_keys[2:]  # P(supported), P(generic), P(unsupported)
        rows = self.checker.compute_rows(premises, None, hypotheses)
        return [self.LABELS[max(range(len(keys)), key=lambda i: row[keys[i]])] for row in rows]


NLI_EXAMPLES = (
    ("When was the Eiffel Tower finished? 1889.", "When was the Eiffel Tower finished? in 1889.", "yes"),
    ("When was the Eiffel Tower finished? 1889.", "When was the Eiffel Tower finished? 1925.", "no"),
    ("Who hosted the show? bob ross.", "Who hosted the show? a famous painter.", "maybe"),
)
LABEL_WORDS = {"entailment": " yes", "contradiction": " no", "neutral": " maybe"}


class LabelWordNLI:
    """NLI by comparing the LM's probabilities of the label words " yes" / " no" / " maybe".

    Small LMs prefer one word whatever the input, so the scores are calibrated as in
    Zhao et al. (2021): each label's log-probability on a content-free input ("N/A") is
    subtracted before taking the best label.

    ``compare_answers`` tells Q² whether to use this backend on answer pairs too
    ("question knowledge-answer." vs "question response-answer."), not only for the
    end-to-end fallback. It is off by default because it was measured to hurt: on the
    300 dodeca responses, letting SmolLM2's label words judge answer pairs dropped
    Q²'s AUROC from 0.62 (F1 kept) to 0.51: it said "entailment" to 60% of the
    differing answers in inconsistent responses, more often than in consistent ones (53%).
    """

    def __init__(self, lm: _CausalLM, batch_size=8, compare_answers=False):
        self.lm, self.compare_answers = lm, compare_answers
        self.scorer = TokenScorer(lm.model, batch_size=batch_size)
        self.header = "".join(
            f"Premise: {p}\nHypothesis: {h}\nTrue, false or unknown? Answer yes, no or maybe: {a}\n\n"
            for p, h, a in NLI_EXAMPLES
        )
        self.label_ids = {label: lm.encode(word) for label, word in LABEL_WORDS.items()}
        self._calibration: dict[str, float] | None = None

    def _label_logprobs(self, premises, hypotheses) -> list[dict[str, float]]:
        requests: list[Request] = []
        for premise, hypothesis in zip(premises, hypotheses):
            context = self.lm.start + self.lm.encode(
                f"{self.header}Premise: {cut_passage(premise)}\nHypothesis: {hypothesis}\nTrue, false or unknown? Answer yes, no or maybe:"
            )
            requests.extend((context, ids) for ids in self.label_ids.values())
        logprobs = self.scorer(requests)
        labels = list(self.label_ids)
        return [
            {label: float(logprobs[i + j].sum()) for j, label in enumerate(labels)}
            for i in range(0, len(requests), len(labels))
        ]

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        if not premises:
            return []
        if self._calibration is None:
            self._calibration = self._label_logprobs(["N/A"], ["N/A"])[0]
        calibration, scores = self._calibration, self._label_logprobs(premises, hypotheses)
        return [max(s, key=lambda label: s[label] - calibration[label]) for s in scores]
