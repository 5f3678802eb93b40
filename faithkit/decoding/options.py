"""Decoding options declared once: each is one dataclass field whose metadata holds its help, range and grid.

:func:`option` makes such a field. Everything else reads it: :func:`check` (the one range
check, with the message that names the option and the fix), :func:`add_flags` (the
command-line flags), :func:`from_mapping` (YAML keys and ``{name: value}`` dicts, unknown
keys rejected) and :func:`default_grid`. Strategy parameters
(:mod:`faithkit.decoding.strategies`) and :class:`GenerationOptions` are declared this way,
so ``faithkit generate``, the sweep, training hooks and fingerprints cannot disagree on a
name, default or range.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import hashlib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..numbers import check_finite, finite_float
from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE, PromptTemplate

SEARCHES = ("greedy", "beam", "sample", "beam_sample")
"""Search modes: best token, beam search, sampling, beam sampling (``num_beams`` > 1 with ``do_sample``)."""


def search_of(num_beams: int = 1, do_sample: bool = False) -> str:
    """The search mode of generate's ``num_beams`` and ``do_sample``: greedy, beam, sample or beam_sample."""
    if do_sample:
        return "beam_sample" if num_beams > 1 else "sample"
    return "beam" if num_beams > 1 else "greedy"


def option(
    default, help: str, *, low=None, high=None, low_open: bool = False, grid: Sequence | None = None, meaning: str = ""
):
    """A dataclass field with its help, allowed range (``[low, high]``, ``(low, high]`` with ``low_open``) and grid.

    ``meaning`` explains the range's ends in messages ("0 = plain decoding"); ``grid`` is the
    values a sweep tries when none are given.
    """
    metadata = {
        "help": help,
        "low": low,
        "high": high,
        "low_open": low_open,
        "meaning": meaning,
        "grid": tuple(grid) if grid is not None else None,
    }
    return dataclasses.field(default=default, metadata=metadata)


def option_like(cls, name: str):
    """The field ``name`` of ``cls`` again, for another dataclass that takes the same option (same default, help, range)."""
    item = next(item for item in dataclasses.fields(cls) if item.name == name)
    return dataclasses.field(default=item.default, metadata=item.metadata)


def range_text(item: dataclasses.Field) -> str:
    """``[0, 1]``, ``(0, 1]``, ``at least 1``, ``above 0`` from the field's metadata."""
    low, high, low_open = item.metadata.get("low"), item.metadata.get("high"), item.metadata.get("low_open")
    if low is not None and high is not None:
        return f"{'(' if low_open else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"above {low:g}" if low_open else f"at least {low:g}"
    return f"at most {high:g}" if high is not None else ""


def check(instance, where: str = "") -> None:
    """Raise :class:`ConfigError` for the first field of ``instance`` that is NaN, infinite or outside its declared
    range.

    The message names the option as a flag (``--alpha``, which is also its YAML key with
    underscores) and says which values are allowed; ``where`` prefixes it (``pmi: ``).
    """
    for item in dataclasses.fields(instance):
        value = getattr(instance, item.name)
        check_finite(value, f"{where}--{flag(item.name)}")
        if value is None or isinstance(value, bool) or "low" not in item.metadata:
            continue
        low, high, low_open = item.metadata["low"], item.metadata["high"], item.metadata["low_open"]
        below = low is not None and (value <= low if low_open else value < low)
        above = high is not None and value > high
        if below or above:
            meaning = f" ({item.metadata['meaning']})" if item.metadata.get("meaning") else ""
            allowed = range_text(item)
            preposition = "in " if allowed[0] in "[(" else "" if allowed.startswith("above") else "of "
            raise ConfigError(
                f"{where}--{flag(item.name)} {value:g} is out of range: use a value {preposition}{allowed}{meaning}"
            )


def flag(name: str) -> str:
    return name.replace("_", "-")


