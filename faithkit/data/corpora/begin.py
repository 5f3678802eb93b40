"""BEGIN (Dziri et al., TACL 2022): responses labelled for attribution to their knowledge.

TSV files with ``knowledge``, ``message`` (the previous turn), ``response``, ``begin_label``
and ``data_source`` columns; the dev splits ship as ``begin/begin_dev_{wow,cmu,tc}.tsv``
under :func:`faithkit.data.data_root`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...errors import InputError
from ..rows import Row, read_rows

POSITIVE_LABEL = "Fully attributable"


def load_begin(paths: Sequence[str | Path]) -> list[Row]:
    """Rows of BEGIN TSV files; ids are ``<file stem>:<line>`` so several files can share one output."""
    rows = []
    for path in paths:
        for row in read_rows(path):
            row.id = f"{Path(path).stem}:{row.id}"
            if "begin_label" not in row.extras and not row.error:
                raise InputError(f"{path}: no 'begin_label' column; is this a BEGIN file?")
            rows.append(row)
    return rows
