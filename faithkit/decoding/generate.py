"""Build the inputs a strategy needs, run generate for a grid of cells, and get the responses back as text.

The conditioned and history-only views come from :class:`faithkit.prompts.PromptTemplate`,
the same views PMI-FAITH scores, so decoding and measuring agree on what "the document's
effect" is. :func:`iter_grid` runs several (strategy, search) cells per batch of contexts
with the prompts' work done once for all of them, and its greedy cells' steps in one forward pass.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch
from transformers import LogitsProcessor

from .. import models
from ..errors import ConfigError
from ..prompts import PromptTemplate
from .options import GenerationOptions, default_template, search_of
from .rerank import Judge, Rerank, candidate_seeds, rerank
from .strategies import PMI, Cell, Plain, Sampling, Strategy, as_cell, shared_decode, strategy_from_dict
from .two_view import FiniteLogits

logger = logging.getLogger(__name__)

# generate's sampling warpers other than temperature/top_k; PMIDecode's one-hot would make them silent no-ops
LEGACY_KEYWORDS = ("alpha", "top_p")
"""PMI-DECODE's parameters as keywords of ``generate``, from before strategies: deprecated (see generate)."""
_UNSUPPORTED_WARPERS = ("min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h")


def pad_token_id(tokenizer) -> int:
    """The tokenizer's pad token, or its end-of-sequence token when it has none (GPT-2, many base LMs)."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    raise ValueError("the tokenizer has neither a pad token nor an eos token; set tokenizer.pad_token first")


def build_inputs(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    template: PromptTemplate | None = None,
    max_context_tokens: int | None = None,
    max_new_tokens: int = 0,
    views: int = 2,
) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask`` with 2B rows: the B conditioned views, then the B history-only views.

    ``views=1`` gives the B conditioned views alone (plain decoding).

    Decoder-only rows are left-padded so every row ends where generation starts; seq2seq rows
    are the encoder inputs (the decoder starts identically for both halves). Over-long
    contexts keep their end: at most ``max_context_tokens``, and never more than the model's
    context window leaves beside ``max_new_tokens`` (a warning counts the contexts that limit cut).

    It takes many parameters because it is the one place a batch's layout is decided: the contexts, the prompt
    template, both token budgets and the views.
    """
    if len(documents) != len(histories):
        raise ValueError(
            f"documents and histories must have the same length, got {len(documents)} and {len(histories)}"
        )
    if not len(documents):
        raise ValueError("no contexts given: documents and histories are empty")
    models.check_head(model)
    template = template or default_template(model, tokenizer)
    if views not in (1, 2):
        raise ValueError(f"views must be 1 (conditioned) or 2 (conditioned, then history-only), got {views}")
    pairs: list[tuple[str | None, Any]] = [(document, history) for document, history in zip(documents, histories)]
    if views == 2:
        pairs += [(None, history) for history in histories]
    encoder = model.config.is_encoder_decoder
    room = context_room(model, tokenizer, max_new_tokens)
    limit = min(max_context_tokens or room, room)
    contexts = [template.view(tokenizer, d, h, max_tokens=limit, encoder=encoder) for d, h in pairs]
    cut = sum(1 for context in contexts[: len(documents)] if context.truncated_tokens or context.truncated_chars)
    if cut and limit == room and max_context_tokens != room:  # the model's room cut them, not the caller's limit
        logger.warning(
            "%d of %d contexts cut to the %d tokens the model has room for (their end kept); "
            "set max_context_tokens to choose the cut",
            cut,
            len(documents),
            limit,
        )
    rows = [context.ids for context in contexts]
    width = max(len(row) for row in rows)
    pad = pad_token_id(tokenizer)
    input_ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    attention_mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    if model.config.is_encoder_decoder:  # encoders read left to right: pad on the right
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        attention_mask = attention_mask.flip(-1)
    device = models.input_device(model)
    return {"input_ids": input_ids.to(device), "attention_mask": attention_mask.to(device)}


def context_room(model, tokenizer, max_new_tokens: int = 0) -> int:
    """Context tokens the model takes: its whole window for an encoder, else what the new tokens leave."""
    window = models.context_window(model, tokenizer)
    room = window if model.config.is_encoder_decoder else window - max_new_tokens
    if room < 1:
        raise ConfigError(
            f"--max-new-tokens {max_new_tokens} leaves no room for a context in the model's {window} "
            "positions; ask for fewer new tokens"
        )
    return room


