"""The real-log corpus: one YAML file per case (see corpus/README.md), split once by source.

The split is a hash of the case's source, so every case of one thread lands on the same side and
no one can move a case to the side that suits a rule. Rules are written looking at `dev` only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

Split = Literal["dev", "test"]
TEST_PERCENT = 35  # share of sources whose cases are kept for measuring only


@dataclass(frozen=True)
class Label:
    verdict: Literal["failure", "hang", "healthy"]
    id: str | None  # <entry>/<cause>; None when healthy
    basis: Literal["thread", "message"]
    rank: int | None
    new: bool  # the library has no entry for this mechanism yet

    @property
    def entry(self) -> str | None:
        return self.id.split("/")[0] if self.id else None


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    title: str
    torch: str | None
    frameworks: tuple[str, ...]
    label: Label
    log: str
    path: Path

    @property
    def split(self) -> Split:
        return split_of(self.source)


def split_of(source: str) -> Split:
    digest = int(hashlib.sha256(source.encode("utf-8")).hexdigest(), 16)
    return "test" if digest % 100 < TEST_PERCENT else "dev"


def load_case(path: Path) -> Case:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    lab = raw["label"]
    return Case(
        id=str(raw["id"]),
        source=str(raw["source"]),
        title=str(raw.get("title") or ""),
        torch=str(raw["torch"]) if raw.get("torch") is not None else None,
        frameworks=tuple(str(f) for f in raw.get("frameworks") or ()),
        label=Label(lab["verdict"], lab.get("id"), lab["basis"], lab.get("rank"), bool(lab.get("new"))),
        log=str(raw["log"]),
        path=path,
    )


def load_corpus(directory: Path) -> list[Case]:
    return [load_case(p) for p in sorted(directory.glob("*.yaml"))]


def cases(directory: Path, split: Split | None = None) -> Iterator[Case]:
    for case in load_corpus(directory):
        if split is None or case.split == split:
            yield case
