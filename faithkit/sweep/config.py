"""What a sweep runs: one dataclass, filled from a YAML file and command-line overrides, checked before any model loads.

A config file holds the same keys as :class:`SweepConfig`'s fields (``alpha``, ``top_p``,
``generator`` …); a flag given on the command line wins over the file. ``${data}`` at the
start of a path stands for :func:`faithkit.data.data_root`, so shipped configs name the
benchmark files without knowing where they live.
"""

from __future__ import annotations

import argparse
import logging
import typing
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from ..data import data_root
from ..data.rows import InputOptions
from ..decoding import PMI, SEARCHES, Cell, GenerationOptions, Plain
from ..decoding.strategies import strategy_from_text, written_forms
from ..errors import ConfigError
from ..metrics.metric_options import JUDGE_LM, MetricOptions
from ..metrics.registry import MEASURES, metric_names
from ..data.paths import PathArg
from ..settings.options import OptionError, check, from_mapping, option, option_like, reject_unknown
from ..serving.precision import Placement
from .chosen import chosen_entries
from .grid import entry_cells, entry_size

logger = logging.getLogger(__name__)

ALWAYS = ("form",)
"""Metrics every sweep computes (no model needed): words, empty and repeated responses."""
METRICS = tuple(name for name in dict.fromkeys(spec.name for spec, _ in MEASURES.values()) if name not in ALWAYS)
"""The metrics a sweep can be asked for: the registry's metrics that have measures."""
DATA_PREFIX = "${data}"
GENERATION = tuple(f.name for f in fields(GenerationOptions) if f.name not in ("do_sample", "num_return_sequences"))
"""The :class:`~faithkit.decoding.GenerationOptions` a sweep takes as keys and flags: all but the search (each cell
names its own) and the responses per row (a cell writes one)."""