def decode_responses(
    model,
    tokenizer,
    outputs: torch.Tensor,
    inputs: dict,
    num_return_sequences: int = 1,
    template: PromptTemplate | None = None,
    views: int = 2,
) -> list:
    """The conditioned rows' generated text (prompt and special tokens removed), one per context.

    ``views``: as given to :func:`build_inputs` (2: only the first half of the rows are answers).
    With ``num_return_sequences > 1``, one list of texts per context. A response that starts
    with the ``template``'s own speaker prefix (``Agent:``, which models often repeat) loses it:
    the prefix belongs to the prompt, not to the response.
    """
    contexts = inputs["input_ids"].shape[0] // views
    generated = outputs if model.config.is_encoder_decoder else outputs[:, inputs["input_ids"].shape[1] :]
    rows = generated[: contexts * num_return_sequences]
    texts = [response_text(text, template) for text in tokenizer.batch_decode(rows, skip_special_tokens=True)]
    if num_return_sequences == 1:
        return texts
    return [texts[i * num_return_sequences : (i + 1) * num_return_sequences] for i in range(contexts)]


def response_text(text: str, template: PromptTemplate | None) -> str:
    """A decoded continuation as a response: stripped, without the ``template``'s speaker prefix (``Agent:``)
    that models often repeat (it belongs to the prompt). Engine candidates are cleaned the same way."""
    text = text.strip()
    prefix = template.response_prefix.strip() if template is not None else ""
    return text[len(prefix) :].strip() if prefix and text.startswith(prefix) else text


@torch.no_grad()
def prompt_cache(model, inputs: dict, copies: int = 1, groups: int = 2):
    """The KV cache of every prompt but its last token, for ``generate(..., cache=...)``; None when not applicable.

    generate prefills each row at the batch's width, and for beam search (or several samples)
    once per copy. The history-only views are shorter than the conditioned ones, so prefilling
    the ``groups`` consecutive blocks of rows (the two halves) at their own widths and copying
    the result ``copies`` times (``max(num_beams, num_return_sequences)``) does the same work
    once and without padding. Only decoder-only models whose cache is made of plain
    ``DynamicLayer`` layers qualify (sliding-window or static caches cannot be re-padded).
    """
    blocks = prefill_blocks(model, inputs, groups)
    return None if blocks is None else merge_blocks(blocks, inputs["input_ids"].shape[1] - 1, copies)


@torch.no_grad()
def prefill_blocks(model, inputs: dict, groups: int = 2) -> list | None:
    """Each of the ``groups`` blocks of rows prefilled at its own width (see :func:`prompt_cache`), or None."""
    from transformers.cache_utils import DynamicLayer

    if (
        model.config.is_encoder_decoder
        or not models.attends_to_whole_past(model)
        or "position_ids" not in inspect.signature(model.forward).parameters
    ):
        return None
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    if ids.shape[1] < 2 or ids.shape[0] % groups:
        return None
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    caches = []
    for block_ids, block_mask in zip(ids[:, :-1].chunk(groups), mask[:, :-1].chunk(groups)):
        if not block_mask.any():  # one-token prompts: nothing to prefill
            return None
        start = int((block_mask.sum(0) > 0).nonzero()[0])
        block_ids, block_mask = block_ids[:, start:], block_mask[:, start:]
        positions = (block_mask.long().cumsum(-1) - 1).masked_fill(block_mask == 0, 0)
        output = model(input_ids=block_ids, attention_mask=block_mask, position_ids=positions, use_cache=True, **keep)
        cache = getattr(output, "cache", None)
        if cache is None or any(type(layer) is not DynamicLayer for layer in cache.layers):
            return None
        caches.append(cache)
    return caches


def merge_blocks(blocks: list, width: int, copies: int = 1):
    """One cache of the blocks' rows, each left-padded to ``width`` positions, every row repeated ``copies`` times.

    The blocks are left untouched (new tensors), so one prefill serves any number of cells.
    """
    merged = copy.copy(blocks[0])
    merged.layers = [copy.copy(layer) for layer in blocks[0].layers]
    for index, layer in enumerate(merged.layers):  # left-pad with zeros: the attention mask hides those columns
        layer.keys = torch.cat([_pad_left(block.layers[index].keys, width) for block in blocks])
        layer.values = torch.cat([_pad_left(block.layers[index].values, width) for block in blocks])
    if copies > 1:
        merged.batch_repeat_interleave(copies)
    return merged


