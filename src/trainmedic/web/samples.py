"""Sample failures to try on the page, generated, never hand-copied.

Two sources: the lab captures of real PyTorch runs (`tests/fixtures/lab/`, present in a source
checkout, with per-rank files and ground truth in its manifest), and one sample per library entry
built from the `#! match:` lines of its fixture file (always present: they ship with the library).
Samples are looked up by id in memory; no request names a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from trainmedic.catalog import Library
from trainmedic.fixtures import fixture_lines

LAB_DIR = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "lab"
MAX_SAMPLE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Sample:
    id: str
    title: str
    source: str  # "lab" or "library"
    files: tuple[tuple[str, str], ...]  # (name, text)
    detail: str = ""  # how the run was made, for the curious (a tooltip)

    def info(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "detail": self.detail,
            "source": self.source,
            "files": [n for n, _ in self.files],
            "bytes": sum(len(t.encode()) for _, t in self.files),
        }


def lab_samples(root: Path = LAB_DIR, library: Library | None = None) -> list[Sample]:
    """The lab cases that failed or hung, multi-rank ones first (they show the timeline best)."""
    manifest = root / "manifest.json"
    if not manifest.is_file():
        return []
    try:
        cases = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    described = {c.get("case"): str(c.get("description", "")) for c in cases}
    out: list[Sample] = []
    for case in cases:
        if case.get("expected_verdict") == "healthy":
            continue
        files: list[tuple[str, str]] = []
        size = 0
        for rel in case.get("files", []):
            path = root / rel
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                files = []
                break
            size += len(text)
            files.append((rel.split("/", 1)[1] if "/" in rel else rel, text))
        if not files or size > MAX_SAMPLE_BYTES:
            continue
        detail = f"{_describe(case['case'], described)} ({len(files)} file{'s' if len(files) > 1 else ''})"
        out.append(Sample(f"lab-{case['case']}", _plain_name(case, library) or detail, "lab", tuple(files), detail))
    out.sort(key=lambda s: (-len(s.files), s.id))
    return out


def _plain_name(case: dict[str, object], library: Library | None) -> str:
    """What a newcomer reads on the button: the failure, in the library's words, and how many ranks."""
    expected = str(case.get("expected_id") or "")
    if library is None or expected not in library.cause_ids:
        return ""
    name = library.cause(expected).title
    ranks = case.get("expected_collateral_ranks") or []
    n = len(ranks) + 1 if isinstance(ranks, list) and ranks else 1
    files = case.get("files")
    count = len(files) if isinstance(files, list) else 1
    where = f"{n} ranks" if n > 1 else "one process"
    return f"{name[:1].upper()}{name[1:]} ({where}, {count} file{'s' if count != 1 else ''})"


def _describe(case: str, described: dict[str, str], depth: int = 0) -> str:
    """The manifest writes variants as "as <other case>, with ..."; spell the other case out."""
    text = described.get(case, case)
    if text.startswith("as ") and depth < 3:
        other, _, rest = text[3:].partition(",")
        other = other.split()[0] if other.split() else other
        if other in described and other != case:
            rest = (text[3 + len(other):]).lstrip(" ,")
            base = _describe(other, described, depth + 1)
            return f"{base}; {rest}" if rest else base
    return text


def library_samples(library: Library) -> list[Sample]:
    """One short log per entry: the match lines of its initiating causes from the fixture file."""
    out: list[Sample] = []
    for entry in library:
        lines = [fl for fl in fixture_lines(entry) if fl.kind == "match"]
        if not lines:
            continue
        initiating = {c.full_id for c in entry.causes if c.role == "initiating"}
        chosen = [fl for fl in lines if fl.cause in initiating] or lines
        first = chosen[0]
        same = [fl.text for fl in chosen if fl.cause == first.cause][:3]
        cause = library.cause(first.cause)
        out.append(Sample(f"entry-{entry.id}", f"{entry.title}: {cause.title}", "library",
                          ((f"{entry.id}.log", "\n".join(same) + "\n"),)))
    return out


def all_samples(library: Library) -> dict[str, Sample]:
    return {s.id: s for s in [*lab_samples(library=library), *library_samples(library)]}
