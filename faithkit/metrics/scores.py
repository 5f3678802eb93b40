"""Several metrics on one rows file, into one output: a record per row holding every metric's scores.

``faithkit score --metric a,b,c`` runs :func:`score_metrics`. Each metric scores the rows into its own resumable file,
``OUT.metrics/<metric>.jsonl`` (:func:`metric_store`), one metric after another: its model loads once, only when the
metric has rows left to score, and is let go before the next metric loads, unless a later metric reads the same LM
(``faithkit score`` loads it once for them: :func:`faithkit.serving.models.shared_loads`). Each file resumes on its own, guarded by
its metric's fingerprint, so an interrupted run continues the metric it was in, and a metric added to the list scores
only itself. When every metric is done, the output is written whole (:func:`merged_records`): the row's inputs, then
each metric's fields in the order of ``--metric``.

Score keys belong to one metric each (the registry is checked for it), so they keep their names. Any other field two
metrics both write (``sentence_scores`` of two claim checkers, the token fields of pmi-faith and faith-judge) is named
``<metric>:<field>`` for each of them, in every record of the output, so neither hides the other. A row that failed
under some metric gets an ``error`` naming each of them, and the scores of the others.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from ..data import Row, read_results
from ..data.results import DIGEST_KEY
from ..errors import OutputError
from ..data.files import to_json, write_json, write_text
from ..data.jobs import is_main_process, row_record, score_rows
from .registry import get_spec

logger = logging.getLogger(__name__)

INPUT_KEYS = ("id", "document", "history", "response", "extras", DIGEST_KEY)
"""What a metric's record holds besides the metric's own fields (:func:`faithkit.data.jobs.row_record`)."""


def metric_store(output: str | Path, metric: str) -> Path:
    """Where ``metric`` scores the rows of a several-metric ``output``: ``OUT.metrics/<metric>.jsonl``."""
    output = Path(output)
    return output.with_name(f"{output.name}.metrics") / f"{metric}.jsonl"


def score_metrics(
    metrics: Mapping[str, object],
    rows: Sequence[Row],
    output: str | Path,
    fingerprints: Mapping[str, dict],
    references: Mapping[str, Mapping[str, str] | None] | None = None,
    **job,
) -> dict[str, dict]:
    """Score the rows with each metric (``{name: metric}``, in output order) into its :func:`metric_store`, then write
    ``output`` with every metric's fields; return each metric's counts (as :func:`faithkit.data.jobs.run_job`'s).

    ``fingerprints[name]`` guards the metric's store, ``references[name]`` (row id: reference) are that metric's
    references, ``job`` holds :func:`~faithkit.data.jobs.run_job`'s options. A metric with a ``release()`` method lets its
    model go when its pass ends. The output's ``.meta.json`` holds every fingerprint."""
    output = Path(output)
    with _held(output, job.get("restart", False)):
        counts = {}
        for name, metric in metrics.items():
            counts[name] = score_rows(
                metric,
                rows,
                metric_store(output, name),
                fingerprint=fingerprints[name],
                references=(references or {}).get(name),
                desc=name,
                **job,
            )
            if hasattr(metric, "release"):  # its model goes before the next metric's loads
                metric.release()
        if is_main_process():
            stores = {name: read_results(metric_store(output, name)) for name in metrics}
            write_text(output, "".join(to_json(record) + "\n" for record in merged_records(rows, stores)))
            write_json(Path(f"{output}.meta.json"), {"command": "score", "metrics": dict(fingerprints)})
    return counts


@contextmanager
def _held(output: Path, restart: bool) -> Iterator[None]:
    """The main process holds ``OUT.lock`` while the run lasts, and refuses an output that one metric's job wrote
    (its fingerprint names one metric, not several) unless ``restart``: it holds results this run would replace."""
    if not is_main_process():
        yield
        return
    lock = FileLock(f"{output}.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise OutputError(f"another run is writing {output} (it holds {output}.lock); wait for it to finish") from None
    try:
        if not restart and output.exists() and output.stat().st_size and not _several_metrics(output):
            raise OutputError(
                f"{output} was written by a different job (one metric's, not several metrics'); to keep it, choose "
                f"another --output; otherwise rerun with --restart to start it over"
            )
        yield
    finally:
        Path(lock.lock_file).unlink(missing_ok=True)
        lock.release()


def _several_metrics(output: Path) -> bool:
    """Whether ``output``'s fingerprint is a several-metric run's (:func:`score_metrics` writes it)."""
    try:
        meta = json.loads(Path(f"{output}.meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("metrics"), dict)


def merged_records(rows: Sequence[Row], stores: Mapping[str, list[dict]]) -> list[dict]:
    """One record per row, in row order: the row's inputs, each metric's fields (shared names qualified: see the
    module's docstring), and an ``error`` naming each metric the row failed under."""
    by_id = {name: {str(record["id"]): record for record in records} for name, records in stores.items()}
    fields = {
        name: {key for record in records for key in record if key not in INPUT_KEYS and key != "error"}
        for name, records in stores.items()
    }
    shared = _shared_fields(fields)
    merged = []
    for row in rows:
        result: dict = {}
        errors = []
        for name in stores:
            record = by_id[name].get(row.id)
            if record is None:
                continue
            if "error" in record:
                errors.append(f"{name}: {record['error']}")
            for key in fields[name] & record.keys():
                result[f"{name}:{key}" if key in shared[name] else key] = record[key]
        if errors:
            result["error"] = "; ".join(errors)
        merged.append(row_record(row, result))
    return merged


def _shared_fields(fields: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Per metric, its fields another metric of the run writes too, but its own score keys (unique to it)."""
    return {
        name: {
            key
            for key in keys
            if key not in get_spec(name).score_keys and any(key in other for o, other in fields.items() if o != name)
        }
        for name, keys in fields.items()
    }


__all__ = ["INPUT_KEYS", "merged_records", "metric_store", "score_metrics"]
