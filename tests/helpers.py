"""Diagnose text with a chosen matcher back-end and block size, for the equivalence tests; load a
repository script (scripts/, benchmarks/) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.evaluate.corpus import Case, load_case

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "corpus" / "real"


def load_script(relative: str, monkeypatch: pytest.MonkeyPatch | None = None) -> ModuleType:
    """The script at ROOT/`relative`, loaded as a module. Given the test's monkeypatch, it is also registered
    under its name (a dataclass looks its module up) and its folder is importable (its sibling modules), both
    undone after the test."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(path.parent))
        monkeypatch.setitem(sys.modules, path.stem, module)
    spec.loader.exec_module(module)
    return module


def dev_case(case_id: str) -> Case:
    """A real log of the corpus: rules are shown on the dev split only, never on the test split."""
    case = load_case(REAL / f"{case_id}.yaml")
    assert case.split == "dev", f"{case_id} is a test case: rules are shown on dev cases only"
    return case


def diagnose_with(data: bytes | list[tuple[str, bytes]], backend: str = "python", block_size: int = 4 << 20) -> Any:
    files = data if isinstance(data, list) else [("<text>", data)]
    diagnoser = Diagnoser(backend=backend, block_size=block_size, parallel=False)
    return diagnoser.diagnose([Named(name, body) for name, body in files]).to_json()
