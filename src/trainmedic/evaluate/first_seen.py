"""How each corpus case was answered the first time `make eval` saw it, before any rule was written
looking at it (corpus/eval/first_seen.tsv). Rules are later written against dev cases, so how often an
answer is right on dev overstates how often it is right on a log nobody has seen; the first answers
do not. Calibration reads them for the answers that stand in for unknown failures (score.calibrate).

A row is written once, when its case is first scored, and never rewritten. Cases that were in the
corpus before the file existed are recorded as "n/a": their first answers were not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainmedic.evaluate.score import Outcome

HEADER = "case\tsplit\tresult\tprimary\tconfidence"
UNKNOWN = "n/a"  # in the corpus before first answers were kept


@dataclass(frozen=True)
class FirstSeen:
    case: str
    split: str
    result: str  # ok | top3 | MISS | n/a
    primary: str  # the first answer's cause, "-" when it was called healthy
    confidence: str

    def row(self) -> str:
        return "\t".join([self.case, self.split, self.result, self.primary, self.confidence])

    @property
    def measured(self) -> bool:
        return self.result != UNKNOWN


def read(path: Path) -> dict[str, FirstSeen]:
    if not path.is_file():
        return {}
    rows: dict[str, FirstSeen] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) == 5:
            rows[parts[0]] = FirstSeen(*parts)
    return rows


def merge(known: Mapping[str, FirstSeen], outcomes: Iterable[Outcome]) -> dict[str, FirstSeen]:
    """A row for every case: the known rows as they are, new cases as scored now."""
    rows = dict(known)
    for o in outcomes:
        if o.case not in rows:
            conf = "" if o.confidence is None else f"{o.confidence:.2f}"
            rows[o.case] = FirstSeen(o.case, o.split, o.mark, o.primary or "-", conf)
    return rows


def render(known: Mapping[str, FirstSeen], outcomes: Iterable[Outcome]) -> str:
    """The file's text: `merge`d, one row per case."""
    body = sorted(merge(known, outcomes).values(), key=lambda r: (r.split, r.case))
    return "\n".join([HEADER, *(r.row() for r in body)]) + "\n"
