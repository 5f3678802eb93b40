"""What a sweep runs: one dataclass, filled from a YAML file and command-line overrides, checked before any model loads.

A config file holds the same keys as :class:`SweepConfig`'s fields (``alpha``, ``top_p``,
``generator`` …); a flag given on the command line wins over the file. ``${data}`` at the
start of a path stands for :func:`faithkit.data.data_root`, so shipped configs name the
benchmark files without knowing where they live.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from itertools import product
from pathlib import Path

from ..data import data_root
from ..data.rows import QUOTING
from ..decoding.settings import DecodingSettings
from ..errors import ConfigError
from ..metrics.registry import MEASURES

SEARCHES = ("greedy", "beam", "sample", "beam_sample")
"""How a cell searches: transformers' greedy, beam search, sampling and beam sampling."""
ALWAYS = ("form",)
"""Metrics every sweep computes (no model needed): words, empty and repeated responses."""
DATA_PREFIX = "${data}"
STRATEGY_KEYS = ("name", "decoding")
"""The keys of a ``strategies`` entry besides the strategy's own parameters."""
_PMI_GRID = {"alpha": (0.0, 0.25, 0.5, 1.0), "top_p": (0.6, 0.75, 0.9, 1.0)}


@dataclass(frozen=True)
class Cell:
    """One decoding of the grid: a strategy, how it searches, and its parameter values (in declaration order).

    ``name`` labels its files and rows: ``plain-greedy``, ``pmi-greedy-alpha0.25-top_p0.6``.
    """

    strategy: str
    decoding: str = "greedy"
    params: tuple[tuple[str, float], ...] = ()

    @property
    def name(self) -> str:
        return "-".join([self.strategy, self.decoding] + [f"{key}{value:g}" for key, value in self.params])

    def get(self, key: str):
        return dict(self.params).get(key)

    def decodes_as(self) -> Cell:
        """The cell whose decode this one repeats token for token (itself when none): PMI-DECODE with alpha 0 is
        plain greedy decoding at any top_p (the argmax is always inside the nucleus), and plain beam search at
        top_p 1 (under beam search a narrower nucleus drops candidates plain beam search keeps)."""
        if self.strategy == "pmi" and self.get("alpha") == 0 and (
                self.decoding == "greedy" or (self.decoding == "beam" and self.get("top_p") == 1)):
            return Cell("plain", self.decoding)
        return self


