"""The terminal report: what a tired engineer reads first, in about 25 lines at 80 columns.

The headline says what failed, where and how sure; then the few evidence lines that matter (repeats
folded), the fix, the command that verifies it, the fact that would decide it and how to hand that
fact back, and the collateral grouped by what it is. Every command is printed once. `--verbose`
(report/verbose.py) keeps every detail. Colour has one meaning each: the failing rank red,
collateral muted, commands cyan.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.text import Text

from trainmedic.model import Diagnosis, Evidence, Finding
from trainmedic.report.common import (
    HEADLINES,
    action_line,
    collateral_groups,
    feedback,
    folded_evidence,
    library_ids,
    references,
    relative,
    when,
)
from trainmedic.util.text import printable, rank_label

EVIDENCE_SHOWN = 3
FIX_SHOWN = 4
COLLATERAL_SHOWN = 4
NOTES_SHOWN = 2
NOVEL_SHOWN = 3

CMD = "cyan"
RANK = "bold red"
MUTED = "dim"
_VERDICT = {"failure": "bold", "hang": "bold", "healthy": "bold green"}  # red means the failing rank only

Seg = tuple[str, str, bool]  # text, style, atomic (a command: never split across lines)


class _Block:
    """One logical line: its pieces, its indent, and the indent its wrapped lines keep."""

    def __init__(self, indent: int = 0, hang: int = 0) -> None:
        self.indent = indent
        self.hang = hang
        self.segs: list[Seg] = []

    def add(self, text: str, style: str = "") -> _Block:
        self.segs.append((printable(text), style, False))
        return self

    def prose(self, text: str, ticks: bool = True) -> _Block:
        """Library prose: a `command` between backticks is one unbreakable piece in the command colour
        (shown with its backticks, or without when `ticks` is False)."""
        for i, part in enumerate(text.split("`")):
            if i % 2 and part:
                self.cmd(f"`{part}`" if ticks else part)
            elif part:
                self.add(part)
        return self

    def cmd(self, text: str) -> _Block:
        self.segs.append((printable(text), CMD, True))
        return self


def _wrap(block: _Block, width: int | None) -> list[Text]:
    """The block as lines of at most `width` columns (None: one line), wrapped between words; a
    command is one word, so it may overflow but is never split."""
    # (spaces before, word, style): a line may break only where there are spaces, so punctuation
    # after a command stays with it and a styled piece inside a word stays inside it.
    words: list[tuple[str, str, str]] = []
    pending = ""
    for text, style, atomic in block.segs:
        for i, part in enumerate([text] if atomic else text.split(" ")):
            space = pending + (" " if i else "")
            if not part:
                pending = space
                continue
            words.append((space, part, style))
            pending = ""
    lines: list[Text] = []
    line = Text(" " * block.indent)
    fresh = True  # nothing on the line yet: a word that does not fit still goes here
    for space, word, style in words:
        gap = space
        if width is not None and not fresh and gap and line.cell_len + len(gap) + len(word) > width:
            lines.append(line)
            line = Text(" " * (block.indent + block.hang))
            gap = ""
        line.append(gap)
        line.append(word, style=style or None)
        fresh = False
    lines.append(line)
    for t in lines:
        t.rstrip()
    return lines


class _Limits:
    """How much of each part the report shows: the terminal report trims alternatives, collateral
    kinds and fix steps, in that order, until it fits its line budget."""

    def __init__(self, fix: int = FIX_SHOWN, collateral: int = COLLATERAL_SHOWN, alternatives: int = 3) -> None:
        self.fix, self.collateral, self.alternatives = fix, collateral, alternatives


def blocks(d: Diagnosis, limits: _Limits | None = None) -> list[_Block]:
    """The report as logical lines, before wrapping."""
    lim = limits or _Limits()
    out: list[_Block] = []
    p = d.primary
    head = _Block(hang=2).add(HEADLINES[d.verdict], _VERDICT[d.verdict])
    if p is None:
        out.append(head.add(": no failure, collateral failure or stall was found."))
        _notes(d, out, NOTES_SHOWN + 2)
        _footer(d, out)
        return out
    out.append(head.add(f" ({p.confidence:.0%} sure): ").add(p.title, "bold"))
    where = _where(d, p)
    if any(text for text, _, _ in where.segs):
        out.append(where)
    if p.why:
        out.append(_Block(2, 2).prose(p.why))
    _evidence(p, out)
    if d.novel:
        out.append(_Block().add("New since the baseline", "bold").add(" (lines the good run never printed)", MUTED))
        for n in d.novel[:NOVEL_SHOWN]:
            out.append(_Block(2, 4).add(f"{relative(n.line.path)}:{n.line.number}", MUTED).add(" ")
                       .add(rank_label(n.line.rank), "magenta").add("  " + n.line.text[:300]))
    used = [f for f in d.facts if f.effect]
    for f in used[:2]:
        out.append(_Block(0, 2).add("Machine: ", "bold").add(f"{f.id} = {f.value}: {f.effect}"))
    _fix(p, out, lim.fix)
    _decide(p, out)
    if d.action is not None:
        out.append(_Block(0, 2).add("Next  ", "bold").prose(action_line(d), ticks=False))
    if d.alternatives and lim.alternatives:
        alt = _Block(0, 2).add("Also possible: ", "bold")
        for i, a in enumerate(d.alternatives[:lim.alternatives]):
            alt.add(("" if i == 0 else ", ") + f"{a.id} {a.confidence:.0%}")
        if len(d.alternatives) > lim.alternatives:
            alt.add(f" (+{len(d.alternatives) - lim.alternatives})", MUTED)
        out.append(alt)
    _collateral(d, out, lim.collateral)
    if d.verdict == "hang" and d.progress:
        prog = _Block(0, 2).add("Last progress: ", "bold")
        for i, pr in enumerate(d.progress[:6]):
            who = f"{rank_label(pr.rank)} " if pr.rank is not None else ""
            prog.add(("" if i == 0 else ", ") + f"{who}step {pr.step}")
        if len(d.progress) > 6:
            prog.add(f" (+{len(d.progress) - 6} ranks)", MUTED)
        out.append(prog)
    _notes(d, out, NOTES_SHOWN)
    _footer(d, out)
    return out


def _where(d: Diagnosis, p: Finding) -> _Block:
    b = _Block(2, 2)
    parts: list[str] = []
    if p.rank is not None:
        b.add("On ").add(rank_label(p.rank), RANK)
        if p.host:
            b.add(f" ({p.host})")
    elif p.host:
        parts.append(f"On {p.host}")
    if p.time is not None:
        parts.append(when(p.time))
    if d.phase is not None:
        parts.append(d.phase.summary.removeprefix("stopped "))
    text = ", ".join(parts)
    b.add((", " + text) if b.segs and text else (text[:1].upper() + text[1:]))
    return b


def _evidence(p: Finding, out: list[_Block]) -> None:
    """The lines that matter, under their file's name; lines that differ only in numbers fold."""
    shown, rest = folded_evidence(p.evidence, EVIDENCE_SHOWN)
    digits = max((len(str(e.line)) for e, _ in shown), default=1)
    last = None
    for e, like in shown:
        here = (e.path, e.rank)
        if here != last:
            b = _Block(2, 2).add(relative(e.path), MUTED)
            if e.rank is not None:
                b.add(", ").add(rank_label(e.rank), RANK if e.rank == p.rank else "magenta")
            out.append(b)
            last = here
        out.append(_Block(4, digits + 2).add(str(e.line).rjust(digits), MUTED).add("  " + e.text[:300]))
        if like:
            out.append(_Block(6 + digits, 2).add(f"and {like} more like it{_on(e)}", MUTED))
    if rest:
        out.append(_Block(4, 2).add(f"and {rest} more evidence line{'s' if rest != 1 else ''} (--verbose)", MUTED))


