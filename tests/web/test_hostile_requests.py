"""Hostile requests (issue 13) against the web app, in-process."""

from __future__ import annotations

from pathlib import Path
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


LOG = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


@pytest.mark.parametrize("headers", [
    {"origin": "null"},  # a sandboxed iframe auto-submitting a form
    {"origin": "https://evil.example"},
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},
])
def test_a_post_from_another_site_stores_nothing(headers: dict[str, str], client: Any) -> None:
    r = client.post("/api/diagnose", data={"text": LOG}, headers=headers)
    assert r.status_code == 403
    assert client.get("/api/diagnoses").json()["items"] == []


def test_the_apps_own_page_and_scripts_are_served(client: Any) -> None:
    assert client.post("/api/diagnose", json={"text": LOG}, headers={"origin": "http://testserver",
                                                                       "sec-fetch-site": "same-origin"}).status_code == 200
    assert client.post("/api/diagnose", json={"text": LOG}).status_code == 200  # curl sends neither header


@pytest.mark.parametrize(("host", "ok"), [
    ("[::1]:8765", True), ("localhost:8765", True), ("127.0.0.1", True),
    ("evil.example:8765", False), ("[::2]:8765", False), ("attacker.example", False),
])
def test_only_the_names_the_server_answers_to_are_served_over_ipv6_too(host: str, ok: bool,
                                                                       app_factory: Any) -> None:
    from fastapi.testclient import TestClient

    from trainmedic.web.server import LOOPBACK_NAMES

    with TestClient(app_factory(allowed_hosts=(*LOOPBACK_NAMES, "::1"))) as c:
        r = c.get("/", headers={"host": host})
    assert (r.status_code == 200) is ok, (host, r.status_code)


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_serve_refuses_a_cap_that_is_not_a_size(value: str) -> None:
    result = run_cli("serve", "--max-upload-mb", value, "--port", "0")
    assert result.code == 2 and "Traceback" not in result.err and "max-upload-mb" in result.err


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_a_loopback_server_checks_the_host_header_for_ipv6_too(host: str) -> None:
    from trainmedic.cli.serve import allowed_hosts
    from trainmedic.web.app import host_name
    from trainmedic.web.server import LOOPBACK_NAMES

    allowed = allowed_hosts(host, True, LOOPBACK_NAMES)
    assert allowed is not None and host_name("[::1]:8765") in {host_name(h) for h in allowed}
    assert host_name("evil.example:8765") not in {host_name(h) for h in allowed}


def test_a_history_database_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = run_cli("serve", "--db", f"sqlite:///{blocker}/sub/history.db", "--port", "0")
    assert result.code == 2 and "Traceback" not in result.err and "history database" in result.err


@pytest.mark.timeout(30)
def test_a_tiny_request_naming_a_huge_line_number_costs_nothing(client: Any) -> None:
    """A 55-byte body with a line number near 2^31 made the server scan 2 GB of padding."""
    body = {"name": "r.log", "lines": [[2_000_000_000, LOG.strip()]]}
    r = client.post("/api/diagnose", json={"files": [body]})
    assert r.status_code == 200, r.text
    d = r.json()["diagnosis"]
    assert d["primary"]["id"] == "cuda-illegal-memory-access/illegal-address"
    assert d["primary"]["evidence"][0]["line"] == 2_000_000_000


def test_secrets_near_the_evidence_are_never_stored_or_shown(client: Any) -> None:
    secrets = {
        "hf": "hf_" + "A1b2C3d4" * 4,
        "aws": "AKIA" + "ABCDEFGHIJKLMNOP",
        "url": "https://user:hunter2secret@hub.example.com/repo",
        "env": "WANDB_API_KEY=0123456789abcdef0123",
    }
    log = (f"env: HF_TOKEN={secrets['hf']} {secrets['aws']} {secrets['env']}\n"
           f"RuntimeError: CUDA error: an illegal memory access was encountered while pushing to {secrets['url']}\n")
    r = client.post("/api/diagnose", json={"text": log})
    assert r.status_code == 200
    rid = r.json()["id"]
    for text in (r.text, client.get(f"/api/diagnoses/{rid}").text, client.get(f"/d/{rid}").text,
                 client.get(f"/d/{rid}.md").text if client.get(f"/d/{rid}.md").status_code == 200 else ""):
        assert secrets["hf"] not in text and secrets["aws"] not in text
        assert "hunter2secret" not in text and "0123456789abcdef0123" not in text
    assert "<redacted" in r.text or "&lt;redacted" in r.text
