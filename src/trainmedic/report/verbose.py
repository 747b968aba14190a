"""The full terminal report (`--verbose`): every evidence line, fix step, missing fact, alternative and
collateral line, with the commands each one names."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from trainmedic.model import Diagnosis
from trainmedic.report.common import HEADLINES, collateral_by_rank, where
from trainmedic.util.text import printable, rank_label


def _safe(text: str) -> str:
    """Log text and file names as plain text: no rich markup, no terminal control characters."""
    return escape(printable(text))


_STYLE = {"failure": "bold red", "hang": "bold yellow", "healthy": "bold green"}


def render(d: Diagnosis, out: TextIO, color: bool = False) -> None:
    # Off a terminal, lines are never wrapped: the report is grepped, diffed and pasted.
    con = Console(file=out, force_terminal=color, no_color=not color, highlight=False, soft_wrap=not color)
    p = d.primary
    head = f"[{_STYLE[d.verdict]}]{HEADLINES[d.verdict]}[/]"
    if p is None:
        con.print(f"{head}: no initiating failure, collateral failure or stall was found.")
    else:
        con.print(f"{head}: [bold]{_safe(p.title)}[/]")
        con.print(f"  id [bold]{p.id}[/]   confidence [bold]{p.confidence:.0%}[/]   {_safe(where(p))}")
        con.print(f"  {_safe(p.why)}")
        if d.phase is not None:
            con.print(f"  [bold]{_safe(d.phase.summary[:1].upper() + d.phase.summary[1:])}[/]")
        if p.evidence:
            con.print("[bold]Evidence[/]")
            for e in p.evidence:
                con.print(f"  [dim]{_safe(e.path)}:{e.line}[/] [magenta]{rank_label(e.rank)}[/]  {_safe(e.text)}")
        if p.fix:
            con.print("[bold]Fix[/]")
            for i, step in enumerate(p.fix, 1):
                con.print(f"  {i}. {_safe(step)}")
        if p.verify:
            con.print("[bold]Verify[/]")
            for cmd in p.verify:
                con.print(f"  [cyan]$ {_safe(cmd)}[/]")
        if p.missing:
            con.print("[bold]Missing facts[/] (the evidence cannot decide without them)")
            for m in p.missing:
                con.print(f"  - {_safe(m.fact)}: [cyan]{_safe(m.command)}[/]")
        if d.action is not None:
            con.print(f"[bold]Next[/] ({_safe(d.action.kind)}, owner {_safe(d.action.owner)})")
            con.print(f"  {_safe(d.action.reason)}")
            if d.action.checkpoint is not None:
                c = d.action.checkpoint
                con.print(f"  [dim]{_safe(c.line.path)}:{c.line.number}[/]  checkpoint {_safe(c.path)}"
                          + (f" step {c.step}" if c.step is not None else ""))
    used = [f for f in d.facts if f.effect]
    if used:
        con.print("[bold]Machine facts used[/]")
        for f in used:
            con.print(f"  - {_safe(f.id)} = {_safe(f.value)}  [dim]({_safe(f.source)})[/]: {_safe(f.effect)}")
    if d.novel:
        con.print("[bold]New since the baseline[/] (lines the good run never printed, most telling first)")
        for n in d.novel[:5]:
            con.print(f"  [dim]{_safe(n.line.path)}:{n.line.number}[/] [magenta]{rank_label(n.line.rank)}[/]  "
                      f"{_safe(n.line.text[:300])}")
    if d.alternatives:
        con.print("[bold]Alternatives[/]")
        for a in d.alternatives:
            con.print(f"  - [bold]{a.id}[/] {a.confidence:.0%}: {_safe(a.why)}")
    if d.collateral:
        con.print("[bold]Collateral[/] (explained by the primary failure)")
        for rank, items in collateral_by_rank(d):
            shown = ", ".join(items[:4]) + (f" (+{len(items) - 4} more)" if len(items) > 4 else "")
            con.print(f"  [magenta]{rank}[/]: {_safe(shown)}")
    if d.verdict == "hang" and d.progress:
        con.print("[bold]Last progress per rank[/]")
        for pr in d.progress:
            con.print(f"  {rank_label(pr.rank)}: step {pr.step}  [dim]{_safe(pr.path)}:{pr.line}[/]")
    for note in d.notes:
        con.print(f"[dim]note: {_safe(note)}[/]")
    total = sum(i.bytes for i in d.inputs)
    con.print(f"[dim]read {len(d.inputs)} input(s), {total:,} bytes, "
              f"{sum(i.lines for i in d.inputs):,} lines[/]")
