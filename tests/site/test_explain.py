"""`trainmedic explain` renders every entry and every cause the site has a page or an anchor for."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from trainmedic.catalog import load_library

LIB = load_library()
ENTRY_IDS = [e.id for e in LIB]
CAUSE_IDS = [c.full_id for c in LIB.causes()]


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_explain_every_entry(entry_id: str) -> None:
    entry = LIB.entry(entry_id)
    result = run_cli("explain", entry_id)
    assert result.code == 0, result.err
    assert result.err == ""
    assert entry.title in result.out
    for cause in entry.causes:
        assert cause.full_id in result.out


@pytest.mark.parametrize("cause_id", CAUSE_IDS)
def test_explain_every_cause(cause_id: str) -> None:
    cause = LIB.cause(cause_id)
    result = run_cli("explain", cause_id)
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())  # explain wraps long lines at the terminal width
    assert cause.full_id in flat and " ".join(cause.title.split()) in flat
    for fp in cause.fingerprints:
        assert fp.id in flat


def test_explain_unknown_id_suggests_a_close_one() -> None:
    result = run_cli("explain", "dataloader-worker-failur")
    assert result.code == 2
    assert "dataloader-worker-failure" in result.err
