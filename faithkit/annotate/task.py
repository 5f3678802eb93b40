"""A blind A/B annotation task from two systems' responses to the same rows.

:func:`build_task` takes two :class:`System` s (two cells of a sweep, or any two
``faithkit generate`` outputs of the same rows), samples contexts where their responses
differ, puts the two responses of each context on the page's sides 1 and 2 in a seeded
random order, and writes into the task folder:

    annotate.html   the page annotators open (self-contained; holds no system name or side assignment)
    key.json        which system is on which side of each item, and the automatic scores of every
                    response; kept by the researcher, read by ``faithkit annotate report``

Sides are balanced: half the items (one more or less) show system ``a`` first.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

from ..data import read_results
from ..errors import InputError, OutputError
from ..data.files import write_json, write_text
from ..questions import ANSWERS, DIMENSIONS
from ..data.schema import Object, read_json_file

logger = logging.getLogger(__name__)

KEY_FILE, PAGE_FILE = "key.json", "annotate.html"
SYSTEMS = ("a", "b")
SWEEP_SCORES = {"pmi_faith": ("scores.jsonl", "pmi"), "q2": ("q2.jsonl", "q2")}
"""Per-response automatic scores a sweep folder holds: measure -> (file, field)."""
RECORD_SCORES = {"pmi_faith": "pmi", "q2": "q2", "faithkit_checker": "faithkit_checker"}
"""The same scores when a responses file carries them itself (a ``faithkit score`` output)."""


@dataclass
class System:
    """One system's responses by row id (``{"id", "document", "history", "response", …}`` records) and its scores."""

    name: str
    source: Path
    records: dict[str, dict]
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # row id -> measure -> value

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None) -> System:
        """A ``generate`` (or ``score``) output; records with an error or without a response are left out."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"responses file not found: {path}")
        records = {
            str(r["id"]): r for r in read_results(path) if "error" not in r and isinstance(r.get("response"), str)
        }
        scores = {
            row: {measure: r[key] for measure, key in RECORD_SCORES.items() if _is_number(r.get(key))}
            for row, r in records.items()
        }
        return cls(name or path.stem, path, records, scores)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def sweep_cells(sweep: str | Path) -> dict[str, Path]:
    """A sweep folder's cells, named as its ``sweep.csv`` names them, with each cell's responses file.

    The one place that knows how a sweep stores its cells: a ``cell`` column when the table
    has one (sweeps over strategies; a cell that decodes as another, ``decodes_as``, shares its
    file), else ``a<alpha>_p<top_p>`` (earlier alpha x top_p sweeps); responses in
    ``cells/<name>.jsonl``.
    """
    sweep = Path(sweep)
    table = sweep / "sweep.csv"
    if not table.is_file():
        raise InputError(f"{sweep} has no sweep.csv; give the --out folder of a finished 'faithkit sweep'")
    with open(table, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {_cell_name(row): sweep / "cells" / f"{row.get('decodes_as') or _cell_name(row)}.jsonl" for row in rows}


def _cell_name(row: dict) -> str:
    if row.get("cell"):
        return row["cell"]
    return f"a{float(row['alpha']):g}_p{float(row['top_p']):g}"  # an earlier alpha x top_p sweep's table


def sweep_system(sweep: str | Path, cell: str) -> System:
    """One cell of a sweep as a :class:`System`, with its PMI-FAITH and Q² scores from the sweep's score files."""
    sweep = Path(sweep)
    cells = sweep_cells(sweep)
    if cell not in cells:
        raise InputError(f"{sweep} has no cell {cell!r}; its cells are {', '.join(cells)}")
    system = System.from_file(cells[cell], name=cell)
    decoded = cells[cell].stem  # the cell whose decode (and scores) this one shares
    for measure, (name, key) in SWEEP_SCORES.items():
        if (sweep / name).is_file():
            for record in read_results(sweep / name):
                if (
                    record.get("cell") == decoded
                    and record.get("row") in system.records
                    and _is_number(record.get(key))
                ):
                    system.scores.setdefault(record["row"], {})[measure] = record[key]
    return system