@dataclass(frozen=True)
class SweepConfig:
    """A grid of decoding strategies over a dev set and how to judge it (field names are the config keys).

    ``strategies`` lists the strategies, each with its own grid:
    ``[{name: plain, search: [greedy, beam]}, {name: pmi, alpha: [0.25, 0.5], top_p: [0.6, 1]}]``;
    a parameter left out takes its strategy's default grid, ``search`` left out is the
    sweep's ``search``. ``alpha`` / ``top_p`` (the ``--alpha/--top-p`` flags) set the PMI-DECODE
    grid, and alone they are the sweep (PMI-DECODE over alpha x top_p, as in the paper's Table 5).
    Plain decoding with the sweep's ``search`` (greedy unless set; the flag ``--search``) is always the baseline.
    ``chosen`` lists ``best.json`` files of earlier sweeps: each strategy's own pick there
    (``by_strategy``: strategy, parameters and search) joins the strategies, so settings chosen
    on dev rows are decoded on other rows (the Table-4 protocol, docs/table4.md).

    ``generation`` holds the :data:`GENERATION` options, given as top-level keys or flags
    (``num_beams: 4``, ``--max-new-tokens 40``; beams 4 unless set): ``beam`` and ``beam_sample``
    cells use ``num_beams``, ``sample`` and ``beam_sample`` ones ``temperature``, ``top_k`` and
    ``seed`` (every row draws from its own generator seeded by the seed and its id, so a resumed
    sweep draws what an uninterrupted one would). ``metrics``: any of the registry's metrics with
    measures, e.g. ``faith-judge`` (the fitted faithfulness judge under ``scoring_model``, the default
    ``faithfulness``: unlike PMI-FAITH it does not simply reward copying the document),
    ``pmi-faith`` (PMI-FAITH and fluency under ``scoring_model``), ``q2`` (``q2_preset:
    offline`` for the offline models) and ``lexical`` (knowledge precision; BLEU and token F1
    against the gold response); the response form (words, empty, repeated) is always measured.
    The gold response is ``gold_column``, else a ``gold``/``reference`` column, else the input's
    response column; without one the relevance columns stay empty (a warning says so).
    ``best.json`` picks the cell with the highest ``faithfulness`` whose ``relevance`` is at least
    the baseline's minus ``tolerance`` and whose ``fluency`` is at least the baseline's minus
    ``fluency_tolerance`` (``fluency`` unset: the scoring model's fluency when ``pmi-faith`` is measured,
    else no such bound), and says whether it is significantly more faithful than the baseline
    (paired permutation test, p < ``significance``). Intervals are 95% bootstraps over contexts
    (``resamples`` draws). ``device`` and ``dtype`` (:data:`faithkit.serving.precision.DTYPES`) apply to every model
    the sweep loads.
    """

    generator: str = option(
        "", "model to decode with: hub id, folder or offline name", flag_type=PathArg("model"), metavar="MODEL"
    )
    scoring_model: str = option(
        JUDGE_LM,
        "causal LM the metrics score with: PMI-FAITH, fluency, faith-judge (fitted with smollm2-135m); "
        "a hub id, folder or offline name",
        flag_type=PathArg("model"),
        metavar="MODEL",
    )
    input: str = option(
        "",
        "dev rows with a document and a history (.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or "
        "hf:OWNER/NAME with --split)",
        flag_type=PathArg("rows"),
        metavar="ROWS",
    )
    out: str = option(
        "", "output folder; rerunning with the same folder resumes", flag_type=PathArg("output folder"), metavar="DIR"
    )
    strategies: tuple[dict, ...] | None = option(
        None,
        "comma-separated strategies, each over its default grid but for the parameters written, e.g. "
        f"plain,pmi,cad:alpha=1,pmi:alpha=0.5,top_p=0.9 (unset: pmi), of {written_forms()}; a config's "
        "'strategies:' gives each its own grid",
        flag_type=str,  # commas also part parameters: strategies_from_flag reads it
    )
    chosen: tuple[str, ...] | None = option(
        None,
        "comma-separated best.json files of earlier sweeps: each one's chosen cell joins the strategies "
        "as chosen (choose on dev rows, decode other rows); --alpha/--top-p then add a PMI-DECODE grid beside it",
    )
    alpha: tuple[float, ...] | None = option_like(
        PMI, "alpha", default=None, help="PMI-DECODE weights, comma-separated"
    )
    top_p: tuple[float, ...] | None = option_like(
        PMI, "top_p", default=None, help="PMI-DECODE nucleus sizes, comma-separated"
    )
    search: str = option(
        "greedy",
        "search of the baseline and of every strategy that names none: greedy, beam, sample or beam_sample",
        choices=SEARCHES,
    )
    generation: GenerationOptions = GenerationOptions(num_beams=4)
    limit: int | None = option(None, "use only the first N rows of --input", low=1)
    metrics: tuple[str, ...] = option(
        ("faith-judge", "pmi-faith", "lexical"),
        f"comma-separated, of {', '.join(METRICS)} (words, empty and repeated are always measured)",
        choices=METRICS,
        flag_type=lambda text: metric_names(text, METRICS),
    )
    q2_preset: str | None = option(
        None, "'offline': Q² on the offline models instead of the paper's hub models", choices=("offline",)
    )
    server: str | None = option_like(
        MetricOptions,
        "server",
        help="llm-judge: the OpenAI-compatible API's base URL, e.g. http://127.0.0.1:8080/v1 (its key: $OPENAI_API_KEY)",
    )
    served_model: str | None = option_like(MetricOptions, "served_model")
    gold_column: str | None = option(
        None, "column with the gold response (unset: gold/reference, else the response column)"
    )
    document_column: str | None = option_like(InputOptions, "document_column")
    history_column: str | None = option_like(InputOptions, "history_column")
    id_column: str | None = option_like(InputOptions, "id_column")
    quoting: str | None = option_like(InputOptions, "quoting")
    split: str | None = option_like(InputOptions, "split")
    faithfulness: str | None = option(
        None,
        "measure best.json maximises and Table 5 shows first: a score key of --metrics (unset: faithkit_checker, "
        "faith_judge, pmi_faith: the first measured)",
        choices=tuple(MEASURES),
        metavar="MEASURE",
    )
    relevance: str = option(
        "bleu", "measure bounded by the baseline's and shown second", choices=tuple(MEASURES), metavar="MEASURE"
    )
    tolerance: float = option(
        1.0, "how far below the baseline's relevance the chosen cell may fall, in the measure's units", low=0
    )
    fluency: str | None = option(
        None,
        "measure bounded by the baseline's, so degenerate cells are not chosen (unset: fluency when pmi-faith "
        "is measured)",
        choices=tuple(MEASURES),
        metavar="MEASURE",
    )
    fluency_tolerance: float = option(  # word salad sits 3.4 nats below (benchmarks/fluency_guard.py)
        1.0, "how far below the baseline's fluency the chosen cell may fall, in nats per token", low=0
    )
    significance: float = option(
        0.05, "level of the paired test best.json reports", low=0, high=1, low_open=True, high_open=True
    )
    resamples: int = option(1000, "bootstrap resamples and permutations", low=100)
    report_contexts: int = option(8, "contexts shown in report.html", low=0)
    max_cells: int = option(
        500,
        "most cells a grid may have (each decodes every row)",
        low=1,
    )
    allow_large_grid: bool = option(False, "run a grid over max_cells")
    device: str | None = option_like(Placement, "device")
    dtype: str | None = option_like(Placement, "dtype")

    def __post_init__(self) -> None:
        """``strategies`` entries as mappings with underscored keys (``pmi`` is ``{name: pmi}``, ``top-p`` is
        ``top_p``)."""
        if self.strategies is not None:
            object.__setattr__(self, "strategies", tuple(_entry(entry) for entry in self.strategies))

    def choice_rule(self) -> dict[str, typing.Any]:
        """The keywords of :func:`~faithkit.sweep.table.choose_best`: which measures best.json weighs, and how."""
        return {
            "faithfulness": self.faithfulness_measure,
            "relevance": self.relevance,
            "tolerance": self.tolerance,
            "fluency": self.fluency_measure,
            "fluency_tolerance": self.fluency_tolerance,
            "significance": self.significance,
        }

    def validate(self) -> SweepConfig:
        """Raise :class:`ConfigError` naming the option and the fix; return self. The fields' declarations check
        each value (``resamples must be at least 100, got 50``); here are the rules between them."""
        for name in ("generator", "input", "out"):
            if not getattr(self, name):
                raise ConfigError(f"no {name}: give --{name} or '{name}:' in the --config file")
        check(self)
        for name in ("alpha", "top_p"):
            if getattr(self, name) is not None and not getattr(self, name):
                raise ConfigError(f"--{name.replace('_', '-')} is empty: give at least one value, or leave it out")
        from ..generation.rerank import check_judge

        size = self.grid_size()
        if size > self.max_cells and not self.allow_large_grid:
            raise ConfigError(
                f"the grid has {size:,} cells, more than --max-cells {self.max_cells} (each cell decodes every row "
                f"and is judged on each): give fewer values (--alpha, --top-p, --strategies, --search), or "
                f"--allow-large-grid to run it"
            )
        cells = self.cells()
        self.generation.validate(searches=sorted({search for cell in cells for search in cell.option_searches}))
        for cell in cells:
            check_judge(cell.strategy)
        if self.faithfulness_measure is None:
            raise ConfigError(
                "no faithfulness measure: add faith-judge or pmi-faith to --metrics, or name the "
                "measure with --faithfulness"
            )
        chosen = {"faithfulness": self.faithfulness_measure, "relevance": self.relevance, "fluency": self.fluency}
        for option_name, measure in chosen.items():
            if measure is None:
                continue
            metric = MEASURES[measure][0].name
            if MEASURES[measure][1].higher_is_better is None:
                raise ConfigError(
                    f"--{option_name} {measure}: the measure has no better direction (neither higher nor lower is "
                    "more faithful); name a measure that has one, e.g. faithkit_checker or pmi_faith"
                )
            if metric not in (*self.metrics, *ALWAYS):
                raise ConfigError(f"--{option_name} {measure} needs the metric {metric}: add it to --metrics")
        return self

    @property
    def faithfulness_measure(self) -> str | None:
        """The measure best.json maximises: ``faithfulness`` if set, else the claim checker's when faithkit-checker is
        measured (the judge closest to readers), else faith-judge's if measured and its weights fit the scoring model (see
        :attr:`faithfulness_note`), else PMI-FAITH's."""
        if self.faithfulness:
            return self.faithfulness
        if "faithkit-checker" in self.metrics:
            return "faithkit_checker"
        if "faith-judge" in self.metrics and (self.scoring_model_fits_weights or "pmi-faith" not in self.metrics):
            return "faith_judge"
        return "pmi_faith" if "pmi-faith" in self.metrics else None

    @property
    def scoring_model_fits_weights(self) -> bool:
        """Whether ``scoring_model`` is the LM faith-judge's weights were fitted with (another LM's signals are on other
        scales, so its faith_judge is no valid score)."""
        return _fitted_with(str(self.scoring_model))

    @property
    def faithfulness_note(self) -> str | None:
        """What the sweep's outputs say when faith_judge is measured under a scoring model its weights were not fitted
        with: that the choice fell back to PMI-FAITH, or (``faithfulness`` set, or no pmi-faith) that it did not."""
        if "faith-judge" not in self.metrics or self.scoring_model_fits_weights:
            return None
        from ..metrics.registry import faith_judge_lm

        why = (
            f"faith-judge's weights were fitted with {faith_judge_lm()!r}, not the scoring model {self.scoring_model!r}, so "
            "faith_judge is on another scale (refit it: docs/judge.md)"
        )
        if self.faithfulness_measure == "pmi_faith":
            return f"{why}; the choice maximises pmi_faith instead"
        return f"{why}; the choice still maximises {self.faithfulness_measure}"

    @property
    def fluency_measure(self) -> str | None:
        """The measure best.json bounds like relevance: ``fluency`` if set, else the scoring model's fluency if measured."""
        return self.fluency or ("fluency" if "pmi-faith" in self.metrics else None)

    @property
    def baseline(self) -> Cell:
        """Plain decoding with the sweep's search: the reference every other cell is read against."""
        return Cell(Plain(), self.search)

    def strategy_grids(self) -> list[dict]:
        """The ``strategies`` entries with the ``--alpha/--top-p`` flags applied (PMI-DECODE alone without entries)."""
        entries = [dict(entry) for entry in self.strategies or ([] if self.chosen else [{"name": "pmi"}])]
        flags = {key: getattr(self, key) for key in ("alpha", "top_p") if getattr(self, key) is not None}
        if flags:  # the sweep's own PMI-DECODE grid; a chosen cell keeps its values and runs beside it
            if not any(entry.get("name") == "pmi" for entry in entries):
                entries.append({"name": "pmi"})
            for entry in entries:
                if entry.get("name") == "pmi":
                    entry.update(flags)
        return entries + [entry for path in self.chosen or () for entry in chosen_entries(Path(path))]

    def grid_size(self) -> int:
        """How many cells :meth:`cells` gives at most (the baseline, then each strategy's searches x parameter
        values), counted without building one, so a 10,000-cell grid is refused at once."""
        return 1 + sum(entry_size(entry, self.search) for entry in self.strategy_grids())

    def cells(self) -> list[Cell]:
        """The baseline first, then every strategy's grid in order (search mode, then parameters), each once.

        Each strategy checks its values and search modes (:func:`~faithkit.decoding.strategy_from_dict`), so a
        bad entry stops with a message naming it (``strategies[1]: pmi: alpha must be in [0, 1], got 2 …``).
        """
        cells = [self.baseline.check()]
        for index, entry in enumerate(self.strategy_grids()):
            cells += entry_cells(entry, self.search, where=f"strategies[{index}]: ")
        return list(dict.fromkeys(cells))

    def input_path(self) -> Path:
        """``input`` with a leading ``${data}`` replaced by the benchmark data root."""
        text = str(self.input)
        if text.startswith(DATA_PREFIX):
            return data_root() / text[len(DATA_PREFIX) :].lstrip("/")
        return Path(text)

    def reads(self) -> list[Path | str]:
        """What the sweep reads, which its outputs may not replace: the rows, the chosen files and the models."""
        return [self.input_path(), *(self.chosen or ()), self.generator, self.scoring_model]

    def generation_fingerprint(self) -> dict:
        """What every cell's responses depend on besides the cell (its label names its file): not the grid, not
        batching. The generator by :func:`faithkit.serving.models.identity`."""
        from ..serving import models

        keys = ("input", "split", "document_column", "history_column", "id_column", "quoting")
        fingerprint = {
            "generator": models.identity(self.generator),
            **self.generation.fingerprint(),
            **{key: getattr(self, key) for key in keys},
        }
        return {**fingerprint, "dtype": self.dtype} if self.dtype else fingerprint  # unset: as before it existed


