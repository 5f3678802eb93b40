"""The faithfulness judge (metric ``faith-judge``): an L2 logistic regression over a few signals, fitted on dev labels.

No single signal is enough: knowledge precision counts copied words whether or not they say
something true, PMI-FAITH's mean washes out the few tokens where the document wanted
something else. The judge combines a handful of them (:data:`CANDIDATES` lists every one it
may use; the shipped weights name the few they use) on standardised values:

    faith_judge = sigmoid(b + sum_f w_f * (x_f - mean_f) / std_f)

The weights, means and stds, the judge LM they were fitted with and what they were fitted on
ship as ``judge_weights.json`` beside this module; ``benchmarks/judge_fit.py`` fits them
(:func:`fit_logistic`, numpy/scipy only) from ``benchmarks/judge_features.py``'s cache, and
docs/judge.md is the metric card. Signals from another judge LM are on other scales, so
another ``model`` than the weights' gets a warning: refit on your labels (the same two scripts).
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from ..data import files
from .base import Metric
from .metric_options import check_option_values
from ..data.schema import NUMBER, TEXT, ListOf, Object, read_json_file
from .registry import FAITH_JUDGE_WEIGHTS
from .lexical import knowledge_precision, token_f1_overlap
from .token_evidence import AGGREGATE_KEYS, PER_TOKEN_KEYS

logger = logging.getLogger(__name__)

WEIGHTS = FAITH_JUDGE_WEIGHTS
WEIGHTS_SCHEMA = Object(
    {
        "features": ListOf(TEXT),
        "means": ListOf(NUMBER),
        "stds": ListOf(NUMBER),
        "coefficients": ListOf(NUMBER),
        "intercept": NUMBER,
        "model": TEXT,
        "l2": NUMBER,
        "fitted_on": TEXT,
    }
)
"""A weights file as :meth:`JudgeWeights.save` writes it."""
LM_SIGNALS = ("pmi", "uncond_pmi", "logp_doc_history", "logp_history", *AGGREGATE_KEYS)
"""The signals PMI-FAITH with ``evidence=True`` gives under the judge LM."""
CHECKER_SIGNALS = {
    "checker_supported": "faithkit_checker_supported",
    "checker_hallucination": "faithkit_checker_hallucination",
}
"""The claim checker's signals (:mod:`.faithkit_checker`) and the keys of its rows they are read from."""
CANDIDATES = (*LM_SIGNALS, "knowledge_precision", "overlap_f1", "log_words", *CHECKER_SIGNALS)
"""Every signal a judge may use: the LM's, three from the words alone, and the claim checker's."""


def signals(row: dict, document: str, response: str) -> dict[str, float]:
    """Every :data:`CANDIDATES` value of one response, from its PMI-FAITH row (with evidence; with the claim
    checker's keys too where it ran) and its text.

    A response without content words has no knowledge precision; it counts as 0 here (none of
    its words is shown to come from the document), which is how BEGIN labels such generic replies.

    Args:
        row (`dict`): the response's PMI-FAITH row (and the checker's keys, where it ran).
        document (`str`): the document.
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import signals
    >>> found = signals({"pmi": 1.2, "faithkit_checker_supported": 0.58}, "Emperor penguins live only in Antarctica.", "They live only in Antarctica.")
    >>> {name: round(value, 4) for name, value in found.items()}
    {'pmi': 1.2, 'checker_supported': 0.58, 'knowledge_precision': 1.0, 'overlap_f1': 0.6667, 'log_words': 1.7918}
    ```
    """
    precision = knowledge_precision(document, response)
    values = {key: float(row[key]) for key in LM_SIGNALS if key in row}  # uncond_pmi: if its views ran
    values.update({name: float(row[key]) for name, key in CHECKER_SIGNALS.items() if key in row})
    values.update(
        knowledge_precision=0.0 if precision is None else precision,
        overlap_f1=token_f1_overlap(document, response),
        log_words=math.log1p(len(response.split())),
    )
    return values


