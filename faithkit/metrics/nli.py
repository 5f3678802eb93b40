"""End-to-end NLI, the Q² paper's baseline: does the knowledge entail the response?

Premise = knowledge, hypothesis = response; entailment scores 1, neutral 0.5,
contradiction 0 (the same rule as Q²'s fallback, with the same NLI backends: the hub
default ``FacebookAI/roberta-large-mnli``, or ``preset="offline"`` for LM label words).
"""

from __future__ import annotations

from collections.abc import Sequence

from .q2 import FALLBACK_SCORES, HUB_DEFAULTS, OFFLINE_DEFAULTS, _check_texts
from .q2_backends import build_backend


class E2ENLI:
    """Score responses by end-to-end NLI against their knowledge, in the ``evaluate`` calling style."""

    def __init__(self, nli_model=None, preset=None, device=None, batch_size=8):
        if preset not in (None, "offline"):
            raise ValueError(f"preset must be None (the hub NLI model) or 'offline', got {preset!r}")
        spec = nli_model or (OFFLINE_DEFAULTS if preset == "offline" else HUB_DEFAULTS)["nli"]
        self.nli = build_backend("nli", spec, device=device, batch_size=batch_size)

    def compute(self, knowledge: Sequence[str], responses: Sequence[str]) -> dict:
        """``e2e_nli`` (1 / 0.5 / 0) and ``label`` per response."""
        knowledge, responses = _check_texts(knowledge, "knowledge"), _check_texts(responses, "responses")
        if len(knowledge) != len(responses):
            raise ValueError(f"knowledge has {len(knowledge)} items but responses has {len(responses)}; pass one knowledge text per response")
        labels = self.nli.predict(knowledge, responses) if responses else []
        return {"e2e_nli": [FALLBACK_SCORES[label] for label in labels], "label": labels}

    def compute_rows(self, documents: Sequence[str], histories, responses: Sequence[str]) -> list[dict]:
        """One dict per row (``e2e_nli``, ``label``); histories are ignored."""
        result = self.compute(knowledge=documents, responses=responses)
        return [{"e2e_nli": score, "label": label} for score, label in zip(result["e2e_nli"], result["label"])]


__all__ = ["E2ENLI"]
