"""What a sweep runs: one dataclass, filled from a YAML file and command-line overrides, checked before any model loads.

A config file holds the same keys as :class:`SweepConfig`'s fields (``alpha``, ``top_p``,
``generator`` …); a flag given on the command line wins over the file. ``${data}`` at the
start of a path stands for :func:`faithkit.data.data_root`, so shipped configs name the
benchmark files without knowing where they live.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from ..data import data_root
from ..data.rows import QUOTING
from ..decoding.options import GenerationOptions
from ..decoding.strategies import PMI
from ..errors import ConfigError

DECODINGS = ("greedy", "beam", "sample")
SWEEP_METRICS = ("pmi-faith", "q2", "lexical")
MEASURES = {  # sweep.csv column: the metric that computes it (None: always there)
    "pmi_faith": "pmi-faith", "knowledge_precision": "lexical", "bleu": "lexical", "token_f1": "lexical",
    "mean_words": None, "empty": None, "repeated": None, "q2": "q2", "q2_no_nli": "q2",
}
DATA_PREFIX = "${data}"
BASELINE = (0.0, 1.0)
"""Plain decoding (alpha 0, top_p 1): every grid has it, as the reference the other cells are read against."""


@dataclass(frozen=True)
class Cell:
    """One (alpha, top_p) point of the grid; ``name`` labels its files (``a0.25_p0.6``)."""

    alpha: float
    top_p: float

    @property
    def name(self) -> str:
        return f"a{self.alpha:g}_p{self.top_p:g}"

    @property
    def is_baseline(self) -> bool:
        return (self.alpha, self.top_p) == BASELINE

    @property
    def strategy(self) -> PMI:
        """The cell as a decoding strategy (checks its range)."""
        return PMI(alpha=self.alpha, top_p=self.top_p)


@dataclass(frozen=True)
class SweepConfig:
    """A PMI-DECODE grid over a dev set and how to judge it (field names are the config keys).

    ``decoding`` is ``greedy``, ``beam`` (``num_beams``, default 4) or ``sample``
    (``temperature``, ``top_k``, ``seed``; seed 0 unless given: every row draws from its own
    generator seeded by the seed and its id, so a resumed sweep draws what an uninterrupted
    one would). ``metrics``: ``pmi-faith`` (PMI-FAITH under ``judge``), ``q2`` (Q², with
    ``q2_preset: offline`` for the offline models) and ``lexical`` (knowledge precision;
    BLEU and token F1 against the gold response). The gold response is ``gold_column``, else a
    ``gold``/``reference`` column, else the input's response column; without one the
    relevance columns stay empty (a warning says so). ``best.json`` picks the cell with the
    highest ``faithfulness`` whose ``relevance`` is at least the baseline's minus ``tolerance``.
    """

    generator: str | None = None
    judge: str = "bigscience/bloom-560m"
    input: str | None = None
    out: str | None = None
    alpha: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0)
    top_p: tuple[float, ...] = (0.6, 0.75, 0.9, 1.0)
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
    split: str | None = None
    faithfulness: str = "pmi_faith"
    relevance: str = "bleu"
    tolerance: float = 1.0
    report_contexts: int = 8
    device: str | None = None

    def validate(self) -> SweepConfig:
        """Raise :class:`ConfigError` naming the option and the fix; return self."""
        for name in ("generator", "input", "out"):
            if not getattr(self, name):
                raise ConfigError(f"no {name}: give --{name} or '{name}:' in the --config file")
        if self.decoding not in DECODINGS:
            raise ConfigError(f"--decoding {self.decoding!r} is unknown; choose one of {', '.join(DECODINGS)}")
        if self.decoding != "sample":
            given = [f"--{name.replace('_', '-')}" for name in ("temperature", "top_k", "seed")
                     if getattr(self, name) is not None]
            if given:
                raise ConfigError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to --decoding "
                                  f"sample, not {self.decoding}; drop them or sample")
        if self.decoding == "beam" and self.num_beams is not None and self.num_beams < 2:
            raise ConfigError(f"--decoding beam with --num-beams {self.num_beams}: beam search needs at least 2 "
                              "beams (or use --decoding greedy)")
        if self.decoding != "beam" and self.num_beams not in (None, 1):
            raise ConfigError(f"--num-beams {self.num_beams} applies to --decoding beam, not {self.decoding}")
        if not self.alpha or not self.top_p:
            raise ConfigError("the grid is empty: give at least one --alpha and one --top-p value")
        for cell in self.cells():
            cell.strategy.check_search(self.search)
        self.generation_options().validate()
        unknown = [m for m in self.metrics if m not in SWEEP_METRICS]
        if unknown:
            raise ConfigError(f"--metrics {','.join(unknown)}: a sweep computes {', '.join(SWEEP_METRICS)}")
        for option in ("faithfulness", "relevance"):
            measure = getattr(self, option)
            if measure not in MEASURES:
                raise ConfigError(f"--{option} {measure!r} is not a sweep measure; choose one of {', '.join(MEASURES)}")
            if MEASURES[measure] and MEASURES[measure] not in self.metrics:
                raise ConfigError(f"--{option} {measure} needs the metric {MEASURES[measure]}: add it to --metrics")
        if self.q2_preset not in (None, "offline"):
            raise ConfigError(f"--q2-preset {self.q2_preset!r} is unknown; use 'offline' or leave it out "
                              "(the paper's hub models)")
        for name, value in (("tolerance", self.tolerance), ("report_contexts", self.report_contexts)):
            if value < 0:
                raise ConfigError(f"--{name.replace('_', '-')} {value} is negative; use 0 or more")
        if self.quoting not in (None, *QUOTING):
            raise ConfigError(f"--quoting {self.quoting!r} is unknown; use {' or '.join(QUOTING)}, or leave it out")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit {self.limit}: use at least 1, or leave it out for every row")
        return self

    def cells(self) -> list[Cell]:
        """The baseline first, then every (alpha, top_p) pair, alpha-major, each once."""
        pairs = [BASELINE] + [(float(a), float(p)) for a in self.alpha for p in self.top_p]
        return [Cell(*pair) for pair in dict.fromkeys(pairs)]

    @property
    def search(self) -> str:
        """The search mode every cell decodes with (``decoding`` names it)."""
        return self.decoding

    def generation_options(self) -> GenerationOptions:
        """The generation options every cell shares (the cells differ by alpha and top_p)."""
        sample = self.decoding == "sample"
        return GenerationOptions(
            num_beams=(self.num_beams or 4) if self.decoding == "beam" else 1,
            do_sample=sample, temperature=self.temperature, top_k=self.top_k,
            seed=(self.seed or 0) if sample else None, max_new_tokens=self.max_new_tokens,
            batch_size=self.batch_size, max_context_tokens=self.max_context_tokens, chat=self.chat,
        )

    def input_path(self) -> Path:
        """``input`` with a leading ``${data}`` replaced by the benchmark data root."""
        text = str(self.input)
        if text.startswith(DATA_PREFIX):
            return data_root() / text[len(DATA_PREFIX):].lstrip("/")
        return Path(text)

    def generation_fingerprint(self) -> dict:
        """What the responses depend on (not the grid: each cell has its own file; not batching)."""
        keys = ("generator", "input", "decoding", "num_beams", "temperature", "top_k", "seed", "max_new_tokens",
                "max_context_tokens", "chat", "document_column", "history_column", "id_column", "quoting",
                "split")
        return {key: getattr(self, key) for key in keys}


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
    from ..configfile import read_yaml

    values = read_yaml(path)
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must be a mapping of keys to values, got {type(values).__name__}")
    return {str(key).replace("-", "_"): value for key, value in values.items()}


def _coerce(key: str, value, kind: str):
    """A config or command-line value as the field's type; ConfigError naming the key otherwise."""
    try:
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
        raise ConfigError(f"{key}: expected {expected}, got {value!r}") from None


def _items(value) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return [item for item in value.split(",") if item.strip()]
    return [value]

