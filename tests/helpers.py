"""Diagnose text with a chosen matcher back-end and block size, for the equivalence tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainmedic.api import Diagnoser, Named
from trainmedic.evaluate.corpus import Case, load_case

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"


def dev_case(case_id: str) -> Case:
    """A real log of the corpus: rules are shown on the dev split only, never on the test split."""
    case = load_case(REAL / f"{case_id}.yaml")
    assert case.split == "dev", f"{case_id} is a test case: rules are shown on dev cases only"
    return case


def diagnose_with(data: bytes | list[tuple[str, bytes]], backend: str = "python", block_size: int = 4 << 20) -> Any:
    files = data if isinstance(data, list) else [("<text>", data)]
    diagnoser = Diagnoser(backend=backend, block_size=block_size, parallel=False)
    return diagnoser.diagnose([Named(name, body) for name, body in files]).to_json()