def _without_none(annotation):
    """``X`` out of ``X | None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return args[0]
    return annotation


def base_type(annotation):
    """The type inside ``X | None``; ``list[X]`` and ``dict[K, V]`` give ``list`` and ``dict``."""
    inner = _without_none(annotation)
    return typing.get_origin(inner) or inner


def is_optional(annotation) -> bool:
    return type(None) in typing.get_args(annotation)


def coerce(value, annotation, where: str):
    """``value`` (from YAML, a dict or the command line's text) as the field's type, or a ConfigError naming it.

    Numbers may come as text (YAML reads ``1e-4`` as a string); a ``list[dict]`` item may be a
    name alone (a strategy's, say).
    """
    if value is None:
        if is_optional(annotation):
            return None
        raise ConfigError(f"{where} cannot be empty; give a value or leave it out for the default")
    kind = base_type(annotation)
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "yes", "false", "no"):
            return text in ("true", "yes")
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
        if number is not None:
            check_finite(number, where)
            return number
    elif kind is str:
        if isinstance(value, str):
            return value
    elif kind is list:
        items = _list_item_types(annotation)
        if isinstance(value, list) and all(isinstance(item, items) for item in value):
            return value
    elif kind is dict:
        if isinstance(value, dict):
            return value
    raise ConfigError(f"{where} must be {_expected(annotation)}, got {value!r}")


def _list_item_types(annotation) -> tuple:
    item = (typing.get_args(_without_none(annotation)) or (str,))[0]
    return (str, dict) if item is dict else (str,)


def _expected(annotation) -> str:
    kind = base_type(annotation)
    if kind is list:
        return "a list of names or mappings" if dict in _list_item_types(annotation) else "a list of strings"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}.get(
        kind, str(kind)
    )


def from_mapping(cls, values: Mapping, where: str = ""):
    """``cls(**values)`` with unknown keys rejected (with the closest name) and values coerced to the fields' types."""
    known = {item.name: item for item in dataclasses.fields(cls) if item.init}
    types_ = typing.get_type_hints(cls)
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else (f"its keys are {', '.join(known)}" if known else "it takes no parameters")
            )
            raise ConfigError(f"{where}unknown key '{key}'; {hint}")
    return cls(**{key: coerce(value, types_[key], f"{where}{key}") for key, value in values.items()})


def add_flags(group, cls, defaults: bool = True, names: Sequence[str] | None = None) -> None:
    """One command-line flag per field of ``cls`` (``--max-new-tokens``), typed, with the field's help and default.

    ``defaults=False`` leaves unset flags out of the namespace (``argparse.SUPPRESS``), for
    commands where a flag overrides a config file; ``names`` keeps only those fields. Booleans
    whose default is None or True get ``--x/--no-x``; a False one is a switch.
    """
    types_ = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        if names is not None and item.name not in names:
            continue
        kind = base_type(types_[item.name])
        default = item.default if defaults else argparse.SUPPRESS
        help_text = item.metadata.get("help", "")
        if defaults and item.default is not None and kind is not bool:
            help_text += (
                f" (default {item.default:g})" if isinstance(item.default, float) else f" (default {item.default})"
            )
        if kind is bool:
            action = "store_true" if item.default is False and defaults else argparse.BooleanOptionalAction
            group.add_argument(f"--{flag(item.name)}", action=action, default=default, help=help_text)
        else:
            group.add_argument(
                f"--{flag(item.name)}",
                type=_parser(kind, item.name),
                default=default,
                help=help_text,
                metavar=item.name.upper(),
            )


def _parser(kind, name):
    def parse(text: str):
        if kind is float:
            return finite_float(text)
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'a whole number' if kind is int else 'a number'}, got '{text}'"
            ) from None

    parse.__name__ = name
    return parse


def default_grid(cls) -> dict[str, tuple]:
    """``{parameter: values}`` a sweep tries for ``cls`` when the config gives none (fields without a grid: the default)."""
    return {item.name: item.metadata.get("grid") or (item.default,) for item in dataclasses.fields(cls)}