@dataclass(frozen=True)
class JudgeWeights:
    """A fitted judge: feature names with their standardisation, coefficients, and where they come from.

    Args:
        features (`tuple[str, ...]`): the signals it reads, names of :data:`CANDIDATES`.
        means (`tuple[float, ...]`): each signal's mean on the fitting data.
        stds (`tuple[float, ...]`): each signal's standard deviation there.
        coefficients (`tuple[float, ...]`): each standardised signal's weight.
        intercept (`float`): the logit's intercept.
        model (`str`): the judge LM the LM signals came from.
        l2 (`float`): the penalty it was fitted with.
        fitted_on (`str`): the data it was fitted on.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import JudgeWeights
    >>> shipped = JudgeWeights.load()  # judge_weights.json, beside the module
    >>> shipped.features, shipped.model
    (('knowledge_precision', 'pmi', 'pmi_softmin', 'js_mean', 'logp_history', 'log_words'), 'smollm2-135m')
    ```
    """

    features: tuple[str, ...]
    means: tuple[float, ...]
    stds: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    model: str
    l2: float
    fitted_on: str

    @classmethod
    def load(cls, path: str | Path = WEIGHTS) -> JudgeWeights:
        data = read_json_file(
            path, WEIGHTS_SCHEMA, "refit the judge (benchmarks/judge_fit.py) or give the weights file it wrote"
        )
        unknown = sorted(set(data["features"]) - set(CANDIDATES))
        if unknown:
            raise ValueError(f"{path}: unknown judge features {unknown}; known: {', '.join(CANDIDATES)}")
        fields: dict[str, Any] = {
            key: tuple(value) if isinstance(value, list) else value for key, value in data.items()
        }
        return cls(**fields)

    def save(self, path: str | Path) -> None:
        files.write_json(path, asdict(self))

    def logit(self, values: dict[str, float]) -> float:
        x = (np.array([values[f] for f in self.features]) - np.array(self.means)) / np.array(self.stds)
        return float(self.intercept + x @ np.array(self.coefficients))


def fit_judge(table: list[dict], labels, features, l2: float, model: str, fitted_on: str) -> JudgeWeights:
    """:class:`JudgeWeights` fitted on ``table`` (one :func:`signals` dict per row) and 0/1 ``labels``, its features
    standardised first so that ``l2`` weighs them alike.

    Args:
        table (`list[dict]`): one :func:`signals` dict per row.
        labels (`Sequence[int]`): 1 faithful, 0 not.
        features (`Sequence[str]`): the signals to use.
        l2 (`float`): the penalty on the coefficients.
        model (`str`): the judge LM the signals came from.
        fitted_on (`str`): what the rows are, for the weights file.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import fit_judge
    >>> table = [{"pmi": -0.5}, {"pmi": 0.2}, {"pmi": 1.0}, {"pmi": 1.5}]
    >>> weights = fit_judge(table, [0, 0, 1, 1], ["pmi"], l2=0.1, model="my-judge-lm", fitted_on="four rows")
    >>> weights.means, round(weights.logit({"pmi": 1.2}), 2)
    ((0.55,), 1.29)
    ```
    """
    x = np.array([[row[f] for f in features] for row in table], dtype=float)
    means, stds = x.mean(0), x.std(0)
    stds[stds == 0] = 1.0
    coefficients, intercept = stats.fit_logistic((x - means) / stds, np.asarray(labels), l2)
    return JudgeWeights(
        tuple(features),
        tuple(means.tolist()),
        tuple(stds.tolist()),
        tuple(coefficients.tolist()),
        intercept,
        model,
        l2,
        fitted_on,
    )


