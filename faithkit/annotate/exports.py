"""The annotators' exports read back: each file checked against the task's key (the right task, every item fully
answered, one file per annotator), the page's sides mapped back to the systems, all ratings in one array; and the
rated responses as rows (:func:`rated_rows`, ``faithkit annotate export``), the claim checker's rated data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..data.schema import TEXT, Object, check_schema
from .page import read_page
from .task import ANSWERS, DIMENSIONS, PAGE_FILE, SYSTEMS, read_document


@dataclass
class Annotations:
    """Every annotator's ratings, by system: ``ratings[annotator, item, system, dimension]`` is an index into ANSWERS."""

    key: dict
    annotators: list[str]
    files: list[Path]
    ratings: np.ndarray

    @property
    def systems(self) -> dict[str, str]:
        return {side: self.key["systems"][side]["name"] for side in SYSTEMS}


def read_annotations(key: dict, paths: list[str | Path]) -> Annotations:
    """The exports at ``paths`` as one array; a bad file is an :class:`InputError` naming it."""
    if not paths:
        raise InputError("no answers file given; pass the JSON files the annotators exported")
    dimensions = list(DIMENSIONS)
    items = key["items"]
    names, files, tables = [], [], []
    seen: dict[str, Path] = {}
    for path in map(Path, paths):
        annotator, answers = _read_export(path, key)
        earlier = seen.get(annotator.casefold())
        if earlier is not None:
            raise InputError(
                f"{path} and {earlier} both come from annotator {annotator!r}; give one export per "
                "annotator (the latest export holds all of their answers)"
            )
        seen[annotator.casefold()] = path
        table = np.empty((len(items), len(SYSTEMS), len(dimensions)), dtype=int)
        for index, entry in enumerate(items):
            for side, system in enumerate(entry["sides"]):  # the page's side 1, 2 -> system a / b
                for column, dimension in enumerate(dimensions):
                    table[index, SYSTEMS.index(system), column] = ANSWERS.index(answers[entry["item"]][side][dimension])
        names.append(annotator)
        files.append(path)
        tables.append(table)
    return Annotations(key, names, files, np.stack(tables))


EXPORT = Object({"task": TEXT, "annotator": TEXT, "answers": Object({})})
"""An answers export as the annotation page writes it (each item's answers are checked against the key)."""


def _read_export(path: Path, key: dict) -> tuple[str, dict]:
    fix = "give the JSON files the annotators exported from the page"
    export = read_document(path, "faithkit-annotation-answers", "an answers export of a faithkit annotation page", fix)
    check_schema(export, EXPORT, path, fix)
    if export.get("task") != key["task"]:
        raise InputError(
            f"{path} answers another task ({export.get('task')}, this one is {key['task']}); give the "
            "exports of this task's page"
        )
    annotator, answers = export["annotator"].strip(), export["answers"]
    if not annotator:
        raise InputError(f"{path} has no annotator name; enter it on the page and export again")
    open_questions = []
    for entry in key["items"]:
        given = answers.get(entry["item"])
        for side in range(len(SYSTEMS)):
            side_answers = given[side] if isinstance(given, list) and len(given) == len(SYSTEMS) else None
            for dimension in DIMENSIONS:
                value = side_answers.get(dimension) if isinstance(side_answers, dict) else None
                if value is None:
                    open_questions.append((entry["item"], dimension, side))
                elif value not in ANSWERS:
                    raise InputError(
                        f"{path}: item {entry['item']}, response {side + 1}: {dimension} is {value!r}, "
                        f"not one of {', '.join(ANSWERS)}"
                    )
    if open_questions:
        missing = len(dict.fromkeys(item for item, _, _ in open_questions))
        item, dimension, side = open_questions[0]
        raise InputError(
            f"{path}: {missing} of {len(key['items'])} items are not fully answered (first: item {item}, "
            f"{dimension} of response {side + 1}); finish them on the page and export again"
        )
    return annotator, answers


ANSWER_LEVELS = {"agree": 2, "neutral": 1, "disagree": 0}
"""An answer as a level (the report's): a rated row's aggregate is the raters' mean level per dimension."""


def rated_rows(task: str | Path, annotations: Annotations) -> list[dict]:
    """One row per rated response, in the page's order (item, then side): ``id`` (``TASK:ITEM:SYSTEM``), ``row``
    (the input row's id), ``task``, ``item``, ``system`` (its name in key.json), the ``document``, ``history`` and
    ``response`` the annotators saw (read from the task's page), ``ratings`` (per dimension, each annotator's
    answer) and ``aggregate`` (per dimension, how many gave each answer and the ``mean`` level, Agree 2, Neutral 1,
    Disagree 0)."""
    key = annotations.key
    page_path = Path(task) / PAGE_FILE
    page = read_page(page_path)
    if page.get("task") != key["task"]:
        raise InputError(
            f"{page_path} shows task {page.get('task')}, its key.json is task {key['task']}; rebuild the task with "
            "'faithkit annotate build'"
        )
    shown = {item["item"]: item for item in page["items"]}
    rows = []
    for index, entry in enumerate(key["items"]):
        for position, side in enumerate(entry["sides"]):  # the page shows side 1, 2 -> system a / b
            item = shown[entry["item"]]
            ratings = {
                dimension: {
                    annotator: ANSWERS[annotations.ratings[number, index, SYSTEMS.index(side), column]]
                    for number, annotator in enumerate(annotations.annotators)
                }
                for column, dimension in enumerate(DIMENSIONS)
            }
            rows.append(
                {
                    "id": f"{key['task']}:{entry['item']}:{side}",
                    "row": entry["row"],
                    "task": key["task"],
                    "item": entry["item"],
                    "system": annotations.systems[side],
                    "document": item["document"],
                    "history": item["history"],
                    "response": item["responses"][position],
                    "ratings": ratings,
                    "aggregate": {dimension: _aggregate(list(given.values())) for dimension, given in ratings.items()},
                }
            )
    return rows


def _aggregate(answers: list[str]) -> dict:
    """How many raters gave each answer, and their mean level."""
    return {
        **{answer: answers.count(answer) for answer in ANSWERS},
        "mean": sum(ANSWER_LEVELS[answer] for answer in answers) / len(answers),
    }
