"""Failures no signature knows, measured: every case is diagnosed again with the library entry that
explains it removed, as if the failure were new.

Scored per case: is it still called a failure (not healthy), is the initiating rank still right
where one is known, and is the line the entry had matched (the failure's own line) among the top
three evidence lines. The generic layers (uncaught exceptions, launcher reports, the odd rank out,
hangs) are what is left to answer; this is what they are worth.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from trainmedic.api import Diagnoser, InputError, Named
from trainmedic.catalog import Library
from trainmedic.evaluate.corpus import Case
from trainmedic.evaluate.score import answers
from trainmedic.model import Cause, Diagnosis

# Entries the reasoner itself stands on (the verdicts for an unknown failure and a hang): never removed.
KEPT = frozenset({"unclassified-failure", "training-hang"})
TOP = 3


def without(library: Library, entry_id: str) -> Library:
    """The library less one entry, with every relation that pointed into it dropped."""
    gone = {c.full_id for c in library.entry(entry_id).causes}

    def cut(c: Cause) -> Cause:
        fixed = replace(
            c,
            competes=tuple(x for x in c.competes if x not in gone),
            confirmed_as=None if c.confirmed_as in gone else c.confirmed_as,
            in_worker=None if c.in_worker in gone else c.in_worker,
            stranded_as=None if c.stranded_as in gone else c.stranded_as,
        )
        if c.otherwise in gone:
            fixed = replace(fixed, needs_context=(), otherwise=None, otherwise_context=())
        if c.inside_as in gone:
            fixed = replace(fixed, inside_marks=(), inside_as=None)
        return fixed

    entries = tuple(replace(e, causes=tuple(cut(c) for c in e.causes)) for e in library if e.id != entry_id)
    calibration = {k: v for k, v in library.calibration.items() if k not in gone}
    return Library(entries, calibration, library.raw_map, {k: v for k, v in library.priors.items() if k not in gone},
                   {k: v for k, v in library.resolved.items() if k not in gone and v[2] not in gone})


@dataclass(frozen=True)
class Probe:
    """One failure to hide: a log, the entry that explains it, and what the full library found."""

    name: str
    source: str  # corpus | lab
    entry: str
    log: bytes
    rank: int | None  # the initiating rank when known
    lines: frozenset[int]  # the line numbers of the full diagnosis's evidence (the failure's own lines)


@dataclass(frozen=True)
class Result:
    probe: Probe
    verdict: str
    primary: str | None
    still_failure: bool
    rank_ok: bool | None
    line_ok: bool

    def row(self) -> str:
        p = self.probe
        rank = "" if self.rank_ok is None else ("ok" if self.rank_ok else "MISS")
        return "\t".join([p.name, p.source, p.entry, self.verdict, self.primary or "-",
                          "ok" if self.still_failure else "MISS", rank, "ok" if self.line_ok else "MISS"])


def _diagnose(diagnoser: Diagnoser, log: bytes) -> Diagnosis | None:
    try:
        return diagnoser.diagnose(Named("output.log", log))
    except InputError:
        return None


def probes(cases: Iterable[Case], lab: Path | None, diagnoser: Diagnoser) -> list[Probe]:
    """Cases the full library gets right, with the entry that explains them: real logs, then lab captures."""
    found = [_probe(case.id, "corpus", case.label.id, case.log.encode("utf-8"), case.label.rank, diagnoser,
                    from_message=case.label.basis == "message")
             for case in cases if case.label.verdict != "healthy" and case.label.id and not case.label.new]
    if lab is not None and (lab / "manifest.json").is_file():
        for cap in json.loads((lab / "manifest.json").read_text(encoding="utf-8")):
            ident = cap.get("expected_id")
            if ident and cap.get("expected_verdict") != "healthy" and len(cap.get("files", ())) == 1:
                found.append(_probe(cap["case"], "lab", ident, (lab / cap["files"][0]).read_bytes(),
                                    cap.get("expected_rank"), diagnoser))
    return [p for p in found if p is not None]


def _probe(name: str, source: str, ident: str, log: bytes, rank: int | None, diagnoser: Diagnoser, *,
           from_message: bool = False) -> Probe | None:
    """A probe when the full library's answer is `ident`'s (score.answers) and its entry may be removed."""
    entry = ident.partition("/")[0]
    if entry in KEPT:
        return None
    d = _diagnose(diagnoser, log)
    if d is None or d.primary is None or not answers(ident, d.primary.id, from_message=from_message):
        return None
    return Probe(name, source, entry, log, rank, frozenset(e.line for e in d.primary.evidence if e.line))


def run(found: Sequence[Probe], library: Library) -> list[Result]:
    results: list[Result] = []
    for entry in sorted({p.entry for p in found}):
        diagnoser = Diagnoser(without(library, entry), parallel=False)
        for p in (p for p in found if p.entry == entry):
            d = _diagnose(diagnoser, p.log)
            if d is None:
                results.append(Result(p, "refused", None, False, None if p.rank is None else False, False))
                continue
            top = [e.line for e in (d.primary.evidence if d.primary else ())][:TOP]
            rank_ok = None if p.rank is None else (d.primary is not None and d.primary.rank == p.rank)
            results.append(Result(p, d.verdict, d.primary.id if d.primary else None, d.verdict != "healthy",
                                  rank_ok, any(line in p.lines for line in top)))
    return results


@dataclass(frozen=True)
class Figures:
    cases: int
    still_failure: float
    ranked: int  # cases with a known initiating rank (multi-rank runs)
    rank: float
    line_top3: float

    def to_json(self) -> dict[str, float | int]:
        return {"cases": self.cases, "still_failure": round(self.still_failure, 4), "ranked": self.ranked,
                "rank": round(self.rank, 4), "line_top3": round(self.line_top3, 4)}


def figures(results: Sequence[Result]) -> Figures:
    n = len(results) or 1
    ranked = [r for r in results if r.rank_ok is not None]
    return Figures(len(results), sum(r.still_failure for r in results) / n, len(ranked),
                   sum(bool(r.rank_ok) for r in ranked) / (len(ranked) or 1),
                   sum(r.line_ok for r in results) / n)
