"""How live diagnoses reach people and programs: delimited text blocks, or one JSON object per line.

`run` shares the terminal with the command it runs, so every diagnosis is fenced by a banner that
says it is trainmedic speaking and whether the command still runs; `--json` prints each diagnosis
as one `trainmedic.diagnosis/v1` object on its own line instead, for a program reading the stream.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import TextIO

from trainmedic.model import Diagnosis

BANNER = "trainmedic: live diagnosis"
FINAL_BANNER = "trainmedic: final diagnosis"
END = "end of trainmedic diagnosis"
_RULE = "=" * 12


def render(d: Diagnosis, out: TextIO, *, fmt: str, color: bool, title: str) -> None:
    """Write one diagnosis: fenced text for people, or a JSON line."""
    from trainmedic.report import FORMATS

    if fmt == "json":
        out.write(json.dumps(d.to_json(), separators=(",", ":")) + "\n")
        out.flush()
        return
    buf = io.StringIO()
    FORMATS[fmt](d, buf, color)
    out.write(f"\n{_RULE} {title} {_RULE}\n{buf.getvalue().rstrip()}\n{_RULE} {END} {_RULE}\n")
    out.flush()


def write_report(d: Diagnosis, path: Path) -> None:
    """The final JSON, written whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(d.to_json(), indent=2) + "\n")
    tmp.replace(path)


def key(d: Diagnosis) -> tuple[str, str | None, int | None]:
    """What makes a new diagnosis worth printing again: the verdict and the primary finding."""
    return (d.verdict, d.primary.id if d.primary else None, d.primary.rank if d.primary else None)
