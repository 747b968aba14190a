"""A large plain log scanned in ranges on several cores gives exactly what one sequential scan gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from trainmedic.api import Diagnoser
from trainmedic.catalog import load_library
from trainmedic.logs.parallel import scan_file
from trainmedic.logs.reader import Reader
from trainmedic.logs.sources import Source
from trainmedic.model import ScanResult


def _big_log(path: Path, seed: int, lines: int = 220_000) -> None:
    rng = random.Random(seed)
    tb = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', "    for b in loader:",
          "RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed. "]
    with path.open("w") as f:
        for i in range(lines):
            r = rng.randrange(4)
            f.write(f"[rank{r}]: step {i} loss 0.{i % 97} lr 3e-4 {'x' * rng.randrange(60)}\n")
            if i % 20_011 == 0:  # tracebacks land on range boundaries sooner or later
                for line in tb:
                    f.write(f"[rank{r}]: {line}\n")
            if i % 50_000 == 7:
                f.write(f"[rank{r}]:[E1129 16:39:22.217000 4 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
                        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                        "Timeout(ms)=600000) ran for 600080 milliseconds before timing out.\n")
        # the tail: a phase marker and an error no fingerprint knows (the reader keeps both)
        f.write("[rank1]: Saving model checkpoint to out/checkpoint-9\n[rank1]: frobnication failed: boom\n")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_parallel_ranges_equal_one_sequential_scan(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "train.log"
    _big_log(path, seed)
    lib = load_library()
    base = Diagnoser(lib).reader
    seq = Reader(base.given, base.backend)
    monkeypatch.setenv("TRAINMEDIC_JOBS", "3")
    src = Source(str(path), path, path.stat().st_size)
    a, b = seq.scan(src), scan_file(base, src, min_bytes=1)
    assert (a.lines, a.bytes, a.ranks, a.world_sizes, a.done) == (b.lines, b.bytes, b.ranks, b.world_sizes, b.done)
    assert a.matches == b.matches
    assert a.tracebacks == b.tracebacks
    assert a.progress == b.progress
    assert a.notable == b.notable and a.markers == b.markers and len(a.notable) >= 1 and len(a.markers) == 1
    assert Diagnoser(lib).reason([a]).to_json() == Diagnoser(lib).reason([b]).to_json()


class _Cancel(Exception):
    pass


@pytest.mark.slow
def test_cancelling_a_parallel_scan_leaves_no_worker_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    path = tmp_path / "train.log"
    _big_log(path, 3, lines=900_000)
    base = Diagnoser(load_library()).reader
    monkeypatch.setenv("TRAINMEDIC_JOBS", "3")

    calls = []

    def cancel(_n: int) -> None:
        calls.append(_n)
        if len(calls) == 1:
            import time

            time.sleep(3)  # let the workers start on their ranges
            return
        raise _Cancel

    def children() -> set[int]:
        out = set()
        for p in psutil.Process().children(recursive=True):
            try:
                if "resource_tracker" not in " ".join(p.cmdline()):
                    out.add(p.pid)
            except psutil.Error:
                continue
        return out

    # The workers use the slow pure-Python matcher: left alone they would scan for a long time, so
    # only terminating them makes them go within the wait below.
    monkeypatch.setenv("TRAINMEDIC_SCANNER", "python")
    before = children()  # other tests' servers may share this worker process
    with pytest.raises(_Cancel):
        scan_file(base, Source(str(path), path, path.stat().st_size), on_bytes=cancel, min_bytes=1)
    for pid in children() - before:  # terminated, not awaited: give them a moment to go
        try:
            psutil.Process(pid).wait(timeout=2)
        except psutil.NoSuchProcess:
            continue


@pytest.mark.slow
def test_with_threads_running_the_workers_are_spawned_and_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    path = tmp_path / "train.log"
    _big_log(path, 5)
    lib = load_library()
    base = Diagnoser(lib).reader
    seq = Reader(base.given, base.backend)
    monkeypatch.setenv("TRAINMEDIC_JOBS", "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # e.g. a progress bar: fork would be unsafe
    other.start()
    try:
        src = Source(str(path), path, path.stat().st_size)
        a, b = seq.scan(src), scan_file(base, src, min_bytes=1)
    finally:
        stop.set()
    assert (a.lines, a.matches, a.tracebacks, a.progress) == (b.lines, b.matches, b.tracebacks, b.progress)
    # the spawned workers build their reader from what this one was given, tail-only words included
    assert a.notable == b.notable and a.markers == b.markers and a.notable


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="Linux: the kernel ends orphaned workers")
def test_a_sigterm_to_a_parallel_scan_leaves_no_worker_behind(tmp_path: Path) -> None:
    """`diagnose huge.log & kill -TERM $!`: Python runs no cleanup on SIGTERM, so the workers must go
    with their parent by themselves (they blocked for good writing their result)."""
    import os
    import secrets
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "train.log"
    _big_log(path, 5, lines=1_100_000)  # over PARALLEL_MIN_BYTES: scanned in ranges by worker processes
    token = secrets.token_hex(8)
    env = {**os.environ, "TRAINMEDIC_JOBS": "3", "TRAINMEDIC_SCANNER": "python", "TM_TEST_TOKEN": token}
    def marked() -> list[int]:
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if f"TM_TEST_TOKEN={token}".encode() in (entry / "environ").read_bytes():
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids

    proc = subprocess.Popen([sys.executable, "-m", "trainmedic", "diagnose", str(path), "--no-progress"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while len(marked()) < 2 and time.monotonic() < deadline:  # the workers are scanning their ranges
        time.sleep(0.1)
    assert len(marked()) >= 2, "the scan did not start worker processes"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)

    deadline = time.monotonic() + 10
    while marked() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = marked()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def _scan_both(path: Path, jobs: str, monkeypatch: pytest.MonkeyPatch) -> tuple[ScanResult, ScanResult]:
    base = Diagnoser(load_library()).reader
    seq = Reader(base.given, base.backend)
    monkeypatch.setenv("TRAINMEDIC_JOBS", jobs)
    src = Source(str(path), path, path.stat().st_size)
    return seq.scan(src), scan_file(base, src, min_bytes=1)


def _same_tail(a: ScanResult, b: ScanResult) -> None:
    assert (a.lines, a.ranks, a.done, a.done_line) == (b.lines, b.ranks, b.done, b.done_line)
    assert a.progress == b.progress and a.last_line_rank == b.last_line_rank
    assert a.notable == b.notable and a.markers == b.markers


def test_the_tail_read_early_counts_the_ranks_only_a_middle_range_showed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The main process reads the tail while the last range is scanned, counting the ranks its own
    range found; ranks that only a middle range showed bound how many progress lines the tail reads,
    so the tail is read again with them (a sequential scan counts every rank it found)."""
    path = tmp_path / "train.log"
    with path.open("w") as f:
        for i in range(40_000):  # the first range: rank 0 only
            f.write(f"[rank0]: step {i} loss {1 + (i % 7) / 10:.2f} lr 3e-4\n")
        for r in range(2, 8):  # the middle: ranks seen nowhere else, in lines a fingerprint matches
            f.write(f"[rank{r}]: RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed.\n")
        for i in range(40_000):
            f.write(f"[rank0]: epoch 1 iteration {i} padding {'x' * 20}\n")
        for i in range(40_000, 46_000):  # the tail: rank 1's progress lines past what rank 0 alone reads
            r = i % 2
            f.write(f"[rank{r}]: step {i} loss {(1.0 if i < 45_000 else 9.0) + (i % 5) / 10:.2f} lr 3e-4\n")
    a, b = _scan_both(path, "3", monkeypatch)
    assert {2, 3, 4, 5, 6, 7} <= a.ranks
    _same_tail(a, b)


def test_a_tail_read_early_that_is_not_the_scanned_tail_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tail read early from the file is used only when it is the tail the last range's scan kept
    (a file written to meanwhile, a line cut for its length make them differ)."""
    from trainmedic.logs import parallel

    path = tmp_path / "train.log"
    with path.open("w") as f:
        for i in range(60_000):
            f.write(f"[rank{i % 2}]: step {i} loss 0.{i % 97} lr 3e-4\n")
        f.write("[rank1]: RuntimeError: frobnication failed\n")
    real = parallel._file_tail
    monkeypatch.setattr(parallel, "_file_tail", lambda p, size: real(p, size)[:-20_000])
    a, b = _scan_both(path, "2", monkeypatch)
    _same_tail(a, b)
    assert a.notable and "frobnication" in a.notable[-1].line.text


def test_a_scan_loads_no_reasoner_code_before_its_workers_fork() -> None:
    """The workers of a big scan are forked copies: what the parent holds then is counted again in each
    of them (the benchmark's summed RSS). The reasoner is imported when the scan is done."""
    import subprocess
    import sys

    probe = ("import sys, trainmedic.api, trainmedic.cli.main; "
             "print('trainmedic.reason.engine' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.split() == ["False"]
