"""The text and markdown reports of the bundled example say what `make demo` promises: the initiating
rank, the collateral ranks, the fix and the missing facts."""

from __future__ import annotations

import io
import itertools
import os
import re
from pathlib import Path
from typing import Any, TextIO

import pytest

from tests.conftest import ROOT, run_cli

EXAMPLE = str(ROOT / "examples" / "ddp-worker-killed")


def test_text_report_names_the_initiating_and_collateral_ranks() -> None:
    res = run_cli("diagnose", EXAMPLE)
    assert res.code == 1
    assert "dataloader-worker-failure/worker-oom" in res.out
    assert "rank 2" in res.out.splitlines()[1]
    collateral = res.out[res.out.index("\nCollateral"):]
    assert "ranks 1, 3: gloo pair closed by the peer (cascade)" in collateral
    assert "ranks 0, 1, 3: surviving workers terminated by the launcher (teardown)" in collateral
    assert "To decide it" in res.out and "--dmesg dmesg.txt" in res.out


def test_the_demo_report_fits_25_lines_at_80_columns_and_says_each_command_once() -> None:
    from trainmedic.api import diagnose
    from trainmedic.report.text import lines

    d = diagnose(EXAMPLE)
    shown = [t.plain for t in lines(d, 80)]
    assert len(shown) <= 25
    text = "\n".join(shown)
    verify = d.primary.verify[0] if d.primary else ""
    assert verify and text.count(verify) == 1  # the first missing fact is that command: named, not repeated
    for m in d.primary.missing if d.primary else ():
        assert text.count(m.command) == 1
    assert "2026-11-29 17:18:17 UTC" in shown[2]  # torchrun's summary time for the failing rank
    assert "at step 3" in shown[2]
    # The kill names no sender: the report says how often real threads found the one it leads with.
    assert re.search(r"no sender named: the OOM killer in \d+ of \d+ threads that\s+found one", text)
    # Wrapped lines keep their indent; a command is never split across lines.
    for line in shown:
        if len(line) > 80:
            assert line.lstrip().startswith("$ "), line
    cat = next(m.command for m in d.primary.missing if m.command.startswith("cat ")) if d.primary else ""
    assert any(line.strip() == f"$ {cat}" for line in shown)
    for prev, line in itertools.pairwise(shown):
        if prev.startswith("  1. ") and not line.lstrip().startswith(("2.", "(+")):
            assert line.startswith("     ")  # a fix step's continuation sits under its text


def test_verbose_keeps_every_detail() -> None:
    full = run_cli("diagnose", EXAMPLE, "--verbose")
    assert "Missing facts" in full.out and "Alternatives" in full.out
    for rank in (0, 1, 3):
        assert f"  rank {rank}: " in full.out
    short = run_cli("diagnose", EXAMPLE)
    assert len(short.out.splitlines()) < len(full.out.splitlines())


def test_markdown_report_is_a_ticket() -> None:
    res = run_cli("diagnose", EXAMPLE, "--format", "markdown")
    assert res.out.startswith("## trainmedic: The run failed")
    assert "- Where: rank 2" in res.out
    assert "### Collateral" in res.out and "### Missing facts" in res.out
    assert res.out.count("```") % 2 == 0


