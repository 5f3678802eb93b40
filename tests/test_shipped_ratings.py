"""The rated generations faithkit ships (docs/ratings.md) are what their tasks' keys and raters' answers say: each
rated file is the export of its tasks, and every task has two raters who answered every item."""

import json
from pathlib import Path

import pytest

from faithkit.annotate import read_annotations, read_key
from faithkit.annotate.exports import rated_rows

RATINGS = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "ratings"
RATED_FILES = {
    "rated-valid_freq.jsonl": ("f1", "f2", "f3"),
    "rated-valid_freq-f4.jsonl": ("f4",),
    "rated-valid_rare.jsonl": ("r2", "r3"),
}


def exported(task: str) -> list[dict]:
    folder = RATINGS / task
    return rated_rows(folder, read_annotations(read_key(folder), sorted(folder.glob("answers-*.json"))))


@pytest.mark.parametrize("name", sorted(RATED_FILES))
def test_each_rated_file_is_the_export_of_its_tasks(name):
    shipped = [json.loads(line) for line in (RATINGS / name).read_text(encoding="utf-8").splitlines()]
    assert shipped == [row for task in RATED_FILES[name] for row in exported(task)]


def test_every_task_has_two_raters_who_answered_every_item():
    tasks = sorted(path.parent.name for path in RATINGS.glob("*/key.json"))
    assert tasks == sorted(task for group in RATED_FILES.values() for task in group)
    for task in tasks:
        answers = [json.loads(path.read_text()) for path in sorted((RATINGS / task).glob("answers-*.json"))]
        assert len({a["annotator"] for a in answers}) == 2, task
        assert all(len(a["answers"]) == a["items"] for a in answers), task
    assert sum(len((RATINGS / name).read_text().splitlines()) for name in RATED_FILES) == 660  # docs/ratings.md's count