def _pad_left(states: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(states, (0, 0, width - states.shape[-2], 0))


class PreparedBatch:
    """One batch of contexts with its prompt work done once for every cell that decodes it.

    The inputs hold the views the cells need (2B rows if any cell is a two-view strategy, else
    B). Decoder-only models prefill each view's block of prompts once (:func:`prefill_blocks`):
    the conditioned block serves every cell, the history-only block only two-view cells.
    Encoder-decoder models run the encoder once. :meth:`for_cell` gives a cell its rows and its
    own copy of that work (generate extends the cache it is given).
    """

    def __init__(self, model, inputs: dict, views: int):
        self.model, self.inputs, self.views = model, inputs, views
        self.contexts = inputs["input_ids"].shape[0] // views
        self.blocks = None
        self.encoder_outputs = None
        if model.config.is_encoder_decoder:
            encoder = model.get_encoder()
            with torch.no_grad():
                self.encoder_outputs = encoder(
                    input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], return_dict=True
                )
        else:
            self.blocks = prefill_blocks(model, inputs, groups=views)

    def rows(self, views: int) -> dict:
        """``input_ids`` and ``attention_mask`` of the first ``views`` views, without columns that are all padding."""
        ids = self.inputs["input_ids"][: self.contexts * views]
        mask = self.inputs["attention_mask"][: self.contexts * views]
        used = (mask.sum(0) > 0).nonzero()
        if self.model.config.is_encoder_decoder:  # right-padded
            end = int(used[-1]) + 1
            return {"input_ids": ids[:, :end], "attention_mask": mask[:, :end]}
        start = int(used[0]) if views < self.views else 0
        return {"input_ids": ids[:, start:], "attention_mask": mask[:, start:]}

    def for_cell(self, views: int, copies: int) -> dict:
        """The generate kwargs of a cell with ``views`` views and ``copies`` copies per row (beams, samples)."""
        rows = self.rows(views)
        if self.encoder_outputs is not None:
            width = rows["input_ids"].shape[1]
            state = self.encoder_outputs.last_hidden_state[: rows["input_ids"].shape[0], :width]
            return {**rows, "encoder_outputs": type(self.encoder_outputs)(last_hidden_state=state)}
        if self.blocks is None:
            return rows
        return {**rows, "cache": merge_blocks(self.blocks[:views], rows["input_ids"].shape[1] - 1, copies)}


def _select_contexts(kwargs: dict, contexts: Sequence[int], views: int, copies: int) -> dict:
    """The generate kwargs of a few contexts of a batch (their rows in every view, and their copies in the cache)."""
    total = kwargs["input_ids"].shape[0] // views
    rows = torch.tensor([view * total + i for view in range(views) for i in contexts])
    selected = {key: kwargs[key][rows] for key in ("input_ids", "attention_mask")}
    if "encoder_outputs" in kwargs:
        outputs = kwargs["encoder_outputs"]
        selected["encoder_outputs"] = type(outputs)(last_hidden_state=outputs.last_hidden_state[rows])
    if "cache" in kwargs:
        cache = copy.deepcopy(kwargs["cache"])
        cache.batch_select_indices(torch.tensor([int(row) * copies + c for row in rows for c in range(copies)]))
        selected["cache"] = cache
    return selected


def length_order(documents: Sequence[str], histories: Sequence) -> list[int]:
    """Context indices, longest first: batches of similar length waste little on padding.

    :func:`generate_grid` batches contexts in this order, so a caller that makes batches the
    same way (the sweep, to resume batch by batch) gets the same batches and the same tokens.
    """
    return sorted(range(len(documents)), key=lambda i: -len(str(documents[i])) - len(str(histories[i])))


def generate(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    strategy: Strategy | dict | str = PMI(),
    template: PromptTemplate | None = None,
    batch_size: int = 8,
    max_context_tokens: int | None = None,
    seeds: Sequence[int] | None = None,
    judge: Judge | None = None,
    **generate_kwargs,
) -> list:
    """Responses of one strategy for (document, history) contexts: one string each, or a list with ``num_return_sequences>1``.

    ``strategy`` is a :class:`~faithkit.decoding.strategies.Strategy`, its config dict
    (``{"name": "cad", "alpha": 1}``) or a name (default: PMI-DECODE at its defaults).
    ``generate_kwargs`` go to ``model.generate`` (``max_new_tokens``, ``num_beams``,
    ``do_sample``, ``temperature``, ``top_k``, extra ``logits_processor`` …); ``num_beams`` and
    ``do_sample`` choose the search. Contexts are batched by length, ``batch_size`` contexts at
    a time, and their prompts prefilled once without padding (:func:`prompt_cache`). When
    sampling, ``seeds`` (one per context, e.g. :func:`faithkit.decoding.row_seed` of the row
    ids) give every context its own generator, so its response does not depend on the batch
    it is in; without them, draws come from torch's global RNG. The ``rerank`` strategy needs
    a ``judge`` (:class:`faithkit.reranking.Judges`). The pre-strategy keywords
    ``alpha=``/``top_p=`` still mean ``PMI(alpha, top_p)``, with a DeprecationWarning.

    It takes many parameters because it is the public keyword API of a decode: ``model.generate``'s keywords plus
    the strategy, prompt, batching, seeds and judge.
    """
    strategy = _pmi_of_old_keywords(strategy, generate_kwargs)
    search = search_of(generate_kwargs.get("num_beams", 1), generate_kwargs.pop("do_sample", False))
    return generate_grid(
        model,
        tokenizer,
        documents,
        histories,
        [Cell(strategy_from_dict(strategy), search)],
        template=template,
        batch_size=batch_size,
        max_context_tokens=max_context_tokens,
        seeds=seeds,
        judge=judge,
        **generate_kwargs,
    )[0]


