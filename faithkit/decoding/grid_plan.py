"""Grid planning: which decodes a grid of (strategy, search) cells needs, each decode key once, and how each runs
(a :class:`CellRun` makes its own generate call on a prepared batch).

Cells that decode alike (:attr:`~faithkit.decoding.strategies.Cell.decode_key`) share one run; a rerank cell needs
plain greedy decoding and its candidates. :func:`~faithkit.decoding.iter_grid` runs the plan batch by batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import torch
from transformers import LogitsProcessor

from ..serving import models
from ..serving.precision import check_finite
from .generation_options import GenerationOptions
from .prefill import PreparedBatch, select_contexts
from .rerank import BEAM_CANDIDATE_BEAMS, Rerank, candidate_seeds
from .strategies import Cell, also_decodes, as_cell, shared_decode
from .base import Plain, Sampling


class FiniteLogits(LogitsProcessor):
    """Stops generate with a :class:`~faithkit.errors.PrecisionError` naming ``dtype`` (the model's) when the
    model's scores hold NaN or +inf, as a float16 overflow gives: they would decode as empty responses.
    :func:`faithkit.decoding.generate` puts it first for every strategy.

    Args:
        dtype (`str` or `torch.dtype`, *optional*): the model's precision, for the message.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.grid_plan import FiniteLogits
    >>> FiniteLogits("float16")(None, torch.tensor([[0.0, float("nan")]]))
    Traceback (most recent call last):
      ...
    faithkit.errors.PrecisionError: the model's logits are NaN or infinite: the model runs in float16, and half precision overflows in some models (Gemma 3 in float16 does). Load it in bfloat16 or float32: --dtype bfloat16 on the command line, dtype='bfloat16' in faithkit.serving.models.load
    ```
    """

    def __init__(self, dtype=None):
        self.dtype = dtype

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        check_finite(scores, self.dtype)
        return scores


class CellRun(NamedTuple):
    """How to run one cell: generate's search kwargs, and the processors (built per batch for the generators)."""

    cell: Cell
    views: int
    copies: int
    kwargs: dict
    sampled: bool
    sampling: Sampling | None  # when the processors draw the token themselves
    own_seeds: bool = False  # every copy from its own generator (rerank candidates), not in turn from its context's

    def generate(self, model, batch: PreparedBatch, seeds, extra: list, generate_kwargs: dict) -> torch.Tensor:
        """This cell's generate call on one prepared batch: its processors (``extra`` after :class:`FiniteLogits`,
        the strategy's last), its rows drawing from their ``seeds``' generators when it samples."""
        kwargs = batch.for_cell(self.views, self.copies)
        strategy, returns = self.cell.strategy, self.kwargs["num_return_sequences"]
        if self.cell.search == "beam_sample" and seeds is not None:
            return self._beam_sample_per_context(model, kwargs, seeds, extra, generate_kwargs)
        sampling = self.sampling
        if sampling is not None and seeds is not None:
            if self.own_seeds:
                copy_seeds = [own for seed in seeds for own in candidate_seeds(int(seed), returns)]
            else:  # copies of a context draw in turn from its generator
                copy_seeds = [int(seed) for seed in seeds for _ in range(returns)]
            device = models.input_device(model)
            generators = {seed: torch.Generator(device).manual_seed(seed) for seed in dict.fromkeys(copy_seeds)}
            sampling = sampling._replace(generators=[generators[seed] for seed in copy_seeds])
        if sampling is not None and strategy.views == 1 and seeds is None:
            processors = []  # plain sampling from the global RNG: transformers' own
            search_kwargs = {**self.kwargs, **generate_warpers(sampling)}
        else:
            processors = strategy.processors(sampling)
            search_kwargs = self.kwargs
        processors = [FiniteLogits(model.dtype), *extra, *processors]
        return model.generate(**kwargs, logits_processor=processors, **search_kwargs, **generate_kwargs)

    def _beam_sample_per_context(self, model, kwargs: dict, seeds, extra: list, generate_kwargs: dict):
        """Beam sampling with one seed per context: generate draws from the global RNG, so each context runs alone."""
        outputs = []
        for position, seed in enumerate(seeds):
            alone = select_contexts(kwargs, [position], self.views, self.copies)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                outputs.append(model.generate(**alone, logits_processor=list(extra), **self.kwargs, **generate_kwargs))
        width = max(out.shape[1] for out in outputs)
        pad = generate_kwargs["pad_token_id"]
        return torch.cat([torch.nn.functional.pad(out, (0, width - out.shape[1]), value=pad) for out in outputs])


class GridPlan(NamedTuple):
    """What a grid decodes: its cells, and how each decode key runs (cells that decode alike share one run)."""

    cells: list[Cell]
    runs: dict[tuple, CellRun]

    @property
    def views(self) -> int:
        """The views every batch needs: 2 if any run is a two-view strategy, else 1."""
        return max(run.views for run in self.runs.values())

    @property
    def sampled(self) -> bool:
        return any(cell.sampled for cell in self.cells)


GREEDY = Cell(Plain(), "greedy")
"""Plain greedy decoding: a rerank cell's fluency reference and fallback."""


def plan_grid(model, cells: Sequence, options: GenerationOptions) -> GridPlan:
    """The runs a grid of ``cells`` needs under ``options``: each decode key once, run as the cell it decodes as
    (:func:`~faithkit.decoding.strategies.shared_decode`: plain decoding under the same search when the strategy
    decodes as plain); a rerank cell needs plain greedy and its candidates (plain sampling with n returns, each
    from its own seed, or beam search with n beams). A combination the cells cannot run raises here
    (:meth:`GenerationOptions.validate`), before any batch runs.

    Sampling options apply to sampling cells only: without one they are dropped. ``temperature`` and ``top_k``
    unset are the model's generation config's."""
    cells = [as_cell(cell) for cell in cells]
    sampled = any(cell.sampled for cell in cells)
    if not sampled and (options.temperature, options.top_k, options.seed) != (None, None, None):
        options = dataclasses.replace(options, temperature=None, top_k=None, seed=None)
    options.validate([search for cell in cells for search in cell.option_searches])
    config = model.generation_config
    sampling = Sampling(
        temperature=options.temperature or config.temperature or 1.0,
        top_k=(options.top_k if options.top_k is not None else config.top_k) or None,
    )
    beams, returns = options.num_beams, options.num_return_sequences
    runs: dict[tuple, CellRun] = {}
    for cell in cells:
        strategy = cell.strategy
        if isinstance(strategy, Rerank):
            runs.setdefault(GREEDY.decode_key, cell_run(GREEDY, beams, 1, sampling))
            run = cell_run(Cell(Plain(), strategy.candidate_search), strategy.n, strategy.n, sampling)
            runs.setdefault(strategy.candidates_key(), run._replace(own_seeds=True))
            for key, also in also_cells(strategy):
                runs.setdefault(key, cell_run(also, BEAM_CANDIDATE_BEAMS if also.search == "beam" else 1, 1, sampling))
        elif cell.decode_key not in runs:
            runs[cell.decode_key] = cell_run(shared_decode(cell), beams, returns, sampling)
    return GridPlan(cells, runs)


ALSO_BEAM_KEY = ("rerank-beam", BEAM_CANDIDATE_BEAMS)
"""The decode key of a rerank cell's beam candidate: apart from a grid's own beam cells, which take ``num_beams``."""


def also_cells(strategy: Rerank) -> list[tuple[tuple, Cell]]:
    """``(decode key, cell)`` of each of a rerank cell's ``also`` decodes, in order: the beam candidate, and each
    strategy greedily (under its own decode key, so a grid cell decoding the same runs once for both)."""
    cells = []
    for decode in also_decodes(strategy):
        if decode is None:
            cells.append((ALSO_BEAM_KEY, Cell(Plain(), "beam")))
        else:
            cell = Cell(decode, "greedy")
            cells.append((cell.decode_key, shared_decode(cell)))
    return cells


def cell_run(cell: Cell, num_beams: int, num_return_sequences: int, sampling: Sampling) -> CellRun:
    """How ``cell`` runs with these beams and returns; ``sampling``: the draw's temperature and top-k."""
    search, strategy = cell.search, cell.strategy
    beams = num_beams if search in ("beam", "beam_sample") else 1
    sampled = search in ("sample", "beam_sample")
    kwargs = {"num_beams": beams, "num_return_sequences": num_return_sequences, "do_sample": sampled}
    drawn = None
    if search == "sample":  # the processors draw: two views in step, and each row from its own generator
        drawn = sampling
    elif search == "beam_sample":  # plain only (the strategy checked it): generate's own beam sampling
        kwargs.update(generate_warpers(sampling))
    return CellRun(cell, strategy.views, max(beams, num_return_sequences), kwargs, sampled, drawn)


def generate_warpers(sampling: Sampling) -> dict:
    """generate's sampling warpers for the same draw the processors make: temperature and top-k only.

    Set explicitly, so neither transformers' defaults (top_k=50) nor a model's generation
    config (its top_p) add warpers the other strategies do not apply.
    """
    return {"temperature": sampling.temperature, "top_k": sampling.top_k or 0, "top_p": 1.0}
