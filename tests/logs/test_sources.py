"""Every kind of input is read the same way, and bad input gets one clear line and exit code 2."""

from __future__ import annotations

import bz2
import gzip
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from tests.conftest import run_cli

FAIL = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "train.py", line 9, in <module>\n'
    "[rank1]: RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus error. It is possible that"
    " dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n"
)


def _text(n_noise: int = 50) -> bytes:
    noise = "".join(f"[rank0]: step {i} loss 0.5\n" for i in range(n_noise))
    return (noise + FAIL).encode()


@pytest.mark.parametrize("kind", ["plain", "gzip", "bz2", "xz", "zstd"])
def test_compressed_inputs_are_detected_by_content(tmp_path: Path, kind: str) -> None:
    data = _text()
    packed = {
        "plain": lambda d: d,
        "gzip": gzip.compress,
        "bz2": bz2.compress,
        "xz": lzma.compress,
        "zstd": lambda d: zstandard.ZstdCompressor().compress(d),
    }[kind](data)
    path = tmp_path / "train.log"  # the name says nothing about the compression on purpose
    path.write_bytes(packed)
    res = run_cli("diagnose", str(path), "--json")
    assert res.code == 1, res.err
    primary = res.json()["primary"]
    assert primary["id"] == "dataloader-worker-failure/shm-exhausted"
    assert primary["rank"] == 1
    assert primary["evidence"][0]["line"] == 53


def test_stdin(tmp_path: Path) -> None:
    res = run_cli("diagnose", "-", "--json", stdin=_text())
    assert res.code == 1
    assert res.json()["inputs"][0]["path"] == "<stdin>"


def test_ansi_colour_nul_bytes_and_invalid_utf8_are_handled(tmp_path: Path) -> None:
    raw = (b"\x1b[32m[rank0]: step 1\x1b[0m\n\xff\xfe broken utf8 \xc3\n"
           b"[rank2]: \x1b[31mRuntimeError\x1b[0m: DataLoader worker (pid 77) is killed by signal: "
           b"Segmentation fault. \x00\n")
    path = tmp_path / "x.log"
    path.write_bytes(raw)
    res = run_cli("diagnose", str(path), "--json")
    p = res.json()["primary"]
    assert p["id"] == "dataloader-worker-failure/worker-segfault"
    assert p["rank"] == 2
    assert "\x1b" not in p["evidence"][0]["text"] and "\x00" not in p["evidence"][0]["text"]


def test_tqdm_carriage_returns(tmp_path: Path) -> None:
    raw = (b" 10%|#         | 10/100 [00:01<00:09]\r 11%|#1        | 11/100 [00:01<00:09]\r"
           b"RuntimeError: received 0 items of ancdata\n")
    path = tmp_path / "x.log"
    path.write_bytes(raw)
    p = run_cli("diagnose", str(path), "--json").json()["primary"]
    assert p["id"] == "dataloader-worker-failure/fd-exhaustion"
    assert p["evidence"][0]["text"] == "RuntimeError: received 0 items of ancdata"


def test_empty_file_is_healthy(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"")
    res = run_cli("diagnose", str(path), "--json")
    assert res.code == 0
    assert res.json()["verdict"] == "healthy"


def test_binary_file_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    path.write_bytes(bytes(range(256)) * 400)
    res = run_cli("diagnose", str(path))
    assert res.code == 2
    assert res.err.count("\n") == 1 and "binary" in res.err
    assert path.read_bytes() == bytes(range(256)) * 400  # nothing the user gave is changed


def test_truncated_gzip_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "train.log.gz"
    path.write_bytes(gzip.compress(_text(20000))[:-200])
    res = run_cli("diagnose", str(path))
    assert res.code == 2
    assert res.err.count("\n") == 1 and "train.log.gz" in res.err
    assert "Traceback" not in res.err


def test_missing_file_and_directory_without_logs(tmp_path: Path) -> None:
    res = run_cli("diagnose", str(tmp_path / "nope.log"))
    assert (res.code, res.err.count("\n")) == (2, 1)
    assert "no such file" in res.err
    (tmp_path / "empty").mkdir()
    res = run_cli("diagnose", str(tmp_path / "empty"))
    assert res.code == 2 and "no log files" in res.err


def test_unreadable_file() -> None:
    # A file that even root cannot read: the kernel refuses reads of this write-only sysctl.
    path = Path("/proc/sys/vm/compact_memory")
    if not path.exists():
        pytest.skip("no write-only sysctl file on this kernel")
    res = run_cli("diagnose", str(path))
    assert res.code == 2
    assert res.err.strip().endswith("permission denied") and res.err.count("\n") == 1


def test_a_200_mb_line_costs_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "long.log"
    with path.open("wb") as f:
        f.write(b"[rank0]: step 1\n")
        chunk = b"x" * (1 << 20)
        for _ in range(200):
            f.write(chunk)
        f.write(b"\n[rank3]: RuntimeError: received 0 items of ancdata\n")
    # VmHWM, not ru_maxrss: Linux carries the forking parent's RSS into the child's ru_maxrss across
    # exec, so a big pytest worker would be measured instead of trainmedic.
    code = (
        "import re, sys, json; from trainmedic.api import diagnose; d = diagnose([sys.argv[1]]); "
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)); "
        "print(json.dumps([d.primary.id, d.primary.rank, d.primary.evidence[0].line, hwm]))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                          check=True)
    import json

    cause, rank, line, rss_kb = json.loads(proc.stdout)
    assert (cause, rank, line) == ("dataloader-worker-failure/fd-exhaustion", 3, 3)
    assert rss_kb < 200 * 1024  # far below the line's 200 MB


@pytest.mark.slow
def test_a_directory_of_2000_rank_files(tmp_path: Path) -> None:
    root = tmp_path / "job"
    for node in range(250):
        d = root / f"node-{node}"
        d.mkdir(parents=True)
        for local in range(8):
            rank = node * 8 + local
            body = f"step 1\nstep 2\n[E1129 16:29:22.217 1 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n"
            if rank == 1234:
                body = "step 1\nRuntimeError: DataLoader worker (pid 99) is killed by signal: Bus error. \n"
            (d / f"rank_{rank}.log").write_text(body)
    res = run_cli("diagnose", str(root), "--json")
    data = res.json()
    assert res.code == 1
    assert len(data["inputs"]) == 2000
    assert data["primary"]["id"] == "dataloader-worker-failure/shm-exhausted"
    assert data["primary"]["rank"] == 1234
    assert data["primary"]["host"] == "node-154"
    assert len({c["rank"] for c in data["collateral"]}) == 1999
