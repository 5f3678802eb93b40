"""Grid running: a grid of (strategy, search) cells decoded batch by batch, each batch's prompt work done once; and
:func:`generate`, one strategy's responses, the public entry of a decode: a grid of one cell.

:func:`iter_grid` plans the grid (:func:`~faithkit.decoding.grid_plan.plan_grid`), lays out each batch once
(:mod:`~faithkit.decoding.inputs`, :mod:`~faithkit.decoding.prefill`) and runs each decode of the plan once per
batch, the greedy ones in one generate call (:mod:`~faithkit.decoding.joint`). The options travel whole: the
:class:`GenerationOptions` given are the ones every batch reads.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import torch

from ..errors import ConfigError
from ..prompts import PromptTemplate
from .generation_options import GenerationOptions
from .grid_plan import GREEDY, GridPlan, also_cells, plan_grid
from .inputs import build_inputs, context_room, decode_responses, length_order, pad_token_id
from .joint import decode_jointly, joint_runs
from .prefill import PreparedBatch
from .rerank import Judge, Rerank, rerank
from .base import Strategy
from .strategies import Cell, as_cell, strategy_from_dict
from .two_view.strategies import PMI

PARAMETER_KEYWORDS = ("alpha", "top_p")
"""PMI-DECODE's parameters, which a strategy holds: refused as keywords of a decode, with the spelling to use."""
OPTION_NAMES = tuple(field.name for field in dataclasses.fields(GenerationOptions))
"""The :class:`GenerationOptions` fields, which generate and generate_grid also take as keywords."""
# generate's sampling warpers other than temperature/top_k; PMIDecode's one-hot would make them silent no-ops
_UNSUPPORTED_WARPERS = ("min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h")


class GridInputs(NamedTuple):
    """What a grid run takes besides its cells and options, as the keywords of :func:`iter_grid`."""

    template: PromptTemplate | None = None
    """The prompt layout (default: the options' :meth:`~GenerationOptions.template`)."""
    seeds: Sequence[int] | None = None
    """One per context, for sampling: each sampled context draws from its own generator."""
    judge: Judge | None = None
    """The rerank cells' judge (:class:`faithkit.generation.rerank.Judges`)."""
    seconds: dict[int, float] | None = None
    """Filled at each yield with the cell's own decoding seconds on that batch (see :func:`iter_grid`)."""


def options_of(model, options: GenerationOptions | None, keywords: dict, names=OPTION_NAMES) -> GenerationOptions:
    """``options`` with the fields among ``names`` given in ``keywords`` (popped) set; without options, those fields
    as new options, ``max_new_tokens`` unset being the model's generation config's."""
    given = {name: keywords.pop(name) for name in names if name in keywords}
    given = {name: value for name, value in given.items() if value is not None}
    if options is not None:
        return dataclasses.replace(options, **given) if given else options
    if "max_new_tokens" not in given and model.generation_config.max_new_tokens:
        given["max_new_tokens"] = model.generation_config.max_new_tokens
    return GenerationOptions(**given)


