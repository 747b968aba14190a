"""Helpers for the live tests: run `trainmedic run`/`watch` as real subprocesses, watch their streams
line by line with arrival times, and make sure nothing they started survives the test."""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from trainmedic.torch.lab.runner import MARKER, kill_leftovers
from trainmedic.util.procs import signal_group, start_group

PROGRAMS = Path(__file__).parent / "programs"
LAB_PROGRAMS = Path(__file__).resolve().parents[2] / "src" / "trainmedic" / "torch" / "lab" / "programs"
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
# Live tests start real process trees; on a 2-core machine they run best one at a time.
live_group = pytest.mark.xdist_group("live")


@dataclass
class Stream:
    """Lines of one pipe with the wall-clock time each arrived."""

    lines: list[tuple[float, str]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)
    closed: bool = False

    def text(self) -> str:
        with self.cond:
            return "".join(line for _, line in self.lines)

    def wait_for(self, needle: str, timeout: float) -> float | None:
        """Arrival time of the first line containing `needle`, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, line in self.lines:
                    if needle in line:
                        return t
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    return None
                self.cond.wait(left)


class Live:
    """A trainmedic command running in a subprocess, with its stdout and stderr followed by threads."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.token = env[MARKER]
        self.proc = start_group([sys.executable, "-m", "trainmedic", *argv], env=env, cwd=cwd)
        self.out, self.err = Stream(), Stream()
        self._threads = [threading.Thread(target=self._pump, args=(f, s), daemon=True)
                         for f, s in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(f: object, stream: Stream) -> None:
        assert hasattr(f, "readline")
        for raw in iter(f.readline, b""):
            with stream.cond:
                stream.lines.append((time.time(), raw.decode(errors="replace")))
                stream.cond.notify_all()
        with stream.cond:
            stream.closed = True
            stream.cond.notify_all()

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"trainmedic did not finish within {timeout} s\nstderr:\n{self.err.text()[-4000:]}")
        for t in self._threads:
            t.join(timeout=10)
        return code

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc.poll() is None:
            signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def _library_cache_warm(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build the library's compiled matcher into the test cache once, before any live command starts: a cold
    build takes ~4 s, about as long as the lab jobs run before they fail, so a live diagnosis that must come
    before the job exits would race the build instead of the scan."""
    log = tmp_path_factory.mktemp("warm") / "warm.log"
    log.write_text("step 1 loss 0.5\n")
    subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", str(log)], capture_output=True, timeout=300,
                   check=False)


@pytest.fixture
def live(tmp_path: Path, _library_cache_warm: None) -> Iterator[type[Live]]:
    """Start `trainmedic ...` subprocesses; every process they start carries a marker and is killed afterwards."""
    token = secrets.token_hex(8)
    started: list[Live] = []
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                                      "MASTER_", "TORCHELASTIC_"))}
    base.update({MARKER: token, "TMPDIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"})

    class Bound(Live):
        def __init__(self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
            super().__init__(argv, {**base, **(env or {})}, cwd)
            started.append(self)

    yield Bound
    for run in started:
        run.stop()
    leftovers = kill_leftovers(token, grace=6.0)
    assert leftovers == 0, f"{leftovers} process(es) of the test outlived it"
