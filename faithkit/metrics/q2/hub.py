"""Q²'s hub backends: the paper's models (answer-aware T5 QG, SQuAD-2 extractive QA, an MNLI classifier)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...serving import models
from ...errors import ConfigError
from .stages import NLI_LABELS, NO_ANSWER, Candidate, HubBackend, batches


class T5QuestionGenerator(HubBackend):
    """Answer-aware QG with a seq2seq model, as in the paper: input ``answer: A  context: C``.

    Beam search with ``num_beams`` beams returns ``num_return`` questions per answer, best
    first; the ``question:`` prefix the model was trained to emit is removed. ``loading``: :class:`HubBackend`'s.
    """

    def __init__(self, model_name, *, num_beams=5, num_return=5, max_length=128, **loading):
        super().__init__(model_name, **loading)
        if not self.model.config.is_encoder_decoder:
            raise ConfigError(
                f"Q²'s question generator qg_model={model_name!r} needs a seq2seq model (T5-style), but "
                f"{type(self.model).__name__} is decoder-only; give a causal LM as 'fewshot:{model_name}'"
            )
        self.num_beams, self.num_return, self.max_length = num_beams, num_return, max_length

    @torch.no_grad()
    def generate(self, candidates: Sequence[Candidate]) -> list[list[str]]:
        questions: list[list[str]] = []
        for batch in batches(list(candidates), self.batch_size):
            texts = [f"answer: {c.text}  context: {c.context}" for c in batch]
            encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=512, return_tensors="pt").to(
                models.input_device(self.model)
            )
            output = self.model.generate(
                **encoded,
                max_length=self.max_length,
                num_beams=self.num_beams,
                num_return_sequences=self.num_return,
                no_repeat_ngram_size=3,
                early_stopping=True,
                do_sample=False,
            )
            decoded = self.tokenizer.batch_decode(output, skip_special_tokens=True)
            cleaned = [_strip_prefix(q.strip(), "question:") for q in decoded]
            questions.extend(cleaned[i : i + self.num_return] for i in range(0, len(cleaned), self.num_return))
        return questions


def _strip_prefix(text: str, prefix: str) -> str:
    return text[len(prefix) :].strip() if text.lower().startswith(prefix) else text


class ExtractiveQA(HubBackend):
    """SQuAD-2-style extractive QA (start/end logits) over passages of any length.

    Long passages are read in overlapping windows (``max_length`` tokens, ``stride``
    tokens of overlap). The answer is the best-scoring span with start ≤ end, inside the
    passage, at most ``max_answer_tokens`` long; if the no-answer score (start and end on
    the first token, ``[CLS]``) beats it in every window, the answer is ``""``. ``loading``: :class:`HubBackend`'s.
    """

    kind = "question-answering"

    def __init__(self, model_name, *, max_length=384, stride=128, max_answer_tokens=30, n_best=20, **loading):
        super().__init__(model_name, **loading)
        if not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(
                "ExtractiveQA needs a fast tokenizer (offsets map answers back to text); install `tokenizers`"
            )
        self.max_length, self.stride = max_length, stride
        self.max_answer_tokens, self.n_best = max_answer_tokens, n_best

    @torch.no_grad()
    def answer(self, questions: Sequence[str], passages: Sequence[str]) -> list[str]:
        answers: list[str] = []
        for batch in batches(list(zip(questions, passages)), self.batch_size):
            answers.extend(self._answer_batch([q for q, _ in batch], [p for _, p in batch]))
        return answers

    def _answer_batch(self, questions, passages):
        encoded = self.tokenizer(
            list(questions),
            list(passages),
            truncation="only_second",
            max_length=self.max_length,
            stride=self.stride,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=True,
            return_tensors="pt",
        )
        window_of = encoded.pop("overflow_to_sample_mapping").tolist()
        offsets = encoded.pop("offset_mapping").tolist()
        sequence_ids = [encoded.sequence_ids(i) for i in range(len(window_of))]
        inputs = {
            k: v.to(models.input_device(self.model))
            for k, v in encoded.items()
            if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        output = self.model(**inputs)
        starts, ends = output.start_logits.float().cpu(), output.end_logits.float().cpu()
        best: list[tuple[float, str]] = [(float("-inf"), NO_ANSWER)] * len(questions)
        null = [float("inf")] * len(questions)
        for window, item in enumerate(window_of):
            null[item] = min(null[item], float(starts[window, 0] + ends[window, 0]))
            score, text = self._best_span(
                starts[window], ends[window], offsets[window], sequence_ids[window], passages[item]
            )
            if score > best[item][0]:
                best[item] = (score, text)
        return [text if score > null[i] else NO_ANSWER for i, (score, text) in enumerate(best)]

    def _best_span(self, start_logits, end_logits, offsets, sequence_ids, passage) -> tuple[float, str]:
        in_passage = [i for i, s in enumerate(sequence_ids) if s == 1]
        if not in_passage:
            return float("-inf"), NO_ANSWER
        allowed = torch.full_like(start_logits, float("-inf"))
        allowed[in_passage] = 0
        k = min(self.n_best, len(in_passage))
        top_starts = (start_logits + allowed).topk(k).indices.tolist()
        top_ends = (end_logits + allowed).topk(k).indices.tolist()
        best = (float("-inf"), NO_ANSWER)
        for s in top_starts:
            for e in top_ends:
                if s <= e < s + self.max_answer_tokens:
                    score = float(start_logits[s] + end_logits[e])
                    if score > best[0]:
                        best = (score, passage[offsets[s][0] : offsets[e][1]].strip())
        return best


class SequenceClassificationNLI(HubBackend):
    """A 3-way NLI classifier; labels come from the model's ``config.id2label``.

    ``labels`` overrides that mapping (one of entailment/neutral/contradiction per class
    index) for models whose config names its classes ``LABEL_0``… ``loading``: :class:`HubBackend`'s.
    """

    kind = "sequence-classification"

    def __init__(self, model_name, *, labels: Sequence[str] | None = None, **loading):
        super().__init__(model_name, **loading)
        self.labels = list(labels) if labels is not None else label_names(self.model.config.id2label, model_name)

    @torch.no_grad()
    def predict(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[str]:
        labels: list[str] = []
        max_length = min(getattr(self.tokenizer, "model_max_length", 512), 512)
        for batch in batches(list(zip(premises, hypotheses)), self.batch_size):
            encoded = self.tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                truncation="longest_first",
                max_length=max_length,
                padding=True,
                return_tensors="pt",
            ).to(models.input_device(self.model))
            predicted = self.model(**encoded).logits.argmax(-1).tolist()
            labels.extend(self.labels[i] for i in predicted)
        return labels


def label_names(id2label: dict, model_name) -> list[str]:
    """Map class indices to entailment/neutral/contradiction by the config's label names."""
    names = []
    for index in range(len(id2label)):
        raw = str(id2label[index]).lower()
        match = next((label for label in NLI_LABELS if raw.startswith(label[:7])), None)
        if match is None:
            raise ValueError(
                f"NLI model {model_name!r}: cannot tell which class is which from config.id2label={dict(id2label)}. "
                f"Pass SequenceClassificationNLI(..., labels=[...]) naming each class index as one of {NLI_LABELS}."
            )
        names.append(match)
    if sorted(set(names)) != sorted(NLI_LABELS):
        raise ValueError(
            f"NLI model {model_name!r} must have the classes {NLI_LABELS}; its config.id2label is {dict(id2label)}"
        )
    return names