def generate(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    strategy: Strategy | dict | str = PMI(),
    options: GenerationOptions | None = None,
    **keywords,
) -> list:
    """Responses of one strategy for (document, history) contexts: one string each, or a list with ``num_return_sequences>1``.

    ``strategy`` is a :class:`~faithkit.decoding.strategies.Strategy`, its config dict
    (``{"name": "cad", "alpha": 1}``) or a name (default: PMI-DECODE at its defaults). ``options``: a
    :class:`~faithkit.decoding.GenerationOptions`, taken whole (its ``num_beams`` and ``do_sample`` choose the
    search); its fields given as keywords (``max_new_tokens=40``, ``do_sample=True``…) change it, and without
    options make it (``max_new_tokens`` unset: the model's generation config's, else 40). Contexts are batched by
    length, ``batch_size`` contexts at a time, and their prompts prefilled once without padding.

    The other keywords: ``template`` (the prompt layout), ``seeds`` (when sampling, one per context, e.g.
    :func:`faithkit.decoding.row_seed` of the row ids: every context draws from its own generator, so its response
    does not depend on its batch; without them, draws come from torch's global RNG), ``judge`` (the ``rerank``
    strategy's, :class:`faithkit.generation.rerank.Judges`), and the rest go to ``model.generate``
    (``logits_processor``…).

    Args:
        model (`PreTrainedModel`): the generator.
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer.
        documents (`Sequence[str]`): one grounding document per context.
        histories (`Sequence`): one dialogue history per context, a list of turns or one string.
        strategy (`Strategy`, `dict` or `str`, defaults to `PMI()`): what ranks the tokens.
        options (`GenerationOptions`, *optional*): the search, sampling, batching and prompt layout.
        **keywords (`Any`): :class:`GenerationOptions` fields, ``template``, ``seeds``, ``judge``, and
            ``model.generate``'s own keywords.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import generate, row_seed
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> documents, histories = ["The Eiffel Tower is 330 metres tall."], [["How tall is the Eiffel Tower?"]]
    >>> generate(model, tokenizer, documents, histories, max_new_tokens=12)  # PMI-DECODE at its defaults
    ['The Eiffel Tower is 330 metres tall.']
    >>> generate(model, tokenizer, documents, histories, {"name": "cad", "alpha": 1}, do_sample=True,
    ...          temperature=0.7, seeds=[row_seed(0, "eiffel")], max_new_tokens=12)  # the same in any batch
    ['The Eiffel Tower is 330 metres']
    ```
    """
    strategy = strategy_from_dict(strategy)
    options = options_of(model, options, keywords)
    cells = [Cell(strategy, options.search)]
    require_judge(cells, keywords.get("judge"))
    return collect(iter_grid(model, tokenizer, documents, histories, cells, options, **keywords), 1, len(documents))[0]


def require_judge(cells: Sequence, judge: Judge | None) -> None:
    """Raise when a rerank cell has no judge to choose with (only :func:`iter_grid` yields the candidates unjudged)."""
    if judge is None and any(isinstance(as_cell(cell).strategy, Rerank) for cell in cells):
        raise ValueError("rerank cells need a judge: pass judge=faithkit.generation.rerank.Judges(model, tokenizer)")


def generate_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence,
    options: GenerationOptions | None = None,
    **keywords,
) -> list[list]:
    """Responses for every cell: ``responses[cell][context]``.

    Each cell's responses equal :func:`~faithkit.decoding.generate` with that cell's strategy and search, token
    for token, but a context's prompt work is paid once per batch rather than once per cell, and cells that decode
    identically are decoded once (see :func:`iter_grid`, which yields them as they finish). ``options``: a
    :class:`GenerationOptions`; its fields given as keywords (``max_new_tokens=4``) change it (``max_new_tokens``
    unset: the model's generation config's, else 40). The other keywords are :func:`iter_grid`'s.

    Args:
        model (`PreTrainedModel`): the generator.
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer.
        documents (`Sequence[str]`): one grounding document per context.
        histories (`Sequence`): one dialogue history per context.
        cells (`Sequence`): :class:`~faithkit.decoding.Cell` s, ``(strategy, search)`` pairs, or strategies (greedy).
        options (`GenerationOptions`, *optional*): shared by the cells (each names its own search).
        **keywords (`Any`): :class:`GenerationOptions` fields but ``do_sample``, and :func:`iter_grid`'s keywords.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import PMI, Plain, generate_grid
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> generate_grid(model, tokenizer, ["The Eiffel Tower is 330 metres tall."], [["How tall is the Eiffel Tower?"]],
    ...               [Plain(), PMI()], max_new_tokens=12)  # both greedy: one generate call for the two
    [['The Eiffel Tower is 330 meters tall.'], ['The Eiffel Tower is 330 metres tall.']]
    ```
    """
    options = options_of(model, options, keywords, [name for name in OPTION_NAMES if name != "do_sample"])
    require_judge(cells, keywords.get("judge"))
    return collect(
        iter_grid(model, tokenizer, documents, histories, cells, options, **keywords), len(cells), len(documents)
    )


