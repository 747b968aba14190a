"""What an editor shows for a diagnosed log: marks per line, hover text, editor positions, page URLs.

Plain Python with no pygls import, so the language server's logic is tested without a client and the
work that runs on a worker thread (`analyse`) touches no server state.
"""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal
from urllib.parse import quote, unquote, urlparse

from trainmedic.catalog import Library
from trainmedic.logs.blocks import strip_ansi
from trainmedic.model import Cause, Collateral, Diagnosis, Finding
from trainmedic.report.common import feedback
from trainmedic.util.text import code_fence, rank_label, rank_suffix

if TYPE_CHECKING:
    from trainmedic.api import Diagnoser

Kind = Literal["evidence", "collateral", "missing"]
Severity = Literal["error", "warning", "information", "hint"]
Encoding = Literal["utf-8", "utf-16", "utf-32"]

# Rotated logs (`train.log.1`) count too; anything else is diagnosed only when the client asks.
_LOG_NAME = re.compile(r"\.(?:log|out|err|txt)(?:\.\d+)?$", re.IGNORECASE)
_LOG_LANGUAGES = frozenset({"log"})
DIAGNOSING = "trainmedic: diagnosing…"


class Cancelled(Exception):
    """Raised inside the worker when a newer edit or a close made this diagnosis stale."""


