"""`trainmedic lsp` as a command: its options and its one-line usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import run_cli


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("lsp", "--help").code == 0
    out = capsys.readouterr().out  # argparse prints help to sys.stdout itself
    for option in ("--stdio", "--site-url", "--debounce-ms", "--disk-threshold-mb", "--library", "--log-file"):
        assert option in out


def test_usage_errors_are_one_line() -> None:
    result = run_cli("lsp", "--debounce-ms", "-5")
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "must not be negative" in result.err
    missing = run_cli("lsp", "--library", "/nonexistent/library")
    assert missing.code == 2
    assert "not a folder" in missing.err


def test_exits_cleanly_when_the_client_goes_away() -> None:
    proc = subprocess.run([sys.executable, "-m", "trainmedic", "lsp"], input=b"", capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 0
    assert proc.stdout == b""  # stdout belongs to the protocol
