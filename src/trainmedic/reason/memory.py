"""Read the figures in a CUDA out-of-memory message: was the device full, or was the cache fragmented?

Before raising, the caching allocator has already released every cached segment that was wholly
free and retried. What it still reports as reserved but unallocated sits in segments that also hold
live tensors: free bytes in gaps. When those gaps add up to more than the request and to a large
share of what PyTorch holds, the request failed for want of a contiguous block, not for want of
memory, and the fix is the allocator's (expandable segments), not a smaller batch.
"""

from __future__ import annotations

import re

from trainmedic.util.text import to_bytes

_SIZE = r"(\d+(?:\.\d+)?) (bytes|B|KiB|MiB|GiB|TiB)"
_REQUEST = re.compile(r"Tried to allocate " + _SIZE)
# torch >= 2.1: "Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by
# PyTorch but unallocated."
_NEW = re.compile(_SIZE + r" is allocated by PyTorch, and " + _SIZE + r" is reserved by PyTorch but unallocated")
# torch 1.5 - 2.0: "9.70 GiB already allocated; 5.56 MiB free; 9.86 GiB reserved in total by PyTorch"
# (R's torch binding prints the same message with "Pytorch".)
_RESERVED = re.compile(_SIZE + r" already allocated;[^;\n]{0,80}; " + _SIZE + r" reserved in total by Py[Tt]orch")
# torch < 1.5: "6.63 GiB already allocated; 11.06 MiB free; 180.42 MiB cached" (cached = reserved - allocated)
_CACHED = re.compile(_SIZE + r" already allocated;[^;\n]{0,80}; " + _SIZE + r" cached\)")

SHARE = 0.25  # stranded bytes at least this share of what PyTorch holds
TABLE_SHARE = 0.5  # a memory summary alone: at least half of what PyTorch held was free in its cache
FLOOR = 256 * 2**20  # and at least this many: a few stranded megabytes on a full device are no cause


def figures(text: str) -> tuple[float, float, float] | None:
    """(requested, allocated, reserved-but-unallocated) in bytes, or None if the message lacks them."""
    text = text[:2000]
    req = _REQUEST.search(text)
    if req is None:
        return None
    requested = to_bytes(*req.groups())
    if m := _NEW.search(text):
        return requested, to_bytes(m[1], m[2]), to_bytes(m[3], m[4])
    if m := _RESERVED.search(text):
        allocated = to_bytes(m[1], m[2])
        return requested, allocated, max(0.0, to_bytes(m[3], m[4]) - allocated)
    if m := _CACHED.search(text):
        return requested, to_bytes(m[1], m[2]), to_bytes(m[3], m[4])
    return None


# torch 2.15 says so itself when one request is larger than an expandable segment's reserve: the
# allocator's layout, not the device's capacity, refused it.
_OVER_RESERVE = re.compile(r"This allocation exceeds the expandable-segment reserve of ")


def stranded_table(allocated: float, reserved: float) -> bool:
    """torch.cuda.memory_summary()'s figures: the cache's free bytes (reserved, not allocated) are a
    large share of all it held. With no request to compare, the bar is higher: most of the cache."""
    free_in_cache = reserved - allocated
    return free_in_cache >= max(FLOOR, TABLE_SHARE * reserved)


def stranded(text: str) -> bool:
    """The cache held more free bytes than the request, and a large share of all it held (or the
    allocator said the request could not fit its segments' reserve)."""
    if _OVER_RESERVE.search(text[:4000]):
        return True
    f = figures(text)
    if f is None:
        return False
    requested, allocated, free_in_cache = f
    return free_in_cache >= max(requested, FLOOR) and free_in_cache >= SHARE * (allocated + free_in_cache)
