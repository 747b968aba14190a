"""Scan one large plain log on every core: the file is cut into ranges at line starts, each range is
scanned by its own process, and the parts are stitched back into exactly what one sequential scan gives.

Each range reads LOOKAHEAD bytes past its end (a traceback may run on) and BEHIND bytes before its start
(a launcher summary record looks back for its host), matches are capped per pattern in file order, and
line numbers are shifted by the lines of the ranges before. Compressed inputs and stdin cannot be cut,
so they stay sequential.
"""

from __future__ import annotations

import io
import multiprocessing as mp
import os
import signal
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from trainmedic.logs import heap, newlines
from trainmedic.logs.attribution import host_from_path, rank_from_path
from trainmedic.logs.blocks import BLOCK
from trainmedic.logs.reader import (
    BEHIND,
    LOOKAHEAD,
    MAX_CHECKPOINTS,
    MAX_HITS_PER_PATTERN,
    TAIL,
    Found,
    Reader,
    ScanState,
)
from trainmedic.logs.sources import Source, compression_of, wide_encoding
from trainmedic.model import ScanResult
from trainmedic.scan.database import Pattern

_READ = BLOCK
PARALLEL_MIN_BYTES = 64 << 20  # plain files this large are scanned in ranges, one process per core
# The tail's line-by-line reading (reader._scan_tail) costs about what the scan of this many bytes does
# (measured in benchmarks/: 0.07-0.13 s, at 0.75 GB/s per core). This process reads it while the others
# scan their ranges, so its own range is that much shorter.
TAIL_ALLOWANCE = 64 << 20
_WORKER: dict[str, Reader] = {}  # the reader of a worker process, built once by _init


