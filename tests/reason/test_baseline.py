"""A good run of the same job as the reference: what the failing run printed that it never did.

The two logs are lab captures of one torchrun job (src/trainmedic/torch/lab/programs/ddp.py): 8 healthy
steps, and the same job where rank 1 gives up with an exception of its own that no library entry knows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.cli.main import main
from trainmedic.reason.templates import Baseline, head_and_tail, mine

LAB = Path(__file__).parents[1] / "fixtures" / "lab"
GOOD = LAB / "ddp-healthy" / "output.log"
BAD = LAB / "ddp-unknown-exception" / "output.log"
FAILING = "LeaseExpired: shard 3 has had no owner for 3 heartbeats"


def _baseline(path: Path) -> Baseline:
    with path.open("rb") as f:
        return mine([(path.name, head_and_tail(f, path.stat().st_size))])


def test_the_failing_line_no_good_run_printed_comes_first() -> None:
    plain = Diagnoser().diagnose(Named(BAD.name, BAD.read_bytes()))
    assert plain.novel == ()
    d = Diagnoser(baseline=_baseline(GOOD)).diagnose(Named(BAD.name, BAD.read_bytes()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 1
    assert d.primary.evidence[0].text.endswith(FAILING)
    assert d.novel[0].line.text.endswith(FAILING)
    # the lead-up the good run never printed either, right after it
    assert any("lost its lease" in e.text for e in d.primary.evidence[:3])
    # torchrun's teardown and the other ranks' timeouts are new too, but come later
    assert all("Root Cause" not in e.text for e in d.primary.evidence[:3])


def test_a_good_run_against_its_own_baseline_is_healthy_with_nothing_new() -> None:
    d = Diagnoser(baseline=_baseline(GOOD)).diagnose(Named(GOOD.name, GOOD.read_bytes()))
    assert d.verdict == "healthy" and d.novel == ()


def test_a_run_that_stops_on_lines_the_good_run_never_printed_fails_even_without_error_words() -> None:
    good = GOOD.read_text().splitlines()
    stop = next(i for i, line in enumerate(good) if "step 4 loss" in line)
    bad = [*good[:stop], "rank 1 expected allreduce #12 but rank 3 issued broadcast #12", "leaving the loop"]
    d = Diagnoser(baseline=_baseline(GOOD)).diagnose(Named("bad.log", ("\n".join(bad) + "\n").encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/error-lines" and d.primary.confidence == 0.4
    assert d.primary.evidence[0].text.startswith("rank 1 expected allreduce")


def test_baseline_save_writes_a_file_that_diagnose_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "job.baseline"
    assert main(["baseline", "save", str(GOOD), "-o", str(saved)]) == 0
    assert "templates" in capsys.readouterr().out
    loaded = Baseline.load(saved)
    assert loaded.templates == _baseline(GOOD).templates and loaded.sources == (str(GOOD),)
    assert main(["diagnose", str(BAD), "--baseline", str(saved), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["novel"][0]["text"].endswith(FAILING) and data["primary"]["evidence"][0]["text"].endswith(FAILING)


def test_a_file_that_is_no_baseline_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bogus = tmp_path / "job.baseline"
    bogus.write_text('{"schema": "trainmedic.baseline/v1", "templates": "nope"}')
    assert main(["diagnose", str(BAD), "--baseline", str(bogus)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a trainmedic baseline" in err[0]


def test_the_reports_list_what_is_new_since_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    for fmt, heading in (("text", "New since the baseline"), ("markdown", "### New since the baseline")):
        assert main(["diagnose", str(BAD), "--baseline", str(GOOD), "--format", fmt]) == 1
        out = capsys.readouterr().out
        section = out[out.index(heading):]
        assert FAILING in next(line for line in section.splitlines()[1:] if line.strip())
    assert main(["diagnose", str(BAD), "--format", "text"]) == 1
    assert "New since the baseline" not in capsys.readouterr().out


def test_a_binary_file_is_no_baseline_and_a_huge_baseline_file_is_bounded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "model.pt"
    binary.write_bytes(bytes(range(256)) * 400)
    assert main(["baseline", "save", str(binary), "-o", str(tmp_path / "x.baseline")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "binary" in err[0] and not (tmp_path / "x.baseline").exists()
    from trainmedic.reason.templates import MAX_TEMPLATES

    many = {"schema": "trainmedic.baseline/v1", "lines": -5,
            "templates": [{"template": f"frob {i} " + "x" * 5000, "count": i} for i in range(MAX_TEMPLATES + 10)]}
    b = Baseline.from_json(many, "many.baseline")
    assert len(b.templates) == MAX_TEMPLATES and b.lines == 0
    assert all(len(t) <= 1000 for t in b.templates) and min(b.templates.values()) >= 10  # the most frequent kept


def test_a_windows_log_compares_its_own_lines_with_the_baseline() -> None:
    crlf = BAD.read_bytes().replace(b"\n", b"\r\n")
    d = Diagnoser(baseline=_baseline(GOOD)).diagnose(Named(BAD.name, crlf))
    assert d.novel and d.novel[0].line.text.endswith(FAILING)
