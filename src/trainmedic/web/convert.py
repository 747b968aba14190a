"""Stored `trainmedic.diagnosis/v1` JSON back into a Diagnosis, so the report renderers work on history.

The history keeps the JSON contract, not pickles: a record written by an older version still loads.
"""

from __future__ import annotations

from typing import Any

from trainmedic.model import (
    Alternative,
    Collateral,
    Diagnosis,
    Evidence,
    Fact,
    Finding,
    InputSummary,
    MissingFact,
    RankProgress,
)


def _finding(p: dict[str, Any]) -> Finding:
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
        missing=tuple(MissingFact(m["fact"], m["command"]) for m in p.get("missing", [])),
        why=p.get("why", ""),
    )


def diagnosis_from_json(d: dict[str, Any]) -> Diagnosis:
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
    )


def markdown(d: dict[str, Any]) -> str:
    """The same markdown report `trainmedic diagnose --format markdown` prints."""
    import io

    from trainmedic.report import FORMATS

    buf = io.StringIO()
    FORMATS["markdown"](diagnosis_from_json(d), buf, False)
    return buf.getvalue()
