"""The decoding options besides the strategy: search modes, :class:`GenerationOptions`, the prompt layout, row seeds.

:class:`GenerationOptions` is declared with :func:`faithkit.settings.options.option` like the
strategies' parameters, so ``faithkit generate``, the sweep, training hooks and fingerprints
cannot disagree on a name, default or range.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..settings.options import check, flag, option
from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE, PromptTemplate

SEARCHES = ("greedy", "beam", "sample", "beam_sample")
"""Search modes: best token, beam search, sampling, beam sampling (``num_beams`` > 1 with ``do_sample``)."""


def search_of(num_beams: int = 1, do_sample: bool = False) -> str:
    """The search mode of generate's ``num_beams`` and ``do_sample``: greedy, beam, sample or beam_sample.

    Args:
        num_beams (`int`, defaults to 1): generate's beams.
        do_sample (`bool`, defaults to False): whether generate samples.

    Examples:

    ```python
    >>> from faithkit.decoding.generation_options import search_of
    >>> search_of(), search_of(num_beams=4), search_of(num_beams=4, do_sample=True)
    ('greedy', 'beam', 'beam_sample')
    ```
    """
    if do_sample:
        return "beam_sample" if num_beams > 1 else "sample"
    return "beam" if num_beams > 1 else "greedy"


@dataclass(frozen=True)
class GenerationOptions:
    """Everything about a decode besides the strategy: the search, sampling, batching and prompt layout.

    The search mode follows from ``num_beams`` and ``do_sample`` (:meth:`search`); a grid of
    cells names each cell's mode and takes the beams and sampling options from here.
    ``seed`` seeds every sampled row's own generator together with the row's id
    (:func:`row_seed`), so a row gets the same response whatever batch it lands in and a
    resumed run writes exactly what an uninterrupted one would. Bad values raise when the options are
    made (before a model loads); :meth:`validate` checks them against the searches that will run. generate,
    the grid and the processors take one options object whole, as transformers passes a ``GenerationConfig``.

    Args:
        num_beams (`int`, defaults to 1): beams for beam search and beam sampling.
        num_return_sequences (`int`, defaults to 1): responses per row (then a list per row).
        do_sample (`bool`, defaults to False): sample instead of taking the best token.
        temperature (`float`, *optional*): sampling temperature on the strategy's scores.
        top_k (`int`, *optional*): sample among the k best scores only.
        seed (`int`, *optional*): seed of every sampled row's own generator, with the row's id (unset: 0).
        max_new_tokens (`int`, defaults to 40): longest response in tokens.
        batch_size (`int`, defaults to 8): contexts per generate call.
        max_context_tokens (`int`, *optional*): cut longer contexts, keeping their end (unset, and at most: what
            the model's window leaves beside ``max_new_tokens``).
        chat (`bool`, *optional*): lay prompts out with the tokenizer's chat template (unset: when the tokenizer
            has one and the model is decoder-only).

    Examples:

    ```python
    >>> from faithkit.decoding import GenerationOptions
    >>> GenerationOptions(num_beams=4).search
    'beam'
    >>> GenerationOptions(do_sample=True, seed=3).row_seeds(["eiffel", "penguins"])  # the same in any batch
    [2025265098271077776, 6736918486602039623]
    >>> GenerationOptions(num_return_sequences=2).validate()
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: --num-return-sequences 2 is more than --num-beams 1 of greedy search: search returns at most one response per beam; raise --num-beams or add --do-sample
    ```
    """

    num_beams: int = option(1, "beams for beam search and beam sampling", low=1)
    num_return_sequences: int = option(1, "responses per row (a list in 'responses')", low=1)
    do_sample: bool = option(False, "sample instead of taking the best token (the strategy's scores are sampled)")
    temperature: float | None = option(None, "sampling temperature on the strategy's scores", low=0, low_open=True)
    top_k: int | None = option(None, "sample among the k best scores only", low=1)
    seed: int | None = option(
        None,
        "random seed for sampling; each row's draw depends only on the seed and its "
        "id, so a resumed run writes what an uninterrupted one would (unset: seed 0)",
    )
    max_new_tokens: int = option(40, "longest response in tokens", low=1)
    batch_size: int = option(8, "contexts per generate call", low=1)
    max_context_tokens: int | None = option(
        None,
        "cut longer contexts, keeping their end (unset, and at most: what "
        "the model's context window leaves beside --max-new-tokens)",
        low=1,
    )
    chat: bool | None = option(
        None,
        "use the tokenizer's chat template with the document in the system turn "
        "(unset: when the tokenizer has one and the model is decoder-only)",
    )

    @property
    def search(self) -> str:
        """``greedy``, ``beam``, ``sample`` or ``beam_sample``, from ``num_beams`` and ``do_sample``."""
        return search_of(self.num_beams, self.do_sample)

    def __post_init__(self):
        check(self)  # the one range check: every holder of these options takes them as they are

    def validate(self, searches: Sequence[str] | None = None) -> GenerationOptions:
        """Raise :class:`ConfigError` for a combination the ``searches`` cannot run (naming the flags and the fix);
        return self. The values themselves were checked when the options were made.

        ``searches``: the modes the cells will run (default: :attr:`search`); sampling options
        need a sampling mode, beam modes need ``num_beams`` of at least 2.
        """
        searches = list(searches or [self.search])
        unknown = [s for s in searches if s not in SEARCHES]
        if unknown:
            raise ConfigError(f"search {unknown[0]!r} is unknown; choose one of {', '.join(SEARCHES)}")
        sampling = any(s in ("sample", "beam_sample") for s in searches)
        if not sampling:
            given = [f"--{flag(name)}" for name in ("temperature", "top_k", "seed") if getattr(self, name) is not None]
            if given:
                raise ConfigError(
                    f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to sampling only: "
                    "add --do-sample, or drop them"
                )
        for search in searches:
            beams = self.num_beams if search in ("beam", "beam_sample") else 1
            if search in ("beam", "beam_sample") and beams < 2:
                raise ConfigError(f"{search} search needs --num-beams of at least 2, got {beams}")
            if search in ("greedy", "beam") and self.num_return_sequences > beams:
                raise ConfigError(
                    f"--num-return-sequences {self.num_return_sequences} is more than --num-beams "
                    f"{beams} of {search} search: search returns at most one response per beam; "
                    "raise --num-beams or add --do-sample"
                )
        return self

    def template(self, model, tokenizer) -> PromptTemplate:
        """The prompt layout: ``chat`` when set, else the chat template for decoder-only models that have one."""
        if self.chat is None:
            return default_template(model, tokenizer)
        return CHAT_TEMPLATE if self.chat else DEFAULT_TEMPLATE

    def row_seeds(self, ids: Sequence) -> list[int]:
        """Each row's own seed (:func:`row_seed` of ``seed``, default 0, and the row's id), for sampling."""
        return [row_seed(self.seed or 0, row_id) for row_id in ids]

    def fingerprint(self) -> dict:
        """What the responses depend on: every option but ``batch_size`` (batching changes no text)."""
        return {key: value for key, value in dataclasses.asdict(self).items() if key != "batch_size"}


def default_template(model, tokenizer) -> PromptTemplate:
    """The tokenizer's chat template for decoder-only models that have one (instruct models), else the plain one:
    an instruct model answers in its own chat format.

    Args:
        model (`PreTrainedModel`): the generator (its config says whether it is an encoder-decoder).
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer (its ``chat_template``, if any).

    Examples:

    ```python
    >>> from types import SimpleNamespace
    >>> from faithkit.decoding import default_template
    >>> from faithkit.prompts import CHAT_TEMPLATE
    >>> decoder = SimpleNamespace(config=SimpleNamespace(is_encoder_decoder=False))
    >>> default_template(decoder, SimpleNamespace(chat_template="{{ messages }}")) is CHAT_TEMPLATE
    True
    ```
    """
    if not model.config.is_encoder_decoder and getattr(tokenizer, "chat_template", None):
        return CHAT_TEMPLATE
    return DEFAULT_TEMPLATE


def row_seed(seed: int, row_id) -> int:
    """A row's own seed: a stable hash of the run's seed and the row id (the same in every process and order), so a
    sampled row's response does not depend on its batch.

    Args:
        seed (`int`): the run's seed.
        row_id (`str` or `int`): the row's id.

    Examples:

    ```python
    >>> from faithkit.decoding import row_seed
    >>> row_seed(0, "eiffel")
    7534815851671912960
    ```
    """
    digest = hashlib.sha256(f"{seed}\x00{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
