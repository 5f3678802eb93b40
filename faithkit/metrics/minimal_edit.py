"""Minimal-edit contrast: does the document make an edited response likelier than the one given?

PMI-FAITH rewards a response for reusing the document's words, so a response that copies the
document and swaps one name or number scores almost as well as a faithful one. Here the
response's *checkable spans* are edited one at a time and every version is scored under the
document + history view and the history-only view:

* spans (spaCy): named entities, dates, numbers (entities of a number label, and bare numbers
  outside any entity), and negations;
* candidates: for an entity, date or number, the document's spans of the same kind (distinct
  text, the span's own label first, then the kind's other labels, each in document order), without
  those that only add or drop words (``2011`` / ``early 2011``, ``25 %`` / ``25%``: a refinement
  or a restyling, no contradiction), in lower case where the span is (dialogue responses often are);
  for a negation, the flip (``not``/``n't``/``never``/the determiner ``no`` removed; or, in a
  sentence without one, ``not`` after its auxiliary, or ``did/does/do not`` + the verb's lemma),
  except in sentences about the speakers (subject I/you/we), which the document cannot settle;
* at most ``max_edits`` edits per response, one per span in turn (spans whose text the document
  does not contain first, then the rest, each group in response order), so every span gets a
  candidate before any gets a second.

An edit's margin is ``log P(edit | d, h) - log P(response | d, h)`` (total log-probabilities of
the response's tokens) and its PMI margin the same difference of ``log P(· | d, h) - log P(· | h)``,
which discounts an edit the model finds likelier whatever the document. A span is contradicted when
its best edit's margin exceeds ``threshold``. All versions of all rows go through one
:class:`faithkit.serving.scoring.TokenScorer` call: edits share the response's tokens up to the span, and
the prefix tree runs that shared part once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from collections.abc import Sequence

from ..serving import models
from ..prompts import DEFAULT_TEMPLATE, PromptTemplate, as_history
from ..serving.scoring import Request, TokenScorer
from .base import Metric, check_columns, check_not_empty, check_parsable
from .metric_options import JUDGE_LM, check_option_values

MAX_EDITS = 8
"""Edits scored per response at most (each costs two response-length passes past the span)."""

THRESHOLD = 1.0
"""Nats by which an edit must beat the response under log P(· | d, h) for its span to count as contradicted."""

NUMBER_LABELS = ("CARDINAL", "QUANTITY", "MONEY", "PERCENT", "ORDINAL")
DATE_LABELS = ("DATE", "TIME")
BARE_NUMBER = "NUM"
"""The label of a number spaCy's recogniser left outside every entity."""
NEGATION = "NEG"

FEATURE_KEYS = ("contrast_edits", "contrast_logp_margin", "contrast_pmi_margin", "contradicted_spans")
"""What :func:`contrast_features` returns per row (besides ``minimal_edit`` and ``truncated_tokens``):

* ``contrast_edits``: how many edited responses were scored (0: no checkable span had a candidate);
* ``contrast_logp_margin``: max over edits of log P(edit | d, h) - log P(response | d, h), None without edits;
* ``contrast_pmi_margin``: max over edits of PMI(edit) - PMI(response), PMI = log P(· | d, h) - log P(· | h);
* ``contradicted_spans``: ``{text, label, start, end, replacement, margin}`` per span whose best edit's margin
  exceeds the threshold (character offsets in the response; ``margin`` in log P(· | d, h)), in response order.
"""


def kind(label: str) -> str:
    """The group of labels whose spans may replace each other: numbers, dates, negations, or names (the rest).

    Args:
        label (`str`): a spaCy entity label, ``NUM`` or ``NEG``.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import kind
    >>> kind("CARDINAL"), kind("DATE"), kind("NEG"), kind("GPE")
    ('number', 'date', 'negation', 'name')
    ```
    """
    if label in NUMBER_LABELS or label == BARE_NUMBER:
        return "number"
    if label in DATE_LABELS:
        return "date"
    return "negation" if label == NEGATION else "name"


