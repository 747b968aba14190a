"""Let a big scan reuse the memory of the blocks it has read.

A scan reads its input into a fresh block of a few MiB at a time. glibc serves an allocation that large
from a new mmap and unmaps it when freed, so every page of every block faults in anew: about 170,000
faults per GiB read, a tenth of a one-process scan's time (measured in benchmarks/). Raising malloc's
mmap and trim thresholds keeps the freed blocks in the heap for the next ones. The setting is
process-wide, so it is made only for a big input (its peak memory is the same: blocks are freed as
fast as they are read). Linux's glibc only; elsewhere nothing changes.
"""

from __future__ import annotations

import ctypes
import functools
import sys

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20  # larger than any block a scan holds (blocks.BLOCK plus a line)
TRIM_THRESHOLD = 128 << 20  # freed heap kept for reuse, at most


@functools.cache
def reuse_freed_blocks() -> bool:
    """Keep freed blocks for reuse in this process and those it forks; False where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
