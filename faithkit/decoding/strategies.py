"""Decoding strategies: one seam for plain decoding, PMI-DECODE, CAD, AdaCAD and reranking.

A strategy (:class:`~faithkit.decoding.base.Strategy`) is a frozen dataclass of its
parameters plus what :func:`~faithkit.decoding.iter_grid` needs to run it.
:data:`STRATEGIES` lists them the way :mod:`faithkit.metrics.registry` lists metrics, so
adding one is a class and an entry here; :func:`strategy_from_dict` builds one from a config
entry such as ``{name: pmi, alpha: 0.25, top_p: 0.6}``, and the command line's flags derive
from their fields (:func:`add_parameter_flags`).

Known identities, so callers run one decode for cells that are the same
(:meth:`Strategy.decode_key`): PMI-DECODE with ``alpha=0`` is plain decoding under greedy
search at any ``top_p`` (the best token is always in the top-p set) and under every search
with ``top_p=1``; CAD with ``alpha=0`` is plain decoding. (Beam search with ``alpha=0,
top_p<1`` is not: a beam may not extend with tokens outside its top-p set.) Greedy
CAD(alpha) ranks tokens exactly as greedy PMI-DECODE(alpha / (1 + alpha), top_p=1): both
scores are ``log P(y|d,h) - w log P(y|h)`` up to a positive factor.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import NamedTuple

from ..errors import ConfigError
from ..settings.numbers import finite_float
from ..settings.options import (
    FlagError,
    OptionError,
    base_type,
    flag,
    flag_help,
    from_mapping,
    mark_declared,
    value_parser,
)
from .base import Plain, Strategy
from .two_view.strategies import CAD, PMI, AdaCAD
from .rerank import BEAM_CANDIDATE, Faithful, Rerank

__all__ = [
    "STRATEGIES",
    "also_decodes",
    "STRATEGY_NAMES",
    "Cell",
    "add_parameter_flags",
    "as_cell",
    "shared_decode",
    "get_strategy",
    "parameter_fields",
    "strategy_from_args",
    "strategy_from_dict",
    "strategy_from_text",
    "written_forms",
]

STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (Plain, PMI, CAD, AdaCAD, Rerank, Faithful)}
STRATEGY_NAMES = tuple(STRATEGIES)


def get_strategy(name: str) -> type[Strategy]:
    """The strategy class registered as ``name``; an unknown name is a :class:`ConfigError` listing the known ones.

    Args:
        name (`str`): a name of :data:`STRATEGIES` (``plain``, ``pmi``, ``cad``, ``adacad``, ``rerank``).

    Examples:

    ```python
    >>> from faithkit.decoding import get_strategy
    >>> get_strategy("cad")(alpha=1)
    CAD(alpha=1)
    >>> get_strategy("greedy")  # a search mode, not a strategy
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: unknown strategy 'greedy'; choose one of plain, pmi, cad, adacad, rerank, faithful
    ```
    """
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy '{name}'; choose one of {', '.join(STRATEGY_NAMES)}")
    return STRATEGIES[name]


def strategy_from_dict(spec: Mapping | str | Strategy, where: str = "") -> Strategy:
    """A strategy from a config entry: ``{"name": "pmi", "alpha": 0.25}`` (missing parameters: their defaults), or a name.

    Unknown names or parameters and out-of-range values raise :class:`ConfigError` naming them, so a config file's
    mistake is one line that says where it is.

    Args:
        spec (`Mapping`, `str` or `Strategy`): the entry, a strategy's name, or a strategy (returned as it is).
        where (`str`, defaults to ""): prefixes the error message, e.g. ``evaluation.strategies[1]: ``.

    Examples:

    ```python
    >>> from faithkit.decoding import strategy_from_dict
    >>> strategy_from_dict({"name": "pmi", "alpha": 0.5}), strategy_from_dict("adacad")
    (PMI(alpha=0.5, top_p=0.6), AdaCAD())
    >>> strategy_from_dict({"name": "pmi", "alpha": 7}, where="evaluation.strategies[1]: ")
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: evaluation.strategies[1]: pmi: alpha must be in [0, 1], got 7 (0 = plain decoding, 1 = rank by PMI alone)
    ```
    """
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping) or "name" not in spec:
        raise ConfigError(
            f"{where}a strategy is a mapping with a 'name' ({', '.join(STRATEGY_NAMES)}) and its "
            f"parameters, e.g. {{name: pmi, alpha: 0.25, top_p: 0.6}}; got {spec!r}"
        )
    parameters = {key: value for key, value in spec.items() if key != "name"}
    try:
        cls = get_strategy(str(spec["name"]))
    except ConfigError as error:
        raise ConfigError(f"{where}{error}") from None
    try:
        strategy = from_mapping(cls, parameters, where=f"{cls.name}: ")
        if isinstance(strategy, Rerank):
            also_decodes(strategy)  # checked now, before any model loads
        return strategy
    except ConfigError as error:
        raise ConfigError(f"{where}{error}") from None


def also_decodes(strategy: Rerank) -> list[Strategy | None]:
    """A rerank strategy's ``also`` decodes in order: None for the beam candidate
    (:data:`~faithkit.decoding.rerank.BEAM_CANDIDATE`), else the strategy it names, decoded greedily; a name that is no
    decode is a :class:`ConfigError` naming it.

    Args:
        strategy (`Rerank`): the rerank strategy; its ``also`` holds decodes joined by ``+``.

    Examples:

    ```python
    >>> from faithkit.decoding.strategies import also_decodes, strategy_from_dict
    >>> also_decodes(strategy_from_dict({"name": "rerank", "also": "beam+cad:alpha=1"}))
    [None, CAD(alpha=1.0)]
    ```
    """
    decodes: list[Strategy | None] = []
    for text in filter(None, (part.strip() for part in str(strategy.also).split("+"))):
        if text == BEAM_CANDIDATE:
            decodes.append(None)
            continue
        decode = strategy_from_dict(strategy_from_text(text, where=f"{strategy.name}: --also "))
        if isinstance(decode, Rerank):
            raise ConfigError(f"{strategy.name}: --also {text}: a candidate is one decode, not another rerank")
        decodes.append(decode)
    return decodes


def strategy_from_text(text: str, where: str = "") -> dict:
    """The config entry of a strategy written on one line, checked: ``NAME``, ``NAME:PARAM=VALUE,…``
    (``cad:alpha=1``) or a YAML/JSON mapping (``{name: cad, alpha: 1}``), as a command line gives it. The entry
    holds the parameters written, as numbers; the others keep their defaults.

    Args:
        text (`str`): the strategy as written.
        where (`str`, defaults to ""): prefixes a mistake's :class:`ConfigError`, before the text (the flag, say).

    Examples:

    ```python
    >>> from faithkit.decoding.strategies import strategy_from_text
    >>> strategy_from_text("cad:alpha=1"), strategy_from_text("{name: pmi, top_p: 0.9}")
    ({'name': 'cad', 'alpha': 1.0}, {'name': 'pmi', 'top_p': 0.9})
    >>> strategy_from_text("cad:alpha", where="--strategy ")
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: --strategy cad:alpha: 'alpha' is no PARAMETER=VALUE; write e.g. cad:alpha=1
    ```
    """
    text = text.strip()
    where = f"{where}{text}: "
    if text.startswith("{"):
        import yaml

        try:
            spec = yaml.safe_load(text)
        except yaml.YAMLError:
            spec = None
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{where}not a mapping; write {{name: cad, alpha: 1}}, or cad:alpha=1")
    else:
        name, _, assignments = text.partition(":")
        spec = {"name": name.strip()}
        for assignment in filter(str.strip, assignments.split(",")):
            key, equals, value = assignment.partition("=")
            if not equals or not key.strip():
                raise ConfigError(
                    f"{where}{assignment.strip()!r} is no PARAMETER=VALUE; write e.g. {name.strip() or 'cad'}:alpha=1"
                )
            spec[key.strip()] = value.strip()
    strategy = strategy_from_dict(spec, where=where)
    return {"name": strategy.name, **{key: getattr(strategy, key) for key in spec if key != "name"}}


def written_forms() -> str:
    """Every strategy as :func:`strategy_from_text` reads it, with its parameters, for help texts and errors; a
    strategy that is another with its own defaults (faithful: rerank's) names it.

    Examples:

    ```python
    >>> from faithkit.decoding.strategies import written_forms
    >>> written_forms().split("; ")[:4]
    ['plain', 'pmi:alpha=,top_p=', 'cad:alpha=', 'adacad']
    >>> written_forms().split("; ")[-2:]
    ['rerank:n=,candidate_search=,judge=,fluency_tolerance=,fluency_view=,fluency_reference=,also=', "faithful (rerank's)"]
    ```
    """

    def form(cls) -> str:
        base = next((other for other in STRATEGIES.values() if other is not cls and issubclass(cls, other)), None)
        if base is not None:  # faithful: rerank's parameters, its own defaults
            return f"{cls.name} ({base.name}'s)"
        names = ",".join(f"{item.name}=" for item in dataclasses.fields(cls))
        return cls.name + (f":{names}" if names else "")

    return "; ".join(form(cls) for cls in STRATEGIES.values())


def parameter_fields() -> dict[str, list[tuple[type[Strategy], dataclasses.Field]]]:
    """Every strategy parameter by name, with the strategies that take it and their declarations: one flag each.

    Examples:

    ```python
    >>> from faithkit.decoding.strategies import parameter_fields
    >>> parameter_fields()["alpha"][1][0].name, [cls.name for cls, _ in parameter_fields()["also"]]
    ('cad', ['rerank', 'faithful'])
    ```
    """
    table: dict[str, list] = {}
    for cls in STRATEGIES.values():
        for item in dataclasses.fields(cls):
            table.setdefault(item.name, []).append((cls, item))
    return table


def add_parameter_flags(group) -> None:
    """One command-line flag per strategy parameter (``--alpha``, ``--top-p``); unset, each strategy's default applies.

    A flag whose strategies declare one range checks it as it parses; ``--alpha`` (pmi: [0, 1], cad: at least 0)
    is checked against the chosen strategy's, by :func:`strategy_from_args`, in the same words.

    Args:
        group (`argparse._ActionsContainer`): the parser or argument group to add the flags to.

    Examples:

    ```python
    >>> import argparse
    >>> from faithkit.decoding.strategies import add_parameter_flags, strategy_from_args
    >>> parser = argparse.ArgumentParser(prog="faithkit generate")
    >>> add_parameter_flags(parser)
    >>> strategy_from_args("cad", parser.parse_args(["--alpha", "1"]))
    CAD(alpha=1.0)
    ```
    """
    for name, owners in parameter_fields().items():
        described = "; ".join(f"{cls.name}: {flag_help(item)}" for cls, item in owners)
        kind = base_type(typing.get_type_hints(owners[0][0])[name])
        declarations = {_checked_part(item) for _, item in owners}
        if len(declarations) == 1:
            parse = value_parser(owners[0][1], kind)
        else:
            parse = finite_float if kind in (int, float) else str
        action = group.add_argument(f"--{flag(name)}", type=parse, default=None, metavar=name.upper(), help=described)
        mark_declared(action, owners, None)


def _checked_part(item: dataclasses.Field) -> tuple:
    """What a flag checks of a declaration: its range and choices."""
    return tuple(item.metadata.get(key) for key in ("low", "high", "low_open", "high_open", "meaning", "choices"))


def strategy_from_args(name: str, args) -> Strategy:
    """The strategy ``name`` with the parameter flags given on the command line; a flag it does not take, or a value
    out of its range, is an error naming the flag (:class:`~faithkit.settings.options.FlagError`).

    Args:
        name (`str`): the ``--strategy``.
        args (`argparse.Namespace`): the parsed command line, with the flags of :func:`add_parameter_flags`.

    Examples:

    ```python
    >>> import argparse
    >>> from faithkit.decoding.strategies import add_parameter_flags, strategy_from_args
    >>> parser = argparse.ArgumentParser(prog="faithkit generate")
    >>> add_parameter_flags(parser)
    >>> strategy_from_args("adacad", parser.parse_args(["--alpha", "1"]))
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: --alpha does not apply to --strategy adacad; its parameters are none
    >>> strategy_from_args("pmi", parser.parse_args(["--alpha", "2"]))  # in range for cad, not for pmi
    Traceback (most recent call last):
      ...
    faithkit.settings.options.FlagError: argument --alpha: must be in [0, 1], got 2 (0 = plain decoding, 1 = rank by PMI alone)
    ```
    """
    cls = get_strategy(name)
    given = {key: getattr(args, key) for key in parameter_fields() if getattr(args, key, None) is not None}
    own = {item.name for item in dataclasses.fields(cls)}
    foreign = [f"--{flag(key)}" for key in given if key not in own]
    if foreign:
        raise ConfigError(
            f"{', '.join(foreign)} {'do' if len(foreign) > 1 else 'does'} not apply to --strategy "
            f"{name}; its parameters are {', '.join('--' + flag(k) for k in own) or 'none'}"
        )
    try:
        strategy = cls(**given)  # the flags' values are typed already: the constructor's range check is the one check
    except OptionError as error:
        raise FlagError(flag(error.name), error.reason) from None
    if isinstance(strategy, Rerank):
        also_decodes(strategy)  # a decode it names that is none: one error line, before any model loads
    return strategy


class Cell(NamedTuple):
    """One decode of a grid: a strategy under a search mode.

    Attributes:
        strategy (`Strategy`): what ranks the tokens.
        search (`str`, defaults to "greedy"): a mode of :data:`~faithkit.decoding.SEARCHES`.

    Examples:

    ```python
    >>> from faithkit.decoding import PMI, Cell
    >>> cell = Cell(PMI(), "sample")
    >>> cell.label, cell.sampled
    ('pmi_a0.25_p0.6_sample', True)
    >>> Cell(PMI(), "beam_sample").check()  # generate would sample each half on its own
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: strategy pmi does not support beam_sample search (generate samples every row on its own, so the history-only rows could not follow their conditioned rows); it supports greedy, beam, sample
    ```
    """

    strategy: Strategy
    search: str = "greedy"

    @property
    def label(self) -> str:
        """``pmi_a0.25_p0.6`` under greedy search, ``plain_beam`` / ``cad_a1_sample`` under the others."""
        return self.strategy.label if self.search == "greedy" else f"{self.strategy.label}_{self.search}"

    @property
    def decode_key(self) -> tuple:
        return self.strategy.decode_key(self.search)

    @property
    def sampled(self) -> bool:
        """Whether this cell draws at random (its rows need their seeds)."""
        return self.strategy.sampled(self.search)

    @property
    def option_searches(self) -> tuple[str, ...]:
        """The searches whose generation options apply to this cell (its own, and sampling when it samples)."""
        return (self.search, "sample") if self.sampled and self.search != "sample" else (self.search,)

    def check(self) -> Cell:
        self.strategy.check_search(self.search)
        return self


def shared_decode(cell: Cell) -> Cell:
    """The cell whose decode ``cell`` repeats token for token: plain decoding under the same search when the
    strategy says it decodes as plain (:meth:`~faithkit.decoding.Strategy.decodes_as_plain`), else itself.

    The grid decodes such cells once (:func:`~faithkit.decoding.iter_grid`), and the sweep writes and
    scores them once.

    Args:
        cell (`Cell`): a strategy under a search mode.

    Examples:

    ```python
    >>> from faithkit.decoding import PMI, Cell, shared_decode
    >>> shared_decode(Cell(PMI(alpha=0)))  # greedy: the best token is in every top-p set
    Cell(strategy=Plain(), search='greedy')
    >>> shared_decode(Cell(PMI(alpha=0), "beam"))  # a beam may want a token outside it
    Cell(strategy=PMI(alpha=0, top_p=0.6), search='beam')
    ```
    """
    return Cell(Plain(), cell.search) if cell.strategy.decodes_as_plain(cell.search) else cell


def as_cell(cell) -> Cell:
    """A :class:`Cell` from a Cell, a ``(strategy, search)`` pair, a strategy or its dict (greedy search), checked:
    the grid takes cells written any of these ways.

    Args:
        cell (`Cell`, `tuple`, `Strategy`, `dict` or `str`): the cell, or what :func:`strategy_from_dict` reads.

    Examples:

    ```python
    >>> from faithkit.decoding.strategies import as_cell
    >>> as_cell(({"name": "cad", "alpha": 1}, "beam")), as_cell("pmi")
    (Cell(strategy=CAD(alpha=1.0), search='beam'), Cell(strategy=PMI(alpha=0.25, top_p=0.6), search='greedy'))
    ```
    """
    if isinstance(cell, Cell):
        return cell.check()
    if isinstance(cell, tuple) and len(cell) == 2 and isinstance(cell[1], str):
        return Cell(strategy_from_dict(cell[0]), cell[1]).check()
    return Cell(strategy_from_dict(cell)).check()