@dataclass(frozen=True)
class Span:
    """A checkable piece of a text: its characters ``start:end`` and spaCy label.

    Args:
        text (`str`): the span's text.
        label (`str`): its spaCy label, ``NUM`` (a bare number) or ``NEG`` (a negation).
        start (`int`): its first character.
        end (`int`): the character after its last.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import Span
    >>> Span("150 metres", "QUANTITY", 6, 16)
    Span(text='150 metres', label='QUANTITY', start=6, end=16)
    ```
    """

    text: str
    label: str
    start: int
    end: int


@dataclass(frozen=True)
class Edit:
    """``span`` of the response replaced by ``replacement``.

    Args:
        span (`Span`): the response's span.
        replacement (`str`): its replacement (a negation's removal: ``""``).

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import Edit, Span
    >>> Edit(Span("150 metres", "QUANTITY", 6, 16), "330 metres").apply("It is 150 metres tall.")
    'It is 330 metres tall.'
    ```
    """

    span: Span
    replacement: str

    def apply(self, response: str) -> str:
        return response[: self.span.start] + self.replacement + response[self.span.end :]


def checkable_spans(doc) -> list[Span]:
    """A parsed text's named entities, dates and numbers, in text order; numbers outside entities as ``NUM``.

    Args:
        doc (`spacy.tokens.Doc`): the parsed text.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import checkable_spans, spacy_pipeline
    >>> checkable_spans(spacy_pipeline()("It is 150 metres tall and opened in 1889."))
    [Span(text='150 metres', label='QUANTITY', start=6, end=16), Span(text='1889', label='DATE', start=36, end=40)]
    ```
    """
    spans = [Span(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents]
    inside = {token.i for e in doc.ents for token in e}
    spans += [Span(t.text, BARE_NUMBER, t.idx, t.idx + len(t)) for t in doc if t.like_num and t.i not in inside]
    return sorted(spans, key=lambda s: s.start)


def candidate_replacements(span: Span, document_spans: Sequence[Span]) -> list[str]:
    """Distinct texts of the document's spans of ``span``'s kind that are no mere refinement of it: same label
    first; lowercased where ``span`` is lowercase.

    Args:
        span (`Span`): the response's span.
        document_spans (`Sequence[Span]`): the document's :func:`checkable_spans`.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import Span, candidate_replacements, checkable_spans, spacy_pipeline
    >>> document = spacy_pipeline()("The Eiffel Tower is 330 metres tall. It opened in 1889 in Paris.")
    >>> candidate_replacements(Span("150 metres", "QUANTITY", 6, 16), checkable_spans(document))  # not 1889: a date
    ['330 metres']
    ```
    """
    same_kind = [s for s in document_spans if kind(s.label) == kind(span.label)]
    ordered = [s for s in same_kind if s.label == span.label] + [s for s in same_kind if s.label != span.label]
    seen, texts = set(), []
    for s in ordered:
        text = s.text.lower() if span.text.islower() else s.text
        if text.lower() not in seen and not _refines(span.text, s.text):
            seen.add(text.lower())
            texts.append(text)
    return texts


def _refines(a: str, b: str) -> bool:
    """Whether one text's words are all among the other's (equal texts included)."""
    words_a, words_b = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return words_a <= words_b or words_b <= words_a


_NEGATIONS = {"not", "n't", "never"}
_CONTRACTED = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}  # the head spaCy splits off before "n't"
_DO_SUPPORT = {"VBD": "did", "VBZ": "does", "VBP": "do"}
_SPEAKERS = {"i", "you", "we"}


def _is_negation(token) -> bool:
    return token.lower_ in _NEGATIONS or (token.lower_ == "no" and token.dep_ == "det")


def negation_edits(doc) -> list[Edit]:
    """Each negation removed; in a sentence without one, ``not`` put in after its root's auxiliary. Sentences whose
    subject is a speaker ("I haven't seen it") are left alone.

    Args:
        doc (`spacy.tokens.Doc`): the parsed response.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import negation_edits, spacy_pipeline
    >>> response = "Penguins do not fly. They swim well."
    >>> [edit.apply(response) for edit in negation_edits(spacy_pipeline()(response))]
    ['Penguins do fly. They swim well.', 'Penguins do not fly. They do not swim well.']
    ```
    """
    edits: list[Edit | None] = []
    for sentence in doc.sents:
        if any(c.dep_ in ("nsubj", "nsubjpass") and c.lower_ in _SPEAKERS for c in sentence.root.children):
            continue
        negations = [token for token in sentence if _is_negation(token)]
        edits += [_removed(token) for token in negations] if negations else [_negated(sentence.root)]
    return [edit for edit in edits if edit is not None]