@lru_cache(maxsize=8)
def _fitted_with(model: str) -> bool:
    """Whether ``model`` is the LM faith-judge's weights were fitted with: the same name, or (a folder) the same
    model; two names that are no folders differ without loading anything (torch stays unimported)."""
    from pathlib import Path

    from ..metrics.registry import faith_judge_lm

    fitted = faith_judge_lm()
    if model == fitted or not Path(model).expanduser().exists():
        return model == fitted
    from ..serving import models

    return models.identity(model) == models.identity(fitted)


def load_config(path: str | Path | None = None, overrides: dict | None = None) -> SweepConfig:
    """The config of a YAML file (if any) with ``overrides`` (None values ignored) on top, validated.

    Both are read by :func:`faithkit.settings.options.from_mapping`, as every config is: values may be
    given as text, as on the command line (``alpha: "0,0.25,0.5"``), and an unknown key is the one
    message of :func:`~faithkit.settings.options.reject_unknown`. The :data:`GENERATION` keys fill
    :class:`~faithkit.decoding.GenerationOptions`. A mistake in a value the file gave names the file.
    """
    values = _read_yaml(Path(path)) if path is not None else {}
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    accepted = [*(f.name for f in fields(SweepConfig) if f.name != "generation"), *GENERATION]
    reject_unknown(values, accepted, f"config file {path}: ")
    reject_unknown(overrides, accepted)
    if isinstance(overrides.get("strategies"), str):
        overrides["strategies"] = strategies_from_flag(overrides["strategies"])
    from_file = set(values) - set(overrides)
    try:
        return _load({**values, **overrides})
    except OptionError as error:  # a value the file gave: the message names the file, as training's do
        if error.name.split("[")[0].split(".")[0] in from_file:
            raise OptionError(error.name, error.reason, f"config file {path}: ") from None
        raise
    except ConfigError as error:
        if str(error).split(":")[0].split(" ")[0].split("[")[0] in from_file:
            raise ConfigError(f"config file {path}: {error}") from None
        raise