def _pmi_of_old_keywords(strategy, generate_kwargs: dict):
    """``strategy``, or PMI-DECODE with the ``alpha=``/``top_p=`` keywords of the pre-strategy ``generate`` (popped
    from ``generate_kwargs``, with a DeprecationWarning): they meant ``PMI(alpha, top_p)``."""
    old = {key: generate_kwargs.pop(key) for key in LEGACY_KEYWORDS if key in generate_kwargs}
    if not old:
        return strategy
    strategy = strategy_from_dict(strategy)
    if strategy.name != "pmi":
        raise ConfigError(
            f"{', '.join(f'{key}=' for key in old)} (the pre-strategy spelling of PMI(alpha, top_p)) "
            f"with strategy {strategy.name!r}: give the parameters in the strategy instead, e.g. "
            f"{{'name': {strategy.name!r}, **{old!r}}}"
        )
    replacement = PMI(**{**strategy.parameters(), **old})
    warnings.warn(
        f"generate({', '.join(f'{key}=' for key in old)}…) is deprecated; pass the strategy: "
        f"generate(model, tokenizer, documents, histories, PMI(alpha={replacement.alpha:g}, "
        f"top_p={replacement.top_p:g}), …)",
        DeprecationWarning,
        stacklevel=3,
    )
    return replacement


GRID_KEYWORDS = ("num_beams", "num_return_sequences", "temperature", "top_k", "batch_size", "max_context_tokens")
"""The :class:`GenerationOptions` that :func:`generate` and :func:`generate_grid` take as keywords (and
``max_new_tokens``); the other options name the search (``do_sample``: each cell names its own), seed the rows
(``seed``: pass ``seeds``) or choose the prompt layout (``chat``: pass ``template``)."""


def generate_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence,
    *,
    template: PromptTemplate | None = None,
    seeds: Sequence[int] | None = None,
    judge: Judge | None = None,
    **keywords,
) -> list[list]:
    """Responses for every cell: ``responses[cell][context]``.

    Each cell's responses equal :func:`generate` with that cell's strategy and search, token
    for token, but a context's prompt work is paid once per batch rather than once per cell,
    and cells that decode identically (:meth:`Cell.decode_key`) are decoded once (see
    :func:`iter_grid`, which yields them as they finish). ``keywords``: the :data:`GRID_KEYWORDS`
    and ``max_new_tokens`` (default: the model's generation config's, else 40) as
    :class:`GenerationOptions`; the others go to ``model.generate``.

    It takes many parameters because it is :func:`generate`'s keyword API for a grid of cells.
    """
    if judge is None and any(isinstance(as_cell(cell).strategy, Rerank) for cell in cells):
        raise ValueError("rerank cells need a judge: pass judge=faithkit.reranking.Judges(model, tokenizer)")
    options, generate_kwargs = _options_of_keywords(model, keywords)
    searches = [search for cell in cells for search in as_cell(cell).option_searches]
    options.validate(searches)  # sampling options without a sampling cell are a mistake here (iter_grid drops them)
    results: list[list] = [[None] * len(documents) for _ in cells]
    grid = iter_grid(
        model,
        tokenizer,
        documents,
        histories,
        cells,
        options,
        template=template,
        seeds=seeds,
        judge=judge,
        **generate_kwargs,
    )
    for cell, indices, responses in grid:
        for i, response in zip(indices, responses):
            results[cell][i] = response
    return results


def _options_of_keywords(model, keywords: dict) -> tuple[GenerationOptions, dict]:
    """``(options, generate_kwargs)``: the keywords that are :data:`GRID_KEYWORDS` or ``max_new_tokens`` as
    :class:`GenerationOptions`, and the rest."""
    given = {name: keywords.pop(name) for name in GRID_KEYWORDS if name in keywords}
    given = {name: value for name, value in given.items() if value is not None}
    max_new_tokens = keywords.pop("max_new_tokens", None) or model.generation_config.max_new_tokens
    if max_new_tokens:
        given["max_new_tokens"] = max_new_tokens
    return GenerationOptions(**given), keywords


