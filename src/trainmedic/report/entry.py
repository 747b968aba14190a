"""An encyclopedia entry (or one cause of it) in the terminal."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from trainmedic.model import Cause, Entry

CODE_TITLES = {"pytorch": "PyTorch", "hf_trainer": "HF Trainer", "deepspeed": "DeepSpeed", "lightning": "Lightning"}


def _cause(con: Console, c: Cause) -> None:
    con.print(f"\n[bold cyan]{c.full_id}[/]  {escape(c.title)}  [dim](role: {c.role})[/]")
    con.print(f"  {escape(c.mechanism)}")
    con.print("  [bold]Fingerprints[/]")
    for f in c.fingerprints:
        flag = " ambiguous" if f.ambiguous else ""
        con.print(f"    {f.id} (weight {f.weight}{flag}): [green]{escape(f.regex)}[/]")
    for title, items in (("Fix", c.fix), ("Verify", c.verify), ("Prevention", c.prevention)):
        con.print(f"  [bold]{title}[/]")
        for item in items:
            con.print(f"    - {escape(item)}")
    if c.missing:
        con.print("  [bold]Facts that decide it[/]")
        for m in c.missing:
            con.print(f"    - {escape(m.fact)}: {escape(m.command)}")


def render_entry(entry: Entry, cause: Cause | None, out: TextIO, color: bool = False) -> None:
    con = Console(file=out, force_terminal=color, no_color=not color, width=None if color else 100, highlight=False)
    con.print(f"[bold]{escape(entry.title)}[/]  [dim]{entry.id} · {entry.category}[/]")
    con.print(escape(entry.summary))
    if cause is not None:
        _cause(con, cause)
        return
    con.print("\n[bold]Symptoms[/]")
    for s in entry.symptoms:
        con.print(f"  - {escape(s.symptom)}\n      why: {escape(s.why)}")
    con.print("\n[bold]Affects[/]")
    for a in entry.affects:
        con.print(f"  - {escape(a)}")
    con.print("\n[bold]Confirm[/]")
    for check in entry.confirm:
        con.print(f"  [ ] {escape(check)}")
    con.print("\n[bold]Causes[/]")
    for c in entry.causes:
        _cause(con, c)
    con.print("\n[bold]From 1 to 1000 GPUs[/]")
    con.print(f"  {escape(entry.scale)}")
    for key, code in entry.code:
        con.print(f"\n[bold]{CODE_TITLES.get(key, key)}[/]")
        con.print(Syntax(code.rstrip(), "python", theme="ansi_dark", background_color="default"))
    if entry.related:
        con.print("\n[bold]Related[/]: " + ", ".join(entry.related))
    con.print("\n[bold]References[/]")
    for r in entry.references:
        con.print(f"  {r}")
