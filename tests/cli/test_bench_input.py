"""The benchmark refuses a --log it cannot read in one line, as the CLI does, not with a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_log_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--log", str(tmp_path / "none.log"),
                          "--out", str(tmp_path / "out")], check=False, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [f"bench: --log {tmp_path / 'none.log'}: no such file "
                                               "(generate one with --size and --keep)"]
