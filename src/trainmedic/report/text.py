"""The terminal report (rich): the answer first, then evidence, fix, verify, missing facts, collateral."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from trainmedic.model import Diagnosis
from trainmedic.report.common import HEADLINES, collateral_by_rank, where
from trainmedic.util.text import rank_label

_STYLE = {"failure": "bold red", "hang": "bold yellow", "healthy": "bold green"}


def render(d: Diagnosis, out: TextIO, color: bool = False) -> None:
    # Off a terminal, lines are never wrapped: the report is grepped, diffed and pasted.
    con = Console(file=out, force_terminal=color, no_color=not color, highlight=False, soft_wrap=not color)
    p = d.primary
    head = f"[{_STYLE[d.verdict]}]{HEADLINES[d.verdict]}[/]"
    if p is None:
        con.print(f"{head}: no initiating failure, collateral failure or stall was found.")
    else:
        con.print(f"{head}: [bold]{escape(p.title)}[/]")
        con.print(f"  id [cyan]{p.id}[/]   confidence [bold]{p.confidence:.0%}[/]   {escape(where(p))}")
        con.print(f"  {escape(p.why)}")
        if p.evidence:
            con.print("[bold]Evidence[/]")
            for e in p.evidence:
                con.print(f"  [dim]{escape(e.path)}:{e.line}[/] [magenta]{rank_label(e.rank)}[/]  {escape(e.text)}")
        if p.fix:
            con.print("[bold]Fix[/]")
            for i, step in enumerate(p.fix, 1):
                con.print(f"  {i}. {escape(step)}")
        if p.verify:
            con.print("[bold]Verify[/]")
            for cmd in p.verify:
                con.print(f"  $ {escape(cmd)}")
        if p.missing:
            con.print("[bold]Missing facts[/] (the evidence cannot decide without them)")
            for m in p.missing:
                con.print(f"  - {escape(m.fact)}: [green]{escape(m.command)}[/]")
    used = [f for f in d.facts if f.effect]
    if used:
        con.print("[bold]Machine facts used[/]")
        for f in used:
            con.print(f"  - {escape(f.id)} = {escape(f.value)}  [dim]({escape(f.source)})[/]: {escape(f.effect)}")
    if d.alternatives:
        con.print("[bold]Alternatives[/]")
        for a in d.alternatives:
            con.print(f"  - [cyan]{a.id}[/] {a.confidence:.0%}: {escape(a.why)}")
    if d.collateral:
        con.print("[bold]Collateral[/] (explained by the primary failure)")
        for rank, items in collateral_by_rank(d):
            shown = ", ".join(items[:4]) + (f" (+{len(items) - 4} more)" if len(items) > 4 else "")
            con.print(f"  [magenta]{rank}[/]: {escape(shown)}")
    if d.verdict == "hang" and d.progress:
        con.print("[bold]Last progress per rank[/]")
        for pr in d.progress:
            con.print(f"  {rank_label(pr.rank)}: step {pr.step}  [dim]{escape(pr.path)}:{pr.line}[/]")
    for note in d.notes:
        con.print(f"[dim]note: {escape(note)}[/]")
    total = sum(i.bytes for i in d.inputs)
    con.print(f"[dim]read {len(d.inputs)} input(s), {total:,} bytes, "
              f"{sum(i.lines for i in d.inputs):,} lines[/]")
