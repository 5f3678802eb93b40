"""A ``strategies`` entry of a sweep config as its cells: every search mode times every combination of values.

An entry names a strategy and gives some of its parameters as lists (``{name: pmi, alpha: [0,
0.5], search: greedy}``); the parameters it leaves out take their declared grid
(:func:`faithkit.settings.options.default_grid`).
"""

from __future__ import annotations

from itertools import product

from ..decoding import Cell, get_strategy, strategy_from_dict
from ..decoding.strategies import STRATEGIES
from ..errors import ConfigError
from ..settings.options import default_grid

STRATEGY_KEYS = ("name", "search")
"""The keys of a ``strategies`` entry besides the strategy's own parameters."""


def entry_size(entry: dict, search: str) -> int:
    """How many cells :func:`entry_cells` gives at most, counted without building one (an unknown strategy counts
    its entry's values: :func:`entry_cells` names it)."""
    cls = STRATEGIES.get(str(entry.get("name")))
    values = {**default_grid(cls), **entry} if cls is not None else entry
    cells = len(items(entry.get("search", search)))
    for key, value in values.items():
        cells *= len(items(value)) if key not in STRATEGY_KEYS else 1
    return cells


def entry_cells(entry: dict, search: str, where: str) -> list[Cell]:
    """The entry's cells, search mode by search mode, each checked; ``search`` is the sweep's, for an entry
    that names none, and ``where`` (``strategies[1]: ``) prefixes a mistake's message."""
    try:
        cls = get_strategy(str(entry.get("name")))
    except ConfigError as error:
        raise ConfigError(f"{where}{error}") from None
    grid = {key: items(value) for key, value in {**default_grid(cls), **entry}.items() if key not in STRATEGY_KEYS}
    for key, values in grid.items():
        if not values:
            raise ConfigError(f"{where}{cls.name}: {key} is empty; give at least one value or leave it out")
    cells = []
    for mode in items(entry.get("search", search)):
        for point in product(*grid.values()):
            try:
                strategy = strategy_from_dict({"name": cls.name, **dict(zip(grid, point))})
                cells.append(Cell(strategy, str(mode).strip()).check())
            except ConfigError as error:
                raise ConfigError(f"{where}{error}") from None
    return cells


def items(value) -> list:
    """A list, a comma-separated text or one value as a list of values."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return [item for item in value.split(",") if item.strip()]
    return [value]
