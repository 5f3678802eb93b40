"""What a Q² backend is: one protocol per stage (what Q² calls), and the one way a hub backend gets its model.

Every backend takes whole lists and batches them itself, so Q² makes one batched call per stage (and per
``batch_size`` rows), never one call per span. :class:`HubBackend` is the loader the hub backends share: a model
by name (:func:`faithkit.serving.models.load`), or one handed over loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...serving import models

NLI_LABELS = ("entailment", "neutral", "contradiction")
NO_ANSWER = ""


@dataclass
class Candidate:
    """An informative span of a response, the answer a question is generated for."""

    text: str
    context: str  # the response the span comes from
    span: object = None  # the spaCy Span (rule-based QG reads its parse); None when unknown


@runtime_checkable
class QuestionGenerator(Protocol):
    """Stage ``qg``: questions for each candidate answer, best first (none: the span is not asked about)."""

    def generate(self, candidates: Sequence[Candidate]) -> list[list[str]]: ...


@runtime_checkable
class QuestionAnswerer(Protocol):
    """Stage ``qa``: each question's answer in its passage, :data:`NO_ANSWER` when there is none."""

    def answer(self, questions: Sequence[str], passages: Sequence[str]) -> list[str]: ...


@runtime_checkable
class NLIClassifier(Protocol):
    """Stage ``nli``: one of :data:`NLI_LABELS` for each premise and hypothesis."""

    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]: ...


STAGES: dict[str, type] = {"qg": QuestionGenerator, "qa": QuestionAnswerer, "nli": NLIClassifier}


class HubBackend:
    """A backend on one transformers model: loaded by ``model_name`` on ``device`` in ``dtype``, or handed over
    loaded (``model=`` and ``tokenizer=``, e.g. a test's tiny model); ``batch_size`` rows a model call."""

    kind: str | None = None  # what models.load loads; None: a causal or seq2seq LM

    def __init__(self, model_name, *, device=None, batch_size=8, dtype=None, model=None, tokenizer=None):
        if model is None:
            model, tokenizer = models.load(model_name, kind=self.kind, device=device, dtype=dtype)
        self.model_name, self.model, self.tokenizer, self.batch_size = model_name, model, tokenizer, batch_size


def batches(items: Sequence, size: int):
    """``items`` in consecutive slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
