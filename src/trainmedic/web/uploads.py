"""Turn what a browser or a script sent into a Diagnosis, plus what the pages show around it.

Uploads come in two shapes. Whole logs (`data`, plain or gz/zst) are read like files on disk.
Reduced logs (`lines`: `(original line number, text)` pairs kept by the page in the browser)
are laid back at their original line numbers, with empty lines in the gaps, so the reader numbers
them exactly as it would number the full file and every `path:line` in the diagnosis is the
user's own. The padding is generated as the reader asks for it, never held in memory.

Besides the Diagnosis, the server keeps a few lines of context around the evidence and the time
and text of each mark on the timeline: all taken from what was sent, nothing more.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from trainmedic.api import Diagnoser, Named
from trainmedic.catalog import Library
from trainmedic.logs.attribution import parse_time
from trainmedic.logs.blocks import MAX_LINE, iter_blocks
from trainmedic.logs.sources import InputError, Source
from trainmedic.model import Diagnosis
from trainmedic.util.text import decode_line, human_bytes
from trainmedic.web.encyclopedia import cause_role

CONTEXT_BEFORE = 6  # lines shown above an evidence line
CONTEXT_AFTER = 3
TIME_LOOKBACK = 20  # a mark without its own timestamp takes the last one within this many lines above
MAX_CONTEXT_LINES = 400
MAX_MARKS = 600
MAX_SHOWN_LINE = 2000  # characters of one line kept for display
MAX_LINE_NUMBER = 1 << 31


class TooLarge(Exception):
    """The decoded input exceeds the server's cap."""


@dataclass(frozen=True)
class Upload:
    """One log as received: whole bytes, or the lines the browser kept with their numbers."""

    name: str
    data: bytes | None = None
    lines: tuple[tuple[int, str], ...] | None = None
    total_lines: int | None = None  # reduced logs: how many lines the original had
    original_bytes: int | None = None  # reduced logs: the size of the file the user chose

    @property
    def reduced(self) -> bool:
        return self.lines is not None


@dataclass(frozen=True)
class Diagnosed:
    """The diagnosis of some uploads, and what the pages show around it (kept with it in the history)."""

    diagnosis: Diagnosis
    extra: dict[str, Any]


# ---------------------------------------------------------------- reduced logs


def check_lines(name: str, lines: Sequence[tuple[int, str]]) -> None:
    """Line numbers must rise strictly and each text be one line: anything else would lie about where."""
    prev = 0
    for n, text in lines:
        if n <= prev:
            raise InputError(f"{name}: line numbers must be positive and increasing (got {n} after {prev})")
        if n > MAX_LINE_NUMBER:
            raise InputError(f"{name}: line number {n} is out of range")
        if "\n" in text:
            raise InputError(f"{name}: line {n} contains a newline; send one entry per line")
        prev = n


class CompactLines:
    """The reduced log as bytes without its gaps: the kept lines, and one empty line where lines
    were left out (so a traceback never runs across a gap). The scan is renumbered afterwards
    (`number`), so a line number near 2^31 costs nothing: gaps are never materialised."""

    def __init__(self, lines: Sequence[tuple[int, str]]) -> None:
        chunks: list[bytes] = []
        numbers: list[int] = []
        prev = 0
        for n, text in lines:
            if n > prev + 1:
                chunks.append(b"\n")
                numbers.append(prev + 1)
            chunks.append(text.encode("utf-8", errors="replace") + b"\n")
            numbers.append(n)
            prev = n
        self.data = b"".join(chunks)
        self._numbers = numbers

    def number(self, emitted: int) -> int:
        """The original line number of emitted line `emitted` (1-based)."""
        if not self._numbers:
            return emitted
        if emitted < 1:
            return emitted
        if emitted > len(self._numbers):
            return self._numbers[-1] + emitted - len(self._numbers)
        return self._numbers[emitted - 1]


# ---------------------------------------------------------------- diagnose




