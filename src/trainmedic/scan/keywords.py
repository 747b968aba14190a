"""The literal each fingerprint cannot match without: a cheap prefilter for clients that reduce logs
before sending them (the web page reads a 2 GB file in the browser and keeps only candidate lines)."""

from __future__ import annotations

from re import _constants as c  # type: ignore[attr-defined]  # stdlib parser, stable since 3.11
from re import _parser  # type: ignore[attr-defined]  # same
from typing import Any

from trainmedic.catalog import Library
from trainmedic.logs.checkpoints import PATTERNS as CHECKPOINTS
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


def _branch_alternatives(items: Any) -> list[str]:
    """For a pattern like `(?:world_size|nranks)=...`: one literal per alternative, or [] if any lacks one."""
    for op, av in items:
        if op is c.BRANCH:  # a non-capturing group is inlined by the parser
            branches = av[1]
        elif op is c.SUBPATTERN and len(av[-1]) == 1 and av[-1][0][0] is c.BRANCH:
            branches = av[-1][0][1][1]
        else:
            continue
        if branches:
            alts = [max(_runs(branch), key=len, default="") for branch in branches]
            if alts and all(len(a) >= 3 for a in alts):
                return alts
    return []


def required_literals(regex: str, ignore_case: bool = False) -> list[str]:
    """Literals of which every match contains at least one."""
    best = required_literal(regex, ignore_case)
    if best or ignore_case:
        return [best] if best else []
    return _branch_alternatives(_parser.parse(regex))


def keywords(library: Library) -> list[str]:
    """Sorted, de-duplicated literals covering every fingerprint and the reader's structure markers.

    A fingerprint with no usable literal makes the prefilter useless, so the result then holds ''
    (the client must keep every line); the library tests keep that from happening.
    """
    words: set[str] = set()
    # A tail_only cause's words ("Error", a log level) would keep nearly every line and reduce nothing;
    # the client keeps the log's last lines, where those words matter.
    scanned = [(fp.regex, fp.ignore_case) for cause, fp in library.fingerprints() if not cause.tail_only]
    # checkpoint lines too: the action's resume point is read from them
    for regex, ignore_case in scanned + [(p.regex, p.ignore_case) for p in (*STRUCTURE, *CHECKPOINTS)]:
        found = required_literals(regex, ignore_case)
        words.update(found or [""])
    return sorted(words)
