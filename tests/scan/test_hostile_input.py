"""Hostile input (issue 13): the scanner's cost stays linear in what it reads, whatever a line holds,
and numbers of any length never crash it. Each of these ran for minutes or raised before the fix."""

from __future__ import annotations

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
def test_the_python_scanner_is_linear_over_a_block_of_digits() -> None:
    # `world_size=` and a million digits: quadratic under Python's re, over the whole block.
    d = Diagnoser(backend="python").diagnose(Named("w.log", b"world_size=" + b"7" * 1_000_000 + b"\n"))
    assert d.verdict in ("healthy", "failure")


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
