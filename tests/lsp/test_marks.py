"""The editor-side logic without a client: names, page URLs, marks, positions of tqdm-style lines."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.lsp import logs
from trainmedic.api import Diagnoser, Named
from trainmedic.catalog import load_library
from trainmedic.lsp.marks import (
    Document,
    Span,
    analyse,
    build_marks,
    document_name,
    is_log_document,
    locate_lines,
    page_url,
    units,
)


def test_documents_are_named_by_path_so_ranks_come_from_file_names() -> None:
    assert document_name("file:///runs/job%201/rank3.log") == "/runs/job 1/rank3.log"
    assert document_name("untitled:Untitled-1") == "Untitled-1"
    assert is_log_document("file:///runs/train.log.1", None)
    assert is_log_document("file:///runs/slurm-1234.out", "plaintext")
    assert is_log_document("untitled:Untitled-1", "log")
    assert not is_log_document("file:///src/train.py", "python")


def test_page_url_is_local_unless_configured(tmp_path: Path) -> None:
    assert page_url(None, "nccl-timeout/watchdog-timeout") is None
    assert page_url(str(tmp_path), "nccl-timeout/watchdog-timeout") == (
        f"{tmp_path.as_uri()}/nccl-timeout/index.html#watchdog-timeout")
    assert page_url("http://localhost:8000", "nccl-timeout") == "http://localhost:8000/nccl-timeout/"


def test_marks_for_the_four_rank_log() -> None:
    d = Diagnoser().diagnose(Named("/runs/all.log", logs.TEXT.encode()))
    marks = build_marks(d, "/runs/all.log", load_library())
    assert [(m.line, m.kind, m.severity) for m in marks] == [
        (logs.BUS_ERROR, "evidence", "error"), (logs.KILLED_BY_SIGNAL, "evidence", "error"),
        (logs.EXITED, "evidence", "error"),
        *[(line, "collateral", "information") for line in logs.WATCHDOGS.values()],
    ]
    assert marks[-1].related == logs.BUS_ERROR
    assert "df -h /dev/shm" in marks[0].verify
    # another document's evidence is not this document's business
    assert build_marks(d, "/runs/other.log", load_library()) == ()


def test_missing_facts_become_hints() -> None:
    text = "RuntimeError: DataLoader worker (pid 16648) is killed by signal: Killed.\n"
    d = Diagnoser().diagnose(Named("w.log", text.encode()))
    marks = build_marks(d, "w.log", load_library())
    hints = [m for m in marks if m.severity == "hint"]
    assert hints
    assert all(m.line == 1 and m.message.startswith("missing fact: ") for m in hints)


def test_tqdm_carriage_returns_shift_editor_lines() -> None:
    data = b"epoch 1\n 10%|#\r 50%|#####\r100%|##########\nboom here\r\nlast \xe2\x9c\x93 boom\n"
    spans = locate_lines(io.BytesIO(data), {1: "", 2: "50%", 3: "boom", 4: "boom"}, block=8)
    assert spans == {
        1: Span(0, "epoch 1"), 2: Span(2, " 50%|#####"), 3: Span(4, "boom here"), 4: Span(5, "last ✓ boom")}


lines = st.lists(st.text(alphabet="ab\r✓", max_size=6), min_size=1, max_size=12)


@given(lines, st.integers(1, 16), st.booleans())
def test_block_scan_matches_a_line_by_line_count(parts: list[str], block: int, final_newline: bool) -> None:
    text = "\n".join(parts) + ("\n" if final_newline else "")
    assume(text)  # an empty document has no line to mark
    data = text.encode()
    editor = 0
    expected: dict[int, int] = {}
    pieces = text.split("\n")
    if text.endswith("\n"):
        pieces.pop()  # trainmedic numbers newline-terminated lines, plus an unterminated last one
    for number, raw in enumerate(pieces, 1):
        body = raw[:-1] if raw.endswith("\r") else raw
        expected[number] = editor + len(body.split("\r")) - 1  # the last segment (no hint given)
        if not body.split("\r")[-1].strip():
            expected.pop(number)
        editor += body.count("\r") + 1
    got = locate_lines(io.BytesIO(data), dict.fromkeys(range(1, len(pieces) + 2), ""), block=block)
    assert sorted(got) == list(range(1, len(pieces) + 1))
    for number, line in expected.items():
        assert got[number].line == line


def test_units_follow_the_negotiated_encoding() -> None:
    assert units("a✓😀", "utf-16") == 4
    assert units("a✓😀", "utf-8") == 8
    assert units("a✓😀", "utf-32") == 3


def test_analyse_reads_big_files_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "rank2.log"
    path.write_text(logs.RANK2 + "\n", encoding="utf-8")
    a = analyse(Document(str(path), path=str(path)), load_library())
    assert a.source == "disk"
    assert a.diagnosis.primary is not None
    assert a.diagnosis.primary.rank == 2
    first = a.marks_at(0)
    assert first
    assert first[0].kind == "evidence"
    assert a.span(first[0]) == Span(0, logs.RANK2.splitlines()[0])


def test_the_core_and_the_marks_never_import_pygls() -> None:
    import subprocess
    import sys

    code = ("import sys, trainmedic, trainmedic.api, trainmedic.cli.main, trainmedic.lsp, trainmedic.lsp.marks\n"
            "trainmedic.cli.main.build_parser('diagnose')\n"
            "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol'))\n"
            "assert not leaked, leaked\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_hover_says_where_the_job_was_when_it_stopped() -> None:
    lines = logs.TEXT.splitlines()
    lines.insert(logs.BUS_ERROR - 1, "[rank2]:Saving model checkpoint to out/checkpoint-2")
    d = Diagnoser().diagnose(Named("/runs/all.log", ("\n".join(lines) + "\n").encode()))
    assert d.phase is not None and d.phase.name == "checkpoint-save" and d.phase.line == logs.BUS_ERROR
    marks = build_marks(d, "/runs/all.log", load_library())
    assert "*Stopped during checkpoint save at step 2" in marks[0].hover
