"""SARIF 2.1.0: the diagnosis for code-scanning tools (GitHub code scanning, IDE SARIF viewers).

The initiating evidence is an `error` result, collateral failures are `note`s that say what explains
them, and every cause named is a rule from the library (title, mechanism, fix steps, and the
encyclopedia's page when TRAINMEDIC_SITE_URL says where the team publishes `trainmedic site build`).
Validated against the official schema in the tests.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from trainmedic import __version__
from trainmedic.model import Diagnosis
from trainmedic.report.common import action_line, report_library

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    """An artifact location: the path as given, with forward slashes (a relative path stays relative)."""
    return path.replace(os.sep, "/") if path else "<input>"


def _location(path: str, line: int, text: str = "") -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": max(1, line)}
    if text:
        region["snippet"] = {"text": text}
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(path)}, "region": region}}


def _rule(cause_id: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": cause_id, "shortDescription": {"text": cause_id}}
    lib = report_library()
    try:
        cause = lib.cause(cause_id) if lib is not None else None
    except KeyError:
        cause = None
    if cause is not None:
        steps = "\n".join(f"{i}. {s}" for i, s in enumerate(cause.fix, 1))
        rule["name"] = "".join(w.capitalize() for w in cause.full_id.replace("/", "-").split("-"))
        rule["shortDescription"] = {"text": cause.title}
        rule["fullDescription"] = {"text": cause.mechanism}
        rule["help"] = {"text": f"{steps}\n\nMore: trainmedic explain {cause.full_id}",
                        "markdown": f"{steps}\n\nMore: `trainmedic explain {cause.full_id}`"}
        rule["properties"] = {"tags": [cause.full_id.split("/")[0]], "owner": cause.action.owner}
        site = os.environ.get("TRAINMEDIC_SITE_URL", "").rstrip("/")
        if site.startswith(("https://", "http://")):
            rule["helpUri"] = f"{site}/{cause.full_id}/"  # the cause's page in `trainmedic site build`
    return rule


def sarif(d: Diagnosis) -> dict[str, Any]:
    ids: list[str] = []

    def index(cause_id: str) -> int:
        if cause_id not in ids:
            ids.append(cause_id)
        return ids.index(cause_id)

    results: list[dict[str, Any]] = []
    p = d.primary
    if p is not None:
        first = p.evidence[0] if p.evidence else None
        message = f"{p.title} ({p.confidence:.0%} sure). {p.why}".strip()
        if d.action is not None:
            message += f" Next: {action_line(d)}."
        result: dict[str, Any] = {
            "ruleId": p.id, "ruleIndex": index(p.id), "level": "error" if d.verdict != "healthy" else "note",
            "message": {"text": message},
            "locations": [_location(first.path, first.line, first.text)] if first else [],
            "properties": {"confidence": p.confidence, "rank": p.rank, "host": p.host,
                           "action": d.action.to_json() if d.action else None},
        }
        if len(p.evidence) > 1:
            result["relatedLocations"] = [dict(_location(e.path, e.line, e.text), id=i)
                                          for i, e in enumerate(p.evidence[1:20], 1)]
        results.append(result)
    for c in d.collateral[:200]:
        results.append({
            "ruleId": c.id, "ruleIndex": index(c.id), "level": "note",
            "message": {"text": f"Collateral ({c.id}), explained by {c.explained_by or 'the initiating failure'}"},
            "locations": [_location(c.path, c.line, c.text)],
            "properties": {"rank": c.rank},
        })
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "trainmedic", "version": __version__, "rules": [_rule(i) for i in ids]}},
            "results": results,
            "invocations": [{"executionSuccessful": True}],
            "properties": {"verdict": d.verdict},
        }],
    }


def render(d: Diagnosis, out: TextIO, _color: bool = False) -> None:
    out.write(json.dumps(sarif(d), indent=2, ensure_ascii=False) + "\n")  # one write (see jsonout.render)
