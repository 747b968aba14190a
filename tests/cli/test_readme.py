"""The README cannot drift from the CLI: every command it lists exists, every command exists in it,
and the options it shows for diagnose are real."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT, run_cli
from trainmedic.cli.main import COMMANDS

README = (ROOT / "README.md").read_text()


def test_every_command_is_documented_and_every_documented_command_exists() -> None:
    documented = set(re.findall(r"^\| `trainmedic ([a-z]+)", README, re.M))
    assert documented == set(COMMANDS)


def test_each_command_has_help() -> None:
    for name in COMMANDS:
        res = run_cli(name, "--help")
        assert res.code == 0, (name, res.err)


def test_diagnose_options_in_the_readme_exist() -> None:
    res = run_cli("diagnose", "--help")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run_cli("diagnose", "--help")
    help_text = buf.getvalue()
    for option in re.findall(r"(--[a-z-]+)", README.split("trainmedic diagnose PATH...", 1)[1].split("|", 1)[0]):
        assert option in help_text, option
    assert res.code == 0


def test_exit_codes_in_the_readme_are_the_enum() -> None:
    from trainmedic.model import ExitCode

    for code in ExitCode:
        assert f"`{int(code)}`" in README


def test_progress_bar_on_a_terminal_for_inputs_over_50_mb(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    line = b"[rank0]: step 1 loss 0.5 " + b"x" * 100 + b"\n"
    with path.open("wb") as f:
        for _ in range(52 * 1024 * 1024 // len(line) + 1):
            f.write(line)
        f.write(b"[rank1]: RuntimeError: received 0 items of ancdata\n")
    shown = run_cli("diagnose", str(path), tty=True)
    assert shown.code == 1 and "reading logs" in shown.err
    quiet = run_cli("diagnose", str(path), "--no-progress", tty=True)
    assert "reading logs" not in quiet.err
    piped = run_cli("diagnose", str(path))
    assert piped.err == ""


def test_the_readme_shows_what_the_demo_prints() -> None:
    """The picture of a diagnosis in the README is the demo's real report at 80 columns (when the
    library's calibration or wording changes, `python scripts/readme_demo.py` rewrites it)."""
    import os

    from trainmedic.api import diagnose
    from trainmedic.report.text import lines

    here = Path.cwd()
    os.chdir(ROOT)
    try:
        shown = "\n".join(t.plain for t in lines(diagnose("examples/ddp-worker-killed/"), 80))
    finally:
        os.chdir(here)
    block = README.split("<!-- demo:start -->", 1)[1].split("<!-- demo:end -->", 1)[0]
    assert block.strip().removeprefix("```text").removesuffix("```").strip("\n") == shown, shown


def test_the_readme_names_no_file_outside_the_repository() -> None:
    assert "../" not in README
