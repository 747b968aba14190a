"""Shared helpers: run the real CLI in-process with injected streams (no subprocess needed)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trainmedic.cli.env import Env
from trainmedic.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
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