class FaithJudge(Metric):
    """The fitted judge over PMI-FAITH's token-level evidence, word overlap and, where its weights use it, faithkit's
    claim checker (``faithkit-checker``); ``faith_judge`` in (0, 1).

    ``model`` is the judge LM as for :class:`faithkit.metrics.PMIFaith`; by default the one the weights were
    fitted with (``smollm2-135m`` for the shipped weights, which runs offline), since another LM's signals are
    on other scales.
    Each row also carries PMI-FAITH's fields, the evidence (``token_js``, ...), the checker's scores and the
    signals used.

    Args:
        model (`str` or `PreTrainedModel`, *optional*): the judge LM (default: the weights').
        tokenizer (`PreTrainedTokenizerBase`, *optional*): a loaded model's tokenizer.
        batch_size (`int`, defaults to 8): sequences per forward pass.
        device (`str`, *optional*): where the models run.
        max_length (`int`, *optional*): context and response tokens at most (default: the model's window).
        weights (`str` or `Path`, defaults to the shipped `judge_weights.json`): a weights file
            (:meth:`JudgeWeights.save`).
        dtype (`str`, *optional*): the models' precision.
        unconditional (`bool`, *optional*): whether PMI-FAITH's two unconditional views run too (None: when the
            weights use ``uncond_pmi``); a meta-evaluation that also asks for pmi-faith under the same LM sets it, so
            that PMI-FAITH's rows are read off the judge's (:class:`PMIFaithOffJudge`).

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import FaithJudge
    >>> judge = FaithJudge(model="smollm2-135m")  # the LM the shipped weights were fitted with: offline
    >>> result = judge.compute(documents=["Emperor penguins live only in Antarctica."] * 2, histories=[["Where do they live?"]] * 2,
    ...                        responses=["They live only in Antarctica.", "They live in the Arctic."])
    >>> [round(score, 2) for score in result["faith_judge"]]  # P(faithful)
    [0.97, 0.46]
    ```
    """

    score_keys = ("faith_judge",)

    def __init__(
        self,
        model=None,
        tokenizer=None,
        batch_size: int = 8,
        device=None,
        max_length: int | None = None,
        weights: str | Path = WEIGHTS,
        dtype=None,
        unconditional: bool | None = None,
    ):
        from .pmi_faith import PMIFaith

        check_option_values(batch_size=batch_size, max_length=max_length)
        self.weights = JudgeWeights.load(weights)
        model = self.weights.model if model is None else model
        if model != self.weights.model:
            logger.warning(
                "faith-judge: its weights were fitted with judge LM %r, not %r; signals of another LM are "
                "on other scales, so refit them on your labels (see docs/judge.md)",
                self.weights.model,
                model if isinstance(model, str) else type(model).__name__,
            )
        self.pmi_faith = PMIFaith(
            model=model,
            tokenizer=tokenizer,
            batch_size=batch_size,
            device=device,
            max_length=max_length,
            evidence=True,
            dtype=dtype,
            unconditional="uncond_pmi" in self.weights.features if unconditional is None else unconditional,
        )
        self.checker = None
        if set(CHECKER_SIGNALS) & set(self.weights.features):
            from .claim_checkers import ClaimChecker

            self.checker = ClaimChecker("faithkit-checker", batch_size=batch_size, device=device, dtype=dtype)

    def compute_rows(self, documents, histories, responses, references=None, progress=None) -> list[dict]:
        """PMI-FAITH's rows (with evidence), each with ``faith_judge`` first and the ``signal_<name>`` values used."""
        rows = self.pmi_faith.compute_rows(documents, histories, responses, progress=progress)
        if self.checker is not None:
            checked = self.checker.compute_rows(documents, histories, responses)
            rows = [
                {**row, **{k: v for k, v in check.items() if k != "sentences"}} for row, check in zip(rows, checked)
            ]
        judged = []
        for row, document, response in zip(rows, documents, responses):
            values = signals(row, document, response)
            logit = self.weights.logit(values)
            judged.append(
                {
                    "faith_judge": 0.5 * (1 + math.tanh(logit / 2)),
                    **row,  # sigmoid, without overflow
                    **{f"signal_{name}": values[name] for name in self.weights.features},
                }
            )
        return judged


_NOT_PMI_FAITH = {
    "faith_judge",
    *AGGREGATE_KEYS,
    *PER_TOKEN_KEYS,
    "faithkit_checker",
    "faithkit_checker_verdict",
    "faithkit_checker_generic",
    *CHECKER_SIGNALS.values(),
}
_UNCONDITIONAL = {"uncond_pmi", "logp_doc", "logp_none"}
_RECORD_KEYS = {"id", "cell", "row", "document", "history", "response", "extras", "row_digest"}
"""What jobs and the sweep write beside a metric's row in a record."""


