"""Shared helpers: run the real CLI in-process with injected streams (no subprocess needed)."""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# The tests never read or write the user's cache: each test process gets a throwaway one. Set before
# trainmedic is imported, so the library and the pattern database are built by the code under test.
if "TRAINMEDIC_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="trainmedic-test-cache-")
    os.environ["TRAINMEDIC_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)

from trainmedic.cli.env import Env  # after the cache is chosen
from trainmedic.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
# Tests that need a real browser or a database server; `make check` leaves them to `make test`.
_BROWSER = {"test_browser.py"}
_DATABASE = {("web", "test_history.py")}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        if path.name in _BROWSER:
            item.add_marker(pytest.mark.browser)
        if (path.parent.name, path.name) in _DATABASE:
            item.add_marker(pytest.mark.database)
FIXTURES = ROOT / "tests" / "fixtures"


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*argv: str, stdin: bytes = b"", tty: bool = False) -> Result:
    out, err = io.StringIO(), io.StringIO()
    env = Env(stdin=io.BytesIO(stdin), stdout=out, stderr=err, stdout_isatty=tty, stderr_isatty=tty)
    code = main(list(argv), env=env)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli() -> Any:
    return run_cli