@dataclass
class Task:
    """What :func:`build_task` wrote: the page's content (``public``) and the researcher's ``key``."""

    public: dict
    key: dict
    out: Path

    @property
    def id(self) -> str:
        return self.key["task"]


def _same_text(first: str, second: str) -> bool:
    return " ".join(first.split()) == " ".join(second.split())


def differing_rows(a: System, b: System) -> tuple[list[str], list[str]]:
    """The rows both systems answered, and those of them where the answers differ (beyond whitespace)."""
    rows = [row for row in a.records if row in b.records]
    if not rows:
        raise InputError(f"{a.source} and {b.source} share no row id; give two outputs of the same input rows")
    for row in rows:
        first, second = a.records[row], b.records[row]
        if (first.get("document"), first.get("history")) != (second.get("document"), second.get("history")):
            raise InputError(
                f"row {row!r} has another document or history in {b.source} than in {a.source}; give two "
                "outputs of the same input rows"
            )
    differing = [row for row in rows if not _same_text(a.records[row]["response"], b.records[row]["response"])]
    if not differing:
        raise InputError(
            f"{a.name} and {b.name} give the same response to all {len(rows)} shared rows: nothing to compare"
        )
    return rows, differing


SENTENCE_ENDS = tuple(".!?…\"'”’)]*") + ("。", "！", "？")
"""What a finished response ends with; anything else, and the response was likely cut at max-new-tokens."""


def ends_mid_sentence(text: str) -> bool:
    """Whether the response stops mid-sentence (the generator likely hit its token limit), so the page flags it and
    annotators judge what is there rather than guess the end. A heuristic: one ending in an emoji is flagged too."""
    stripped = text.rstrip()
    return bool(stripped) and not stripped.endswith(SENTENCE_ENDS)