def _workers() -> int:
    env = os.environ.get("TRAINMEDIC_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _line_starts(path: Path, size: int, parts: int, head_start: float = 0.0) -> list[int]:
    """Range boundaries at line starts. The first range, scanned by this process while the others
    are still starting, gets `head_start` more of the file (a fraction) to keep every core busy, and
    its share of TAIL_ALLOWANCE less: this process also reads the input's tail line by line."""
    cuts = [0]
    tail = min(TAIL_ALLOWANCE / max(size, 1), 0.25 / parts)
    first = min(0.9, max(0.1 / parts, 1.0 / parts + head_start - tail * (parts - 1) / parts))
    with path.open("rb") as f:
        for i in range(1, parts):
            pos = int(size * (first + (1.0 - first) * (i - 1) / (parts - 1)))
            f.seek(pos)
            while True:  # not readline(): a 200 MB line must not be read into memory
                chunk = f.read(1 << 16)
                if not chunk:
                    pos = size
                    break
                nl = chunk.find(b"\n")
                if nl >= 0:
                    pos += nl + 1
                    break
                pos += len(chunk)
            if cuts[-1] < pos < size:
                cuts.append(pos)
    cuts.append(size)
    return cuts


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """A worker must not outlive the scan that started it: a `kill -TERM` of `diagnose` ends the
    parent without any Python cleanup, and the worker would block for good writing its result.
    On Linux the kernel sends it SIGKILL when its parent dies; elsewhere nothing changes."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: no such call
        return
    if os.getppid() != parent:  # the parent died before the call took effect
        os._exit(1)


def _init_forked(parent: int) -> None:
    _die_with(parent)


def _init(patterns: list[Pattern], backend: str | None, block_size: int, keep_tail: bool, parent: int) -> None:
    """A spawned worker builds its reader from the patterns it is handed (the compiled database
    comes from the on-disk cache), so it needs neither the library nor the API."""
    _die_with(parent)
    heap.reuse_freed_blocks()
    _WORKER["reader"] = Reader(patterns, backend, block_size, keep_tail)


def _scan_range(name: str, path: str, start: int, end: int, last: bool) -> ScanResult | _Untailed:
    source = Source(name, Path(path), end - start)
    if last:
        return _range_state(_WORKER["reader"], source, start, end, last).finish_tail_apart()
    return scan_range(_WORKER["reader"], source, start, end, last)


def feed_range(state: ScanState, f: io.BufferedReader, start: int, end: int,
               on_bytes: Callable[[int], None] | None = None) -> None:
    """Read [start, end) into fresh buffers cut at line ends, one copy per byte (the kernel's)."""
    f.seek(start)
    pos, carry, fast = start, b"", True
    while pos < end:
        want = min(_READ, end - pos)
        if not fast:
            chunk = f.read(want)
            if not chunk:
                break
            state.feed(chunk)
            pos += len(chunk)
        else:
            buf = bytearray(len(carry) + want)
            buf[: len(carry)] = carry
            n = f.readinto(memoryview(buf)[len(carry):])
            if not n:
                break
            pos += n
            if len(carry) + n < len(buf):
                del buf[len(carry) + n :]
            cut = buf.rfind(b"\n")
            if cut < 0:  # a line longer than a read: the splitter bounds it from here on
                fast, carry = False, b""
                state.feed(bytes(buf))
            else:
                carry = bytes(memoryview(buf)[cut + 1 :])
                del buf[cut + 1 :]
                state.feed_block(buf)
        if on_bytes is not None:
            on_bytes(want)
    if carry:
        state.feed(carry)


def scan_range(reader: Reader, source: Source, start: int, end: int, last: bool) -> ScanResult:
    """Scan bytes [start, end) of a plain file, as part of a whole-file scan."""
    return _range_state(reader, source, start, end, last).finish(tail=last)


def _range_state(reader: Reader, source: Source, start: int, end: int, last: bool) -> ScanState:
    """The scan of bytes [start, end) with all of it fed, and the look-ahead past a range that is not the last."""
    assert source.path is not None
    result = Found(source)
    state = ScanState(reader, result, rank_from_path(source.name), host_from_path(source.name), pasted=False)
    with source.path.open("rb") as f:
        if start:
            f.seek(max(0, start - BEHIND))
            state.start_at(start, f.read(start - max(0, start - BEHIND)))
        feed_range(state, f, start, end)
        if not last:
            state.limit()
            state.feed(f.read(LOOKAHEAD))
    return state


# The last range's scan without its tail's reading: the result, the tail and its first line's number.
_Untailed = tuple[ScanResult, bytes, int]
# What the tail's reading sets (Reader.read_tail), taken from it into the last range's result.
_TAIL_FIELDS = ("progress", "tqdm_incomplete", "done", "done_line", "prompt_line", "last_line_rank", "notable",
                "markers", "tail_lines")


def _file_tail(path: Path, size: int) -> bytes:
    """The last TAIL bytes of the file's first `size`, from a line start: what the last range's scan keeps
    as its tail, unless a line too long for a block was cut there (the caller compares the two)."""
    with path.open("rb") as f:
        f.seek(max(0, size - TAIL))
        tail = f.read(min(size, TAIL))
    if size > TAIL:
        tail = tail[tail.find(b"\n") + 1 :]
    return tail


def _tailed(reader: Reader, source: Source, parts: list[ScanResult], untailed: _Untailed,
            early: tuple[bytes, ScanResult]) -> ScanResult:
    """The last range's result with its tail read: the reading this process did early (of the file's
    tail, counting the ranks the first range found) when it is what the scan's end reads, else a new one."""
    last, tail, first = untailed
    ranks = frozenset().union(*(p.ranks for p in parts), last.ranks)
    # (read again for a long line cut in the tail, or for ranks only other ranges showed: they bound what is read)
    same = early[0] == tail and ranks <= early[1].ranks
    read = early[1] if same else reader.read_tail(source, tail, 1, ranks)
    read = read.relocated(line_offset=first - 1)
    return replace(last, ranks=last.ranks | read.ranks, **{k: getattr(read, k) for k in _TAIL_FIELDS})


def merge(source: Source, parts: list[ScanResult]) -> ScanResult:
    """Stitch range scans (in file order) into the scan of the whole file."""
    out = Found(source)
    before = 0
    kept: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for i, part in enumerate(parts):
        is_last = i == len(parts) - 1
        shifted = part.relocated(line_offset=before)
        for m in shifted.matches:
            seen[m.fingerprint] += 1
            if kept[m.fingerprint] < MAX_HITS_PER_PATTERN:
                kept[m.fingerprint] += 1
                out.matches.append(m)
        out.tracebacks.extend(shifted.tracebacks)
        out.checkpoints.extend(shifted.checkpoints)
        out.summaries.extend(shifted.summaries)
        out.memory_tables.extend(shifted.memory_tables)
        out.world_sizes |= shifted.world_sizes
        out.stated_ranks |= shifted.stated_ranks
        out.contexts |= shifted.contexts
        out.ranks |= shifted.ranks
        out.bytes += shifted.bytes
        out.cut_lines += shifted.cut_lines
        for key, ranks in shifted.seen_ranks.items():
            out.seen_ranks.setdefault(key, set()).update(ranks)
        for key, n in shifted.dropped.items():
            seen[key] += n
        if is_last:
            out.progress, out.tqdm_incomplete = dict(shifted.progress), dict(shifted.tqdm_incomplete)
            out.done, out.done_line = shifted.done, shifted.done_line
            out.prompt_line = shifted.prompt_line
            out.last_line_rank = dict(shifted.last_line_rank)
            out.notable = list(shifted.notable)
            out.markers = list(shifted.markers)
            out.tail_lines = list(shifted.tail_lines)
            out.lines = before + shifted.lines
        before += shifted.lines
    out.tracebacks = out.tracebacks[:2000]
    out.checkpoints = out.checkpoints[-MAX_CHECKPOINTS:]
    for key, n in seen.items():
        if n > MAX_HITS_PER_PATTERN:
            out.dropped[key] = n - MAX_HITS_PER_PATTERN
    return out.freeze()


def scan_file(reader: Reader, source: Source, stdin: BinaryIO | None = None,
              on_bytes: Callable[[int], None] | None = None, *, parallel: bool = True,
              min_bytes: int = PARALLEL_MIN_BYTES) -> ScanResult:
    """Scan one input: a large plain file in ranges on every core, anything else in one pass.

    `parallel=False` for a scan that must stop at the next block when cancelled (an editor's
    background diagnosis): worker processes cannot be stopped half-way."""
    if (source.size or 0) >= newlines.NUMPY_MIN_BYTES or source.path is None:
        heap.reuse_freed_blocks()  # (standard input: of a size nobody knows) before any worker forks
    if (source.size or 0) >= newlines.NUMPY_MIN_BYTES:
        newlines.use_numpy()  # before any worker forks: they inherit it
    if parallel and source.path is not None and (source.size or 0) >= min_bytes:
        scanned = scan_parallel(reader, source, on_bytes)
        if scanned is not None:
            return scanned
    return reader.scan(source, stdin, on_bytes)


def scan_parallel(reader: Reader, source: Source, on_bytes: Callable[[int], None] | None) -> ScanResult | None:
    """None when the input cannot be cut (compressed, too few cores): the caller scans it sequentially."""
    assert source.path is not None
    jobs = _workers()
    if jobs < 2:
        return None
    with source.path.open("rb") as f:
        head = f.read(256)
    if compression_of(head) is not None or wide_encoding(head) is not None:
        return None  # cut only where a byte offset is a line start in the text read
    size = source.size or source.path.stat().st_size
    # fork is safe only when nothing else runs in this process; then the workers start at once.
    use_fork = threading.active_count() == 1 and "fork" in mp.get_all_start_methods()
    # Spawned workers need ~0.2 s to start: this process takes a little more of the file meanwhile.
    default_head_start = "0.0" if use_fork else "0.05"
    head_start = float(os.environ.get("TRAINMEDIC_HEAD_START", default_head_start))  # measured in benchmarks/
    cuts = _line_starts(source.path, size, jobs, head_start)
    if len(cuts) < 3:
        return None
    # The first range also does the binary check; scan it here while the others run in their processes.
    first_state = ScanState(reader, Found(source), rank_from_path(source.name), host_from_path(source.name),
                            pasted=False)
    args: list[tuple[Any, ...]] = [(source.name, str(source.path), cuts[i], cuts[i + 1], i == len(cuts) - 2)
                                   for i in range(1, len(cuts) - 1)]
    if use_fork:
        # Nothing else runs in this process: fork is safe, starts in milliseconds, and the workers
        # inherit the compiled reader instead of importing and loading it again.
        _WORKER["reader"] = reader
        pool = ProcessPoolExecutor(max_workers=len(args), mp_context=mp.get_context("fork"),
                                   initializer=_init_forked, initargs=(os.getpid(),))
    else:
        # Threads are running (a progress bar, an editor's server): fork could copy a held lock.
        pool = ProcessPoolExecutor(max_workers=len(args), mp_context=mp.get_context("spawn"), initializer=_init,
                                   initargs=(reader.given, reader.backend, reader.block_size, reader.keep_tail,
                                             os.getpid()))
    try:
        futures = [pool.submit(_scan_range, *a) for a in args]
        with source.path.open("rb") as f:
            feed_range(first_state, f, 0, cuts[1], on_bytes)  # on_bytes may raise to cancel (an editor)
            first_state.limit()
            first_state.feed(f.read(LOOKAHEAD))
        parts = [first_state.finish(tail=False)]
        # The tail's line-by-line reading, here while the other processes scan their ranges.
        early_tail = _file_tail(source.path, size)
        early = (early_tail, reader.read_tail(source, early_tail, 1, parts[0].ranks))
        for fut, a in zip(futures, args, strict=True):
            done = fut.result()
            parts.append(_tailed(reader, source, parts, done, early) if isinstance(done, tuple) else done)
            if on_bytes is not None:
                on_bytes(a[3] - a[2])
    except BaseException:
        # Cancelled or failed: do not wait for the other ranges to finish scanning.
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return merge(source, parts)
