"""`trainmedic.diagnosis/v1` JSON: the public contract (DESIGN.md), written and read back.

Writing is `Diagnosis.to_json`; reading a stored object (the web history, a `--report` file) is
`diagnosis_from_json`, so the report renderers work on records written by this or an older version.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from trainmedic.model import (
    Action,
    Alternative,
    Checkpoint,
    Collateral,
    Diagnosis,
    Evidence,
    Fact,
    Finding,
    InputSummary,
    Line,
    MissingFact,
    Phase,
    RankProgress,
)


def render(d: Diagnosis, out: TextIO, _color: bool = False) -> None:
    # One write: json.dump writes token by token, and with PYTHONUNBUFFERED=1 (set in most training
    # containers) each token is a system call of its own.
    out.write(json.dumps(d.to_json(), indent=2, ensure_ascii=False) + "\n")


def json_line(d: Diagnosis) -> str:
    """The diagnosis as one compact line (a stream of diagnoses for a program to read)."""
    return json.dumps(d.to_json(), separators=(",", ":")) + "\n"


def write_file(d: Diagnosis, path: Path) -> None:
    """The diagnosis as a file, written whole or not at all (a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(d.to_json(), indent=2) + "\n")
    tmp.replace(path)


# ---------------------------------------------------------------- reading it back


def _finding(p: Mapping[str, Any]) -> Finding:
    return Finding(
        id=p["id"],
        title=p.get("title", ""),
        category=p.get("category", ""),
        confidence=float(p.get("confidence", 0.0)),
        rank=p.get("rank"),
        host=p.get("host"),
        time=p.get("time"),
        evidence=tuple(Evidence(e["path"], e["line"], e.get("rank"), e.get("text", "")) for e in p.get("evidence", [])),
        fix=tuple(p.get("fix", [])),
        verify=tuple(p.get("verify", [])),
        missing=tuple(MissingFact(m["fact"], m["command"], m.get("topic")) for m in p.get("missing", [])),
        why=p.get("why", ""),
    )


def diagnosis_from_json(d: Mapping[str, Any]) -> Diagnosis:
    """The Diagnosis a `trainmedic.diagnosis/v1` object describes (missing optional fields default)."""
    return Diagnosis(
        verdict=d["verdict"],
        primary=_finding(d["primary"]) if d.get("primary") else None,
        alternatives=tuple(Alternative(a["id"], float(a["confidence"]), a.get("why", ""))
                           for a in d.get("alternatives", [])),
        collateral=tuple(Collateral(c["id"], c.get("rank"), c["path"], c["line"], c.get("explained_by", ""))
                         for c in d.get("collateral", [])),
        inputs=tuple(InputSummary(i["path"], i.get("bytes", 0), i.get("lines", 0), tuple(i.get("ranks", [])))
                     for i in d.get("inputs", [])),
        progress=tuple(RankProgress(p.get("rank"), p.get("step"), p["path"], p["line"], p.get("text", ""))
                       for p in d.get("progress", [])),
        facts=tuple(Fact(f["id"], f["value"], f.get("source", ""), f.get("effect", "")) for f in d.get("facts", [])),
        notes=tuple(d.get("notes", [])),
        phase=_phase(d["phase"]) if isinstance(d.get("phase"), Mapping) else None,
        action=_action(d["action"]) if isinstance(d.get("action"), Mapping) else None,
    )


def _action(a: Mapping[str, Any]) -> Action:
    c = a.get("checkpoint")
    checkpoint = None
    if isinstance(c, Mapping):
        checkpoint = Checkpoint(str(c.get("kind", "save")), str(c.get("checkpoint", "")), c.get("step"),
                                Line(str(c.get("path", "")), int(c.get("line", 0)), "", c.get("rank"),
                                     time=c.get("time")), c.get("completed"))
    return Action(str(a.get("kind", "")), str(a.get("owner", "unknown")), str(a.get("reason", "")), checkpoint,
                  a.get("exclude"), tuple(Evidence(e["path"], e["line"], e.get("rank"), e.get("text", ""))
                                          for e in a.get("evidence", [])))


def _phase(p: Mapping[str, Any]) -> Phase:
    return Phase(str(p.get("name", "")), str(p.get("summary", "")), p.get("step"), p.get("since_progress_s"),
                 p.get("path"), p.get("line"))