def analyse(uploads: Sequence[Upload], library: Library, max_decoded: int) -> Diagnosed:
    """Diagnose the uploads together (one job, many ranks) and gather what the pages show.

    Raises InputError for a log that cannot be read, TooLarge past `max_decoded` decoded bytes.
    """
    if not uploads:
        raise InputError("nothing to diagnose: paste a log or add log files")
    total = 0

    def count(n: int) -> None:
        nonlocal total
        total += n
        if total > max_decoded:
            raise TooLarge(
                f"the logs decode to more than {max_decoded >> 20} MiB; reduce them in the page "
                "(big files are cut down in the browser) or run `trainmedic diagnose` locally"
            )

    compact = {up.name: CompactLines(up.lines) for up in uploads if up.lines is not None}
    inputs = [Named(up.name, compact[up.name].data if up.name in compact else (up.data or b"")) for up in uploads]
    diagnoser = Diagnoser(library)
    scans = [s.relocated(line_map=compact[s.path].number) if s.path in compact else s
             for s in diagnoser.scan(inputs, on_bytes=count)]
    diagnosis = diagnoser.reason(scans)
    notes = [_reduction_note(up) for up in uploads if up.reduced]
    if notes:
        diagnosis = replace(diagnosis, notes=(*diagnosis.notes, *notes))
    extra = _extra(diagnosis, uploads, library)
    return Diagnosed(diagnosis, extra)


def _reduction_note(up: Upload) -> str:
    kept = len(up.lines or ())
    total = f" of {up.total_lines:,}" if up.total_lines else ""
    size = f" (from a {human_bytes(up.original_bytes)} file)" if up.original_bytes else ""
    return (f"{up.name}: reduced in the browser to {kept:,}{total} lines{size}; "
            "line numbers are those of the original file")


# ---------------------------------------------------------------- what the pages show


def _wanted(diagnosis: Diagnosis) -> dict[str, set[int]]:
    """Line numbers to fetch per input: evidence with context, marks with their time look-back."""
    want: dict[str, set[int]] = {}

    def add(path: str, lo: int, hi: int) -> None:
        want.setdefault(path, set()).update(range(max(lo, 1), hi + 1))

    p = diagnosis.primary
    if p is not None:
        for e in p.evidence:
            add(e.path, e.line - CONTEXT_BEFORE, e.line + CONTEXT_AFTER)
            add(e.path, e.line - TIME_LOOKBACK, e.line)
    for c in diagnosis.collateral[:MAX_MARKS]:
        add(c.path, c.line - TIME_LOOKBACK, c.line)
    for pr in diagnosis.progress:
        add(pr.path, pr.line - TIME_LOOKBACK, pr.line)
    return want


def _fetch(up: Upload, numbers: set[int]) -> dict[int, str]:
    """The text of the wanted lines of one upload, numbered as the reader numbers them."""
    if not numbers:
        return {}
    if up.lines is not None:
        return {n: t[:MAX_SHOWN_LINE] for n, t in up.lines if n in numbers}
    out: dict[int, str] = {}
    stream = Source(up.name, None, len(up.data or b"")).open(io.BytesIO(up.data or b""))
    last = max(numbers)
    base = 0
    try:
        for block in iter_blocks(stream, 4 << 20, MAX_LINE):
            count = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            if any(base < n <= base + count for n in numbers):
                for i, raw in enumerate(block.split(b"\n")[:count], base + 1):
                    if i in numbers:
                        out[i] = _decode(raw)
            base += count
            if base >= last:
                break
    except (OSError, EOFError):
        pass  # the reader already reported what it could read; context is best effort
    finally:
        stream.close()
    return out


def _decode(raw: bytes) -> str:
    text = decode_line(raw)
    if "\r" in text:  # a tqdm line: what the terminal showed last
        text = text.rsplit("\r", 1)[-1] or text
    return text[:MAX_SHOWN_LINE]


def _time_at(lines: dict[int, str], n: int) -> float | None:
    """The line's own timestamp, else the last one printed shortly before it in the same file."""
    for k in range(n, max(n - TIME_LOOKBACK, 0), -1):
        if k in lines:
            t = parse_time(lines[k])
            if t is not None:
                return t
    return None


