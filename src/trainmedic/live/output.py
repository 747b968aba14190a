"""How live diagnoses reach people and programs: delimited text blocks, or one JSON object per line.

`run` shares the terminal with the command it runs, so every diagnosis is fenced by a banner that
says it is trainmedic speaking and whether the command still runs; `--json` prints each diagnosis
as one `trainmedic.diagnosis/v1` object on its own line instead, for a program reading the stream.
"""

from __future__ import annotations

from typing import TextIO

from trainmedic.model import Diagnosis
from trainmedic.report import rendered
from trainmedic.report.jsonout import json_line

BANNER = "trainmedic: live diagnosis"
FINAL_BANNER = "trainmedic: final diagnosis"
END = "end of trainmedic diagnosis"
_RULE = "=" * 12


def render(d: Diagnosis, out: TextIO, *, fmt: str, color: bool, title: str) -> None:
    """Write one diagnosis: fenced text for people, or a JSON line."""
    if fmt == "json":
        out.write(json_line(d))
        out.flush()
        return
    text = rendered(d, fmt, color)
    out.write(f"\n{_RULE} {title} {_RULE}\n{text.rstrip()}\n{_RULE} {END} {_RULE}\n")
    out.flush()


def key(d: Diagnosis) -> tuple[str, str | None, int | None]:
    """What makes a new diagnosis worth printing again: the verdict and the primary finding."""
    return (d.verdict, d.primary.id if d.primary else None, d.primary.rank if d.primary else None)
