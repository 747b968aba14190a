"""Hostile input (issue 13): the scanner's cost stays linear in what it reads, whatever a line holds,
and numbers of any length never crash it. Each of these ran for minutes or raised before the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from trainmedic.api import Diagnoser, Named
from trainmedic.catalog import LibraryError
from trainmedic.schema import FingerprintSpec


@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["hyperscan", "python"])
def test_a_line_built_to_make_a_regex_backtrack_is_read_in_linear_time(backend: str) -> None:
    # `[^ \n]+: read-only file system` backtracked for 35 s on this one line under Python's re.
    line = b"OSError: [Errno 30] " + b"a" * 160_000 + b" /ckpt/x: read-only file system\n"
    d = Diagnoser(backend=backend).diagnose(Named("ro.log", line))
    assert d.primary is not None and d.primary.id == "checkpoint-permission-error/read-only-filesystem"


@pytest.mark.timeout(60)
def test_a_long_word_beside_a_launcher_summary_is_read_in_linear_time() -> None:
    # The summary's key/value reader (`host      : node1`) retried its key at every letter of a long word:
    # 6 s for 20 KB under Python's re, minutes for 200 KB. A key now starts a word.
    word = "a" * 200_000
    log = ("Root Cause (first observed failure):\n[0]:\n  time      : 2024-01-01_00:00:00\n  host      : node1\n"
           f"  rank      : 3 (local_rank: 3)\n  exitcode  : 1 (pid: 1234)\n  error_file: {word}\n  {word}\n")
    d = Diagnoser().diagnose(Named("summary.log", log.encode()))
    assert d.primary is not None and d.primary.rank == 3
    [record] = Diagnoser().scan(Named("summary.log", log.encode()))[0].summaries
    assert (record.host, record.exitcode, record.pid) == ("node1", 1, 1234)


@pytest.mark.timeout(60)
def test_the_python_scanner_is_linear_over_a_block_of_digits() -> None:
    # `world_size=` and a million digits: quadratic under Python's re, over the whole block.
    d = Diagnoser(backend="python").diagnose(Named("w.log", b"world_size=" + b"7" * 1_000_000 + b"\n"))
    assert d.verdict in ("healthy", "failure")


@pytest.mark.timeout(60)
def test_a_line_of_digits_below_a_traceback_is_read_in_linear_time() -> None:
    # The traceback reader asks whether a line after the exception is a progress bar's redraw; under Python's
    # re that question backtracked through the digits once per start: 339 s for this line.
    log = (b"Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n    main()\n"
           b"RuntimeError: boom\n" + b"7" * 200_000 + b"\n")
    d = Diagnoser().diagnose(Named("digits.log", log))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"


@pytest.mark.parametrize("line", [
    b"world_size=" + b"9" * 5000,
    b"step " + b"9" * 5000 + b" loss 0.1",
    b"Epoch 1: " + b"1" * 5000 + b"/" + b"2" * 5000 + b" [00:01<00:02, 1.00it/s]",
    b"    rank      : " + b"3" * 5000 + b" (local_rank: 3)\n    exitcode  : " + b"1" * 5000 + b" (pid: 42)",
    b"[E ProcessGroupNCCL.cpp:1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + b"5" * 5000
    + b", OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
])
def test_a_number_longer_than_python_converts_is_no_crash(line: bytes) -> None:
    result = run_cli("diagnose", "-", "--format", "json", stdin=line + b"\n")
    assert result.code in (0, 1), result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize("regex", [
    r"(?>atomic group)+ failed",  # Python 3.11 compiles these; RE2 does not
    r"possessive a++ failed",
    r"[0-9]{1001} too many repeats",
])
def test_the_library_refuses_a_pattern_that_would_need_backtracking(regex: str) -> None:
    with pytest.raises((ValueError, LibraryError), match="RE2 cannot compile"):
        FingerprintSpec(id="x", regex=regex, weight=0.5)


LOG = b"step 1 loss 0.5\nRuntimeError: CUDA error: an illegal memory access was encountered\n" * 200


def _compressed(kind: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import lzma

    import zstandard

    return {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
            "zst": zstandard.ZstdCompressor().compress}[kind](data)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst"])
def test_a_truncated_or_damaged_compressed_log_is_one_line_and_exit_2(kind: str, tmp_path: Path) -> None:
    whole = _compressed(kind, LOG)
    cut = tmp_path / f"cut.log.{kind}"
    cut.write_bytes(whole[: len(whole) // 2])
    damaged = tmp_path / f"bad.log.{kind}"
    damaged.write_bytes(whole[:12] + bytes(b ^ 0x5A for b in whole[12:40]) + whole[40:])
    for path in (cut, damaged):
        before = path.read_bytes()
        result = run_cli("diagnose", str(path))
        assert result.code == 2, (path.name, result.out, result.err)
        assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
        assert path.read_bytes() == before  # nothing the user gave is changed


def test_zstd_frames_one_after_another_and_long_windows_are_read(tmp_path: Path) -> None:
    import zstandard

    two = tmp_path / "two.log.zst"
    two.write_bytes(zstandard.ZstdCompressor().compress(LOG) + zstandard.ZstdCompressor().compress(LOG))
    long = tmp_path / "long.log.zst"  # what `zstd --long=30` writes: a window over the default limit
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=30)
    streaming = zstandard.ZstdCompressor(compression_params=params).compressobj()  # no size: the window stays
    long.write_bytes(streaming.compress(LOG) + streaming.flush())
    assert zstandard.get_frame_parameters(long.read_bytes()).window_size == 1 << 30
    for path in (two, long):
        result = run_cli("diagnose", str(path), "--format", "json")
        assert result.code == 1, result.err
        assert result.json()["primary"]["id"] == "cuda-illegal-memory-access/illegal-address"


@pytest.mark.timeout(120)
def test_a_flood_of_traceback_markers_is_read_once_each() -> None:
    # 200,000 headers with nothing after them: each assembly read up to 6,000 lines (5 minutes).
    flood = b"Traceback (most recent call last):\n" * 200_000
    d = Diagnoser().diagnose(Named("flood.log", flood))
    assert d.verdict in ("healthy", "failure")


TEXT = "step 1 loss 0.5\nRuntimeError: CUDA error: an illegal memory access was encountered\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_utf16_and_utf32_logs_are_read_as_text(encoding: str) -> None:
    # PowerShell's `>` writes UTF-16 LE with a BOM; other tools write it without one.
    d = Diagnoser().diagnose(Named("ps.log", (TEXT * 50).encode(encoding)))
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/illegal-address"


def test_a_log_padded_with_nuls_by_a_crash_is_still_a_log() -> None:
    padded = (("step 1\n" * 1200) + TEXT).encode() + b"\x00" * 1024  # 9 KB of log, 1 KB of padding
    d = Diagnoser().diagnose(Named("crash.log", padded))
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/illegal-address"


def test_binary_data_is_still_refused() -> None:
    result = run_cli("diagnose", "-", stdin=bytes(range(256)) * 100)
    assert result.code == 2 and "binary" in result.err


def test_a_kernel_log_is_read_in_bounded_memory_and_binaries_are_refused(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(LOG)
    for bad in ("/dev/zero", "/bin/sh"):
        result = run_cli("diagnose", str(log), "--dmesg", bad)
        assert result.code == 2 and "binary" in result.err, result.err
    long = tmp_path / "kern.log"  # one 3 MB line, then a real record
    long.write_bytes(b"a" * 3_000_000 + b"\n[ 1.0] Out of memory: Killed process 4242 (python) total-vm:1kB\n")
    from trainmedic.probes.facts import kernel_records_from_file

    records = kernel_records_from_file(long)
    assert [r.pid for r in records] == [4242]


def test_a_line_longer_than_the_reader_keeps_is_noted(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"step 1\n" + TEXT.encode().rstrip(b"\n") + b" " + b"x" * (9 << 20) + b"\nstep 2\n")
    d = Diagnoser(parallel=False).diagnose(log)
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/illegal-address"
    assert any("too long to keep whole" in n for n in d.notes)


def test_nits_that_crashed(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(TEXT.encode())
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = run_cli("diagnose", str(log), "--facts", str(deep))
    assert result.code == 2 and "deep.json" in result.err and "Traceback" not in result.err
    result = run_cli("watch", "--interval", "nan", str(log))
    assert result.code == 2 and "--interval" in result.err


def test_one_unreadable_file_of_a_directory_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_bytes(TEXT.encode())
    (logs / "rank1.log.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)  # a gzip header, then nothing
    result = run_cli("diagnose", str(logs), "--format", "json")
    assert result.code == 1, result.err
    d = result.json()
    assert d["primary"]["id"] == "cuda-illegal-memory-access/illegal-address"
    assert any("skipped, could not be read" in n and "rank1.log.gz" in n for n in d["notes"])
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "rank1.log.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)
    result = run_cli("diagnose", str(only_bad))
    assert result.code == 2 and "rank1.log.gz" in result.err