def _on(e: Evidence) -> str:
    return f" on {rank_label(e.rank)}" if e.rank is not None else ""


def _fix(p: Finding, out: list[_Block], shown: int) -> None:
    # The cause's page, and each cause a step points to, is one `trainmedic explain ID` away: the
    # ids are shown in the command colour.
    out.append(_Block(0, 2).add("Fix", "bold").add("  (more: ", MUTED).cmd(f"trainmedic explain {p.id}")
               .add(")", MUTED))
    ids = library_ids()
    for i, step in enumerate(p.fix[:shown], 1):
        b = _Block(2, 3).add(f"{i}. ")
        for piece, is_id in references(step, ids):
            if is_id:
                b.cmd(piece)
            else:
                b.prose(piece)
        out.append(b)
    if len(p.fix) > shown:
        more = len(p.fix) - shown
        out.append(_Block(5).add(f"(+{more} more step{'s' if more != 1 else ''}: --verbose)", MUTED))
    if len(p.verify) == 1:
        out.append(_Block(0, 2).add("Verify  ", "bold").cmd(f"$ {p.verify[0]}"))
    elif p.verify:
        out.append(_Block().add("Verify", "bold"))
        for cmd in p.verify:
            out.append(_Block(2).cmd(f"$ {cmd}"))