@torch.no_grad()
def iter_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence,
    options: GenerationOptions | None = None,
    *,
    template: PromptTemplate | None = None,
    seeds: Sequence[int] | None = None,
    judge: Judge | None = None,
    seconds: dict[int, float] | None = None,
    **generate_kwargs,
) -> Iterator[tuple[int, list[int], list]]:
    """Yield ``(cell index, context indices, responses)`` as each cell finishes each batch of contexts.

    ``seconds``, when given, holds at each yield the cell's own decoding seconds on that batch (by cell index): a
    joint decode's time is shared among its cells by their rows, a decode that serves several cells counts for the
    first one yielded, a rerank cell has its candidates' decode (and judge call); the batch's prompt preparation
    counts for none.

    ``cells``: :class:`~faithkit.decoding.strategies.Cell` ``(strategy, search)`` pairs (a
    strategy or its dict alone means greedy search). ``options`` (:class:`GenerationOptions`, default its defaults):
    ``num_beams`` is the beams of the beam and beam_sample cells, ``temperature`` and ``top_k``
    apply to the sampling cells (a grid without one ignores them), ``num_return_sequences``,
    ``max_new_tokens``, ``batch_size``, ``max_context_tokens`` and, unless ``template`` is
    given, ``chat`` apply to all; ``do_sample`` and ``seed`` are not read (each cell names its
    search; ``seeds``, one per context, give each sampled context its own generator). Batches
    are made as :func:`generate` makes them (:func:`length_order`, ``batch_size`` contexts);
    each batch's prompts are prepared once for all cells (:class:`PreparedBatch`), and each
    decode of the plan (:func:`plan_grid`) runs once per batch and is yielded under every cell
    it serves; a batch's greedy decodes (plain and two-view alike) run as one generate call, each
    cell's processors on its own rows (:func:`_joint_runs`). Rerank cells (:mod:`~faithkit.decoding.rerank`) take the plain greedy decode and
    their candidates' decode, then one ``judge`` call per cell and batch; without a ``judge`` they yield each
    context's ``[greedy, *candidates]`` for the caller to judge (the sweep does, in its judge pass). ``generate_kwargs``
    (``logits_processor``, …) go to ``model.generate``.

    It takes many parameters because beside the grid and its options it passes ``model.generate``'s own keywords
    through.
    """
    options = options or GenerationOptions()
    plan = plan_grid(model, cells, options)
    _check_grid_inputs(documents, histories, plan, seeds, judge, generate_kwargs)
    extra = list(generate_kwargs.pop("logits_processor", None) or [])
    template = template or options.template(model, tokenizer)
    generate_kwargs = {
        "pad_token_id": pad_token_id(tokenizer),
        "max_new_tokens": options.max_new_tokens,
        **generate_kwargs,
    }
    context_room(model, tokenizer, options.max_new_tokens)  # too many new tokens fail before any batch runs
    runner = _GridRunner(model, tokenizer, template, plan, options, extra, generate_kwargs)
    order = length_order(documents, histories)
    for start in range(0, len(order), options.batch_size):
        chunk = order[start : start + options.batch_size]
        chunk_seeds = None if seeds is None else [seeds[i] for i in chunk]
        for index, responses in runner.decode(
            [documents[i] for i in chunk], [histories[i] for i in chunk], chunk_seeds, judge
        ):
            if seconds is not None:
                seconds[index] = runner.charged[index]
            yield index, chunk, responses


def _check_grid_inputs(documents, histories, plan: GridPlan, seeds, judge, generate_kwargs: dict) -> None:
    """Raise for inputs the grid cannot run, before any batch does."""
    if len(documents) != len(histories):
        raise ValueError(
            f"documents and histories must have the same length, got {len(documents)} and {len(histories)}"
        )
    if seeds is not None and not plan.sampled:
        raise ValueError("seeds apply to sampling only; pass do_sample=True as well, or no seeds")
    if seeds is not None and len(seeds) != len(documents):
        raise ValueError(f"seeds need one per context, got {len(seeds)} for {len(documents)} contexts")
    legacy = [name for name in LEGACY_KEYWORDS if name in generate_kwargs]
    if legacy:
        raise ConfigError(
            f"{', '.join(f'{key}=' for key in legacy)}: a grid names each cell's strategy with its "
            "parameters, e.g. Cell(PMI(alpha=0.25, top_p=0.6), 'greedy')"
        )
    unsupported = [name for name in _UNSUPPORTED_WARPERS if generate_kwargs.get(name) is not None]
    if unsupported:
        raise ValueError(
            f"sampling supports temperature and top_k; {', '.join(unsupported)} would be ignored. "
            "Drop them (PMI-DECODE's nucleus is its own top_p parameter)"
        )
    if "cache" in generate_kwargs or "do_sample" in generate_kwargs:
        raise ValueError(
            "iter_grid takes neither cache (it prefills each batch itself) nor do_sample (each cell "
            "names its search: Cell(strategy, 'sample'))"
        )
    options = [name for name in (*GRID_KEYWORDS, "max_new_tokens") if name in generate_kwargs]
    if options:
        raise ValueError(
            f"iter_grid takes {', '.join(options)} in its options: pass "
            f"options=GenerationOptions({', '.join(f'{name}=…' for name in options)})"
        )


