"""An earlier sweep's picks as strategies to run again: ``chosen: [runs/sweep/best.json]`` in a sweep config.

``best.json`` holds each strategy's chosen cell under ``by_strategy`` (its strategy, search mode
and parameters, in the table's column names); :func:`chosen_entries` turns them back into
``strategies`` entries of one value each, checking the file's shape on the way.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from ..decoding import Cell, strategy_from_dict
from ..decoding.strategies import STRATEGIES
from ..errors import ConfigError, InputError

PARAMETER_COLUMNS = {"n": "candidates"}
"""Table columns of strategy parameters whose own name the table uses already (``n``: the contexts measured)."""


def chosen_entries(path: Path) -> list[dict]:
    """The ``strategies`` entries of each strategy's pick in an earlier sweep's ``best.json`` (its strategy, search
    and parameters); a file not in the shape a sweep writes is one InputError naming the field."""
    from ..data.schema import TEXT, MapOf, Object, check_schema, read_json_file

    fix = "give the best.json of a finished sweep (or rerun that sweep to write it again)"
    picks = read_json_file(path, Object({"by_strategy": MapOf(Object({"strategy": TEXT, "search": TEXT}))}), fix)
    if not picks["by_strategy"]:
        raise InputError(
            f"{path}: by_strategy is empty: that sweep chose no strategy (it ran plain decoding alone), so it gives "
            "nothing to run again; give the best.json of a sweep that ran a strategy, or leave this one out"
        )
    entries = []
    for name, pick in picks["by_strategy"].items():
        cls = STRATEGIES.get(pick["strategy"])
        if cls is None:
            raise InputError(
                f"{path}: by_strategy.{name}.strategy is {pick['strategy']!r} where one of "
                f"{', '.join(STRATEGIES)} is expected; {fix}"
            )
        own = {PARAMETER_COLUMNS.get(f.name, f.name): _parameter_schema(f.default) for f in fields(cls)}
        check_schema(pick, Object(own), path, fix, path=f"by_strategy.{name}")
        values = {f.name: pick[PARAMETER_COLUMNS.get(f.name, f.name)] for f in fields(cls)}
        try:
            Cell(strategy_from_dict({"name": cls.name, **values}), pick["search"]).check()
        except ConfigError as error:
            raise InputError(f"{path}: by_strategy.{name}: {error}; {fix}") from None
        entries.append({"name": cls.name, "search": pick["search"], **{key: [value] for key, value in values.items()}})
    return entries


def _parameter_schema(default):
    """A strategy parameter's value in best.json: of its default's kind (a number for a float one)."""
    from ..data.schema import BOOLEAN, NUMBER, TEXT, WHOLE

    return (
        BOOLEAN
        if isinstance(default, bool)
        else WHOLE
        if isinstance(default, int)
        else TEXT
        if isinstance(default, str)
        else NUMBER
    )
