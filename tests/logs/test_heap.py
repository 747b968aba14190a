"""A big scan's blocks reuse freed memory instead of faulting fresh pages in (logs/heap.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_SCAN = """
import resource, sys
from pathlib import Path
from trainmedic.api import Diagnoser
from trainmedic.catalog import load_library
from trainmedic.logs import heap
from trainmedic.logs.sources import Source
if sys.argv[2] == "on":
    assert heap.reuse_freed_blocks()
reader = Diagnoser(load_library()).reader
path = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
reader.scan(Source(str(path), path, path.stat().st_size))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(path: Path, mode: str, cache: Path) -> int:
    env = {**os.environ, "TRAINMEDIC_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _SCAN, str(path), mode], capture_output=True, text=True, check=True,
                         env=env)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_scan_reuses_the_memory_of_its_blocks_once_asked(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    line = b"[rank3]: NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read step 1200 loss 0.4310\n"
    with path.open("wb") as f:
        for _ in range(64):
            f.write(line * ((1 << 20) // len(line)))
    # Warm a cache of its own: building the library in-process moves glibc's mmap threshold, and the shared
    # cache keeps only the newest few builds, which other tests' libraries may push out meanwhile.
    cache = tmp_path / "cache"
    _faults(path, "off", cache)
    default, reused = _faults(path, "off", cache), _faults(path, "on", cache)
    assert reused < default / 2, (default, reused)