class _CellRun(NamedTuple):
    """How to run one cell: generate's search kwargs, and the processors (built per batch for the generators)."""

    cell: Cell
    views: int
    copies: int
    kwargs: dict
    sampled: bool
    sampling: Sampling | None  # when the processors draw the token themselves
    own_seeds: bool = False  # every copy from its own generator (rerank candidates), not in turn from its context's


class GridPlan(NamedTuple):
    """What a grid decodes: its cells, and how each decode key runs (cells that decode alike share one run)."""

    cells: list[Cell]
    runs: dict[tuple, _CellRun]

    @property
    def views(self) -> int:
        """The views every batch needs: 2 if any run is a two-view strategy, else 1."""
        return max(run.views for run in self.runs.values())

    @property
    def sampled(self) -> bool:
        return any(cell.sampled for cell in self.cells)


_GREEDY = Cell(Plain(), "greedy")


def plan_grid(model, cells: Sequence, options: GenerationOptions) -> GridPlan:
    """The runs a grid of ``cells`` needs under ``options``: each decode key once, run as the cell it decodes as
    (:func:`~faithkit.decoding.strategies.shared_decode`: plain decoding under the same search when the strategy
    decodes as plain); a rerank cell needs plain greedy and its candidates (plain sampling with n returns, each
    from its own seed, or beam search with n beams). Bad cells and options raise here, before any batch runs.

    Sampling options apply to sampling cells only: without one they are dropped. ``temperature`` and ``top_k``
    unset are the model's generation config's."""
    cells = [as_cell(cell) for cell in cells]
    if not any(cell.sampled for cell in cells):
        options = dataclasses.replace(options, temperature=None, top_k=None, seed=None)
    options.validate([search for cell in cells for search in cell.option_searches])
    config = model.generation_config
    temperature = options.temperature or config.temperature or 1.0
    top_k = (options.top_k if options.top_k is not None else config.top_k) or None
    beams, returns = options.num_beams, options.num_return_sequences
    runs: dict[tuple, _CellRun] = {}
    for cell in cells:
        strategy = cell.strategy
        if isinstance(strategy, Rerank):
            runs.setdefault(_GREEDY.decode_key, _cell_run(_GREEDY, beams, 1, temperature, top_k))
            run = _cell_run(Cell(Plain(), strategy.search), strategy.n, strategy.n, temperature, top_k)
            runs.setdefault(strategy.candidates_key(), run._replace(own_seeds=True))
        elif cell.decode_key not in runs:
            runs[cell.decode_key] = _cell_run(shared_decode(cell), beams, returns, temperature, top_k)
    return GridPlan(cells, runs)


class _GridRunner:
    """A grid's fixed settings; :meth:`decode` runs one batch, each decode of the plan once for all its cells."""

    def __init__(self, model, tokenizer, template, plan: GridPlan, options, extra: list, generate_kwargs: dict):
        self.model, self.tokenizer, self.template, self.plan, self.options = model, tokenizer, template, plan, options
        self.extra, self.generate_kwargs = extra, generate_kwargs
        self.seconds: dict[tuple, float] = {}
        """This batch's decoding seconds by decode key (a joint decode's shared by rows)."""
        self.charged: dict[int, float] = {}
        """This batch's seconds by cell index, each decode's counted once (see :func:`iter_grid`'s ``seconds``)."""
        self._counted: set[tuple] = set()

    def _charge(self, index: int, keys: Sequence[tuple], extra: float = 0.0) -> None:
        """Count the seconds of the decodes ``keys`` not yet counted (and ``extra``) for cell ``index``."""
        fresh = [key for key in dict.fromkeys(keys) if key not in self._counted]
        self.charged[index] = extra + sum(self.seconds.get(key, 0.0) for key in fresh)
        self._counted.update(fresh)

    def decode(self, documents: list, histories: list, seeds, judge) -> Iterator[tuple[int, list]]:
        """``(cell index, responses)`` for every cell, in order, on one batch of contexts."""
        self.seconds, self.charged, self._counted = {}, {}, set()
        inputs = build_inputs(
            self.model,
            self.tokenizer,
            documents,
            histories,
            self.template,
            self.options.max_context_tokens,
            self.options.max_new_tokens,
            views=self.plan.views,
        )
        batch = PreparedBatch(self.model, inputs, self.plan.views)
        joint = _joint_runs(batch, self.plan.runs, self.extra, self.generate_kwargs["max_new_tokens"])
        done: dict[tuple, list] = {}  # this batch's decodes by key
        for index, cell in enumerate(self.plan.cells):
            if isinstance(cell.strategy, Rerank):
                judged = 0.0
                if cell.decode_key not in done:  # equal rerank cells are judged once
                    greedy = self._responses(batch, done, joint, _GREEDY.decode_key, seeds)
                    candidates = self._responses(batch, done, joint, cell.strategy.candidates_key(), seeds)
                    started = time.monotonic()
                    done[cell.decode_key] = (
                        [[first, *rest] for first, rest in zip(greedy, candidates)]
                        if judge is None
                        else [
                            c.response for c in rerank(cell.strategy, judge, documents, histories, greedy, candidates)
                        ]
                    )
                    judged = time.monotonic() - started
                self._charge(index, [_GREEDY.decode_key, cell.strategy.candidates_key()], judged)
                yield index, done[cell.decode_key]
            else:
                responses = self._responses(batch, done, joint, cell.decode_key, seeds)
                self._charge(index, [cell.decode_key])
                yield index, responses

    def _responses(self, batch: PreparedBatch, done: dict, joint: dict, key: tuple, seeds) -> list:
        """The responses of the decode ``key`` (a cell's :attr:`~Cell.decode_key`), made on first request: with every
        run of its joint group (:func:`_joint_runs`) in one generate call if it has one, else alone."""
        if key not in done:
            started = time.monotonic()
            if key in joint:
                outputs = _decode_jointly(self.model, batch, joint[key], self.generate_kwargs)
                decoded = [(run.cell.decode_key, run, output) for run, output in zip(joint[key], outputs)]
            else:
                run = self.plan.runs[key]  # a rerank cell's candidates run under its candidates_key
                seeded = seeds if run.sampled else None
                decoded = [(key, run, _decode(self.model, batch, run, seeded, self.extra, self.generate_kwargs))]
            for decoded_key, run, output in decoded:
                done[decoded_key] = decode_responses(
                    self.model,
                    self.tokenizer,
                    output,
                    batch.rows(run.views),
                    run.kwargs["num_return_sequences"],
                    self.template,
                    views=run.views,
                )
            elapsed, rows = time.monotonic() - started, sum(run.views for _, run, _ in decoded)
            for decoded_key, run, _ in decoded:  # a joint decode's time by each run's share of its rows
                self.seconds[decoded_key] = elapsed * run.views / rows
        return done[key]


