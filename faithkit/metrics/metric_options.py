"""Every option a metric may take, declared once (:func:`faithkit.settings.options.option`): help, type, choices, range.

The registry (:mod:`faithkit.metrics.registry`) says which of them each metric takes; the
command line builds its metric flags from these fields, config files' ``metric_options`` and the
metrics' constructors check values against them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.options import check_values, option, option_like
from ..data.paths import PathArg
from ..serving.precision import Placement

__all__ = ["JUDGE_LM", "MetricOptions", "check_option_values"]

JUDGE_LM = "bigscience/bloom-560m"
"""The judge LM PMI-FAITH, minimal-edit and the sweep default to: the PMI-FAITH paper's, from the hub."""


@dataclass(frozen=True)
class MetricOptions:
    """Every option a metric may take, declared once: the command line's flags, config files' ``metric_options``
    and the metrics' constructors check them here. A metric takes those its :class:`MetricSpec` lists; a default
    here is the constructors' (None: each metric's own). Each field's help is its flag's, its range and choices
    the checks'.

    Args:
        model (`str`, *optional*): PMI-FAITH's, faith-judge's and minimal-edit's causal LM.
        preset (`str`, *optional*): Q²'s and e2e-NLI's ``"offline"`` backends.
        qg_model (`str`, *optional*): Q²'s question generator.
        qa_model (`str`, *optional*): Q²'s question answerer.
        nli_model (`str`, *optional*): Q²'s and e2e-NLI's NLI model; a claim checker's checkpoint.
        batch_size (`int`, defaults to 8): rows per model call, at least 1.
        device (`str`, *optional*): where the models run.
        dtype (`str`, *optional*): their precision.
        normalize (`str`, defaults to "mean"): PMI-FAITH's ``mean`` or ``sum`` over response tokens.
        max_length (`int`, *optional*): PMI-FAITH's longest sequence.
        unconditional (`bool`, defaults to True): PMI-FAITH's unconditional views too.
        window (`int`, *optional*): a claim checker's tokens per document window.
        stride (`int`, *optional*): a claim checker's tokens between window starts.
        max_windows (`int`, defaults to 16): a claim checker's windows per row at most.
        max_edits (`int`, defaults to 8): minimal-edit's swaps per response at most.
        threshold (`float`, defaults to 1.0): minimal-edit's margin, in nats.
        server (`str`, *optional*): llm-judge's OpenAI-compatible base URL.
        served_model (`str`, *optional*): llm-judge's model name on the server.
        api_key (`str`, *optional*): llm-judge's API key, never written.

    Examples:

    ```python
    >>> from faithkit.metrics.metric_options import MetricOptions
    >>> MetricOptions().batch_size, MetricOptions().max_windows
    (8, 16)
    ```
    """

    model: str | None = option(
        None,
        "PMI-FAITH, faith-judge, minimal-edit: causal LM, a hub id, a local folder or an offline name "
        "(smollm2-135m, gemma3-270m); default: for PMI-FAITH and minimal-edit the paper's judge "
        f"{JUDGE_LM}, downloaded from the hub (without a network, name an offline one), for "
        "faith-judge the LM its weights were fitted with",
        flag_type=PathArg("model"),
    )
    preset: str | None = option(None, "Q²/e2e-NLI: 'offline' uses the offline LM backends", choices=("offline",))
    qg_model: str | None = option(None, "Q²: question-generation model")
    qa_model: str | None = option(None, "Q²: question-answering model")
    nli_model: str | None = option(
        None, "Q² / e2e-NLI: NLI model; claim checkers: the checkpoint (default: the checker's hub id)"
    )
    batch_size: int = option(8, "rows per model call", low=1)
    device: str | None = option_like(Placement, "device")
    dtype: str | None = option_like(Placement, "dtype")
    normalize: str = option(
        "mean", "PMI-FAITH: average (mean) or sum log-probabilities over response tokens", choices=("mean", "sum")
    )
    max_length: int | None = option(None, "PMI-FAITH: longest sequence in tokens (default: the model's)", low=1)
    unconditional: bool = option(True, "PMI-FAITH: also score the unconditional views (mean_uncond_pmi)")
    window: int | None = option(
        None, "claim checkers: tokens of the document per window (default: the checker's)", low=1
    )
    stride: int | None = option(
        None, "claim checkers: tokens between the starts of two windows (default: the checker's)", low=1
    )
    max_windows: int = option(
        16,
        "claim checkers: most document windows scored per row; past it, those sharing most words with the "
        "response (the row says how many characters no scored window held: truncated_chars)",
        low=1,
    )
    max_edits: int = option(8, "minimal-edit: most spans swapped per response", low=1)
    threshold: float = option(1.0, "minimal-edit: log-probability margin a swap must lose by to count", low=0)
    server: str | None = option(
        None,
        "llm-judge: the OpenAI-compatible API's base URL, e.g. http://127.0.0.1:8080/v1 (llama.cpp's server)",
        secret="url",
    )
    served_model: str | None = option(
        None, "llm-judge: the model's name on the server (unset: the server's only model, from GET /models)"
    )
    api_key: str | None = option(
        None,
        "llm-judge: the server's API key (unset: $OPENAI_API_KEY; local servers need none); never written",
        secret="value",
    )


def check_option_values(where: str = "", **values) -> None:
    """A metric's option values against their declarations (:class:`MetricOptions`): an
    :class:`~faithkit.settings.options.OptionError` naming the parameter, before a model loads.

    Args:
        where (`str`, defaults to ""): prefixes the message (``"metric 'pmi-faith' option "``).
        **values (`Any`): the options given, by name.

    Examples:

    ```python
    >>> from faithkit.metrics.metric_options import check_option_values
    >>> check_option_values(batch_size=4, normalize="sum")  # fine: nothing happens
    >>> check_option_values(batch_size=0)
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: batch_size must be at least 1, got 0
    ```
    """
    check_values(MetricOptions, values, where)