def _removed(token) -> Edit:
    """``isn't`` -> ``is``, ``can't`` -> ``can``; ``is not`` -> ``is`` (with the space before the word)."""
    doc = token.doc
    if token.lower_ == "n't" and token.i > 0:
        head = doc[token.i - 1]
        replacement = _CONTRACTED.get(head.lower_, head.text)
        if head.text[:1].isupper():
            replacement = replacement.capitalize()
        start = head.idx
    else:
        start = doc[token.i - 1].idx + len(doc[token.i - 1]) if token.i > 0 else token.idx
        replacement = ""
    end = token.idx + len(token)
    if token.i == 0:  # nothing before it: take the space after it instead
        end += len(token.whitespace_)
    return Edit(Span(doc.text[start:end], NEGATION, start, end), replacement)


def _negated(root) -> Edit | None:
    """``not`` after the root's first auxiliary (or after a copula root), else do-support for a finite verb."""
    auxiliaries = [child for child in root.children if child.dep_ in ("aux", "auxpass") and child.i < root.i]
    if auxiliaries:
        target = auxiliaries[0]
        replacement = target.text + ("not" if target.lower_ == "can" else " not")  # "cannot", as it is written
    elif root.lemma_ == "be" and root.tag_ in ("VBZ", "VBD", "VBP"):
        target, replacement = root, root.text + " not"
    elif root.tag_ in _DO_SUPPORT:
        target, replacement = root, f"{_DO_SUPPORT[root.tag_]} not {root.lemma_}"
    else:
        return None
    return Edit(Span(target.text, NEGATION, target.idx, target.idx + len(target)), replacement)


def candidate_edits(response_doc, document_doc, max_edits: int = MAX_EDITS) -> list[Edit]:
    """At most ``max_edits`` edits of the response, one per span in turn (spans the document lacks first).

    Args:
        response_doc (`spacy.tokens.Doc`): the parsed response.
        document_doc (`spacy.tokens.Doc`): the parsed document.
        max_edits (`int`, defaults to 8): edits at most.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import candidate_edits, spacy_pipeline
    >>> nlp = spacy_pipeline()
    >>> document = nlp("The Eiffel Tower is 330 metres tall. It opened in 1889 in Paris.")
    >>> [edit.apply("It is 150 metres tall.") for edit in candidate_edits(nlp("It is 150 metres tall."), document)]
    ['It is not 150 metres tall.', 'It is 330 metres tall.']
    ```
    """
    document_spans = checkable_spans(document_doc)
    document_text = document_doc.text.lower()
    per_span: list[list[Edit]] = []
    for span in checkable_spans(response_doc):
        per_span.append([Edit(span, text) for text in candidate_replacements(span, document_spans)])
    per_span += [[edit] for edit in negation_edits(response_doc)]
    per_span = [edits for edits in per_span if edits]
    per_span.sort(
        key=lambda edits: (
            edits[0].span.label != NEGATION and edits[0].span.text.lower() in document_text,
            edits[0].span.start,
        )
    )
    chosen: list[Edit] = []
    for depth in range(max((len(edits) for edits in per_span), default=0)):
        chosen += [edits[depth] for edits in per_span if depth < len(edits)]
    return chosen[:max_edits]


@dataclass(frozen=True)
class EditPolicy:
    """Which edits a response gets and when one contradicts it.

    Args:
        max_edits (`int`, defaults to 8): edits scored per response at most, at least 1.
        threshold (`float`, defaults to 1.0): nats by which an edit must beat the response for its span to count as
            contradicted.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import EditPolicy
    >>> EditPolicy(max_edits=0)
    Traceback (most recent call last):
      ...
    ValueError: max_edits must be at least 1, got 0
    ```
    """

    max_edits: int = MAX_EDITS
    threshold: float = THRESHOLD

    def __post_init__(self):
        if self.max_edits < 1:
            raise ValueError(f"max_edits must be at least 1, got {self.max_edits}")


