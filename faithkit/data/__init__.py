"""What a run reads and writes: rows in, results out, the files and paths between, and the job that turns one into
the other.

- :mod:`~faithkit.data.rows`: JSONL/CSV/TSV files as :class:`Row` objects (one schema for every job).
- :mod:`~faithkit.data.arrow`: Parquet files, saved and hub datasets read as rows.
- :mod:`~faithkit.data.results`: :class:`ResultWriter`, the resumable JSONL output of long jobs.
- :mod:`~faithkit.data.jobs`: the resumable, data-parallel "rows in, records out" loop of every long command.
- :mod:`~faithkit.data.files`: every file faithkit writes, never through a link into someone else's file.
- :mod:`~faithkit.data.schema`: files faithkit reads back, checked against the shape it wrote them in.
- :mod:`~faithkit.data.paths`: what each path option must be, checked as the command line is read.
- :mod:`~faithkit.data.corpora`: benchmark and training corpora in the same row schema.

Benchmark data lives under :func:`data_root`: ``$FAITHKIT_DATA``, else ``../shared/data``
beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from .results import ResultWriter, read_results
from .rows import Columns, Row, gold_of, read_rows, reference_of, unique_ids


def data_root() -> Path:
    """Where benchmark data lives: ``$FAITHKIT_DATA``, else ``shared/data`` beside the faithkit checkout."""
    configured = os.environ.get("FAITHKIT_DATA")
    return Path(configured) if configured else Path(__file__).resolve().parents[3] / "shared" / "data"


__all__ = [
    "Columns",
    "InputError",
    "ResultWriter",
    "Row",
    "data_root",
    "gold_of",
    "read_results",
    "read_rows",
    "reference_of",
    "unique_ids",
]
