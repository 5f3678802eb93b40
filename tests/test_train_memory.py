"""faithkit.train.memory on glibc: freed tensors leave the resident set between phases and, with
training.map_large_allocations, as soon as they are freed."""

import os
import subprocess
import sys
import textwrap

import pytest

from faithkit.train import memory

pytestmark = pytest.mark.skipif(memory._GLIBC is None, reason="glibc's malloc_trim and mallopt")

# 400 MiB of 4 MiB blocks, freed below a live heap block: resident set (MiB) before the free, after it, and
# after release_memory(), printed by a fresh process
HEAP = textwrap.dedent("""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("memory", sys.argv[2])  # alone: no torch, no training stack
    memory = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(memory)

    def rss():
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * 4096 / 2**20

    if sys.argv[1] == "mapped":
        memory.map_large_allocations()
    first = bytearray(4 << 20); del first  # freeing a mapped block raises glibc's dynamic threshold past 4 MiB
    blocks = [bytearray(4 << 20) for _ in range(100)]
    keep = bytearray(200_000)  # a live block above them: the heap's top cannot shrink past it
    base = rss()
    del blocks
    after = rss()
    memory.release_memory()
    print(round(base - after), round(base - rss()))
""")


def freed_mib(mode: str, **env) -> list[int]:
    """MiB the 400 MiB freed took off the resident set at once, and after release_memory()."""
    run = subprocess.run(
        [sys.executable, "-c", HEAP, mode, memory.__file__],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return [int(value) for value in run.stdout.split()]


def test_freed_heap_stays_resident_until_release_memory():
    at_once, released = freed_mib("default")
    assert at_once < 50 and released > 380


def test_mapped_large_allocations_leave_as_they_are_freed():
    at_once, released = freed_mib("mapped")
    assert at_once > 380 and released > 380


def test_a_threshold_the_user_gave_glibc_is_left_alone():
    at_once, released = freed_mib("mapped", MALLOC_MMAP_THRESHOLD_=str(64 << 20))
    assert at_once < 50 and released > 380