@functools.lru_cache(maxsize=2)
def spacy_pipeline(name: str | None = None):
    """The spaCy pipeline of :func:`faithkit.metrics.q2.metric.load_spacy`, loaded once per process.

    Args:
        name (`str`, *optional*): a spaCy pipeline's name (default: the small English one).

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import spacy_pipeline
    >>> spacy_pipeline() is spacy_pipeline()
    True
    ```
    """
    from .q2.metric import load_spacy

    return load_spacy(name)


@dataclass(frozen=True)
class ScoringLM:
    """A causal LM ready to score responses, as a caller already holding one has it: its
    :class:`~faithkit.serving.scoring.TokenScorer`, its tokenizer and the prompt layout."""

    scorer: TokenScorer
    tokenizer: object
    template: PromptTemplate = DEFAULT_TEMPLATE


def contrast_features(
    lm: ScoringLM,
    documents: Sequence[str],
    histories: Sequence,
    responses: Sequence[str],
    policy: EditPolicy = EditPolicy(),
    nlp=None,
) -> list[dict]:
    """One dict per row: the keys of :data:`FEATURE_KEYS`, ``minimal_edit`` and ``truncated_tokens``.

    Every row's response and each of its edits is scored with and without the document, all in one
    batch of ``lm``'s scorer; ``nlp`` is a loaded spaCy pipeline (default:
    :func:`faithkit.metrics.q2.metric.load_spacy`) that finds the spans to edit.
    """
    documents, histories, responses, _ = check_columns(documents, histories, responses)
    check_not_empty(documents, responses)
    nlp = nlp or spacy_pipeline()
    check_parsable(nlp, documents, "document")
    check_parsable(nlp, responses, "response")
    texts = sorted(set(documents) | set(responses))
    parsed = dict(zip(texts, nlp.pipe(texts)))
    scorer, tokenizer, template = lm.scorer, lm.tokenizer, lm.template
    max_length = models.context_window(scorer.model, tokenizer)
    plans: list[tuple[list[Edit], int, int]] = []
    requests: list[Request] = []
    for i, (document, history, response) in enumerate(zip(documents, histories, responses)):
        edits = candidate_edits(parsed[response], parsed[document], policy.max_edits)
        targets = [template.response_ids(tokenizer, text) for text in [response, *(e.apply(response) for e in edits)]]
        longest = max(len(t) for t in targets)
        if longest >= max_length:
            raise ValueError(
                f"example {i}: field 'response' has {longest} tokens (with its longest edit), "
                f"more than the model's context ({max_length})"
            )
        views = [
            template.context(
                tokenizer, document if with_document else None, as_history(history), max_tokens=max_length - longest
            )
            for with_document in (True, False)
        ]
        plans.append((edits, len(requests), max(v.truncated_tokens for v in views)))
        requests += [(view.ids, target) for target in targets for view in views]
    logprobs = [float(values.double().sum()) for values in scorer(requests)]
    return [
        _row_features(edits, logprobs[first : first + 2 * (len(edits) + 1)], truncated, policy.threshold)
        for edits, first, truncated in plans
    ]


