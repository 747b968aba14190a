"""Small wording shared by the renderers, so text and markdown say the same thing."""

from __future__ import annotations

import datetime as dt

from trainmedic.model import Diagnosis, Finding
from trainmedic.util.text import rank_label

HEADLINES = {
    "failure": "The run failed",
    "hang": "The run hung",
    "healthy": "No failure found",
}


def when(t: float | None) -> str:
    if t is None:
        return ""
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def where(p: Finding) -> str:
    """Rank, host and time of a finding, as one phrase."""
    parts = [rank_label(p.rank)]
    if p.host:
        parts.append(f"host {p.host}")
    if p.time is not None:
        parts.append(when(p.time))
    return ", ".join(parts)


def collateral_by_rank(d: Diagnosis) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for c in d.collateral:
        groups.setdefault(rank_label(c.rank), []).append(f"{c.id} ({c.path}:{c.line})")
    return sorted(groups.items(), key=lambda kv: (kv[0] == "no rank", len(kv[0]), kv[0]))
