"""PMI-FAITH (Nandwani et al., EMNLP 2023, arXiv 2305.12191).

Faithfulness of a response r to a document d given the history h is the conditional
pointwise mutual information under a causal LM::

    pmi        = log P(r | d, h) - log P(r | h)
    uncond_pmi = log P(r | d)    - log P(r)          # UPMI-FAITH: the history ignored

A response the document explains becomes more likely once the document is shown. The
four views come from :class:`faithkit.prompts.PromptTemplate`, and all their token
log-probabilities come from one batched, prefix-sharing :class:`faithkit.serving.scoring.TokenScorer`
call, so scores do not depend on batch size or caching.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..serving import models
from ..prompts import DEFAULT_TEMPLATE, PromptTemplate, as_history
from ..serving.scoring import Request, TokenScorer
from . import token_evidence
from .base import Metric, aggregate, check_columns, check_not_empty
from .metric_options import JUDGE_LM, check_option_values

logger = logging.getLogger(__name__)

VIEWS = {  # name: (with document, with history)
    "doc_history": (True, True),
    "history": (False, True),
    "doc": (True, False),
    "none": (False, False),
}
COUNTERPART = {"history": "doc_history", "none": "doc"}
"""Each history-side view and the document view it is compared with: the same context with the document added."""


class PMIFaith(Metric):
    """Score responses with PMI-FAITH, in the calling style of ``evaluate`` metrics.

    Example::

        >>> from faithkit.metrics import PMIFaith
        >>> metric = PMIFaith(model="smollm2-135m")
        >>> result = metric.compute(
        ...     documents=["Apple is orange in color."],
        ...     histories=[["User: What is the color of an apple?"]],
        ...     responses=["Apple is red in color."],
        ... )
        >>> sorted(result)[:3]
        ['logp_doc', 'logp_doc_history', 'logp_history']

    ``model`` is a hub id, a local folder, an offline name (``smollm2-135m``) or an
    already loaded causal LM (then pass ``tokenizer``); ``dtype`` its precision when loaded here
    (:data:`faithkit.serving.precision.DTYPES`). ``normalize="mean"`` averages
    log-probabilities over the response's tokens as the authors' code does; ``"sum"``
    uses total log-probabilities. A document that does not fit in ``max_length``
    tokens keeps its end and the row reports ``truncated_tokens`` (with a warning), and ``truncated_chars`` when
    the document was long enough to be cut by characters before tokenising
    (:func:`faithkit.prompts.within_budget`).
    """

    score_keys = ("pmi", "uncond_pmi")

    def __init__(
        self,
        model=JUDGE_LM,
        tokenizer=None,
        batch_size: int = 8,
        device=None,
        template: PromptTemplate = DEFAULT_TEMPLATE,
        normalize: str = "mean",
        unconditional: bool = True,
        max_length: int | None = None,
        share_prefixes: bool = True,
        dtype=None,
        evidence: bool = False,
    ):
        """Load the judge LM (a name, or a loaded model with its tokenizer) and fix how to score with it. Each
        parameter is a metric option the command line and ``evaluate.load`` pass by name
        (:data:`faithkit.metrics.registry.METRICS`)."""
        check_option_values(batch_size=batch_size, normalize=normalize, max_length=max_length)
        self.model, self.tokenizer = models.causal_lm(model, tokenizer, "PMI-FAITH", "PMIFaith", device, dtype)
        self.template = template
        self.normalize = normalize
        self.views = dict(VIEWS) if unconditional else {k: VIEWS[k] for k in ("doc_history", "history")}
        self.max_length = max_length or models.context_window(self.model, self.tokenizer)
        self.scorer = TokenScorer(self.model, batch_size=batch_size, share_prefixes=share_prefixes)
        self.evidence = evidence

    def compute(
        self,
        documents: Sequence[str],
        histories: Sequence | None = None,
        responses: Sequence[str] = (),
        references=None,
        progress=None,
    ) -> dict:
        """Per-example fields as lists, ``mean_pmi`` and ``mean_uncond_pmi``; a cut context is logged as a warning."""
        rows = self.compute_rows(documents, histories, responses, progress=progress)
        for i, row in enumerate(rows):
            if row["truncated_tokens"]:
                logger.warning(
                    "example %d: context cut by %d tokens to fit %d; the document keeps its end",
                    i,
                    row["truncated_tokens"],
                    self.max_length,
                )
        return aggregate(rows, self.score_keys)

    def compute_rows(self, documents, histories, responses, references=None, progress=None) -> list[dict]:
        """One dict per example: ``pmi``, ``uncond_pmi``, ``logp_<view>``, ``tokens``, ``token_pmi``, ...

        A cut context is recorded in ``truncated_tokens`` (:meth:`compute` also logs it; jobs over
        files report it by row id). Histories may be None (no history); references are ignored.
        """
        documents, histories, responses, _ = check_columns(documents, histories, responses)
        check_not_empty(documents, responses)
        requests: list[Request] = []
        rows: list[dict] = []
        for i, (document, history, response) in enumerate(zip(documents, histories, responses)):
            target = self.template.response_ids(self.tokenizer, response, self.max_length)
            if len(target) >= self.max_length:
                raise ValueError(
                    f"example {i}: field 'response' has {len(target)} tokens, "
                    f"more than the model's context ({self.max_length})"
                )
            row = {
                "tokens": self.tokenizer.convert_ids_to_tokens(target),
                "num_tokens": len(target),
                "truncated_tokens": 0,
            }
            for with_document, with_history in self.views.values():
                context = self.template.context(
                    self.tokenizer,
                    document if with_document else None,
                    as_history(history) if with_history else [],
                    max_tokens=self.max_length - len(target),
                )
                row["truncated_tokens"] = max(row["truncated_tokens"], context.truncated_tokens)
                if context.truncated_chars:  # the document's start, left out before tokenising (a huge one)
                    row["truncated_chars"] = max(row.get("truncated_chars", 0), context.truncated_chars)
                requests.append((context.ids, target))
            rows.append(row)
        per_views = self._score(requests, len(rows), progress)
        for row, per_view, (_, target) in zip(rows, per_views, requests[:: len(self.views)]):
            for name, values in per_view.items():
                values = values.logprobs
                total = float(values.double().sum())
                row[f"logp_{name}"] = total / len(values) if self.normalize == "mean" else total
            row["pmi"] = row["logp_doc_history"] - row["logp_history"]
            if "none" in per_view:
                row["uncond_pmi"] = row["logp_doc"] - row["logp_none"]
            row["token_pmi"] = (per_view["doc_history"].logprobs - per_view["history"].logprobs).tolist()
            if self.evidence:
                tokens = token_evidence.per_token(target, per_view["doc_history"], per_view["history"])
                row.update(token_evidence.aggregates(row["token_pmi"], **tokens), **tokens)
        return [_ordered(row) for row in rows]

    def _score(self, requests: list, examples: int, progress) -> list[dict]:
        """Per example, each view's :class:`~faithkit.serving.scoring.TokenEvidence` (``requests`` hold the views in order).

        With ``evidence`` the document views go first, keeping their top tokens, and the history views
        second, also at those ids: (d, h) and (d) share the document, (h) and () the template's head, so
        splitting the call by view loses no shared prefix.
        """
        names = list(self.views)
        if not self.evidence:
            flat = self.scorer.evidence(requests, progress=_per_example(progress, len(names)))
            return [dict(zip(names, flat[i * len(names) : (i + 1) * len(names)])) for i in range(examples)]
        doc_names = [n for n in names if n not in COUNTERPART]
        at = {name: [requests[i * len(names) + names.index(name)] for i in range(examples)] for name in names}
        doc_requests = [at[name][i] for i in range(examples) for name in doc_names]
        doc_flat = self.scorer.evidence(doc_requests, top_k=token_evidence.TOP_K)
        per_views = [
            dict(zip(doc_names, doc_flat[i * len(doc_names) : (i + 1) * len(doc_names)])) for i in range(examples)
        ]
        history_names = [n for n in names if n in COUNTERPART]
        history_flat = self.scorer.evidence(
            [at[name][i] for i in range(examples) for name in history_names],
            extra_ids=[
                per_views[i][COUNTERPART[name]].top_ids.tolist() for i in range(examples) for name in history_names
            ],
            progress=_per_example(progress, len(history_names)),
        )
        for i, per_view in enumerate(per_views):
            per_view.update(zip(history_names, history_flat[i * len(history_names) : (i + 1) * len(history_names)]))
        return [{name: per_view[name] for name in names} for per_view in per_views]


def _ordered(row: dict) -> dict:
    first = [key for key in ("pmi", "uncond_pmi") if key in row]
    return {**{key: row[key] for key in first}, **{k: v for k, v in row.items() if k not in first}}


def _per_example(progress, views_per_example: int):
    """The scorer reports requests; a progress bar counts examples."""
    if progress is None:
        return None
    done = [0]

    def update(n: int) -> None:
        before = done[0] // views_per_example
        done[0] += n
        progress(done[0] // views_per_example - before)

    return update


__all__ = ["PMIFaith", "VIEWS"]