def _row_features(edits: list[Edit], logprobs: list[float], truncated: int, threshold: float) -> dict:
    """Margins from ``logprobs``: (log P(·|d,h), log P(·|h)) of the response, then of each edit in turn."""
    conditioned, history_only = logprobs[0::2], logprobs[1::2]
    margins = [c - conditioned[0] for c in conditioned[1:]]
    pmi_margins = [(c - h) - (conditioned[0] - history_only[0]) for c, h in zip(conditioned[1:], history_only[1:])]
    best: dict[Span, tuple[float, Edit]] = {}
    for edit, margin in zip(edits, margins):
        if margin > threshold and margin > best.get(edit.span, (float("-inf"),))[0]:
            best[edit.span] = (margin, edit)
    contradicted = [
        {
            "text": span.text,
            "label": span.label,
            "start": span.start,
            "end": span.end,
            "replacement": edit.replacement,
            "margin": margin,
        }
        for span, (margin, edit) in sorted(best.items(), key=lambda item: item[0].start)
    ]
    logp_margin = max(margins) if margins else None
    return {
        "minimal_edit": 0.0 - max(logp_margin, 0.0) if logp_margin is not None else 0.0,
        "contrast_edits": len(edits),
        "contrast_logp_margin": logp_margin,
        "contrast_pmi_margin": max(pmi_margins) if margins else None,
        "contradicted_spans": contradicted,
        "truncated_tokens": truncated,
        **({"truncated_from": "start"} if truncated else {}),
    }


class MinimalEdit(Metric):
    """The minimal-edit contrast as a metric: ``minimal_edit`` (higher is more faithful) and the contrast features.

    ``minimal_edit`` is minus the best edit's margin in log P(· | d, h), clipped at 0 (a response without
    a checkable span, or whose every edit the document makes less likely, scores 0).

    Each parameter is a metric option the command line and ``evaluate.load`` pass by name
    (:data:`faithkit.metrics.registry.METRICS`).

    Args:
        model (`str` or `PreTrainedModel`, defaults to "bigscience/bloom-560m"): the judge LM: an offline name, hub
            id or folder, or a loaded causal LM (then pass ``tokenizer``).
        tokenizer (`PreTrainedTokenizerBase`, *optional*): the loaded model's tokenizer.
        batch_size (`int`, defaults to 8): sequences per forward pass.
        device (`str`, *optional*): where a model loaded here runs.
        template (`PromptTemplate`, defaults to `DEFAULT_TEMPLATE`): the views' layout, as PMI-FAITH's.
        max_edits (`int`, defaults to 8): edits scored per response at most.
        threshold (`float`, defaults to 1.0): nats by which an edit must beat the response for its span to count
            as contradicted.
        scorer (`TokenScorer`, *optional*): a caller's :class:`~faithkit.serving.scoring.TokenScorer` of ``model``,
            reused.
        dtype (`str`, *optional*): the precision of a model loaded here.

    Examples:

    ```python
    >>> from faithkit.metrics.minimal_edit import MinimalEdit
    >>> metric = MinimalEdit(model="smollm2-135m")
    >>> row = metric.compute_rows(["The Eiffel Tower is 330 metres tall."],
    ...                           [["User: How tall is the Eiffel Tower?"]], ["It is 150 metres tall."])[0]
    >>> [(span["text"], span["replacement"]) for span in row["contradicted_spans"]]
    [('150 metres', '330 metres')]
    ```
    """

    score_keys = ("minimal_edit", "contrast_logp_margin", "contrast_pmi_margin")

    def __init__(
        self,
        model=JUDGE_LM,
        tokenizer=None,
        batch_size: int = 8,
        device=None,
        template: PromptTemplate = DEFAULT_TEMPLATE,
        max_edits: int = MAX_EDITS,
        threshold: float = THRESHOLD,
        scorer: TokenScorer | None = None,
        dtype=None,
    ):
        check_option_values(batch_size=batch_size, max_edits=max_edits, threshold=threshold)
        model, tokenizer = models.causal_lm(model, tokenizer, "the minimal-edit contrast", "MinimalEdit", device, dtype)
        self.lm = ScoringLM(scorer or TokenScorer(model, batch_size=batch_size), tokenizer, template)
        self.policy = EditPolicy(max_edits, threshold)

    def compute_rows(self, documents, histories, responses, references=None) -> list[dict]:
        """One dict per example (see :data:`FEATURE_KEYS`); references are ignored."""
        return contrast_features(self.lm, documents, histories, responses, self.policy)


__all__ = [
    "MinimalEdit",
    "contrast_features",
    "ScoringLM",
    "candidate_edits",
    "checkable_spans",
    "negation_edits",
    "EditPolicy",
    "Edit",
    "Span",
    "FEATURE_KEYS",
    "spacy_pipeline",
]