def _blocks(diagnosis: Diagnosis, texts: dict[str, dict[int, str]]) -> list[dict[str, Any]]:
    """Evidence lines in context: runs of nearby lines merged, evidence lines flagged."""
    p = diagnosis.primary
    if p is None:
        return []
    by_path: dict[str, dict[int, int | None]] = {}
    for e in p.evidence:
        by_path.setdefault(e.path, {})[e.line] = e.rank
    out: list[dict[str, Any]] = []
    budget = MAX_CONTEXT_LINES
    for path, marks in by_path.items():
        lines = texts.get(path, {})
        numbers = sorted({k for m in marks for k in range(max(m - CONTEXT_BEFORE, 1), m + CONTEXT_AFTER + 1)})
        run: list[list[Any]] = []
        runs: list[list[list[Any]]] = []
        prev = None
        for k in numbers:
            if k not in lines and k not in marks:
                continue
            if prev is not None and k != prev + 1 and run:
                runs.append(run)
                run = []
            text = lines[k] if k in lines else next(e.text for e in p.evidence if e.path == path and e.line == k)
            run.append([k, text, k in marks])
            prev = k
        if run:
            runs.append(run)
        for whole_run in runs:
            if budget <= 0:
                break
            r = whole_run[:budget]
            budget -= len(r)
            ranks = sorted({rank for k, _, ev in r if ev and (rank := marks[k]) is not None})
            out.append({"path": path, "ranks": ranks, "lines": r})
    return out


def _marks(diagnosis: Diagnosis, texts: dict[str, dict[int, str]], library: Library) -> list[dict[str, Any]]:
    """What the timeline draws: each rank's last progress, the first failure, the collateral ones.

    `kind` is the cause's role (initiating, cascade, teardown), `progress`, or `stall` for a hang;
    the mark of the primary finding carries `primary: true`. A mark's rank is the rank that printed
    the line (for a silent rank the primary's rank differs: the picture shows that lane as silent).
    """
    marks: list[dict[str, Any]] = []

    def add(kind: str, ident: str, rank: int | None, path: str, line: int, text: str,
            time: float | None = None, primary: bool = False) -> None:
        lines = texts.get(path, {})
        marks.append({
            "kind": kind, "id": ident, "rank": rank, "path": path, "line": line,
            "time": time if time is not None else _time_at(lines, line),
            "text": (lines.get(line) or text)[:300], "primary": primary,
        })

    for pr in diagnosis.progress:
        add("progress", "last progress", pr.rank, pr.path, pr.line, pr.text)
    for c in diagnosis.collateral[:MAX_MARKS]:
        add(cause_role(library, c.id), c.id, c.rank, c.path, c.line, c.text)
    p = diagnosis.primary
    if p is not None and p.evidence:
        first = p.evidence[0]
        kind = "stall" if diagnosis.verdict == "hang" else cause_role(library, p.id)
        rank = first.rank if first.rank is not None else p.rank
        own_time = p.time if rank == p.rank else None
        add(kind, p.id, rank, first.path, first.line, first.text, own_time, primary=True)
    return marks


def _extra(diagnosis: Diagnosis, uploads: Sequence[Upload], library: Library) -> dict[str, Any]:
    wanted = _wanted(diagnosis)
    texts = {up.name: _fetch(up, wanted.get(up.name, set())) for up in uploads}
    sent = [{
        "name": up.name,
        "reduced": up.reduced,
        "lines_sent": len(up.lines) if up.lines is not None else None,
        "total_lines": up.total_lines,
        "original_bytes": up.original_bytes,
        "bytes_sent": (sum(len(t.encode("utf-8", errors="replace")) + 1 for _, t in up.lines)
                       if up.lines is not None else len(up.data or b"")),
    } for up in uploads]
    return {
        "context": _blocks(diagnosis, texts),
        "marks": _marks(diagnosis, texts, library),  # with each collateral line's text: the page lists them
        "sent": sent,
    }


def unique_names(names: Iterable[str]) -> list[str]:
    """Input names as labels (never paths): trimmed, never empty, never repeated."""
    seen: dict[str, int] = {}
    out = []
    for i, raw in enumerate(names, 1):
        name = " ".join((raw or "").replace("\\", "/").split())[:300] or f"upload-{i}.log"
        if name in seen:
            seen[name] += 1
            name = f"{name}#{seen[name]}"
        else:
            seen[name] = 1
        out.append(name)
    return out