def _balanced_coins(count: int, rng: random.Random) -> list[bool]:
    """``count`` shuffled flags, half of them True (the odd one a fair coin): whether system a goes first."""
    flags = [index < count // 2 for index in range(count)]
    if count % 2:
        flags[-1] = rng.random() < 0.5
    rng.shuffle(flags)
    return flags


def build_task(a: System, b: System, out: str | Path, contexts: int = 50, seed: int = 0) -> Task:
    """Sample ``contexts`` rows where ``a`` and ``b`` answer differently; write the page and the key into ``out``."""
    if contexts < 1:
        raise InputError(f"--contexts {contexts}: use at least 1")
    rows, differing = differing_rows(a, b)
    if len(differing) < contexts:
        which = (
            f"all {len(rows)} shared rows have"
            if len(differing) == len(rows)
            else f"only {len(differing)} of {len(rows)} shared rows have"
        )
        logger.warning(
            "%s different responses; the task has %d items, not %d (--contexts)", which, len(differing), contexts
        )
    rng = random.Random(seed)
    chosen = rng.sample(differing, min(contexts, len(differing)))
    a_first = _balanced_coins(len(chosen), rng)
    items, key_items = [], []
    for number, (row, first) in enumerate(zip(chosen, a_first), start=1):
        sides = ("a", "b") if first else ("b", "a")
        items.append(_page_item(str(number), a.records[row], [{"a": a, "b": b}[side].records[row] for side in sides]))
        key_items.append({"item": str(number), "row": row, "sides": list(sides), "scores": _item_scores(row, a, b)})
    task_id = hashlib.sha256(json.dumps(items, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
    public = {
        "format": "faithkit-annotation-task",
        "task": task_id,
        "answers": list(ANSWERS),
        "dimensions": [
            {"name": name, "statement": statement, "definition": definition}
            for name, (statement, definition) in DIMENSIONS.items()
        ],
        "items": items,
    }
    key = {
        "format": "faithkit-annotation-key",
        "task": task_id,
        "seed": seed,
        "systems": {"a": {"name": a.name, "source": str(a.source)}, "b": {"name": b.name, "source": str(b.source)}},
        "shared_rows": len(rows),
        "differing_rows": len(differing),
        "items": key_items,
    }
    return _write_task(Path(out), public, key)


def _page_item(item: str, record: dict, shown: list[dict]) -> dict:
    """One item of the page: the context of ``record`` and the responses of the ``shown`` records, in page order."""
    history = record.get("history") or []
    responses = [shown_record["response"] for shown_record in shown]
    return {
        "item": item,
        "document": record["document"],
        "history": [
            turn for turn in ([history] if isinstance(history, str) else history) if str(turn).strip()
        ],  # a blank turn would be an empty bubble
        "responses": responses,
        "cut": [ends_mid_sentence(text) for text in responses],
    }


def _item_scores(row: str, a: System, b: System) -> dict:
    """Each system's scores of its response to ``row``, with its knowledge precision (the report correlates them)."""
    from ..metrics.lexical import knowledge_precision

    document = a.records[row]["document"]  # the same in b's records (differing_rows checks it)
    scores = {}
    for name, system in {"a": a, "b": b}.items():
        measures = dict(system.scores.get(row, {}))
        precision = knowledge_precision(document, system.records[row]["response"])
        if precision is not None:
            measures["knowledge_precision"] = precision
        scores[name] = measures
    return scores


def _write_task(out: Path, public: dict, key: dict) -> Task:
    """The key and the page in ``out``; a folder holding another task is an OutputError (its answers would not
    match)."""
    from .page import render_page

    key_path = out / KEY_FILE
    if key_path.is_file():
        earlier = read_key(out)["task"]
        if earlier != key["task"]:
            raise OutputError(
                f"{out} already holds annotation task {earlier}, whose answers would no longer match; "
                "choose another --out, or delete the folder to start over"
            )
    out.mkdir(parents=True, exist_ok=True)
    write_json(key_path, key)
    write_text(out / PAGE_FILE, render_page(public))
    return Task(public, key, out)


def read_key(task: str | Path) -> dict:
    """The key of a task folder (what :func:`build_task` wrote), its fields checked as :func:`build_task` writes
    them, so that a hand-edited key is one InputError naming the field."""
    path = Path(task) / KEY_FILE
    key = read_document(
        path, "faithkit-annotation-key", "an annotation key", "give the --out folder of 'faithkit annotate build'"
    )
    problem = _key_problem(key)
    if problem:
        raise InputError(
            f"{path}: {problem}; rebuild the task with 'faithkit annotate build' (the key must match "
            f"the page the annotators answered)"
        )
    return key


def _key_problem(key: dict) -> str | None:
    """What in a key differs from what :func:`build_task` writes, or None."""
    if not isinstance(key.get("task"), str):
        return "'task' is not a task id"
    systems = key.get("systems")
    if (
        not isinstance(systems, dict)
        or sorted(systems) != sorted(SYSTEMS)
        or not all(isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in systems.values())
    ):
        return f"'systems' must map {' and '.join(SYSTEMS)} to {{name, source}}"
    items = key.get("items")
    if not isinstance(items, list) or not items:
        return "'items' is not a list of items"
    for index, entry in enumerate(items):
        where = f"items[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), str):
            return f"{where} has no item number ('item', a string)"
        if not isinstance(entry.get("sides"), list) or sorted(entry["sides"]) != sorted(SYSTEMS):
            return f"{where}.sides must hold {' and '.join(SYSTEMS)} in the order the page shows them"
        scores = entry.get("scores", {})
        if not isinstance(scores, dict) or not all(
            isinstance(measures, dict)
            and all(
                value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
                for value in measures.values()
            )
            for measures in scores.values()
        ):
            return f"{where}.scores must map each system to its measures' numbers"
    return None


def read_document(path: Path, kind: str, description: str, fix: str) -> dict:
    """A JSON object whose ``format`` is ``kind``; a missing, broken or other file is one :class:`InputError`."""
    document = read_json_file(path, Object({}), fix)
    if document.get("format") != kind:
        raise InputError(f"{path} is not {description}; {fix}")
    return document
