"""Check every fingerprint against the annotated lines in its entry's `.log` file.

`#! match: <entry>/<cause>` says the next line must match that cause; `#! no-match: ...` says it
must not (a near miss). Every fingerprint needs a line it matches and its cause needs near misses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trainmedic.catalog import Library
from trainmedic.model import Entry
from trainmedic.util import linear

_DIRECTIVE = re.compile(r"#! (match|no-match): (\S+)\s*$")


@dataclass(frozen=True)
class FixtureLine:
    path: str
    number: int
    kind: str  # "match" or "no-match"
    cause: str
    text: str


def fixture_lines(entry: Entry) -> list[FixtureLine]:
    log = Path(entry.source).with_suffix(".log")
    if not log.exists():
        return []
    out: list[FixtureLine] = []
    pending: tuple[str, str, int] | None = None
    for n, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if m:
            pending = (m.group(1), m.group(2), n)
            continue
        if pending is None:
            continue
        out.append(FixtureLine(str(log), n, pending[0], pending[1], line))
        pending = None
    return out


def check_fixtures(library: Library) -> list[str]:
    """Problems found, as lines that say what to fix; empty when all is well."""
    problems: list[str] = []
    known = {c.full_id for c in library.causes()}
    for entry in library:
        lines = fixture_lines(entry)
        where = Path(entry.source).with_suffix(".log").name
        if not lines:
            problems.append(f"{where}: missing or empty; add '#! match:' and '#! no-match:' lines")
            continue
        matched: set[tuple[str, str]] = set()
        near_miss: set[str] = set()
        for fl in lines:
            if fl.cause not in known:
                problems.append(f"{where}:{fl.number}: unknown cause {fl.cause!r}")
                continue
            cause = library.cause(fl.cause)
            hits = [f for f in cause.fingerprints
                    if linear.compile_text(f.regex, ignore_case=f.ignore_case).search(fl.text)]
            if fl.kind == "match":
                if not hits:
                    problems.append(f"{where}:{fl.number}: should match {fl.cause} but no fingerprint does")
                matched.update((fl.cause, f.id) for f in hits)
            else:
                if hits:
                    problems.append(f"{where}:{fl.number}: near miss matched {fl.cause}#{hits[0].id}")
                near_miss.add(fl.cause)
        for cause in entry.causes:
            for fp in cause.fingerprints:
                if (cause.full_id, fp.id) not in matched:
                    problems.append(f"{where}: fingerprint {cause.full_id}#{fp.id} has no '#! match:' line")
            # A cause read from metric shapes alone has no line to miss: its tests hold whole logs.
            if cause.fingerprints and cause.full_id not in near_miss:
                problems.append(f"{where}: cause {cause.full_id} has no '#! no-match:' near miss")
    return problems