@dataclass(frozen=True)
class SweepConfig:
    """A grid of decoding strategies over a dev set and how to judge it (field names are the config keys).

    ``strategies`` lists the strategies, each with its own grid:
    ``[{name: plain, decoding: [greedy, beam]}, {name: pmi, alpha: [0.25, 0.5], top_p: [0.6, 1]}]``;
    a parameter left out takes its strategy's default grid, ``decoding`` left out is the
    sweep's ``decoding``. ``alpha`` / ``top_p`` (the ``--alpha/--top-p`` flags) set the PMI-DECODE
    grid, and alone they are the sweep (PMI-DECODE over alpha x top_p, as in the paper's Table 5).
    Plain decoding with the sweep's ``decoding`` (greedy unless set) is always the baseline.

    Search: ``beam`` and ``beam_sample`` use ``num_beams`` (default 4); ``sample`` and
    ``beam_sample`` use ``temperature``, ``top_k`` and ``seed`` (seed 0 unless given: every row
    draws from its own generator seeded by the seed and its id, so a resumed sweep draws what
    an uninterrupted one would). ``metrics``: any of the registry's metrics with measures, e.g.
    ``pmi-faith`` (PMI-FAITH and fluency under ``judge``), ``q2`` (``q2_preset: offline`` for the
    offline models) and ``lexical`` (knowledge precision; BLEU and token F1 against the gold
    response); the response form (words, empty, repeated) is always measured. The gold response is
    ``gold_column``, else a ``gold``/``reference`` column, else the input's response column;
    without one the relevance columns stay empty (a warning says so). ``best.json`` picks the
    cell with the highest ``faithfulness`` whose ``relevance`` is at least the baseline's minus
    ``tolerance`` and whose ``fluency`` is at least the baseline's minus ``fluency_tolerance``,
    (``fluency`` unset: the judge's fluency when ``pmi-faith`` is measured, else no such bound),
    and says whether it is significantly more faithful than the baseline (paired permutation
    test, p < ``significance``). Intervals are 95% bootstraps over contexts (``resamples`` draws).
    """

    generator: str | None = None
    judge: str = "bigscience/bloom-560m"
    input: str | None = None
    out: str | None = None
    strategies: tuple[dict, ...] | None = None
    alpha: tuple[float, ...] | None = None
    top_p: tuple[float, ...] | None = None
    decoding: str = "greedy"
    num_beams: int | None = None
    temperature: float | None = None
    top_k: int | None = None
    seed: int | None = None
    max_new_tokens: int = 40
    batch_size: int = 8
    max_context_tokens: int | None = None
    chat: bool | None = None
    limit: int | None = None
    metrics: tuple[str, ...] = ("pmi-faith", "lexical")
    q2_preset: str | None = None
    gold_column: str | None = None
    document_column: str | None = None
    history_column: str | None = None
    id_column: str | None = None
    quoting: str | None = None
    faithfulness: str = "pmi_faith"
    relevance: str = "bleu"
    tolerance: float = 1.0
    fluency: str | None = None
    fluency_tolerance: float = 0.5
    significance: float = 0.05
    resamples: int = 1000
    report_contexts: int = 8
    device: str | None = None

    def validate(self) -> SweepConfig:
        """Raise :class:`ConfigError` naming the option and the fix; return self."""
        for name in ("generator", "input", "out"):
            if not getattr(self, name):
                raise ConfigError(f"no {name}: give --{name} or '{name}:' in the --config file")
        if self.decoding not in SEARCHES:
            raise ConfigError(f"--decoding {self.decoding!r} is unknown; choose one of {', '.join(SEARCHES)}")
        for name in ("alpha", "top_p"):
            if getattr(self, name) is not None and not getattr(self, name):
                raise ConfigError(f"--{name.replace('_', '-')} is empty: give at least one value, or leave it out")
        cells = self.cells()
        searches = {cell.decoding for cell in cells}
        sampled = searches & {"sample", "beam_sample"}
        if not sampled:
            given = [f"--{name.replace('_', '-')}" for name in ("temperature", "top_k", "seed")
                     if getattr(self, name) is not None]
            if given:
                raise ConfigError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to sampling "
                                  f"(decoding sample or beam_sample), which no cell uses; drop them or sample")
        if searches & {"beam", "beam_sample"}:
            if self.num_beams is not None and self.num_beams < 2:
                raise ConfigError(f"--num-beams {self.num_beams}: beam search needs at least 2 beams (or use "
                                  "--decoding greedy)")
        elif self.num_beams not in (None, 1):
            raise ConfigError(f"--num-beams {self.num_beams} applies to beam search (decoding beam or beam_sample), "
                              "which no cell uses")
        for cell in cells:
            self.decoding_settings(cell).validate()
        metrics = [spec for spec, _ in MEASURES.values()]
        sweepable = [name for name in dict.fromkeys(spec.name for spec in metrics) if name not in ALWAYS]
        unknown = [m for m in self.metrics if m not in sweepable]
        if unknown:
            raise ConfigError(f"--metrics {','.join(unknown)}: a sweep computes {', '.join(sweepable)}")
        for option in ("faithfulness", "relevance", "fluency"):
            measure = getattr(self, option)
            if measure is None:
                continue
            if measure not in MEASURES:
                raise ConfigError(f"--{option} {measure!r} is not a measure; choose one of {', '.join(MEASURES)}")
            metric = MEASURES[measure][0].name
            if metric not in (*self.metrics, *ALWAYS):
                raise ConfigError(f"--{option} {measure} needs the metric {metric}: add it to --metrics")
        if self.q2_preset not in (None, "offline"):
            raise ConfigError(f"--q2-preset {self.q2_preset!r} is unknown; use 'offline' or leave it out "
                              "(the paper's hub models)")
        for name in ("tolerance", "fluency_tolerance", "report_contexts"):
            if getattr(self, name) < 0:
                raise ConfigError(f"--{name.replace('_', '-')} {getattr(self, name)} is negative; use 0 or more")
        if not 0 < self.significance < 1:
            raise ConfigError(f"--significance {self.significance:g} is out of range: use a level in (0, 1), "
                              "e.g. 0.05")
        if self.resamples < 100:
            raise ConfigError(f"--resamples {self.resamples}: use at least 100 (default 1000)")
        if self.quoting not in (None, *QUOTING):
            raise ConfigError(f"--quoting {self.quoting!r} is unknown; use {' or '.join(QUOTING)}, or leave it out")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit {self.limit}: use at least 1, or leave it out for every row")
        return self

    @property
    def fluency_measure(self) -> str | None:
        """The measure best.json bounds like relevance: ``fluency`` if set, else the judge's fluency if measured."""
        return self.fluency or ("fluency" if "pmi-faith" in self.metrics else None)

    @property
    def baseline(self) -> Cell:
        """Plain decoding with the sweep's search: the reference every other cell is read against."""
        return Cell("plain", self.decoding)

    def strategy_grids(self) -> list[dict]:
        """The ``strategies`` entries with the ``--alpha/--top-p`` flags applied (PMI-DECODE alone without entries)."""
        entries = [dict(entry) for entry in (self.strategies or [{"name": "pmi"}])]
        flags = {key: getattr(self, key) for key in ("alpha", "top_p") if getattr(self, key) is not None}
        if flags:
            if not any(entry.get("name") == "pmi" for entry in entries):
                entries.append({"name": "pmi"})
            for entry in entries:
                if entry.get("name") == "pmi":
                    entry.update(flags)
        return entries

    def cells(self) -> list[Cell]:
        """The baseline first, then every strategy's grid in order (search mode, then parameters), each once."""
        cells = [self.baseline]
        for index, entry in enumerate(self.strategy_grids()):
            where = f"strategies[{index}]"
            name = entry.get("name")
            grid = _STRATEGY_GRIDS.get(name)
            if grid is None:
                raise ConfigError(f"{where}: unknown strategy {name!r}; choose one of {', '.join(_STRATEGY_GRIDS)}")
            unknown = sorted(set(entry) - {*STRATEGY_KEYS, *grid})
            if unknown:
                raise ConfigError(f"{where} ({name}): unknown key{'s' if len(unknown) > 1 else ''} "
                                  f"{', '.join(unknown)}; its keys are {', '.join([*STRATEGY_KEYS, *grid])}")
            searches = [str(s).strip() for s in _items(entry.get("decoding", self.decoding))]
            bad = [s for s in searches if s not in SEARCHES]
            if bad:
                raise ConfigError(f"{where} ({name}): decoding {bad[0]!r} is unknown; choose from {', '.join(SEARCHES)}")
            values = {}
            for key, default in grid.items():
                try:
                    values[key] = [float(v) for v in _items(entry.get(key, default))]
                except (TypeError, ValueError):
                    raise ConfigError(f"{key}: expected numbers, got {entry[key]!r}") from None
                if not values[key]:
                    raise ConfigError(f"{where} ({name}): {key} is empty; give at least one value or leave it out")
            for search in searches:
                for point in product(*values.values()):
                    cells.append(Cell(name, search, tuple(zip(values, point))))
        return list(dict.fromkeys(cells))

    def decoding_settings(self, cell: Cell | None = None) -> DecodingSettings:
        """The generation settings of one cell (the sweep's batching and search options with the cell's own)."""
        cell = cell or self.baseline
        sample = cell.decoding in ("sample", "beam_sample")
        alpha, top_p = (cell.get("alpha"), cell.get("top_p")) if cell.strategy == "pmi" else (0.0, 1.0)
        return DecodingSettings(
            alpha=alpha, top_p=top_p,
            num_beams=(self.num_beams or 4) if cell.decoding in ("beam", "beam_sample") else 1,
            do_sample=sample, temperature=self.temperature if sample else None,
            top_k=self.top_k if sample else None, seed=(self.seed or 0) if sample else None,
            max_new_tokens=self.max_new_tokens, batch_size=self.batch_size,
            max_context_tokens=self.max_context_tokens, chat=self.chat,
        )

    def input_path(self) -> Path:
        """``input`` with a leading ``${data}`` replaced by the benchmark data root."""
        text = str(self.input)
        if text.startswith(DATA_PREFIX):
            return data_root() / text[len(DATA_PREFIX):].lstrip("/")
        return Path(text)

    def generation_fingerprint(self) -> dict:
        """What every cell's responses depend on besides the cell (its name is its file's): not the grid, not
        batching. The generator by :func:`faithkit.models.identity`."""
        from .. import models

        keys = ("input", "num_beams", "temperature", "top_k", "seed", "max_new_tokens", "max_context_tokens", "chat",
                "document_column", "history_column", "id_column", "quoting", "limit")
        return {"generator": models.identity(self.generator), **{key: getattr(self, key) for key in keys}}


