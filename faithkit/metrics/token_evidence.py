"""Token-level evidence from PMI-FAITH's two views, and aggregates that look for the worst span.

At each response position t the scorer has two next-token distributions: P_d (document and
history shown) and P_h (history only). Besides the token's PMI, ``log P_d(y_t) - log P_h(y_t)``,
:func:`per_token` keeps, with no extra forward pass:

* ``token_js``: the Jensen-Shannon divergence (nats) of P_d and P_h **coarsened** to the
  :data:`TOP_K` likeliest tokens under P_d plus one "rest" bucket holding the remaining mass
  of each. It is an exact, defined quantity computable from what the scorer keeps (the top
  tokens' log-probabilities under both views), and a lower bound of the full divergence
  (coarsening never increases a divergence). How much the document moves the distribution.
* ``token_prefers_other``: 1 when P_d's likeliest token is not y_t.
* ``token_top_margin``: ``log P_d(top_t) - log P_d(y_t)`` (0 where y_t is the top token): by how
  much the document-conditioned model prefers that other token.
* ``token_top_raise``: ``log P_d(top_t) - log P_h(top_t)``: how strongly the document raised it.

A response that swaps an entity reuses the document's words, so its mean PMI stays high; the
few tokens where the document wanted something else are where :func:`aggregates` looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

TOP_K = 10
"""Tokens of the document view kept per position (its top tokens, for the divergence and the preferred token)."""
NEGATIVE_PMI = -1.0
"""A token whose PMI is below this (nats: the document made it e times less likely) counts as contradicted."""


def js_divergence(doc_top_logprobs: torch.Tensor, history_top_logprobs: torch.Tensor) -> torch.Tensor:
    """Per row, JS divergence (nats) of two distributions over the same top tokens plus a rest bucket.

    Args:
        doc_top_logprobs (`torch.Tensor`): ``[T, k]`` log-probabilities of k token ids under P_d.
        history_top_logprobs (`torch.Tensor`): the same ids' log-probabilities under P_h.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.metrics.token_evidence import js_divergence
    >>> doc = torch.tensor([[0.7, 0.2], [0.5, 0.1]]).log()  # two positions, their two top tokens
    >>> history = torch.tensor([[0.7, 0.2], [0.1, 0.6]]).log()
    >>> [round(value, 4) for value in js_divergence(doc, history).tolist()]  # the document moved the second
    [0.0, 0.1754]
    ```
    """

    def buckets(logprobs: torch.Tensor) -> torch.Tensor:
        top = logprobs.double().exp()
        return torch.cat([top, (1 - top.sum(-1, keepdim=True)).clamp(min=0)], dim=-1)

    p, q = buckets(doc_top_logprobs), buckets(history_top_logprobs)
    m = (p + q) / 2

    def kl(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a > 0, a * (a.clamp(min=1e-300).log() - m.clamp(min=1e-300).log()), 0).sum(-1)

    return (kl(p) + kl(q)) / 2


PER_TOKEN_KEYS = ("token_js", "token_prefers_other", "token_top_margin", "token_top_raise")
"""The fields :func:`per_token` gives."""


def per_token(target_ids: Sequence[int], doc, history) -> dict[str, list]:
    """The per-token fields above from the document view's and the history view's :class:`TokenEvidence`.

    ``doc`` must carry ``top_ids`` / ``top_logprobs`` and ``history`` the log-probabilities at those
    ids (``extra_logprobs``), as :class:`faithkit.metrics.PMIFaith` asks the scorer for them.

    Args:
        target_ids (`Sequence[int]`): the response's tokens.
        doc (`TokenEvidence`): the document view's evidence.
        history (`TokenEvidence`): the history view's, at the document view's top ids.

    Examples:

    ```python
    >>> import torch
    >>> from types import SimpleNamespace
    >>> from faithkit.metrics.token_evidence import per_token
    >>> doc = SimpleNamespace(top_ids=torch.tensor([[5, 9], [7, 3]]), logprobs=torch.tensor([0.7, 0.1]).log(),
    ...                       top_logprobs=torch.tensor([[0.7, 0.2], [0.5, 0.1]]).log())
    >>> history = SimpleNamespace(extra_logprobs=torch.tensor([[0.7, 0.2], [0.1, 0.6]]).log())
    >>> evidence = per_token([5, 3], doc, history)  # the document wanted token 7 where the response has 3
    >>> {key: [round(value, 4) for value in values] for key, values in evidence.items()}
    {'token_js': [0.0, 0.1754], 'token_prefers_other': [0, 1], 'token_top_margin': [0.0, 1.6094], 'token_top_raise': [0.0, 1.6094]}
    ```
    """
    targets = torch.as_tensor(list(target_ids))
    top_logprob = doc.top_logprobs[:, 0].double()
    return {
        "token_js": js_divergence(doc.top_logprobs, history.extra_logprobs).tolist(),
        "token_prefers_other": (doc.top_ids[:, 0] != targets).int().tolist(),
        "token_top_margin": (top_logprob - doc.logprobs.double()).clamp(min=0).tolist(),
        "token_top_raise": (top_logprob - history.extra_logprobs[:, 0].double()).tolist(),
    }


def aggregates(
    token_pmi: Sequence[float],
    token_js: Sequence[float],
    token_prefers_other: Sequence[int],
    token_top_margin: Sequence[float],
    token_top_raise: Sequence[float],
) -> dict[str, float]:
    """Response-level aggregates of the per-token evidence, each looking for the worst span rather than the mean.

    * ``pmi_min``: the lowest token PMI; ``pmi_softmin``: ``-log mean exp(-pmi_t)``, a minimum that
      every token moves a little (a mean when all agree, near the minimum when one token is far below);
    * ``negative_pmi_share``: share of tokens with PMI below :data:`NEGATIVE_PMI`;
    * ``js_mean`` / ``js_max``: how much the document moves the next-token distribution;
    * ``js_weighted_negative_pmi``: ``sum_t js_t * max(0, -pmi_t) / sum_t js_t``, negative PMI where
      the document matters;
    * ``conflict_max`` / ``conflict_mean``: over tokens where the document prefers another token,
      ``min(margin_t, raise_t)^+``: it prefers the other token by that much *and* raised it by that much.

    Args:
        token_pmi (`Sequence[float]`): each token's PMI.
        token_js (`Sequence[float]`): each position's divergence (:func:`js_divergence`).
        token_prefers_other (`Sequence[int]`): 1 where the document view's top token is another.
        token_top_margin (`Sequence[float]`): by how much it prefers that token.
        token_top_raise (`Sequence[float]`): by how much the document raised that token.

    Examples:

    ```python
    >>> from faithkit.metrics.token_evidence import aggregates
    >>> found = aggregates([0.5, -2.0, 1.0], [0.0, 0.3, 0.1], [0, 1, 0], [0.0, 2.5, 0.0], [0.0, 1.5, 0.0])
    >>> {key: round(value, 4) for key, value in found.items()}  # one token the document contradicts
    {'pmi_min': -2.0, 'pmi_softmin': -1.0253, 'negative_pmi_share': 0.3333, 'js_mean': 0.1333, 'js_max': 0.3, 'js_weighted_negative_pmi': 1.5, 'conflict_max': 1.5, 'conflict_mean': 0.5}
    ```
    """
    pmi = np.asarray(token_pmi, dtype=float)
    js = np.asarray(token_js, dtype=float)
    conflict = np.asarray(token_prefers_other, dtype=float) * np.clip(
        np.minimum(np.asarray(token_top_margin, dtype=float), np.asarray(token_top_raise, dtype=float)), 0, None
    )
    softmin = -(np.logaddexp.reduce(-pmi) - math.log(len(pmi)))
    weights = js.sum()
    return {
        "pmi_min": float(pmi.min()),
        "pmi_softmin": float(softmin),
        "negative_pmi_share": float((pmi < NEGATIVE_PMI).mean()),
        "js_mean": float(js.mean()),
        "js_max": float(js.max()),
        "js_weighted_negative_pmi": float((js * np.clip(-pmi, 0, None)).sum() / weights) if weights > 0 else 0.0,
        "conflict_max": float(conflict.max()),
        "conflict_mean": float(conflict.mean()),
    }


PER_TOKEN_KEYS = ("token_js", "token_prefers_other", "token_top_margin", "token_top_raise")
AGGREGATE_KEYS = (
    "pmi_min",
    "pmi_softmin",
    "negative_pmi_share",
    "js_mean",
    "js_max",
    "js_weighted_negative_pmi",
    "conflict_max",
    "conflict_mean",
)