@dataclass(frozen=True)
class GenerationOptions:
    """Everything about a decode besides the strategy: the search, sampling, batching and prompt layout.

    The search mode follows from ``num_beams`` and ``do_sample`` (:meth:`search`); a grid of
    cells names each cell's mode and takes the beams and sampling options from here.
    ``seed`` seeds every sampled row's own generator together with the row's id
    (:func:`row_seed`), so a row gets the same response whatever batch it lands in and a
    resumed run writes exactly what an uninterrupted one would. Bad values raise in
    :meth:`validate`, before a model loads.
    """

    num_beams: int = option(1, "beams for beam search and beam sampling", low=1)
    num_return_sequences: int = option(1, "responses per row (a list in 'responses')", low=1)
    do_sample: bool = option(False, "sample instead of taking the best token (the strategy's scores are sampled)")
    temperature: float | None = option(None, "sampling temperature on the strategy's scores", low=0, low_open=True)
    top_k: int | None = option(None, "sample among the k best scores only", low=1)
    seed: int | None = option(
        None,
        "random seed for sampling; each row's draw depends only on the seed and its "
        "id, so a resumed run writes what an uninterrupted one would (default 0)",
    )
    max_new_tokens: int = option(40, "longest response in tokens", low=1)
    batch_size: int = option(8, "contexts per generate call", low=1)
    max_context_tokens: int | None = option(
        None,
        "cut longer contexts, keeping their end (default and most: what "
        "the model's context window leaves beside --max-new-tokens)",
        low=1,
    )
    chat: bool | None = option(
        None,
        "use the tokenizer's chat template with the document in the system turn "
        "(default: when the tokenizer has one and the model is decoder-only)",
    )

    @property
    def search(self) -> str:
        """``greedy``, ``beam``, ``sample`` or ``beam_sample``, from ``num_beams`` and ``do_sample``."""
        return search_of(self.num_beams, self.do_sample)

    def validate(self, searches: Sequence[str] | None = None) -> GenerationOptions:
        """Raise :class:`ConfigError` naming the flag and the fix for the first bad value; return self.

        ``searches``: the modes the cells will run (default: :attr:`search`); sampling options
        need a sampling mode, beam modes need ``num_beams`` of at least 2.
        """
        check(self)
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

    def grid_kwargs(self, model, tokenizer, ids: Sequence | None = None, sampled: bool | None = None) -> dict:
        """Keyword arguments of :func:`~faithkit.decoding.iter_grid` / ``generate_grid`` (each cell names its search).

        ``ids`` (the rows' ids) seed each sampled row's generator; sampling (``sampled``, by
        default :attr:`do_sample`: whether any cell samples) needs them.
        """
        kwargs = {
            "template": self.template(model, tokenizer),
            "batch_size": self.batch_size,
            "max_context_tokens": self.max_context_tokens,
            "max_new_tokens": self.max_new_tokens,
            "num_beams": self.num_beams,
            "num_return_sequences": self.num_return_sequences,
        }
        if self.do_sample if sampled is None else sampled:
            if ids is None:
                raise ValueError("sampling options need the rows' ids to seed each row's generator")
            kwargs["seeds"] = self.row_seeds(ids)
            kwargs.update(
                {name: getattr(self, name) for name in ("temperature", "top_k") if getattr(self, name) is not None}
            )
        return kwargs

    def row_seeds(self, ids: Sequence) -> list[int]:
        """Each row's own seed (:func:`row_seed` of ``seed``, default 0, and the row's id), for sampling."""
        return [row_seed(self.seed or 0, row_id) for row_id in ids]

    def generate_kwargs(self, model, tokenizer, ids: Sequence | None = None, sampled: bool | None = None) -> dict:
        """Keyword arguments of :func:`~faithkit.decoding.generate`: :meth:`grid_kwargs` and ``do_sample``."""
        return {**self.grid_kwargs(model, tokenizer, ids, sampled), "do_sample": self.do_sample}

    def fingerprint(self) -> dict:
        """What the responses depend on: every option but ``batch_size`` (batching changes no text)."""
        return {key: value for key, value in dataclasses.asdict(self).items() if key != "batch_size"}


def default_template(model, tokenizer) -> PromptTemplate:
    """The tokenizer's chat template for decoder-only models that have one (instruct models), else the plain one."""
    if not model.config.is_encoder_decoder and getattr(tokenizer, "chat_template", None):
        return CHAT_TEMPLATE
    return DEFAULT_TEMPLATE


def row_seed(seed: int, row_id) -> int:
    """A row's own seed: a stable hash of the run's seed and the row id (the same in every process and order)."""
    digest = hashlib.sha256(f"{seed}\x00{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
