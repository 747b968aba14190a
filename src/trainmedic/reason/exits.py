"""Messages only a process on its way out prints (CUDA's "driver shutting down" once the runtime has
unloaded at interpreter exit): the crash or exception they explain ended no work. Fingerprints say so
with `at_exit`; this module says which events and lines such a message explains."""

from __future__ import annotations

from collections.abc import Sequence

from trainmedic.catalog import Library
from trainmedic.model import Event, Match, ScanResult
from trainmedic.reason.context import SAME_MESSAGE
from trainmedic.reason.events import is_at_exit

CAUSE_WORDS = "the CUDA runtime was already unloading"


def _matches(library: Library, scans: Sequence[ScanResult]) -> list[Match]:
    return [m for s in scans for m in s.matches if is_at_exit(library, m)]


def explained(library: Library, scans: Sequence[ScanResult], events: Sequence[Event]) -> list[Event]:
    """The events an exit-time message explains: the abort whose "what():" it is (a wrapper just above
    it), or an exception that says it (its own line, or inside its traceback)."""
    found = _matches(library, scans)
    return [e for e in events if found and any(_explains(library, m, e) for m in found)]


def _explains(library: Library, m: Match, e: Event) -> bool:
    if m.line.path != e.path:
        return False
    if e.cause in library.wrappers and 0 <= m.line.number - e.line <= SAME_MESSAGE:
        return True
    if e.cause != m.cause and e.ambiguous and e.line == m.line.number:
        return True  # a generic reading of the exit-time line itself (NCCL's "WARN Cuda failure '...'")
    return e.cause in library.fallbacks and (any(ln.number == m.line.number for ln in e.evidence) or (
        e.traceback is not None and e.traceback.first_line <= m.line.number <= e.traceback.last_line))


def lines(library: Library, scans: Sequence[ScanResult]) -> set[tuple[str, int]]:
    """The lines an exit-time message explains, which no error-lines reading should quote: the message,
    the abort above it, and the whole traceback that holds it."""
    found = _matches(library, scans)
    out = {(m.line.path, n) for m in found for n in range(m.line.number - SAME_MESSAGE, m.line.number + 1)}
    for s in scans:
        for t in s.tracebacks:
            if any(m.line.path == t.path and t.first_line <= m.line.number <= t.last_line for m in found):
                out |= {(t.path, n) for n in range(t.first_line - 1, t.last_line + 1)}
    return out
