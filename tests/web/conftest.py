"""Fixtures for the web app: an in-process client, a real `trainmedic serve`, Chromium, PostgreSQL.

Everything that starts a process is shared: the server for the session, the browser for the module
that drives it (only test_browser.py does). A live Playwright sync API registers a running asyncio
loop in the worker's main thread, so a session-wide browser would break every asyncio test (the
language server's) that the same xdist worker runs after it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

CHROMIUM = Path("/usr/bin/chromium")
INSTALL_CHROMIUM = ROOT / "scripts" / "install-chromium.sh"
START_PG = ROOT / "scripts" / "start-postgres.sh"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture(scope="session")
def library() -> Any:
    from trainmedic.catalog import load_library

    return load_library()


def match_line(library: Any, cause: str) -> str:
    """A line the library's own fixture file says must match `cause` (never hand-copied)."""
    from trainmedic.fixtures import fixture_lines

    entry = library.entry(cause.split("/", maxsplit=1)[0])
    return next(fl.text for fl in fixture_lines(entry) if fl.kind == "match" and fl.cause == cause)


@pytest.fixture
def app_factory(tmp_path: Path, library: Any) -> Any:
    from trainmedic.web.app import Settings, create_app

    def make(**kw: Any) -> Any:
        kw.setdefault("db_url", f"sqlite:///{tmp_path / 'history.db'}")
        kw.setdefault("library", library)
        return create_app(Settings(**kw))

    return make


@pytest.fixture
def client(app_factory: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(app_factory()) as c:
        yield c


# ---------------------------------------------------------------- a real server and a real browser


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str, db: Path) -> None:
        self.proc = proc
        self.url = url.rstrip("/")
        self.db = db


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`trainmedic serve --port 0` in a subprocess: the real CLI, uvicorn and a SQLite history."""
    db = tmp_path_factory.mktemp("serve") / "history.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainmedic", "serve", "--port", "0", "--db", f"sqlite:///{db}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"serving on (http://\S+)", first)
    if not m:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"trainmedic serve did not start: {first!r} {err[-2000:]}")
    yield Served(proc, m.group(1), db)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright; installed when missing and we are root."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists() and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["bash", str(INSTALL_CHROMIUM)], check=False, timeout=900, capture_output=True)
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing and could not be installed: run `sudo bash {INSTALL_CHROMIUM}`")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page that fails the test on any script error or blocked resource, screenshotted at the end."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    pg.problems = problems
    yield pg
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)
    try:
        pg.screenshot(path=str(SCREENSHOTS / f"web-{name}.png"), full_page=True)
    finally:
        context.close()


# ---------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """TRAINMEDIC_TEST_PG_URL, else a throwaway server from scripts/start-postgres.sh, else skip (saying why)."""
    pytest.importorskip("psycopg")
    url = os.environ.get("TRAINMEDIC_TEST_PG_URL")
    if url:
        yield url
        return
    try:
        # No folder of ours: as root the server runs as `postgres`, which cannot enter pytest's tmp dirs.
        done = subprocess.run(["bash", str(START_PG)], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot start PostgreSQL with {START_PG.name}: {exc}")
    lines = done.stdout.strip().splitlines()
    folder = next((ln[5:] for ln in lines if ln.startswith("dir: ")), None)
    if done.returncode != 0 or not lines or not lines[-1].startswith("postgresql"):
        why = " ".join((done.stderr or done.stdout).strip().splitlines()[-2:])
        pytest.skip(f"no PostgreSQL: set TRAINMEDIC_TEST_PG_URL or run scripts/install-postgres.sh ({why[-300:]})")
    try:
        yield lines[-1]
    finally:
        if folder:
            subprocess.run(["bash", str(START_PG), "--stop", folder], capture_output=True, timeout=60, check=False)
