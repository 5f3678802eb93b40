"""Options declared once: each is one dataclass field whose metadata holds its help, range, choices and grid.

:func:`option` makes such a field. Everything else reads it: :func:`check` (the one range
check), :func:`add_flags` (the command-line flags, which check the same range as they parse),
:func:`from_mapping` (YAML keys and ``{name: value}`` dicts, unknown keys rejected),
:func:`flag_help` (a flag's help, with its default) and :func:`default_grid`. Decoding
strategies and :class:`~faithkit.decoding.GenerationOptions`, the sweep's
:class:`~faithkit.sweep.SweepConfig`, the training config's sections and the metrics' options
(:mod:`faithkit.metrics.registry`) are declared this way, so a command, a config file and a
Python caller cannot disagree on a name, default or range.

One message style: a value outside its range is ``NAME must be in [0, 1], got 2`` (plus the
field's ``meaning``), where NAME is the parameter for a Python caller, the key for a config file
(``training.batch_size``), and the command line says ``argument --alpha: must be in [0, 1], got 2``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import typing
from collections.abc import Mapping, Sequence

from . import redaction
from .configfile import base_type, coerce, is_optional, item_type
from ..errors import ConfigError
from .numbers import finite_float, is_non_finite


class OptionError(ConfigError):
    """A value its option's declaration refuses. ``name`` is the option, ``reason`` the message without it
    (``must be in [0, 1], got 2``), so the command line can name the flag instead."""

    def __init__(self, name: str, reason: str, where: str = ""):
        super().__init__(f"{where}{name} {reason}")
        self.name, self.reason = name, reason


class FlagError(ConfigError):
    """A flag's value its option refuses, found after parsing (``--alpha``'s range is the chosen strategy's): said
    as argparse says a bad value, ``faithkit CMD: argument --alpha: must be in [0, 1], got 2``."""

    def __init__(self, flag: str, reason: str):
        super().__init__(f"argument --{flag}: {reason}")


def option(
    default,
    help: str,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    grid: Sequence | None = None,
    meaning: str = "",
    choices: Sequence[str] | None = None,
    flag_type=None,
    metavar: str | None = None,
    required: bool = False,
    nargs: str | None = None,
    positional: bool = False,
    secret: str | None = None,
):
    """A dataclass field with its help, allowed range (``[low, high]``; ``low_open``/``high_open`` exclude an end),
    choices and grid.

    ``meaning`` explains the range's ends in messages ("0 = plain decoding"); ``grid`` is the
    values a sweep tries when none are given. The rest shape its command-line flag:
    ``flag_type`` replaces the argparse type of each word (a :class:`~faithkit.data.paths.PathArg`
    that checks a path; a list flag's item, or its whole comma-separated text), ``metavar`` its
    value's name in usage lines, ``required`` makes the flag one a command cannot run without,
    ``nargs`` says how a list flag takes its words (``"+"``: at least one; ``"append"``: the flag
    repeated, one value each; ``argparse.REMAINDER``; unsaid: any number) and ``positional``
    makes it an argument without ``--``. ``secret`` says the value carries a secret, and how
    (:data:`faithkit.settings.redaction.KINDS`: an API key, a URL's userinfo, headers): it is sent, never written.
    A list or dict default is copied for every instance.

    Wide signature: this is the declaration API; each keyword is one part of a declaration, stored under its own
    name in the field's metadata (as :func:`option_like` changes it), the way ``dataclasses.field`` takes its parts.
    """
    metadata = dict(help=help, low=low, high=high, low_open=low_open, high_open=high_open, meaning=meaning)
    metadata.update(
        choices=tuple(choices) if choices is not None else None, grid=tuple(grid) if grid is not None else None
    )
    metadata.update(flag_type=flag_type, metavar=metavar, required=required, nargs=nargs, positional=positional)
    metadata.update(secret=secret)
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def option_like(cls, name: str, **changes):
    """The field ``name`` of ``cls`` again, for another dataclass that takes the same option (same default, help,
    range); ``changes`` replace parts of it (``default=None, help=…``: the sweep's ``alpha``, a list of PMI's values,
    each in PMI's range). The copy notes whose field it is (``metadata["like"]``)."""
    item = field_of(cls, name)
    metadata = {**item.metadata, **{key: value for key, value in changes.items() if key != "default"}}
    metadata["like"] = f"{cls.__name__}.{name}"
    return dataclasses.field(default=changes.get("default", item.default), metadata=metadata)


def field_of(cls, name: str) -> dataclasses.Field:
    return next(item for item in dataclasses.fields(cls) if item.name == name)


def declared_default(item: dataclasses.Field):
    """The field's default, made by its factory when it has one."""
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return None if item.default is dataclasses.MISSING else item.default


def range_text(item: dataclasses.Field) -> str:
    """``[0, 1]``, ``(0, 1]``, ``[0, 1)``, ``at least 1``, ``above 0``, ``at most 1`` from the field's metadata."""
    meta = item.metadata
    low, high = meta.get("low"), meta.get("high")
    if low is not None and high is not None:
        return f"{'(' if meta.get('low_open') else '['}{low:g}, {high:g}{')' if meta.get('high_open') else ']'}"
    if low is not None:
        return f"above {low:g}" if meta.get("low_open") else f"at least {low:g}"
    if high is not None:
        return f"below {high:g}" if meta.get("high_open") else f"at most {high:g}"
    return ""


def refusal(item: dataclasses.Field, value) -> str | None:
    """Why the field refuses ``value`` (``must be in [0, 1], got 2 (0 = plain decoding)``), or None if it takes it."""
    meta = item.metadata
    if is_non_finite(value):
        return f"{value} is not a usable number; give a finite value"
    if value is None or isinstance(value, bool):
        return None
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        return f"must be one of {', '.join(choices)}, got {value!r}"
    if not isinstance(value, (int, float)) or not range_text(item):
        return None
    low, high = meta.get("low"), meta.get("high")
    below = low is not None and (value <= low if meta.get("low_open") else value < low)
    above = high is not None and (value >= high if meta.get("high_open") else value > high)
    if not (below or above):
        return None
    allowed = range_text(item)
    meaning = f" ({meta['meaning']})" if meta.get("meaning") else ""
    return f"must be {'in ' if allowed[0] in '[(' else ''}{allowed}, got {value:g}{meaning}"


def check(instance, where: str = "") -> None:
    """Raise :class:`OptionError` for the first field of ``instance`` that is NaN, infinite, outside its declared
    range or not one of its choices (items of a list each); ``where`` prefixes the field's name (``training.``)."""
    check_values(
        type(instance), {item.name: getattr(instance, item.name) for item in dataclasses.fields(instance)}, where
    )


def check_values(cls, values: Mapping, where: str = "") -> None:
    """:func:`check` for values given apart from an instance (a constructor's arguments): each against the field of
    ``cls`` it names. A value its declaration calls secret is handed to :func:`faithkit.settings.redaction.remember`, so
    that a setting read from a file or given from Python is never written either."""
    declared = {item.name: item for item in dataclasses.fields(cls)}
    for name, value in values.items():
        if declared[name].metadata.get("secret") and value is not None:
            redaction.remember(value, declared[name].metadata["secret"])
        for one in value if isinstance(value, (list, tuple)) else [value]:
            reason = refusal(declared[name], one)
            if reason is not None:
                raise OptionError(name, reason, where)


def flag(name: str) -> str:
    return name.replace("_", "-")


def from_mapping(cls, values: Mapping, where: str = "", prefix: str = ""):
    """``cls(**values)`` with unknown keys rejected (with the closest name), values coerced to the fields' types and
    checked against their declared range and choices (:func:`check_values`), as their flags are; a command checks the
    paths on the disk too (:func:`check_paths`). ``where`` prefixes every message (``pmi: ``, ``config file
    recipe.yaml: ``), ``prefix`` every key (``data.``)."""
    known = {item.name: item for item in dataclasses.fields(cls) if item.init}
    types_ = typing.get_type_hints(cls)
    reject_unknown(values, known, where, prefix)
    coerced = {key: coerce(value, types_[key], f"{where}{prefix}{key}") for key, value in values.items()}
    check_values(cls, coerced, where + prefix)
    try:
        return cls(**coerced)
    except OptionError as error:
        raise OptionError(error.name, error.reason, where + prefix) from None


def check_paths(settings, where: str = "", prefix: str = "") -> None:
    """Each path of ``settings`` (a dataclass, its nested sections too) checked by the
    :class:`~faithkit.data.paths.PathArg` its flag reads it with (a ``flag_type`` with a ``kind``), so a path from a config
    file is refused as the same flag's would be (a missing input, a file where an output folder goes): a ConfigError
    naming the key. A path left at its default is the command's to check (``runs/checker-data`` is made by a step
    before). A command calls it on what it read, before any work."""
    for item in dataclasses.fields(settings):
        value, check = getattr(settings, item.name), item.metadata.get("flag_type")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_paths(value, where, f"{prefix}{item.name}.")
        elif check is not None and hasattr(check, "kind") and value != declared_default(item):  # a given path
            for one in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(one, str) and one:
                    try:
                        check(one)
                    except argparse.ArgumentTypeError as error:
                        raise ConfigError(f"{where}{prefix}{item.name}: {error}") from None


def reject_unknown(keys, known, where: str = "", prefix: str = "", what: str = "key") -> None:
    """The one unknown-key message of every config, options mapping and flag: a
    :class:`~faithkit.errors.ConfigError` for the first of ``keys`` not in ``known``, with the closest known name and
    the accepted ones (``config file sweep.yaml: unknown key 'top_pp' (did you mean 'top_p'?); the accepted keys are
    …``); ``where`` prefixes the message (``config file train.yaml: ``), ``prefix`` the keys (``training.``),
    ``what`` names them (``section``)."""
    accepted = [f"{prefix}{name}" for name in known]
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean '{prefix}{close[0]}'?)" if close else ""
            listed = f"the accepted {what}s are {', '.join(accepted)}" if accepted else f"it accepts no {what}s"
            raise ConfigError(f"{where}unknown {what} '{prefix}{key}'{hint}; {listed}")


def shown(value) -> str:
    """A default as help texts show it: numbers in their shortest form, lists comma-separated, strategies by name."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(shown(item) for item in value)
    if isinstance(value, dict) and set(value) == {"name"}:
        return str(value["name"])
    return str(value)


def flag_help(item: dataclasses.Field, default=dataclasses.MISSING) -> str:
    """A flag's help rendered from its declaration: the help (which names the choices), the range and the default
    at the end of its first line (the declared one unless given; None shows the grid if the field has one; None, booleans and empty values show
    none, their help says what unset means)."""
    allowed = range_text(item)
    first, newline, rest = item.metadata.get("help", "").partition("\n")  # a list below the help's first line
    text = first + (f"; {allowed}" if allowed else "")
    default = declared_default(item) if default is dataclasses.MISSING else default
    if default is None:
        default = item.metadata.get("grid")  # a grid flag left out: the grid
    if not (default is None or isinstance(default, bool) or default in ((), [], "")):
        text += f" (default {shown(default)})"
    return text + newline + rest


def value_parser(item: dataclasses.Field, kind, unsets: bool = False):
    """The argparse type of one value of the field: parsed as ``kind``, checked against its declaration, so a bad
    value is ``argument --X: must be …`` from every command; with ``unsets``, ``none`` gives None. A declared
    ``flag_type`` parses it instead."""
    if item.metadata.get("flag_type") is not None:
        return item.metadata["flag_type"]

    def parse(text: str):
        if unsets and text.lower() in ("none", "null"):
            return None
        if kind is float:
            value = finite_float(text)
        elif kind is int:
            try:
                value = int(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
        elif kind is bool:
            if text.lower() not in ("true", "false"):
                raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
            value = text.lower() == "true"
        else:
            value = kind(text)
        reason = refusal(item, value)
        if reason is not None:
            raise argparse.ArgumentTypeError(reason)
        return value

    parse.__name__ = item.name
    parse.value_kind, parse.choices = kind, item.metadata.get("choices")  # type: ignore[attr-defined]
    return parse


def comma_list_parser(item: dataclasses.Field, kind):
    """The argparse type of a list flag written as one comma-separated value (``--alpha 0,0.5``), each item checked."""
    one = value_parser(item, kind)

    def parse(text: str) -> tuple:
        return tuple(one(part.strip()) for part in text.split(",") if part.strip())

    parse.__name__ = item.name
    parse.value_kind, parse.choices = kind, item.metadata.get("choices")  # type: ignore[attr-defined]
    return parse


SCALAR_METAVARS = {int: "N", float: "NUMBER"}
"""The value names of number flags in usage lines and helps: short, so a flag's help starts on its line."""


@dataclasses.dataclass(frozen=True)
class FlagStyle:
    """How a config file section's override flags differ from a command's own (train/config.py's): booleans take
    ``true``/``false`` instead of being switches (``switches=False``), ``none`` sets an optional field to None
    (``none_unsets``; elsewhere it is a value: ``--history-column none``), namespace names carry the section
    (``dest_prefix="training."``) and some flags are renamed (``flag_names={"name": "model"}``)."""

    switches: bool = True
    none_unsets: bool = False
    dest_prefix: str = ""
    flag_names: Mapping[str, str] = dataclasses.field(default_factory=dict)


def add_flags(
    group,
    cls,
    *,
    names: Sequence[str] | None = None,
    defaults=None,
    unset=dataclasses.MISSING,
    lists: str = "words",
    style: FlagStyle = FlagStyle(),
) -> None:
    """One command-line flag per field of ``cls`` (``--max-new-tokens``), typed and range-checked, with the help of
    :func:`flag_help`, so a command declares no flag by hand (mappings are left to files, unless a ``flag_type``
    reads them).

    ``names`` keeps only those fields; ``defaults`` (an instance of ``cls``) replaces the declared defaults; ``unset``
    is what a flag not given leaves in the namespace: by default its default, ``None``, or ``argparse.SUPPRESS``
    (for flags that override a config file). Booleans are switches (``--x``, or ``--x/--no-x`` when the default is
    None or True, or ``unset`` is given). List fields take several words (``lists="words"``) or one comma-separated
    value (``lists="comma"``). ``style`` is how a config file section's flags differ (:class:`FlagStyle`).
    """
    hints = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        from_files_only = base_type(hints[item.name]) is dict and item.metadata.get("flag_type") is None
        if (names is not None and item.name not in names) or from_files_only:
            continue
        default = getattr(defaults, item.name) if defaults is not None else declared_default(item)
        kwargs: dict = {
            "dest": f"{style.dest_prefix}{item.name}",
            "default": default if unset is dataclasses.MISSING else unset,
            "help": flag_help(item, default),
        }
        name = f"--{style.flag_names.get(item.name, flag(item.name))}"
        if item.metadata.get("positional"):
            name = kwargs.pop("dest")
        elif item.metadata.get("required"):
            kwargs["required"] = True
        if base_type(hints[item.name]) is bool and style.switches:
            switch = default is False and unset is dataclasses.MISSING
            kwargs["action"] = "store_true" if switch else argparse.BooleanOptionalAction
        else:
            kwargs.update(_value_kwargs(item, hints[item.name], lists, style.none_unsets))
        mark_declared(group.add_argument(name, **kwargs), [(cls, item)], default)


def _value_kwargs(item: dataclasses.Field, annotation, lists: str, none_unsets: bool) -> dict:
    """The argparse keywords of a flag that takes a value: its metavar, and its type, nargs or action by kind."""
    kind = base_type(annotation)
    choices = item.metadata.get("choices") or ()
    few = 0 < len(choices) <= 6  # a long list is for the help to name
    kwargs: dict = {
        "metavar": item.metadata.get("metavar")
        or ("{" + ",".join(choices) + "}" if few else SCALAR_METAVARS.get(kind, item.name.upper()))
    }
    if kind in (list, tuple) and lists == "comma":
        kwargs["type"] = item.metadata.get("flag_type") or comma_list_parser(item, item_type(annotation))
    elif kind in (list, tuple) and item.metadata.get("nargs") == "append":
        kwargs.update(action="append", type=value_parser(item, item_type(annotation)))
    elif kind in (list, tuple):
        kwargs.update(nargs=item.metadata.get("nargs") or "*", type=value_parser(item, item_type(annotation)))
    else:
        kwargs["type"] = value_parser(item, kind, unsets=is_optional(annotation) and none_unsets)
    return kwargs


def mark_declared(action: argparse.Action, owners: list, default) -> argparse.Action:
    """Note on a flag the declarations it is made from (``[(class, field)]``) and the default its help shows, so
    tests/test_options.py can tell it from a flag typed by hand."""
    action.declared = (owners, default)  # type: ignore[attr-defined]
    return action


def default_grid(cls) -> dict[str, tuple]:
    """``{parameter: values}`` a sweep tries for ``cls`` when the config gives none (fields without a grid: the default)."""
    return {item.name: item.metadata.get("grid") or (item.default,) for item in dataclasses.fields(cls)}