def test_healthy_text_report(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text("step 1\nstep 2\nTraining completed.\n")
    res = run_cli("diagnose", str(log))
    assert res.code == 0 and "No failure found" in res.out


def test_a_format_is_one_registry_entry(monkeypatch: Any) -> None:
    """`--format` of every command offers what the report registry lists, and nothing else."""
    from trainmedic.report import FORMATS

    def shout(d: Any, out: TextIO, color: bool) -> None:
        out.write(f"{d.verdict.upper()}!\n")

    monkeypatch.setitem(FORMATS, "shout", shout)
    assert run_cli("diagnose", EXAMPLE, "--format", "shout").out == "FAILURE!\n"
    assert run_cli("watch", EXAMPLE, "--format", "shout").out == "FAILURE!\n"
    monkeypatch.delitem(FORMATS, "markdown")
    res = run_cli("diagnose", EXAMPLE, "--format", "markdown")
    assert res.code == 2 and "invalid choice: 'markdown'" in res.err


def test_stored_json_reads_back_into_the_same_diagnosis() -> None:
    from trainmedic.api import diagnose
    from trainmedic.report import rendered
    from trainmedic.report.jsonout import diagnosis_from_json

    d = diagnose(EXAMPLE)
    back = diagnosis_from_json(d.to_json())
    assert back.to_json() == d.to_json()
    assert rendered(back, "markdown") == rendered(d, "markdown")


def test_explain_takes_a_cause_name_alone_and_suggests_close_ids() -> None:
    from dataclasses import replace

    from tests.conftest import run_cli
    from trainmedic.catalog import Library, load_library

    res = run_cli("explain", "shm-exhausted")
    assert res.code == 0 and "dataloader-worker-failure" in res.out
    res = run_cli("explain", "shm-exhaust")
    assert res.code == 2 and "did you mean dataloader-worker-failure/shm-exhausted" in res.err
    lib = load_library()
    entry = lib.entry("dataloader-worker-failure")
    twin = replace(lib.entry("host-oom"), causes=(*lib.entry("host-oom").causes, entry.cause("shm-exhausted")))
    both = Library(tuple(twin if e.id == "host-oom" else e for e in lib))
    import pytest

    with pytest.raises(KeyError, match="several entries"):
        both.resolve("shm-exhausted")


def test_explain_leads_with_what_helps_and_keeps_fingerprints_last() -> None:
    page = run_cli("explain", "dataloader-worker-failure/shm-exhausted").out
    order = [page.index(h) for h in ("## What it is", "## What the log shows", "## Fix", "## Verify",
                                       "## For library authors: fingerprints")]
    assert order == sorted(order)
    shows = page[page.index("## What the log shows"):page.index("## Fix")]
    assert "killed by signal: Bus error" in shows or "bus error" in shows.lower()


def test_the_terminal_report_screenshot_for_the_docs() -> None:
    """docs/screenshots/terminal-report.svg: the demo's report as an 80-column colour terminal shows it."""
    from rich.console import Console

    from trainmedic.api import diagnose
    from trainmedic.report.text import lines

    con = Console(record=True, width=80, force_terminal=True, color_system="truecolor", file=io.StringIO())
    shown = lines(diagnose(EXAMPLE), 80)
    for t in shown:
        con.print(t, overflow="ignore", crop=False)
    svg = con.export_svg(title="trainmedic diagnose examples/ddp-worker-killed/")
    svg = re.sub(r"@font-face \{.*?\}", "", svg, flags=re.S)  # a local font: nothing fetched from a CDN
    # `make screenshots` writes the docs' copy; other runs keep it with the artifacts (the checkout stays
    # as it was even when the calibration moved the confidence it shows).
    folder = ROOT / "docs" / "screenshots" if os.environ.get("TRAINMEDIC_DOCS_SHOTS") else ROOT / "artifacts" / "screenshots"
    out = folder / "terminal-report.svg"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg, encoding="utf-8")
    assert len(shown) <= 25 and "worker-oom" in svg and "cdnjs" not in svg


def test_the_markdown_report_says_each_command_once() -> None:
    from trainmedic.api import diagnose
    from trainmedic.report import rendered

    d = diagnose(EXAMPLE)
    md = rendered(d, "markdown")
    assert d.primary is not None
    for cmd in {*d.primary.verify, *(m.command for m in d.primary.missing)}:
        assert md.count(cmd) == 1, cmd


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_machine_readable_report_is_written_in_one_call(fmt: str) -> None:
    """json.dump writes token by token; with PYTHONUNBUFFERED=1 (most training containers set it) every
    token was a system call. The report is one write, and it reads back as the whole document."""
    import json

    from trainmedic.api import diagnose
    from trainmedic.report import FORMATS

    writes: list[str] = []

    class Counting(io.StringIO):
        def write(self, s: str) -> int:
            writes.append(s)
            return super().write(s)

    out = Counting()
    FORMATS[fmt](diagnose(EXAMPLE), out, False)
    assert len(writes) == 1
    assert json.loads(out.getvalue())
