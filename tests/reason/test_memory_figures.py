"""The figures of a CUDA OOM message decide between a full device and a fragmented cache, in each
wording torch has used (c10/cuda/CUDACachingAllocator.cpp across releases)."""

from __future__ import annotations

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.reason.memory import figures, stranded

GiB = 2**30
MiB = 2**20

NEW_STRANDED = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacity of "
                "6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB "
                "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
NEW_FULL = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.21 GiB is free. Of the allocated memory 75.02 GiB is allocated by PyTorch, and "
            "1.42 GiB is reserved by PyTorch but unallocated.")
MID_FULL = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 9.70 GiB "
            "already allocated; 5.56 MiB free; 9.86 GiB reserved in total by PyTorch)")
MID_STRANDED = ("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.78 GiB total capacity; "
                "4.12 GiB already allocated; 301.75 MiB free; 14.20 GiB reserved in total by PyTorch)")
# torch 2.15 (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc): the request is larger than an
# expandable segment's reserve; the device has room (figures as the message composes them).
OVER_RESERVE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 GiB. GPU 0 has a total capacity of "
                "79.19 GiB of which 60.06 GiB is free. This allocation exceeds the expandable-segment reserve of 32.00 GiB, "
                "and a single allocation cannot span expandable segments. Raise PYTORCH_CUDA_ALLOC_CONF "
                "expandable_segments_reserve or expandable_segments_reserve_by_class (or unset it) so that a segment "
                "is at least 40.00 GiB for this stream.")
OLD_FULL = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 11.17 GiB total capacity; 10.90 GiB "
            "already allocated; 24.17 MiB free; 26.39 MiB cached)")


def test_figures_in_each_wording() -> None:
    assert figures(NEW_STRANDED) == (1.7 * GiB, 2.93 * GiB, 2.3 * GiB)
    req, alloc, free = figures(MID_FULL) or (0, 0, 0)
    assert (req, alloc) == (20 * MiB, 9.7 * GiB) and free == pytest.approx(0.16 * GiB)
    assert figures(OLD_FULL) == (20 * MiB, 10.9 * GiB, 26.39 * MiB)
    assert figures("CUDA out of memory. Tried to allocate 20.00 MiB") is None


@pytest.mark.parametrize(("text", "fragmented"), [
    (NEW_STRANDED, True), (MID_STRANDED, True), (NEW_FULL, False), (MID_FULL, False), (OLD_FULL, False),
    (OVER_RESERVE, True),
])
def test_a_cache_with_more_free_gaps_than_the_request_is_fragmentation(text: str, fragmented: bool) -> None:
    assert stranded(text) is fragmented
    d = Diagnoser().diagnose(text.encode() + b"\n")
    want = "cuda-memory-fragmentation/allocator-fragmentation" if fragmented else "cuda-out-of-memory/allocator-oom"
    assert d.primary is not None and d.primary.id == want


def _table(allocated: str, reserved: str) -> str:
    """torch.cuda.memory_summary()'s layout (torch/cuda/memory.py), its rows cut to what is read."""
    return "\n".join([
        "|===========================================================================|",
        "|                  PyTorch CUDA memory summary, device ID 0                 |",
        "|---------------------------------------------------------------------------|",
        "|            CUDA OOMs: 1            |        cudaMalloc retries: 1         |",
        "|===========================================================================|",
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
        "|---------------------------------------------------------------------------|",
        f"| Allocated memory      | {allocated:>10} |    4877 MB |   89299 MB |   88237 MB |",
        "|---------------------------------------------------------------------------|",
        f"| GPU reserved memory   | {reserved:>10} |   12420 MB |   16924 MB |    4504 MB |",
        "|===========================================================================|",
    ]) + "\n"


def test_a_memory_summary_whose_cache_was_mostly_free_is_fragmentation() -> None:
    """The real log (pytorch#35901): 1 GB allocated against 12 GB reserved after the OOM. Near-miss: the
    same table with the cache full of tensors is a device that was full."""
    from tests.reason.test_real_rules import _diagnose

    d = _diagnose("mem-frag-memory-summary-large-tensor")
    assert d.primary is not None and d.primary.id == "cuda-memory-fragmentation/allocator-fragmentation"
    assert any("12420 MiB reserved" in e.text for e in d.primary.evidence)
    d = Diagnoser().diagnose(_table("1062 MB", "12420 MB").encode())
    assert d.primary is not None and d.primary.id == "cuda-memory-fragmentation/allocator-fragmentation"
    d = Diagnoser().diagnose(_table("11900 MiB", "12420 MiB").encode())  # torch 2.x units
    assert d.primary is not None and d.primary.id == "cuda-out-of-memory/allocator-oom"
    [scan] = Diagnoser(parallel=False).scan(Named("a.log", _table("3 GiB", "12 GiB").encode()))
    assert [(t.line, t.allocated, t.reserved) for t in scan.memory_tables] == [(2, 3 * 2**30, 12 * 2**30)]
