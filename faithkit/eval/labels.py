"""A human label that is NaN, infinite, empty or null is no label: its row is left out, never made a negative.

Every meta-evaluation compares a score with a label. A label that says nothing (JSON ``NaN``
or ``null``, the text ``"NaN"``, ``"nan"``, ``"inf"`` or ``""`` in a CSV/TSV, a Parquet NaN)
would otherwise count as "not the positive value", a negative, and move the AUROC silently.
:func:`without_missing_labels` leaves such rows out with one warning line that counts them, or
refuses them all with ``--strict-labels``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..errors import InputError
from ..settings.numbers import is_non_finite

logger = logging.getLogger(__name__)

MISSING_TEXTS = frozenset(
    {"", "nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "null"}
)
"""Label texts (stripped, lower case) that stand for no label."""

Item = TypeVar("Item")


def is_missing_label(value) -> bool:
    """None, a NaN or infinite number, or a text of :data:`MISSING_TEXTS`."""
    if value is None or is_non_finite(value):
        return True
    return isinstance(value, str) and value.strip().lower() in MISSING_TEXTS


def without_missing_labels(
    items: Sequence[Item], label_of: Callable[[Item], object], where: str, name_of: Callable[[Item], str], strict: bool
) -> list[Item]:
    """``items`` whose label (``label_of``) is not missing; the others are counted in one warning naming the first
    (``name_of``), or, with ``strict``, an :class:`InputError`. ``where`` names the labels, e.g. ``column 'label'``."""
    missing = [item for item in items if is_missing_label(label_of(item))]
    if not missing:
        return list(items)
    shown = ", ".join(name_of(item) for item in missing[:3]) + (" …" if len(missing) > 3 else "")
    if strict:
        raise InputError(
            f"{len(missing)} rows have no usable label in {where} (NaN, infinity, empty or null), e.g. {shown}; "
            f"give them a label or remove them, or drop --strict-labels to leave them out"
        )
    logger.warning(
        "%d rows have no usable label in %s (NaN, infinity, empty or null) and are left out, e.g. %s "
        "(--strict-labels refuses them instead)",
        len(missing),
        where,
        shown,
    )
    return [item for item in items if not is_missing_label(label_of(item))]