def _cell_run(cell: Cell, num_beams: int, num_return_sequences: int, temperature: float, top_k: int | None):
    search, strategy = cell.search, cell.strategy
    beams = num_beams if search in ("beam", "beam_sample") else 1
    sampled = search in ("sample", "beam_sample")
    kwargs = {"num_beams": beams, "num_return_sequences": num_return_sequences, "do_sample": sampled}
    sampling = None
    if search == "sample":  # the processors draw: two views in step, and each row from its own generator
        sampling = Sampling(temperature=temperature, top_k=top_k)
    elif search == "beam_sample":  # plain only (the strategy checked it): generate's own beam sampling
        kwargs.update(_generate_warpers(temperature, top_k))
    return _CellRun(cell, strategy.views, max(beams, num_return_sequences), kwargs, sampled, sampling)


def _generate_warpers(temperature: float, top_k: int | None) -> dict:
    """generate's sampling warpers for the same draw the processors make: temperature and top-k only.

    Set explicitly, so neither transformers' defaults (top_k=50) nor a model's generation
    config (its top_p) add warpers the other strategies do not apply.
    """
    return {"temperature": temperature, "top_k": top_k or 0, "top_p": 1.0}


def _decode(model, batch: PreparedBatch, run: _CellRun, seeds, extra: list, generate_kwargs: dict) -> torch.Tensor:
    """Run generate for one cell on one prepared batch."""
    kwargs = batch.for_cell(run.views, run.copies)
    strategy, returns = run.cell.strategy, run.kwargs["num_return_sequences"]
    if run.cell.search == "beam_sample" and seeds is not None:
        return _beam_sample_per_context(model, kwargs, run, seeds, extra, generate_kwargs)
    sampling = run.sampling
    if sampling is not None and seeds is not None:
        if run.own_seeds:
            copy_seeds = [own for seed in seeds for own in candidate_seeds(int(seed), returns)]
        else:  # copies of a context draw in turn from its generator
            copy_seeds = [int(seed) for seed in seeds for _ in range(returns)]
        generators = {
            seed: torch.Generator(models.input_device(model)).manual_seed(seed) for seed in dict.fromkeys(copy_seeds)
        }
        sampling = sampling._replace(generators=[generators[seed] for seed in copy_seeds])
    if sampling is not None and strategy.views == 1 and seeds is None:
        processors = []  # plain sampling from the global RNG: transformers' own
        search_kwargs = {**run.kwargs, **_generate_warpers(sampling.temperature, sampling.top_k)}
    else:
        processors = strategy.processors(sampling)
        search_kwargs = run.kwargs
    return model.generate(
        **kwargs, logits_processor=[FiniteLogits(model.dtype), *extra, *processors], **search_kwargs, **generate_kwargs
    )


