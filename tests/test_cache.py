"""The library cache: what a write leaves behind, and what a diagnosis loads to key it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic import cache


def test_a_write_keeps_only_the_newest_entries_of_its_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINMEDIC_CACHE_DIR", str(tmp_path))
    for i in range(cache.KEEP + 3):
        old = tmp_path / f"hyperscan-old{i:02d}"
        old.write_bytes(b"x")
        os.utime(old, ns=(i * 10**9, i * 10**9))
    (tmp_path / "library-other").write_bytes(b"y")
    cache.write("hyperscan", "new", b"db")
    left = sorted(p.name for p in tmp_path.iterdir())
    kept_old = [f"hyperscan-old{i:02d}" for i in range(4, cache.KEEP + 3)]
    assert left == sorted(["hyperscan-new", "library-other", *kept_old])
    assert cache.read("hyperscan", "new") == b"db"


def test_digest_tells_parts_apart_by_their_lengths() -> None:
    assert cache.digest([b"ab", b"c"]) != cache.digest([b"a", b"bc"])
    assert cache.digest([b"ab", b"c"]) == cache.digest([b"ab", b"c"])
    assert len(cache.digest([b""])) == 32


def test_a_diagnosis_does_not_load_openssl(tmp_path: Path) -> None:
    """hashlib imports _hashlib, whose libcrypto is 3 MB resident: counted in a big scan's peak memory.
    The first run builds the cache (its YAML and hyperscan work may load more); the second is the usual one."""
    log = tmp_path / "run.log"
    log.write_text("step 1 loss 2.0\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    code = (
        "import sys\n"
        "from trainmedic.cli.main import main\n"  # (not entry(): diagnose ends the process with os._exit)
        f"main(['diagnose', '--json', {str(log)!r}])\n"
        "sys.stderr.write('LOADED ' + str('_hashlib' in sys.modules))\n"
    )
    env = {**os.environ, "TRAINMEDIC_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                              check=False)
    assert "LOADED False" in done.stderr, done.stderr[-2000:]
    assert '"verdict": "failure"' in done.stdout
