"""Streams of a live run, scanned incrementally and diagnosed on demand.

Each stream is one ScanState: bytes are pushed as they arrive and scanned once. A diagnosis is a
snapshot of every stream through the ordinary reasoner, so a live run gets the same verdict its
log file would get afterwards, except for one rule that only holds post mortem: a log that "stops
mid-training" is a hang only once the process is gone. While it runs, the watchdog decides hangs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from trainmedic.api import Diagnoser
from trainmedic.catalog import Library
from trainmedic.logs.reader import ScanState
from trainmedic.logs.sources import InputError
from trainmedic.model import Diagnosis, Fact, Match, ScanResult
from trainmedic.reason.engine import HANG


@dataclass
class _Stream:
    state: ScanState
    at_line_start: bool = True
    counted: int = 0  # matches already handed out by new_matches()
    dirty: bool = False  # bytes fed since the last flush


class LiveAnalysis:
    """Named streams (a run's output, each followed file) scanned as they grow."""

    def __init__(self, library: Library, *, facts: Sequence[Fact] = (), backend: str | None = None) -> None:
        self.library = library
        self.diagnoser = Diagnoser(library, backend=backend)
        self.facts = tuple(facts)
        self._streams: dict[str, _Stream] = {}
        self._done: list[ScanResult] = []  # finished streams (a rotated file's old content)
        self._generation = 0  # bumps when streams are dropped or finished, so changed() notices
        self.skipped: dict[str, str] = {}  # streams that turned out not to be text logs, and why
        self._last_signature: tuple[int, ...] | None = None

    # ------------------------------------------------------------ streams

    def open(self, name: str) -> None:
        """Start a stream; a stream of the same name is dropped (a truncated file starts over)."""
        if name in self._streams:
            self.drop(name)
        self._streams[name] = _Stream(self.diagnoser.stream(name))

    def __contains__(self, name: str) -> bool:
        return name in self._streams

    def feed(self, name: str, data: bytes) -> None:
        """Push bytes as they arrive; complete lines are scanned at the next flush (or sooner).

        A stream that turns out to be binary (the first 64 KiB say so) is dropped and listed in
        `skipped`; its bytes are ignored from then on. Nothing here raises for bad input.
        """
        if not data or name in self.skipped:
            return
        if name not in self._streams:
            self.open(name)
        stream = self._streams[name]
        try:
            stream.state.feed(data)
        except InputError as exc:
            self._skip(name, exc)
            return
        stream.at_line_start = data.endswith(b"\n")
        stream.dirty = True

    def _skip(self, name: str, exc: InputError) -> None:
        self.skipped[name] = str(exc)
        self.drop(name)

    def inject(self, name: str, line: str) -> None:
        """Add a line of trainmedic's own (the watchdog's) at a line boundary, and scan it now."""
        if name not in self._streams:
            self.open(name)
        prefix = b"" if self._streams[name].at_line_start else b"\n"
        self.feed(name, prefix + line.rstrip("\n").encode() + b"\n")
        self.flush()

    def flush(self) -> None:
        """Scan every complete line received so far: call it when the streams have gone quiet."""
        for name, stream in list(self._streams.items()):
            if stream.dirty:
                try:
                    stream.state.flush()
                except InputError as exc:
                    self._skip(name, exc)
                    continue
                stream.dirty = False

    def drop(self, name: str) -> None:
        """Forget a stream and what it said (its file was truncated: that content is gone)."""
        if self._streams.pop(name, None) is not None:
            self._generation += 1

    def close(self, name: str, rename: str | None = None) -> None:
        """Finish a stream (its file was rotated away); its findings stay, under `rename` if given."""
        stream = self._streams.pop(name, None)
        if stream is None:
            return
        self._generation += 1
        try:
            scan = stream.state.finish()
        except InputError as exc:  # a short binary stream: the sniff only happens at its end
            self.skipped[name] = str(exc)
            return
        self._done.append(scan.relocated(path=rename) if rename and rename != name else scan)

    def add_finished(self, scan: ScanResult) -> None:
        """A whole input scanned elsewhere (a compressed archive of an earlier rotation)."""
        self._done.append(scan)
        self._generation += 1

    # ------------------------------------------------------------ results

    def _signature(self) -> tuple[int, ...]:
        sig = [self._generation, len(self._done)]
        for s in self._streams.values():
            r = s.state.result
            sig += [len(r.matches), len(r.tracebacks), len(r.summaries)]
        return tuple(sig)

    def changed(self) -> bool:
        """Whether anything a diagnosis depends on appeared since the last diagnose()."""
        return self._signature() != self._last_signature

    def new_matches(self) -> list[Match]:
        """Fingerprint hits scanned since the last call (for the metrics counters)."""
        out: list[Match] = []
        for stream in self._streams.values():
            matches = stream.state.result.matches
            out.extend(matches[stream.counted :])
            stream.counted = len(matches)
        return out

    def scans(self) -> list[ScanResult]:
        return [*self._done, *(s.state.snapshot() for s in self._streams.values())]

    def diagnose(self, *, alive: bool) -> Diagnosis:
        """The diagnosis of everything scanned so far; `alive` while the job still runs."""
        self._last_signature = self._signature()
        d = self._noted(self.diagnoser.reason(self.scans(), self.facts))
        return live_view(d, self._has_hang_record()) if alive else d

    def finish(self) -> Diagnosis:
        """End of every stream: the post-mortem diagnosis, with the post-mortem rules."""
        for name in list(self._streams):
            self.close(name)
        self._last_signature = self._signature()
        return self._noted(self.diagnoser.reason(self._done, self.facts))

    def _noted(self, d: Diagnosis) -> Diagnosis:
        if not self.skipped:
            return d
        return replace(d, notes=(*d.notes, *(f"not analysed: {why}" for why in self.skipped.values())))

    def _has_hang_record(self) -> bool:
        return any(m.cause == HANG for s in self._streams.values() for m in s.state.result.matches) or any(
            m.cause == HANG for scan in self._done for m in scan.matches
        )

    def role(self, cause_id: str) -> str:
        try:
            return self.library.cause(cause_id).role
        except KeyError:
            return ""


def live_view(d: Diagnosis, hang_recorded: bool) -> Diagnosis:
    """Drop the post-mortem 'log stops mid-training' hang while the job runs.

    A hang stays when a line says so (the watchdog's, a scheduler's time limit) or when other ranks
    already failed waiting for a silent one (collateral): those are not guesses from a quiet log.
    """
    if d.verdict != "hang" or d.primary is None or d.primary.id != HANG or d.collateral or hang_recorded:
        return d
    return replace(d, verdict="healthy", primary=None, alternatives=(), collateral=())
