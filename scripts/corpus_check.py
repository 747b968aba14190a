"""Validate the real-log corpus: one line per problem, exit 1 when any."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "real"
LIBRARY = ROOT / "src" / "trainmedic" / "library"
KEYS = {"id", "source", "title", "torch", "frameworks", "label", "notes", "log"}
LABEL_KEYS = {"verdict", "id", "basis", "rank", "new"}
SOURCE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+|https?://\S+")
PERSONAL = re.compile(r"/home/(?!user\b)[A-Za-z0-9_.-]+|/Users/(?!user\b)[A-Za-z0-9_.-]+")


def library_ids() -> set[str]:
    ids = set()
    for path in LIBRARY.glob("*/*.yaml"):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        ids.update(f"{entry['id']}/{cause['id']}" for cause in entry["causes"])
    return ids


def check(path: Path, known: set[str]) -> list[str]:
    try:
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        return [f"not YAML: {exc}".splitlines()[0]]
    if not isinstance(case, dict):
        return ["not a mapping"]
    problems = []
    if set(case) != KEYS:
        problems.append(f"keys differ: missing {sorted(KEYS - set(case))}, extra {sorted(set(case) - KEYS)}")
    if case.get("id") != path.stem:
        problems.append("id must equal the file stem")
    if not SOURCE.fullmatch(str(case.get("source", ""))):
        problems.append("source must be owner/repo#N or an address")
    label = case.get("label") or {}
    if set(label) != LABEL_KEYS:
        problems.append(f"label keys must be {sorted(LABEL_KEYS)}")
    verdict = label.get("verdict")
    if verdict not in {"failure", "hang", "healthy"}:
        problems.append("label.verdict must be failure, hang or healthy")
    if verdict == "healthy" and label.get("id") is not None:
        problems.append("a healthy case has label.id null")
    if verdict != "healthy":
        lid = label.get("id")
        if not isinstance(lid, str) or "/" not in lid:
            problems.append("label.id must be <entry>/<cause>")
        elif not label.get("new") and lid not in known:
            problems.append(f"label.id {lid} is not in the library (set new: true for a proposal)")
        elif label.get("new") and lid in known:
            # a proposal the library has taken up since: the case is now scored against that cause
            problems.append(f"label.id {lid} is in the library now (set new: false)")
    if label.get("basis") not in {"thread", "message"}:
        problems.append("label.basis must be thread or message")
    if label.get("rank") is not None and not isinstance(label.get("rank"), int):
        problems.append("label.rank must be an integer or null")
    log = case.get("log")
    if not isinstance(log, str) or len(log.strip().splitlines()) < 1:
        problems.append("log is empty")
    elif PERSONAL.search(log):
        problems.append(f"personal path left in the log: {PERSONAL.search(log).group(0)}")  # type: ignore[union-attr]
    if not isinstance(case.get("notes"), str) or len(case.get("notes", "")) < 20:
        problems.append("notes must say why the label is what it is")
    return problems


def main() -> int:
    known = library_ids()
    paths = sorted(CORPUS.glob("*.yaml"))
    bad = 0
    for path in paths:
        for problem in check(path, known):
            print(f"{path.relative_to(ROOT)}: {problem}")
            bad += 1
    print(f"{len(paths)} cases, {bad} problems", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
