"""The literal each fingerprint cannot match without: a cheap prefilter for clients that reduce logs
before sending them (the web page reads a 2 GB file in the browser and keeps only candidate lines)."""

from __future__ import annotations

from re import _constants as c  # type: ignore[attr-defined]  # stdlib parser, stable since 3.11
from re import _parser  # type: ignore[attr-defined]  # same
from typing import Any

from trainmedic.catalog import Library
from trainmedic.scan.database import STRUCTURE


def _runs(items: Any) -> list[str]:
    """Literal runs that every match of `items` contains, in order."""
    runs: list[str] = []
    cur: list[str] = []

    def flush() -> None:
        if cur:
            runs.append("".join(cur))
            cur.clear()

    for op, av in items:
        if op is c.LITERAL:
            cur.append(chr(av))
        elif op is c.SUBPATTERN:
            inner = _runs(av[-1])
            # A group contributes its literals only when it is one plain run.
            if len(inner) == 1 and all(o is c.LITERAL for o, _ in av[-1]):
                cur.append(inner[0])
            else:
                flush()
                runs.extend(inner)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and av[0] >= 1:
            flush()
            runs.extend(_runs(av[2]))
        else:
            flush()
    flush()
    return runs


def required_literal(regex: str, ignore_case: bool = False) -> str:
    """The longest literal every match contains ('' when there is none worth using)."""
    if ignore_case:
        return ""
    runs = _runs(_parser.parse(regex))
    best = max(runs, key=len, default="")
    return best if len(best) >= 3 else ""


def keywords(library: Library) -> list[str]:
    """Sorted, de-duplicated literals covering every fingerprint and the reader's structure markers.

    A fingerprint with no usable literal makes the prefilter useless, so the result then holds ''
    (the client must keep every line); the library tests keep that from happening.
    """
    words = {required_literal(fp.regex, fp.ignore_case) for _, fp in library.fingerprints()}
    words |= {required_literal(p.regex) for p in STRUCTURE}
    return sorted(words)