def _decide(p: Finding, out: list[_Block]) -> None:
    """The facts that would decide it, each command once (a Verify command is named, not repeated),
    then how to hand those facts back to trainmedic."""
    if not p.missing:
        return
    out.append(_Block().add("To decide it", "bold").add(" (the logs cannot say)", MUTED))
    printed = set(p.verify)
    for m in p.missing:
        b = _Block(2, 2).add("- ").prose(m.fact)
        if m.command in printed:
            out.append(b.add(" (Verify)", MUTED))
            continue
        out.append(b.add(":"))
        out.append(_Block(4).cmd(f"$ {m.command}"))
        printed.add(m.command)
    words = feedback([m.topic for m in p.missing if m.topic], "cli")
    if words:
        out.append(_Block(2, 2).prose(words, ticks=False))


def _collateral(d: Diagnosis, out: list[_Block], shown: int) -> None:
    groups = collateral_groups(d)
    if not groups:
        return
    n = len(d.collateral)
    hidden = len(groups) - shown
    out.append(_Block().add("Collateral", "bold").add(
        f" ({n} failure{'s' if n != 1 else ''} that followed"
        + (f"; {hidden} more kind{'s' if hidden != 1 else ''} with --verbose)" if hidden > 0 else ")"), MUTED))
    for who, title, role in groups[:shown]:
        out.append(_Block(2, 4).add(f"{who}: {title} ({role})", MUTED))


def _notes(d: Diagnosis, out: list[_Block], limit: int) -> None:
    for note in d.notes[:limit]:
        out.append(_Block(0, 6).add("note: ", "bold").prose(note))
    if len(d.notes) > limit:
        out.append(_Block().add(f"(+{len(d.notes) - limit} more notes: --verbose)", MUTED))


def _footer(d: Diagnosis, out: list[_Block]) -> None:
    total = sum(i.bytes for i in d.inputs)
    n = len(d.inputs)
    out.append(_Block().add(f"read {n} input{'s' if n != 1 else ''}, {total:,} bytes, "
                            f"{sum(i.lines for i in d.inputs):,} lines · --verbose for every detail", MUTED))


BUDGET = 25  # lines of the terminal report, when its width is known


def lines(d: Diagnosis, width: int | None = 80) -> list[Text]:
    """The report as it shows `width` columns wide (None: one line per item, unwrapped, nothing
    trimmed); a wrapped report gives up its alternatives, then collateral kinds (down to one), then
    fix steps (down to one), each named as left out, until it fits BUDGET lines, and stops there."""
    def wrapped(lim: _Limits) -> list[Text]:
        return [t for b in blocks(d, lim) for t in _wrap(b, width)]

    if width is None:
        return wrapped(_Limits())
    lim = _Limits()
    out = wrapped(lim)
    for part, floor in (("alternatives", 0), ("collateral", 1), ("fix", 1)):
        while len(out) > BUDGET and getattr(lim, part) > floor:
            setattr(lim, part, getattr(lim, part) - 1)
            out = wrapped(lim)
    return out


def render(d: Diagnosis, out: TextIO, color: bool = False) -> None:
    # Off a terminal, lines are never wrapped: the report is grepped, diffed and pasted.
    con = Console(file=out, force_terminal=color, no_color=not color, highlight=False, soft_wrap=True)
    for t in lines(d, con.width if color else None):
        con.print(t)
