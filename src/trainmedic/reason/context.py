"""What one diagnosis reasons over: the library, the scans of every input, the machine's facts and a
good run to compare with; shared by the reasoner's modules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainmedic.catalog import Library
from trainmedic.model import Fact, ScanResult
from trainmedic.reason.templates import Baseline

SAME_MESSAGE = 6  # lines over which one exception's message may run on


@dataclass(frozen=True)
class Context:
    library: Library
    scans: Sequence[ScanResult]
    facts: tuple[Fact, ...] = ()
    baseline: Baseline | None = None  # a good run of the same job (reason/templates.py)
