"""The benchmark's memory figures: the proportional set size (PSS) of a process tree counts a page its
processes share once, where the RSS sum counts it in each."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import load_script


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="PSS needs Linux's smaps_rollup")
def test_a_forked_childs_shared_pages_count_once_in_pss(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 MiB touched, then a fork that keeps them shared: the RSS sum holds them twice, PSS once
    code = ("import os, time\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
            "pid = os.fork()\ntime.sleep(0.6)\nif pid: os.waitpid(pid, 0)\n")
    bench = load_script("benchmarks/bench.py", monkeypatch)  # (it imports its sibling gen_log)
    run = bench.measure([sys.executable, "-c", code], None, 30)
    assert run.rc == 0
    assert run.tree_rss_kb > 2 * 60 * 1024
    assert 60 * 1024 < run.tree_pss_kb < run.tree_rss_kb - 50 * 1024