def _load(values: dict) -> SweepConfig:
    """:func:`load_config` of the merged keys: the generation options first, then the sweep's own."""
    values = {key: value for key, value in values.items() if value is not None}  # YAML null: the default
    if isinstance(values.get("metrics"), (str, list, tuple)):  # a renamed metric's old name: its name now
        try:
            values["metrics"] = metric_names(values["metrics"], METRICS)
        except argparse.ArgumentTypeError as error:
            raise OptionError("metrics", str(error)) from None
    given = {key: values.pop(key) for key in GENERATION if key in values}
    generation = from_mapping(GenerationOptions, {"num_beams": SweepConfig.generation.num_beams, **given})
    return from_mapping(SweepConfig, {**values, "generation": generation}).validate()


def strategies_from_flag(text: str) -> tuple[dict, ...]:
    """``--strategies plain,pmi,cad:alpha=1,pmi:alpha=0.5,top_p=0.9``: the strategies, each over its default grid
    but for the parameters written after its name (a ``PARAM=VALUE`` after a comma belongs to the strategy before);
    a mistake names the flag."""
    written: list[str] = []
    for item in filter(str.strip, text.split(",")):
        if "=" in item and ":" not in item and written:
            written[-1] += "," + item
        else:
            written.append(item)
    return tuple(strategy_from_text(item, where="--strategies ") for item in written)


def _read_yaml(path: Path) -> dict:
    from ..settings.configfile import read_yaml

    values = read_yaml(path)
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must be a mapping of keys to values, got {type(values).__name__}")
    return {str(key).replace("-", "_"): value for key, value in values.items()}


def _entry(entry: dict | str) -> dict:
    """A ``strategies`` entry as a mapping with underscored keys: ``pmi`` is ``{name: pmi}``, ``top-p`` is ``top_p``."""
    if isinstance(entry, str):
        return {"name": entry.strip()}
    return {str(key).replace("-", "_"): value for key, value in entry.items()}
