"""End-to-end NLI, the Q² paper's baseline: does the knowledge entail the response?

Premise = knowledge, hypothesis = response; entailment scores 1, neutral 0.5,
contradiction 0 (the same rule as Q²'s fallback, with the same NLI backends: the hub
default ``FacebookAI/roberta-large-mnli``, or ``preset="offline"`` for faithkit's claim checker).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Metric, check_columns
from .metric_options import check_option_values
from .q2.metric import FALLBACK_SCORES, HUB_DEFAULTS, OFFLINE_DEFAULTS, _documents, cut_knowledge
from .q2.backends import build_backend


class E2ENLI(Metric):
    """Score responses by end-to-end NLI against their knowledge, in the ``evaluate`` calling style: the Q² paper's
    baseline, which any finer metric must beat.

    Args:
        nli_model (`str` or backend, *optional*): the NLI model: a hub id or folder (default:
            ``FacebookAI/roberta-large-mnli``), an offline spec (``"checker"``, ``"labels:LM"``) or a backend.
        preset (`str`, *optional*): ``"offline"`` makes the default faithkit's claim checker.
        device (`str`, *optional*): where the model runs.
        batch_size (`int`, defaults to 8): pairs per forward pass.
        dtype (`str`, *optional*): the model's precision.

    Examples:

    ```python
    >>> from faithkit.metrics.e2e_nli import E2ENLI
    >>> metric = E2ENLI(preset="offline")  # faithkit's claim checker as the NLI model: no network
    >>> document = "Emperor penguins live only in Antarctica. They breed during the Antarctic winter."
    >>> result = metric.compute(documents=[document] * 2,
    ...                         responses=["They live only in Antarctica.", "They live in the Arctic, close to polar bears."])
    >>> result["label"], result["e2e_nli"]
    (['entailment', 'contradiction'], [1.0, 0.0])
    ```
    """

    score_keys = ("e2e_nli",)

    def __init__(self, nli_model=None, preset=None, device=None, batch_size=8, dtype=None):
        if preset not in (None, "offline"):
            raise ValueError(f"preset must be None (the hub NLI model) or 'offline', got {preset!r}")
        check_option_values(batch_size=batch_size)
        spec = nli_model or (OFFLINE_DEFAULTS if preset == "offline" else HUB_DEFAULTS)["nli"]
        self.nli = build_backend("nli", spec, device=device, batch_size=batch_size, dtype=dtype)

    def compute(
        self,
        documents: Sequence[str] | None = None,
        histories=None,
        responses: Sequence[str] = (),
        references=None,
        knowledge: Sequence[str] | None = None,
    ) -> dict:
        """``e2e_nli`` (1 / 0.5 / 0) and ``label`` per response, and ``mean_e2e_nli``; ``knowledge`` names ``documents`` too."""
        return super().compute(_documents(documents, knowledge), histories, responses)

    def compute_rows(
        self, documents: Sequence[str], histories, responses: Sequence[str], references=None
    ) -> list[dict]:
        """One dict per row (``e2e_nli``, ``label``, and ``truncated_chars`` when the document was longer than the
        NLI model reads: its start is kept, cut by characters before tokenising); histories are ignored."""
        documents, _, responses, _ = check_columns(documents, histories, responses)
        cuts = cut_knowledge(self.nli, documents)
        labels = self.nli.predict([text for text, _ in cuts], responses) if responses else []
        return [
            {
                "e2e_nli": FALLBACK_SCORES[label],
                "label": label,
                **({"truncated_chars": left_out, "truncated_from": "end"} if left_out else {}),
            }
            for label, (_, left_out) in zip(labels, cuts)
        ]


__all__ = ["E2ENLI"]
