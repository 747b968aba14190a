"""Hostile requests (issue 13) against the web app, in-process."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import run_cli

EDGE_TIMES = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]


@pytest.mark.parametrize("stamp", EDGE_TIMES)
def test_timestamps_at_the_edge_of_the_calendar_are_shown_or_ignored(stamp: str, client: Any) -> None:
    log = f"{stamp} RuntimeError: CUDA error: an illegal memory access was encountered\n"
    for fmt in ("text", "markdown", "json"):
        result = run_cli("diagnose", "-", "--format", fmt, stdin=log.encode())
        assert result.code == 1 and "Traceback" not in result.err, (fmt, result.err)
    r = client.post("/api/diagnose", json={"text": log})
    assert r.status_code == 200, r.text
    page = client.get(f"/d/{r.json()['id']}")
    assert page.status_code == 200
    assert client.get("/api/diagnoses", params={"since": stamp}).status_code in (200, 422)
    assert client.get("/history", params={"since": stamp}).status_code in (200, 422)