def collect(grid: Iterable[tuple[int, list[int], list]], cells: int, contexts: int) -> list[list]:
    """``responses[cell][context]`` from what :func:`iter_grid` yields."""
    results: list[list] = [[None] * contexts for _ in range(cells)]
    for cell, indices, responses in grid:
        for i, response in zip(indices, responses):
            results[cell][i] = response
    return results


@torch.no_grad()
def iter_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence,
    options: GenerationOptions | None = None,
    **keywords,
) -> Iterator[tuple[int, list[int], list]]:
    """Yield ``(cell index, context indices, responses)`` as each cell finishes each batch of contexts.

    ``cells``: :class:`~faithkit.decoding.strategies.Cell` ``(strategy, search)`` pairs (a strategy or its dict
    alone means greedy search). ``options`` (:class:`GenerationOptions`, default its defaults), taken whole:
    ``num_beams`` is the beams of the beam and beam_sample cells, ``temperature`` and ``top_k`` apply to the
    sampling cells (a grid without one ignores them), the rest to all; ``do_sample`` is not read (each cell
    names its search). Batches are made as generate makes them (:func:`length_order`, ``batch_size`` contexts);
    each batch's prompts are prepared once for all cells, each decode of the plan (:func:`plan_grid`) runs once
    per batch and is yielded under every cell it serves, and a batch's greedy decodes run as one generate call
    (:func:`~faithkit.decoding.joint.joint_runs`). Rerank cells take the plain greedy decode and their
    candidates', then one ``judge`` call per cell and batch; without a judge they yield each context's
    ``[greedy, *candidates]`` for the caller to judge (the sweep does, in its judge pass).

    ``keywords``: the :class:`GridInputs` (``template``, ``seeds``, ``judge``, ``seconds``: at each yield the
    cell's own decoding seconds on that batch, a joint decode's shared among its cells by rows, a decode that
    serves several cells counted for the first one yielded, the batch's prompt preparation for none); the rest
    (``logits_processor``, …) go to ``model.generate``.
    """
    options = options or GenerationOptions()
    inputs = GridInputs(**{name: keywords.pop(name) for name in GridInputs._fields if name in keywords})
    plan = plan_grid(model, cells, options)
    _check_grid_inputs(documents, histories, plan, options, inputs, keywords)
    context_room(model, tokenizer, options.max_new_tokens)  # too many new tokens fail before any batch runs
    runner = _GridRunner(model, tokenizer, plan, options, inputs, keywords)
    order = length_order(documents, histories)
    for start in range(0, len(order), options.batch_size):
        chunk = order[start : start + options.batch_size]
        seeds = None if inputs.seeds is None else [inputs.seeds[i] for i in chunk]
        for index, responses in runner.decode([documents[i] for i in chunk], [histories[i] for i in chunk], seeds):
            if inputs.seconds is not None:
                inputs.seconds[index] = runner.charged[index]
            yield index, chunk, responses


