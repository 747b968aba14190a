"""What the diagnosis page says, arranged from a stored record: the template only lays it out.

The headline answers the newcomer's two questions first: which rank went first, and what it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainmedic.catalog import Library
from trainmedic.report import rendered
from trainmedic.report.common import action_line, feedback, without_printed
from trainmedic.report.jsonout import diagnosis_from_json
from trainmedic.web.encyclopedia import cause_role, cause_title, entry_url
from trainmedic.web.store import Record, iso
from trainmedic.web.timeline import lane_label

MAX_COLLATERAL_PER_RANK = 12


def markdown_report(d: Mapping[str, Any]) -> str:
    """The same markdown report `trainmedic diagnose --format markdown` prints, from a stored diagnosis."""
    return rendered(diagnosis_from_json(d), "markdown")


def headline(d: dict[str, Any], marks: list[dict[str, Any]]) -> tuple[str, str]:
    """(headline, the kind of answer: failure | silent | hang | healthy)."""
    p = d.get("primary")
    if not p:
        return "No failure found in these logs", "healthy"
    rank = p.get("rank")
    who = f"Rank {rank}" if rank is not None else "The run"
    pmark = next((m for m in marks if m.get("primary")), None)
    if d.get("verdict") == "hang":
        return (f"{who} stopped making progress first" if rank is not None else "The run hung"), "hang"
    if pmark is not None and rank is not None and pmark.get("rank") != rank:
        return f"{who} is the suspect: the other ranks failed waiting for it", "silent"
    if rank is None:
        return f"The run failed: {p.get('title', p['id'])}", "failure"
    return f"{who} failed first", "failure"


def diagnosis_view(rec: Record, library: Library) -> dict[str, Any]:
    d = rec.diagnosis
    extra = rec.extra or {}
    marks = list(extra.get("marks", []))
    head, kind = headline(d, marks)
    p = d.get("primary")
    primary = None
    if p:
        primary = {
            **p,
            "url": entry_url(p["id"]),
            "confidence_pct": round(100 * float(p.get("confidence", 0))),
            "rank_label": lane_label(p.get("rank")),
            # How to hand the facts the logs lack back: the same words for each topic as the CLI's.
            "feedback": feedback([m["topic"] for m in p.get("missing", []) if m.get("topic")], "web"),
        }
    # The timeline's marks carry each collateral line's text as sent; the stored diagnosis does not.
    texts = {(m["path"], m["line"]): m.get("text", "") for m in marks}
    groups: dict[int | None, list[dict[str, Any]]] = {}
    for c in d.get("collateral", []):
        groups.setdefault(c.get("rank"), []).append({
            **c, "url": entry_url(c["id"]), "role": cause_role(library, c["id"]),
            "title": cause_title(library, c["id"]), "text": texts.get((c["path"], c["line"]), ""),
        })
    collateral = [
        {"rank": r, "label": lane_label(r), "count": len(items), "rows": items[:MAX_COLLATERAL_PER_RANK]}
        for r, items in sorted(groups.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
    ]
    printed = {*(p or {}).get("verify", []), *(m["command"] for m in (p or {}).get("missing", []))}
    alternatives = [{
        **a, "why": without_printed(a.get("why", ""), printed),
        "url": entry_url(a["id"]), "title": cause_title(library, a["id"]),
        "confidence_pct": round(100 * float(a.get("confidence", 0))),
    } for a in d.get("alternatives", [])]
    sent = {s["name"]: s for s in extra.get("sent", [])}
    inputs = [{**i, "sent": sent.get(i["path"])} for i in d.get("inputs", [])]
    return {
        "headline": head,
        "kind": kind,
        "verdict": d.get("verdict"),
        "primary": primary,
        "context": extra.get("context", []),
        "collateral": collateral,
        "collateral_total": len(d.get("collateral", [])),
        "alternatives": alternatives,
        "progress": d.get("progress", []),
        "phase": d.get("phase"),
        "action": d.get("action"),
        "action_line": action_line(diagnosis_from_json(d)) if d.get("action") else "",
        "inputs": inputs,
        "facts": [f for f in d.get("facts", []) if f.get("effect")],
        "notes": d.get("notes", []),
        "created": iso(rec.created),
    }