class CancelToken:
    """A flag the message loop sets and the worker polls between blocks; threads cannot be killed."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled


# ---------------------------------------------------------------- documents and URLs


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a `file:` URI, or None: only those can be read from disk."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):  # pragma: no cover - Windows drive letters
        path = path[1:]
    return path


def document_name(uri: str) -> str:
    """The name a document is diagnosed under: its path, so `rank3.log` or `.../3/stderr.log`
    attributes ranks as the file on disk would; else the last segment of the URI."""
    path = uri_to_path(uri)
    if path is not None:
        return path
    tail = unquote(urlparse(uri).path).rstrip("/").rpartition("/")[2]
    return tail or uri


def is_log_document(uri: str, language_id: str | None) -> bool:
    """Training logs by name (`.log`, `.out`, `.err`, `.txt`) or by language id."""
    if language_id in _LOG_LANGUAGES:
        return True
    return bool(_LOG_NAME.search(unquote(urlparse(uri).path)))


def page_url(site: str | None, finding_id: str) -> str | None:
    """The encyclopedia page of `entry/cause` in a locally built site (`trainmedic site`), or None.

    `site` is a directory or a URL; nothing is assumed about a remote host. File URLs name
    `index.html` because browsers list a directory instead of opening its index.
    """
    if not site:
        return None
    entry, _, cause = finding_id.partition("/")
    base = site if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", site) else Path(site).expanduser().resolve().as_uri()
    if not base.endswith("/"):
        base += "/"
    page = quote(entry) + ("/index.html" if base.startswith("file:") else "/")
    return base + page + (f"#{quote(cause)}" if cause else "")


def explain_text(library: Library, ident: str) -> str:
    """`trainmedic explain ID` as plain text, for clients that show it in a panel or a file."""
    from trainmedic.report.entry import render_entry

    entry, cause = library.resolve(ident)
    out = io.StringIO()
    render_entry(entry, cause, out, color=False)
    return out.getvalue()


# ---------------------------------------------------------------- marks


@dataclass(frozen=True)
class Mark:
    """One line the editor decorates: a diagnostic, its hover and its code actions."""

    line: int  # 1-based, trainmedic's numbering (newline-separated lines)
    kind: Kind
    severity: Severity
    finding: str  # `entry/cause` whose page this line is about
    message: str
    hover: str  # markdown
    verify: tuple[str, ...] = ()
    pages: tuple[str, ...] = ()  # ids offered as "open the encyclopedia page"
    text: str = ""  # the matched text, to find the right carriage-return segment of a tqdm line
    related: int | None = None  # for collateral: the initiating line in the same document


def _cause(library: Library, ident: str) -> Cause | None:
    try:
        return library.cause(ident)
    except KeyError:
        return None


def _fix_and_verify(p: Finding, fix_heading: str) -> list[str]:
    """The finding's fix steps (numbered) and verify commands (a shell block), as hover sections."""
    parts = []
    if p.fix:
        parts.append(f"**{fix_heading}**\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(p.fix, 1)))
    if p.verify:
        parts.append("**Verify**\n\n" + code_fence("\n".join(p.verify), "sh"))
    return parts


def _finding_hover(d: Diagnosis, p: Finding, cause: Cause | None) -> str:
    parts = [f"**{p.title}**", f"`{p.id}`{rank_suffix(p.rank)} · confidence {p.confidence:.0%}"]
    if d.phase is not None:
        parts.append(f"*{d.phase.summary[:1].upper()}{d.phase.summary[1:]}.*")
    if cause is not None:
        parts.append(f"**Mechanism.** {cause.mechanism}")
    parts += _fix_and_verify(p, "Fix")
    if d.action is not None:
        parts.append(f"**Next.** {d.action.reason}")
    if p.missing:
        parts.append("**Missing facts**\n\n" + "\n".join(f"- {m.fact}: `{m.command}`" for m in p.missing))
        back = feedback([m.topic for m in p.missing if m.topic], "cli")
        if back:
            parts.append(back)
    if d.alternatives:
        parts.append("**Alternatives**\n\n" + "\n".join(
            f"- `{a.id}` ({a.confidence:.0%})" for a in d.alternatives[:4]))
    return "\n\n".join(parts)


def _where(p: Finding, name: str) -> tuple[str, int | None]:
    """'rank 3, line 1842' for the initiating failure, and its line when it is in this document."""
    if not p.evidence:
        return rank_label(p.rank, "an earlier failure"), None
    first = p.evidence[0]
    same = first.path == name
    at = f"line {first.line}" if same else f"{Path(first.path).name}:{first.line}"
    return (f"{rank_label(p.rank)}, {at}" if p.rank is not None else at), (first.line if same else None)


def _collateral_hover(c: Collateral, cause: Cause | None, p: Finding, where: str) -> str:
    title = cause.title if cause is not None else c.id
    parts = [
        f"**Collateral: {title}**",
        f"`{c.id}`{rank_suffix(c.rank)} · a consequence, not the cause",
        f"**Explained by** `{p.id}` at {where}: {p.title}",
    ]
    if cause is not None:
        parts.append(f"**Why it follows.** {cause.mechanism}")
    parts += _fix_and_verify(p, "Fix the initiating failure")
    return "\n\n".join(parts)


def build_marks(d: Diagnosis, name: str, library: Library) -> tuple[Mark, ...]:
    """The lines of document `name` to decorate: the initiating failure's evidence (error; warning for
    a hang), each collateral line (information), the missing facts (hint, on the first evidence line)."""
    p = d.primary
    if p is None:
        return ()
    cause = _cause(library, p.id)
    hover = _finding_hover(d, p, cause)
    severity: Severity = "warning" if d.verdict == "hang" else "error"
    message = f"{p.id}{rank_suffix(p.rank)}: {p.title}"
    if p.fix:
        message += f" — fix: {p.fix[0]}"
    if d.alternatives:
        message += f" (confidence {p.confidence:.0%}; or: {', '.join(a.id for a in d.alternatives[:2])})"
    marks: list[Mark] = []
    seen: set[int] = set()
    for ev in p.evidence:
        if ev.path != name or ev.line in seen:
            continue
        seen.add(ev.line)
        marks.append(Mark(ev.line, "evidence", severity, p.id, message, hover, p.verify, (p.id,), ev.text))
    if seen:
        first = min(seen)
        for m in p.missing:
            # The quick fixes copy the command that gets the fact, then the one that hands it back.
            back = tuple(c for c in feedback([m.topic], "cli").split("`")[1::2] if not c.startswith("-")) \
                if m.topic else ()
            marks.append(Mark(first, "missing", "hint", p.id, f"missing fact: {m.fact} — run: {m.command}",
                              hover, (m.command, *back, *p.verify), (p.id,)))
    where, related = _where(p, name)
    for c in d.collateral:
        if c.path != name:
            continue
        ccause = _cause(library, c.id)
        marks.append(Mark(
            c.line, "collateral", "information", c.id,
            f"{c.id}{rank_suffix(c.rank)}: explained by {where} ({c.explained_by})",
            _collateral_hover(c, ccause, p, where), p.verify, (p.id, c.id), c.text, related,
        ))
    return tuple(marks)


# ---------------------------------------------------------------- editor positions


@dataclass(frozen=True)
class Span:
    """Where one of trainmedic's lines lies in the editor, and that editor line's text."""

    line: int  # 0-based editor line
    text: str


def _pick_segment(segments: Sequence[bytes], hint: str) -> int:
    """A tqdm line is many editor lines (each '\\r' breaks one): the one holding the match."""
    if len(segments) == 1:
        return 0
    if hint:
        for i in range(len(segments) - 1, -1, -1):
            if hint in strip_ansi(segments[i]).decode("utf-8", "replace"):
                return i
    for i in range(len(segments) - 1, -1, -1):
        if segments[i].strip():
            return i
    return len(segments) - 1


def locate_lines(
    stream: BinaryIO, wanted: Mapping[int, str], check: Callable[[], None] | None = None, block: int = 4 << 20
) -> dict[int, Span]:
    """Map trainmedic line numbers (newline-separated) to editor lines, which also break at a bare '\\r'.

    One pass in large blocks, stopping after the last wanted line: blocks without a wanted line are only
    counted (newlines, bare carriage returns), so a 1 GB log costs a few C-speed scans, not a Python loop
    per line. `wanted` maps a line to the text expected on it.
    """
    spans: dict[int, Span] = {}
    targets = sorted(wanted)
    if not targets:
        return spans
    number, extra, carry, i = 1, 0, b"", 0  # number: the line that starts the next block
    while i < len(targets):
        if check is not None:
            check()
        chunk = stream.read(block)
        data = carry + chunk
        if not chunk:
            if not data:
                break
            cut = len(data)
            data += b"\n"  # the last line has no newline
        else:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
        body, carry = data[:cut], data[cut:] if chunk else b""
        lines = body.count(b"\n") if chunk else 1
        if targets[i] >= number + lines:
            extra += body.count(b"\r") - body.count(b"\r\n")
            number += lines
            continue
        for raw in body.split(b"\n")[:lines]:
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if i < len(targets) and number == targets[i]:
                segments = line.split(b"\r")
                k = _pick_segment(segments, wanted[number])
                spans[number] = Span(number - 1 + extra + k, segments[k].decode("utf-8", "replace"))
                i += 1
            extra += line.count(b"\r")
            number += 1
        if not chunk:
            break
    return spans


def units(text: str, encoding: Encoding) -> int:
    """The length of `text` in the client's position units (UTF-16 unless negotiated otherwise)."""
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# ---------------------------------------------------------------- one diagnosed document


@dataclass(frozen=True)
class Analysis:
    """A finished diagnosis of one document, ready for diagnostics, hovers and code actions."""

    name: str
    diagnosis: Diagnosis
    marks: tuple[Mark, ...]
    spans: Mapping[int, Span]
    source: Literal["disk", "memory"] = "memory"
    by_line: Mapping[int, tuple[Mark, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, diagnosis: Diagnosis, marks: tuple[Mark, ...], spans: Mapping[int, Span],
           source: Literal["disk", "memory"]) -> Analysis:
        by_line: dict[int, list[Mark]] = {}
        for m in marks:
            span = spans.get(m.line)
            by_line.setdefault(span.line if span else m.line - 1, []).append(m)
        return cls(name, diagnosis, marks, spans, source, {k: tuple(v) for k, v in by_line.items()})

    def span(self, mark: Mark) -> Span:
        return self.spans.get(mark.line) or Span(mark.line - 1, mark.text)

    def marks_at(self, first: int, last: int | None = None) -> list[Mark]:
        """Marks on editor lines first..last (0-based, inclusive)."""
        if last is None or last == first:
            return list(self.by_line.get(first, ()))
        # a select-all range spans millions of lines; the marked lines are few
        return [m for line in sorted(self.by_line) if first <= line <= last for m in self.by_line[line]]


@dataclass(frozen=True)
class Document:
    """What to diagnose: a file on disk (big, unmodified documents) or the document's text."""

    name: str
    path: str | None = None
    text: str | None = None


def _diagnoser(library: Library, parallel: bool) -> Diagnoser:
    """The parallel diagnoser scans a big file on every core, but its worker processes cannot be stopped
    half-way; background diagnoses use a sequential one that stops at the next block when cancelled."""
    from trainmedic.api import Diagnoser

    return Diagnoser(library, parallel=parallel)


def warm(library: Library) -> None:
    """Compile the background reader's pattern database before the first document arrives."""
    _diagnoser(library, parallel=False).warm()


def analyse(
    doc: Document,
    library: Library,
    *,
    token: CancelToken | None = None,
    on_bytes: Callable[[int], None] | None = None,
    parallel: bool = False,
) -> Analysis:
    """Diagnose one document and place its marks; runs on a worker thread and polls `token`.

    `parallel` (explicit requests for a file on disk) uses every core but finishes even if cancelled.
    """
    from trainmedic.api import Named
    from trainmedic.logs.sources import Source

    def progress(n: int) -> None:
        if token is not None:
            token.check()
        if on_bytes is not None:
            on_bytes(n)

    check = token.check if token is not None else None
    diagnoser = _diagnoser(library, parallel)
    if doc.path is not None:
        size = Path(doc.path).stat().st_size
        d = diagnoser.diagnose(Source(doc.name, Path(doc.path), size), on_bytes=progress)
        marks = build_marks(d, doc.name, library)
        with Path(doc.path).open("rb") as f:
            spans = locate_lines(f, {m.line: m.text for m in marks}, check)
        return Analysis.of(doc.name, d, marks, spans, "disk")
    data = (doc.text or "").encode("utf-8", "surrogatepass")
    d = diagnoser.diagnose(Named(doc.name, data), on_bytes=progress)
    marks = build_marks(d, doc.name, library)
    spans = locate_lines(io.BytesIO(data), {m.line: m.text for m in marks}, check)
    return Analysis.of(doc.name, d, marks, spans, "memory")
