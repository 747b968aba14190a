"""The scaffold writes an entry the schema accepts and whose placeholder fixture fails the check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import load_script
from trainmedic.catalog import LIBRARY_DIR, load_library
from trainmedic.fixtures import check_fixtures


def _scaffold() -> object:
    return load_script("scripts/new_entry.py")


def test_a_scaffolded_entry_loads_and_its_placeholders_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib_dir = tmp_path / "library"
    shutil.copytree(LIBRARY_DIR, lib_dir)
    mod = _scaffold()
    monkeypatch.setattr(mod, "LIBRARY", lib_dir)
    assert mod.main(["data-pipeline", "example-failure", "first-cause"]) == 0  # type: ignore[attr-defined]
    lib = load_library(lib_dir)
    entry = lib.entry("example-failure")
    problems = [p for p in check_fixtures(lib) if p.startswith("example-failure.log")]
    assert entry.causes[0].full_id == "example-failure/first-cause"
    # Both placeholders fail: the match line matches nothing, the near miss matches the placeholder regex.
    assert any("should match" in p for p in problems) and any("near miss matched" in p for p in problems)
    assert mod.main(["data-pipeline", "example-failure", "x"]) == 2  # type: ignore[attr-defined]
    assert mod.main(["Data", "bad name", "x"]) == 2  # type: ignore[attr-defined]
