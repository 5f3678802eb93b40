"""The lexical baselines of the Q² and PMI-FAITH papers: word overlap and BLEU with the knowledge.

A faithfulness metric is only worth its cost if it beats these, so every meta-evaluation
reports them beside the metric. They follow the Q² authors' ``baselines.py``:

- ``token_f1_overlap``: spaCy tokens, lowercased, without stop words and punctuation;
  F1 of the response's tokens against the knowledge's (bag-of-words, counts clipped).
- ``bleu_vs_knowledge``: sacrebleu BLEU of the response with the knowledge as the single
  reference, on the usual 0–100 scale.

Where we differ: tokens come from spaCy's English tokenizer and lexical attributes
(``spacy.blank("en")``), which give the same tokens, stop words and punctuation flags as
``en_core_web_sm`` without loading its tagger and parser, which the baseline never uses.
The authors' BLEU lowercases only the knowledge (a capitalised response word then never
matches); we lowercase both sides, and use sentence BLEU (effective n-gram order, as
sacrebleu does for single sentences) instead of a one-sentence corpus BLEU.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

KINDS = {"overlap-f1": "overlap_f1", "bleu": "bleu"}  # CLI name: output key


@lru_cache(maxsize=1)
def _tokenizer():
    import spacy

    return spacy.blank("en")


def content_tokens(text: str) -> list[str]:
    """Lowercased spaCy tokens of ``text`` without stop words, punctuation or whitespace."""
    return [token.text.lower() for token in _tokenizer()(text)
            if not token.is_stop and not token.is_punct and not token.is_space]


def token_f1_overlap(knowledge: str, response: str) -> float:
    """F1 of the response's content tokens against the knowledge's: 1.0 when they are the same bag of words."""
    response_tokens = content_tokens(response)
    knowledge_tokens = content_tokens(knowledge)
    same = sum((Counter(response_tokens) & Counter(knowledge_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(response_tokens)
    recall = same / len(knowledge_tokens)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU(lowercase=True, effective_order=True)


def bleu_vs_knowledge(knowledge: str, response: str) -> float:
    """Sentence BLEU (0–100) of the response with the knowledge as its reference."""
    return float(_bleu().sentence_score(response, [knowledge]).score)


class TextOverlap:
    """A baseline as a metric object, so the CLI and the meta-evaluations can treat it like the others.

    ``kind`` is ``"overlap-f1"`` (output key ``overlap_f1``) or ``"bleu"`` (key ``bleu``).
    Histories are accepted and ignored: both baselines compare the response with the
    knowledge only.
    """

    def __init__(self, kind: str = "overlap-f1"):
        if kind not in KINDS:
            raise ValueError(f"unknown baseline kind {kind!r}; choose one of {', '.join(KINDS)}")
        self.kind = kind
        self.score_key = KINDS[kind]
        self._function = token_f1_overlap if kind == "overlap-f1" else bleu_vs_knowledge

    def compute_rows(self, documents: Sequence[str], histories: Sequence, responses: Sequence[str]) -> list[dict]:
        """One ``{score_key: value}`` per example."""
        documents, histories, responses = list(documents), list(histories), list(responses)
        if not len(documents) == len(histories) == len(responses):
            raise ValueError(f"documents, histories and responses must have the same length, "
                             f"got {len(documents)}, {len(histories)}, {len(responses)}")
        return [{self.score_key: self._function(document, response)}
                for document, response in zip(documents, responses)]

    def compute(self, documents: Sequence[str], histories: Sequence, responses: Sequence[str]) -> dict:
        """``evaluate``-style: per-example scores under ``score_key`` and their mean under ``mean_<score_key>``."""
        values = [row[self.score_key] for row in self.compute_rows(documents, histories, responses)]
        return {self.score_key: values, f"mean_{self.score_key}": sum(values) / len(values) if values else float("nan")}
