"""The GitHub Action's entry (action.yml): diagnose the given logs after a failed step, write the
markdown report to the job summary, annotate the log lines, set the step's outputs, and optionally
write SARIF for code scanning.

It reads what a runner gives every step: INPUT_LOGS (paths or globs, one per line or space-separated),
INPUT_SARIF (a path, or empty), GITHUB_STEP_SUMMARY and GITHUB_OUTPUT (files to append to). It never
fails the job itself: the step that ran the training already did.
"""

from __future__ import annotations

import glob
import io
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from trainmedic.report import rendered
from trainmedic.report.common import action_line


def _paths(spec: str) -> list[Path]:
    out: list[Path] = []
    for word in spec.split():
        # a glob as the shell would expand it, from the working directory (absolute ones too)
        found = sorted(glob.glob(word, recursive=True)) if any(ch in word for ch in "*?[") else [word]  # noqa: PTH207  # Path.glob takes no absolute pattern
        out += [Path(p) for p in found]
    return out


def _output_value(text: str) -> str:
    return " ".join(text.split())  # one line: GITHUB_OUTPUT's name=value form


def main(environ: Mapping[str, str] = os.environ, stdout: TextIO = sys.stdout) -> int:
    from trainmedic.api import diagnose
    from trainmedic.logs.sources import InputError
    from trainmedic.model import LibraryError

    paths = _paths(environ.get("INPUT_LOGS", ""))
    if not paths:
        stdout.write("::error title=trainmedic::no log paths matched the input `logs`\n")
        return 0
    try:
        d = diagnose(paths)
    except (InputError, LibraryError, OSError) as exc:
        stdout.write(f"::error title=trainmedic::cannot diagnose: {_output_value(str(exc))}\n")
        return 0
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with Path(summary).open("a", encoding="utf-8") as f:
            f.write(rendered(d, "markdown") + "\n")
    stdout.write(rendered(d, "github"))
    sarif_path = environ.get("INPUT_SARIF", "").strip()
    if sarif_path:
        Path(sarif_path).parent.mkdir(parents=True, exist_ok=True)
        Path(sarif_path).write_text(rendered(d, "sarif"), encoding="utf-8")
    outputs = environ.get("GITHUB_OUTPUT")
    if outputs:
        p, a = d.primary, d.action
        values = {
            "verdict": d.verdict,
            "cause": p.id if p else "",
            "confidence": f"{p.confidence:.3f}" if p else "",
            "rank": "" if p is None or p.rank is None else str(p.rank),
            "action": a.kind if a else "",
            "next": action_line(d),
            "checkpoint": a.checkpoint.path if a and a.checkpoint else "",
            "json": json.dumps(d.to_json(), separators=(",", ":")),
        }
        buf = io.StringIO()
        for key, value in values.items():
            buf.write(f"{key}={_output_value(value)}\n")
        with Path(outputs).open("a", encoding="utf-8") as f:
            f.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