_STRATEGY_GRIDS = {"plain": {}, "pmi": _PMI_GRID}


def load_config(path: str | Path | None = None, overrides: dict | None = None) -> SweepConfig:
    """The config of a YAML file (if any) with ``overrides`` (None values ignored) on top, validated.

    Values may be given as text, as on the command line: ``alpha: "0,0.25,0.5"``.
    """
    values: dict = {}
    if path is not None:
        values = _read_yaml(Path(path))
    values.update({key: value for key, value in (overrides or {}).items() if value is not None})  # None: not given
    values = {key: value for key, value in values.items() if value is not None}  # YAML null: the default
    valid = [f.name for f in fields(SweepConfig)]
    unknown = sorted(set(values) - set(valid))
    if unknown:
        source = f"config file {path}" if path is not None else "sweep settings"
        raise ConfigError(f"{source}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                          f"valid keys are {', '.join(valid)}")
    types = {f.name: f.type for f in fields(SweepConfig)}
    config = SweepConfig(**{key: _coerce(key, value, types[key]) for key, value in values.items()})
    return config.validate()


def _read_yaml(path: Path) -> dict:
    import yaml

    if not path.exists():
        raise ConfigError(f"config file not found: {path}")
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must be a mapping of keys to values, got {type(values).__name__}")
    return {str(key).replace("-", "_"): value for key, value in values.items()}


def _coerce(key: str, value, kind: str):
    """A config or command-line value as the field's type; ConfigError naming the key otherwise."""
    try:
        if kind.startswith("tuple[dict"):
            return tuple({"name": item.strip()} if isinstance(item, str) else _mapping(key, item)
                         for item in _items(value))
        if kind.startswith("tuple[float"):
            return tuple(float(item) for item in _items(value))
        if kind.startswith("tuple[str"):
            return tuple(str(item).strip() for item in _items(value))
        if kind.startswith("bool"):
            if isinstance(value, bool):
                return value
            return {"true": True, "false": False, "yes": True, "no": False}[str(value).strip().lower()]
        if kind.startswith("int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind.startswith("float"):
            return float(value)
        return str(value)
    except (KeyError, TypeError, ValueError):
        expected = kind.split(" |")[0].replace("tuple[float, ...]", "numbers").replace("tuple[str, ...]", "names")
        expected = expected.replace("tuple[dict, ...]", "a list of strategies ({name: pmi, alpha: [0.5]} or names)")
        raise ConfigError(f"{key}: expected {expected}, got {value!r}") from None


def _items(value) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return [item for item in value.split(",") if item.strip()]
    return [value]



def _mapping(key: str, item) -> dict:
    if not isinstance(item, dict):
        raise TypeError(key)
    return {str(k).replace("-", "_"): v for k, v in item.items()}
