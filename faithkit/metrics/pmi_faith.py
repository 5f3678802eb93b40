"""PMI-FAITH (Nandwani et al., EMNLP 2023, arXiv 2305.12191).

Faithfulness of a response r to a document d given the history h is the conditional
pointwise mutual information under a causal LM:

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

    ``pmi`` is ``log P(r | d, h) - log P(r | h)``: how much more likely the document makes the response;
    ``uncond_pmi`` the same without the history. Each row also holds the views' ``logp_<view>``, the response's
    ``tokens`` and their ``token_pmi``. A document that does not fit in ``max_length`` tokens keeps its end and
    the row reports ``truncated_tokens`` (with a warning), and ``truncated_chars`` when the document was long
    enough to be cut by characters before tokenising (:func:`faithkit.prompts.within_budget`). Each parameter is
    a metric option the command line and ``evaluate.load`` pass by name (:data:`faithkit.metrics.registry.METRICS`).

    Args:
        model (`str` or `PreTrainedModel`, defaults to "bigscience/bloom-560m"): the judge LM: a hub id, a local
            folder, an offline name (``smollm2-135m``) or a loaded causal LM (then pass ``tokenizer``).
        tokenizer (`PreTrainedTokenizerBase`, *optional*): the loaded model's tokenizer.
        batch_size (`int`, defaults to 8): sequences per forward pass; the scores do not depend on it.
        device (`str` or `torch.device`, *optional*): where a model loaded here runs (default: a GPU if any).
        template (`PromptTemplate`, defaults to `DEFAULT_TEMPLATE`): how the views are laid out, as decoding lays
            them out.
        normalize (`str`, defaults to "mean"): ``"mean"`` averages log-probabilities over the response's tokens,
            as the authors' code does; ``"sum"`` totals them.
        unconditional (`bool`, defaults to True): also score ``uncond_pmi`` (two more views).
        max_length (`int`, *optional*): context and response tokens at most (default: the model's window).
        share_prefixes (`bool`, defaults to True): run the views' shared prefixes once (the same scores, faster).
        dtype (`str` or `torch.dtype`, *optional*): the precision of a model loaded here
            (:data:`faithkit.serving.precision.DTYPES`).
        evidence (`bool`, defaults to False): also give each token's evidence and its aggregates
            (:mod:`~faithkit.metrics.token_evidence`).

    Examples:

    ```python
    >>> from faithkit.metrics import PMIFaith
    >>> metric = PMIFaith(model="smollm2-135m")  # an offline name: no network
    >>> result = metric.compute(
    ...     documents=["The Eiffel Tower is 330 metres tall."] * 2,
    ...     histories=[["User: How tall is the Eiffel Tower?"]] * 2,  # a list of turns, or one string
    ...     responses=["It is 330 metres tall.", "It is about 150 metres tall."],
    ... )
    >>> [round(pmi, 4) for pmi in result["pmi"]]  # the supported answer scores higher
    [1.1221, 0.528]
    >>> round(result["mean_pmi"], 4)
    0.825
    ```
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
        """Per-example fields as lists, ``mean_pmi`` and ``mean_uncond_pmi``; a cut context is logged as a warning.

        Args:
            documents (`Sequence[str]`): one grounding document per example.
            histories (`Sequence`, *optional*): one dialogue history per example, a list of turns or one string
                (None: no history).
            responses (`Sequence[str]`): the responses to score.
            references (*optional*): ignored (the metric contract's column).
            progress (`Callable[[int], None]`, *optional*): called with the number of examples done, as they are.

        The class's example calls it.
        """
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

        Args:
            documents (`Sequence[str]`): one grounding document per example.
            histories (`Sequence`, *optional*): one dialogue history per example (None: no history).
            responses (`Sequence[str]`): the responses to score.
            references (*optional*): ignored.
            progress (`Callable[[int], None]`, *optional*): called with the number of examples done.

        Examples:

        ```python
        >>> from faithkit.metrics import PMIFaith
        >>> metric = PMIFaith(model="smollm2-135m")
        >>> row = metric.compute_rows(["The Eiffel Tower is 330 metres tall."], [["How tall is the Eiffel Tower?"]],
        ...                           ["It is 330 metres tall."])[0]
        >>> list(row)
        ['pmi', 'uncond_pmi', 'tokens', 'num_tokens', 'truncated_tokens', 'logp_doc_history', 'logp_history', 'logp_doc', 'logp_none', 'token_pmi']
        >>> [(token, round(pmi, 2)) for token, pmi in zip(row["tokens"], row["token_pmi"])][3:8]  # the number, the unit
        [('3', 0.16), ('3', 1.36), ('0', 1.86), ('Ġmetres', 2.27), ('Ġtall', 1.02)]
        ```
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
            if row["truncated_tokens"] or row.get("truncated_chars"):
                row["truncated_from"] = "start"  # the context keeps its end, next to the response
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
