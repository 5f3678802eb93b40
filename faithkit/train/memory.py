"""Handing freed memory back to the operating system between a run's phases.

glibc's ``malloc`` keeps the pages that freed tensors occupied, for reuse, so a process's
resident set stays near the high-water mark of every phase before: the judge model that an
evaluation loads would sit on top of memory the training steps freed long ago, and the run's
peak would be the sum of both. :func:`release_memory` between phases makes the peak the
largest phase instead.

Within a phase, glibc's dynamic threshold does the same on a smaller scale: after the first
large block is freed it serves blocks up to that size (at most 32 MiB) from the heap, so a
training step's activations and gradients land there and the pages they free stay resident.
:func:`map_large_allocations` (``training.map_large_allocations``) fixes the threshold, so
that every large block is mapped on its own and unmapped when freed.

Where the C library is not glibc both only collect garbage.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters, from glibc's malloc.h


def _glibc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


_GLIBC = _glibc()


def release_memory() -> None:
    """Free unreachable objects, then return every free page of the heap to the operating system."""
    gc.collect()
    if _GLIBC is not None:
        _GLIBC.malloc_trim(0)


def map_large_allocations(threshold: int = 1 << 20) -> None:
    """From now on, for the whole process: blocks of ``threshold`` bytes or more are mapped on their own.

    A setting the user made through glibc's own ``MALLOC_MMAP_THRESHOLD_`` is left alone.
    """
    if _GLIBC is not None and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        _GLIBC.mallopt(M_MMAP_THRESHOLD, threshold)
        _GLIBC.mallopt(M_TRIM_THRESHOLD, threshold)
