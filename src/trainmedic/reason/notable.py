"""Failures no fingerprint knows, read from the words of the lines themselves (model.Notable).

A run that stopped with error lines after its last progress, and no line saying it finished, failed:
the first of those lines is where it started. Repeats of one message (every rank printing the same
timeout) count once, so the three lines quoted are three different things the run said.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from trainmedic.model import Notable, RankProgress, ScanResult

_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+")
_RANK_PREFIX = re.compile(r"^(?:\[[A-Za-z]*\d*\]:? ?)+")
_GLUED_BAR = re.compile(r"\d+/\d+ \[\d[\d:]*<[^\]\n]{0,60}\]")  # "24/32 [01:09<00:22,  2.83s/it]"
# Words of a process that failed waiting on another: a timeout, a peer that closed or reset the connection,
# a refused connection (the store's host not up). Such an error is where a rank stopped, not why: the
# process it waited for is the suspect.
WAITING = re.compile(r"\b(?:[Tt]imed out|[Tt]ime ?out|TIMEOUT|closed by peer|reset by peer|[Cc]onnection refused"
                     r"|[Bb]roken pipe)\b")
QUOTED = 3
SAME_MESSAGE = 4  # lines after a message that may still be its own (NCCL's "Last error:" and the error)
_IGNORED = "Exception ignored in"


def waiting(texts: Sequence[str]) -> bool:
    """Whether an error's own words say it failed waiting on another process."""
    return any(WAITING.search(t[:2000]) for t in texts)


def template(text: str) -> str:
    """The line with what varies between repeats (numbers, addresses, rank prefixes) masked, and a
    progress bar the message was glued to (tqdm draws without a newline) left out."""
    text = _RANK_PREFIX.sub("", text.strip())
    bar = _GLUED_BAR.search(text, 0, 600)
    if bar is not None and bar.end() < len(text):
        text = _RANK_PREFIX.sub("", text[bar.end():])
    return _VARYING.sub("#", text)[:200]


def _own(s: ScanResult) -> list[Notable]:
    """The input's notable lines outside its tracebacks: a traceback is read by the traceback rules,
    which know an exception Python ignored (CPython's "Exception ignored in: ..." before it) from one
    that ended the run."""
    inside = [(t.first_line, t.last_line) for t in s.tracebacks if t.path == s.path]
    return [n for n in s.notable if not any(a <= n.line.number <= b for a, b in inside)]


def every(scans: Sequence[ScanResult]) -> list[Notable]:
    """All notable lines outside tracebacks, in input order: for who said what, whatever came after."""
    return [n for s in scans for n in _own(s) if _IGNORED not in n.line.text]


def _with_last_progress(scans: Sequence[ScanResult],
                        progress: dict[int | None, RankProgress]) -> Iterator[tuple[Notable, int]]:
    """Each notable line outside tracebacks with the line of its rank's last progress (or, unranked,
    its file's; 0 for none). A bar still at step 0 is no progress: tqdm redraws it below a worker's
    error while the loader waits for a batch that never comes."""
    for s in scans:
        last_any = max((p.line for p in progress.values() if p.path == s.path and p.step != 0), default=0)
        for n in _own(s):
            mine = progress.get(n.line.rank) if n.line.rank is not None else None
            if mine is None or mine.path != s.path:
                yield n, last_any
            else:  # (its own bar still at 0 is no progress of its own, whatever the other ranks did)
                yield n, mine.line if mine.step != 0 else 0


def after_progress(scans: Sequence[ScanResult], progress: dict[int | None, RankProgress]) -> list[Notable]:
    """Notable lines that no progress of their rank (or, unranked, of their file) follows, in order."""
    # (a crash glued to the progress line a bar was redrawing: "... 11/56 [00:02<00:08]Segmentation
    # fault (core dumped)" is after that progress)
    out = [n for n, last in _with_last_progress(scans, progress) if _IGNORED not in n.line.text
           and (n.line.number > last or (n.line.number == last and n.severity >= 3))]
    return sorted(out, key=lambda n: (n.line.time is None, n.line.time or 0.0, n.line.path, n.line.number))


def went_on_after(scans: Sequence[ScanResult], progress: dict[int | None, RankProgress]) -> set[str]:
    """The templates of notable lines that progress of their rank (or, unranked, of their file) followed:
    a message the run already printed and trained on after (a tracker's failed upload) did not stop it
    when it comes once more at the end. Never a fatal one (a crash, a kill): each ends its process, and
    a log may hold several runs."""
    return {template(n.line.text) for n, last in _with_last_progress(scans, progress)
            if n.line.number < last and n.severity < 3}


def quoted(lines: Sequence[Notable]) -> list[Notable]:
    """The first line of each distinct message, earliest first, up to QUOTED; the first fatal one
    (a crash, a kill) always among them."""
    seen: set[str] = set()
    distinct: list[Notable] = []
    for n in lines:
        key = template(n.line.text)
        if key not in seen:
            seen.add(key)
            distinct.append(n)
    top = distinct[:QUOTED]
    fatal = next((n for n in distinct if n.severity >= 3), None)
    if fatal is not None and fatal not in top:
        top = [*top[: QUOTED - 1], fatal]
    return top


def odd_rank_out(scans: Sequence[ScanResult], collateral_lines: set[tuple[str, int]]) -> list[Notable]:
    """Error lines only one rank printed, while two or more ranks printed lines at all: the rank that
    differs from its peers (its own failure, in words no fingerprint knows). Lines a fingerprint read
    as collateral (every rank's timeout) are not its own, and tracebacks are the traceback rules'
    to read. Earliest first."""
    def collateral(n: Notable) -> bool:  # a collateral line, or the rest of its message (its "Last error:")
        return any((n.line.path, n.line.number - k) in collateral_lines for k in range(SAME_MESSAGE + 1))

    lines = [n for s in scans for n in _own(s) if n.line.rank is not None and not collateral(n)]
    ranks_seen = {r for s in scans for r in s.last_line_rank if r is not None}
    if len(ranks_seen) < 2:
        return []
    by_template: dict[str, set[int]] = {}
    for n in lines:
        by_template.setdefault(template(n.line.text), set()).add(n.line.rank)  # type: ignore[arg-type]  # ranked
    own = [n for n in lines if len(by_template[template(n.line.text)]) == 1]
    if len({n.line.rank for n in own}) != 1:
        return []  # no single odd rank: several ranks each said something of their own
    return sorted(own, key=lambda n: (n.line.time is None, n.line.time or 0.0, n.line.path, n.line.number))