JOINT_CACHE_BYTES = 2**30
"""The most key/value cache one joint greedy decode may hold (:func:`_joint_runs`), as its rows' prompt width plus
``max_new_tokens`` times :func:`cache_bytes_per_token`. Every row keeps its cache until the call ends: the Table-4
dev grid's ten greedy cells on 8 contexts, 152 rows in one call, took SmolLM2's sweep to a 6.41 GB peak
(docs/measurements.md)."""


def cache_bytes_per_token(model) -> int:
    """The key/value cache one token takes in every layer of ``model`` (at its dtype)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * heads * head_dim * model.dtype.itemsize


def joint_row_budget(model, length: int) -> int:
    """How many rows of ``length`` tokens (prompt and response) a joint decode takes: :data:`JOINT_CACHE_BYTES` of
    cache, at least one."""
    return max(1, JOINT_CACHE_BYTES // (cache_bytes_per_token(model) * length))


def _joint_runs(
    batch: PreparedBatch, runs: dict[tuple, _CellRun], extra: list, new_tokens: int
) -> dict[tuple, list[_CellRun]]:
    """Decode key -> the runs decoded with it in one generate call: the batch's greedy runs whose rows are as wide.

    Greedy search treats every row on its own, so the rows of several cells (plain greedy and each
    two-view cell's 2B rows) can go through one generate call, one forward pass per step for all
    of them, each cell's processors applied to its own rows: every forward pass reads the weights
    once for every cell instead of once per cell, and the tokens are each cell's own. Not with
    ``extra`` processors (one instance would see every cell's rows) nor for encoder-decoder models.
    A group's cache (its rows' width plus ``new_tokens``) stays within :data:`JOINT_CACHE_BYTES`
    (a run alone may hold more), since every row keeps its own cache until the call ends.
    """
    if extra or batch.blocks is None:
        return {}
    by_width: dict[int, list[_CellRun]] = {}
    for run in runs.values():
        if run.cell.search == "greedy" and run.copies == 1:
            by_width.setdefault(batch.rows(run.views)["input_ids"].shape[1], []).append(run)
    groups: list[list[_CellRun]] = []
    for width, same_width in by_width.items():
        most = joint_row_budget(batch.model, width + new_tokens)
        rows = most  # start a new group at the first run
        for run in same_width:
            if rows + batch.contexts * run.views > most:
                groups.append([])
                rows = 0
            groups[-1].append(run)
            rows += batch.contexts * run.views
    return {run.cell.decode_key: group for group in groups if len(group) > 1 for run in group}


def _decode_jointly(model, batch: PreparedBatch, runs: list[_CellRun], generate_kwargs: dict) -> list[torch.Tensor]:
    """Greedy decodes of several cells as one generate call (see :func:`_joint_runs`); one output per run."""
    parts = [batch.for_cell(run.views, 1) for run in runs]
    cache = parts[0]["cache"]
    for index, layer in enumerate(cache.layers):  # the merged caches are new tensors: extending the first is safe
        layer.keys = torch.cat([part["cache"].layers[index].keys for part in parts])
        layer.values = torch.cat([part["cache"].layers[index].values for part in parts])
    ends = torch.tensor([part["input_ids"].shape[0] for part in parts]).cumsum(0).tolist()
    segments = _RowSegments(
        [(end - part["input_ids"].shape[0], end) for end, part in zip(ends, parts)],
        [[FiniteLogits(model.dtype), *run.cell.strategy.processors(None)] for run in runs],
    )
    outputs = model.generate(
        input_ids=torch.cat([part["input_ids"] for part in parts]),
        attention_mask=torch.cat([part["attention_mask"] for part in parts]),
        cache=cache,
        logits_processor=[segments],
        **runs[0].kwargs,
        **generate_kwargs,
    )
    return [outputs[start:end] for start, end in segments.spans]


class _RowSegments(LogitsProcessor):
    """Applies each cell's processors to that cell's rows of a joint batch (``spans``: each cell's row range)."""

    def __init__(self, spans: list[tuple[int, int]], processors: list[list]):
        self.spans, self.processors = spans, processors

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        parts = []
        for (start, end), processors in zip(self.spans, self.processors):
            part = scores[start:end]
            for processor in processors:
                part = processor(input_ids[start:end], part)
            parts.append(part)
        return torch.cat(parts)


def _beam_sample_per_context(model, kwargs: dict, run: _CellRun, seeds, extra: list, generate_kwargs: dict):
    """Beam sampling with one seed per context: generate draws from the global RNG, so each context runs alone."""
    outputs = []
    for position, seed in enumerate(seeds):
        alone = _select_contexts(kwargs, [position], run.views, run.copies)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            outputs.append(model.generate(**alone, logits_processor=list(extra), **run.kwargs, **generate_kwargs))
    width = max(out.shape[1] for out in outputs)
    pad = generate_kwargs["pad_token_id"]
    return torch.cat([torch.nn.functional.pad(out, (0, width - out.shape[1]), value=pad) for out in outputs])