def _check_grid_inputs(documents, histories, plan: GridPlan, options, inputs: GridInputs, generate_kwargs) -> None:
    """Raise for inputs the grid cannot run, before any batch does."""
    if len(documents) != len(histories):
        raise ValueError(
            f"documents and histories must have the same length, got {len(documents)} and {len(histories)}"
        )
    seeds = inputs.seeds
    if seeds is not None and not plan.sampled:
        raise ValueError("seeds apply to sampling only; pass do_sample=True as well, or no seeds")
    if seeds is not None and len(seeds) != len(documents):
        raise ValueError(f"seeds need one per context, got {len(seeds)} for {len(documents)} contexts")
    if seeds is None and plan.sampled and options.seed is not None:
        raise ValueError(
            f"seed {options.seed} seeds each row with its id: pass seeds=options.row_seeds(ids), one per context"
        )
    parameters = [name for name in PARAMETER_KEYWORDS if name in generate_kwargs]
    if parameters:
        raise ConfigError(
            f"{', '.join(f'{key}=' for key in parameters)}: a strategy holds its parameters, e.g. "
            "generate(model, tokenizer, documents, histories, PMI(alpha=0.25, top_p=0.6)) or, in a grid, "
            "Cell(PMI(alpha=0.25, top_p=0.6), 'greedy')"
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
    given = [name for name in OPTION_NAMES if name in generate_kwargs]
    if given:
        raise ValueError(
            f"iter_grid takes {', '.join(given)} in its options: pass "
            f"options=GenerationOptions({', '.join(f'{name}=…' for name in given)})"
        )


class _GridRunner:
    """A grid's fixed settings; :meth:`decode` runs one batch, each decode of the plan once for all its cells."""

    def __init__(self, model, tokenizer, plan: GridPlan, options: GenerationOptions, inputs: GridInputs, keywords):
        self.model, self.tokenizer, self.plan, self.options, self.judge = model, tokenizer, plan, options, inputs.judge
        self.template = inputs.template or options.template(model, tokenizer)
        self.extra = list(keywords.pop("logits_processor", None) or [])
        self.generate_kwargs = {"pad_token_id": pad_token_id(tokenizer), "max_new_tokens": options.max_new_tokens}
        self.generate_kwargs.update(keywords)
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

    def decode(self, documents: list, histories: list, seeds) -> Iterator[tuple[int, list]]:
        """``(cell index, responses)`` for every cell, in order, on one batch of contexts."""
        self.seconds, self.charged, self._counted = {}, {}, set()
        inputs = build_inputs(
            self.model, self.tokenizer, documents, histories, self.template, self.options, self.plan.views
        )
        batch = PreparedBatch(self.model, inputs, self.plan.views)
        joint = joint_runs(batch, self.plan.runs, self.extra, self.options.max_new_tokens)
        done: dict[tuple, list] = {}  # this batch's decodes by key
        for index, cell in enumerate(self.plan.cells):
            if isinstance(cell.strategy, Rerank):
                judged = 0.0
                also = [key for key, _ in also_cells(cell.strategy)]
                if cell.decode_key not in done:  # equal rerank cells are judged once
                    greedy = self._responses(batch, done, joint, GREEDY.decode_key, seeds)
                    candidates = self._responses(batch, done, joint, cell.strategy.candidates_key(), seeds)
                    extra = [self._responses(batch, done, joint, key, seeds) for key in also]
                    candidates = [[*drawn, *more] for drawn, *more in zip(candidates, *extra)]
                    started = time.monotonic()
                    done[cell.decode_key] = (
                        [[first, *rest] for first, rest in zip(greedy, candidates)]
                        if self.judge is None
                        else [
                            c.response
                            for c in rerank(cell.strategy, self.judge, documents, histories, greedy, candidates)
                        ]
                    )
                    judged = time.monotonic() - started
                self._charge(index, [GREEDY.decode_key, cell.strategy.candidates_key(), *also], judged)
                yield index, done[cell.decode_key]
            else:
                responses = self._responses(batch, done, joint, cell.decode_key, seeds)
                self._charge(index, [cell.decode_key])
                yield index, responses

    def _responses(self, batch: PreparedBatch, done: dict, joint: dict, key: tuple, seeds) -> list:
        """The responses of the decode ``key`` (a cell's :attr:`~Cell.decode_key`), made on first request: with every
        run of its joint group (:func:`~faithkit.decoding.joint.joint_runs`) in one generate call if it has one, else
        alone."""
        if key not in done:
            started = time.monotonic()
            if key in joint:
                outputs = decode_jointly(self.model, batch, joint[key], self.generate_kwargs)
                decoded = [(run.cell.decode_key, run, output) for run, output in zip(joint[key], outputs)]
            else:
                run = self.plan.runs[key]  # a rerank cell's candidates run under its candidates_key
                seeded = seeds if run.sampled else None
                decoded = [(key, run, run.generate(self.model, batch, seeded, self.extra, self.generate_kwargs))]
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