def pmi_faith_part(row: dict, unconditional: bool = False) -> dict:
    """The fields of a faith-judge row (or record) that PMI-FAITH under the same judge LM gives, with its
    unconditional views when ``unconditional``: what a sweep or meta-evaluation that asks for both reads off the
    judge's rows instead of running the LM again.

    Args:
        row (`dict`): a faith-judge row or record.
        unconditional (`bool`, defaults to False): keep the unconditional views' fields.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import pmi_faith_part
    >>> pmi_faith_part({"id": "r1", "faith_judge": 0.8, "pmi": 1.1, "uncond_pmi": 3.0, "signal_pmi": 1.1})
    {'pmi': 1.1}
    ```
    """
    dropped = _NOT_PMI_FAITH | _RECORD_KEYS | (set() if unconditional else _UNCONDITIONAL)
    return {key: value for key, value in row.items() if key not in dropped and not key.startswith("signal_")}


def shares_judge_lm(judge_options: dict, pmi_faith_options: dict) -> bool:
    """Whether faith-judge and pmi-faith with these options (as their constructors take them) run the same judge LM
    the same way, so that PMI-FAITH's rows can be read off the judge's (:class:`PMIFaithOffJudge`).

    Args:
        judge_options (`dict`): faith-judge's options.
        pmi_faith_options (`dict`): pmi-faith's options.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import shares_judge_lm
    >>> shares_judge_lm({"model": "gpt2"}, {"model": "gpt2"}), shares_judge_lm({"model": "gpt2"}, {"model": "gpt2", "normalize": "sum"})
    (True, False)
    ```
    """
    from ..serving import models
    from .registry import option_defaults

    defaults = option_defaults("pmi-faith")
    lms = [judge_options.get("model") or JudgeWeights.load().model, pmi_faith_options.get("model") or defaults["model"]]
    if not all(isinstance(lm, str) for lm in lms) or models.identity(lms[0]) != models.identity(lms[1]):
        return False
    same = ("max_length", "dtype")
    return pmi_faith_options.get("normalize", defaults["normalize"]) == "mean" and all(
        judge_options.get(key) == pmi_faith_options.get(key) for key in same
    )


class PMIFaithOffJudge(Metric):
    """PMI-FAITH read off faith-judge's records under the same judge LM (:func:`pmi_faith_part`), by
    (document, history, response), so asking for both runs the LM once. A response the records lack is a
    ValueError (that row's error).

    Args:
        records (`Iterable[dict]`): faith-judge's records (document, history, response and the row's fields).
        unconditional (`bool`, defaults to False): read the unconditional views' fields too.

    Examples:

    ```python
    >>> from faithkit.metrics.faith_judge import PMIFaithOffJudge
    >>> records = [{"document": "Emperor penguins live only in Antarctica.", "history": ["Where?"], "response": "In Antarctica.",
    ...             "faith_judge": 0.8, "pmi": 1.1}]
    >>> PMIFaithOffJudge(records).compute(documents=["Emperor penguins live only in Antarctica."], histories=[["Where?"]],
    ...                                   responses=["In Antarctica."])
    {'pmi': [1.1], 'mean_pmi': 1.1}
    ```
    """

    score_keys = ("pmi", "uncond_pmi")

    def __init__(self, records, unconditional: bool = False):
        self.by_text = {(r["document"], tuple(r.get("history", ())), r["response"]): r for r in records}
        self.unconditional = unconditional

    def compute_rows(self, documents, histories, responses, references=None) -> list[dict]:
        rows = []
        for document, history, response in zip(documents, histories or [()] * len(responses), responses):
            record = self.by_text.get((document, tuple(history), response))
            if record is None:
                raise ValueError("faith-judge's records hold no score of this response, so neither does PMI-FAITH")
            rows.append(pmi_faith_part(record, self.unconditional))
        return rows


__all__ = [
    "CANDIDATES",
    "FaithJudge",
    "JudgeWeights",
    "PMIFaithOffJudge",
    "fit_judge",
    "pmi_faith_part",
    "shares_judge_lm",
    "signals",
]
