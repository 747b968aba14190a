"""File names and log text never act on the terminal or the page (issue 13): control characters are
shown as \\xNN, HTML and markdown in a name stay text in "Copy as markdown"."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_cli

NAME = "evil\x1b]0;owned\x07\x1b[31mRED\u009b31m<img src=x onerror=alert(1)>*x*.log"
LOG = b"step 1\nRuntimeError: CUDA error: an illegal memory access was encountered \x1b[2J\xc2\x9b2J\n"


def test_text_report_and_errors_carry_no_control_characters(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(LOG)
    result = run_cli("diagnose", str(path), "--format", "text")
    assert result.code == 1
    for bad in ("\x1b", "\u009b", "\x07"):
        assert bad not in result.out
    assert "\\x1b" in result.out  # shown, not acted on
    missing = run_cli("diagnose", str(tmp_path / ("missing" + NAME)))
    assert missing.code == 2 and "\x1b" not in missing.err and "\u009b" not in missing.err


def test_markdown_report_keeps_names_as_text(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(LOG)
    md = run_cli("diagnose", str(path), "--format", "markdown").out
    prose = re.sub(r"```[^`]*```", "", md)  # inside a code block HTML is shown, not rendered
    assert "<img" not in prose and "&lt;img" in prose
    assert "\x1b" not in md and "\u009b" not in md
