"""Closed or failing standard streams (issue 13): one clear line and a meaningful exit code, never a
traceback; a reader that stops early never turns a found failure into success."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.cli.env import Env
from trainmedic.cli.main import main

LOG = b"step 1 loss 0.5\nRuntimeError: CUDA error: an illegal memory access was encountered\n"


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "trainmedic", *args], capture_output=False, timeout=120,
                          check=False, **kw)  # type: ignore[call-overload,no-any-return]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "a.log"
    path.write_bytes(LOG + b"x\n" * 200_000)
    return path


def test_closed_stdin_and_stdout(log: Path) -> None:
    err = subprocess.PIPE
    assert _run(["--version"], stdin=subprocess.DEVNULL, stderr=err).returncode == 0
    closed_in = subprocess.run(f'"{sys.executable}" -m trainmedic diagnose - <&-', shell=True, check=False,
                               capture_output=True, timeout=120)
    assert closed_in.returncode == 2 and b"standard input is closed" in closed_in.stderr
    closed_out = subprocess.run(f'"{sys.executable}" -m trainmedic diagnose "{log}" >&-', shell=True, check=False,
                                capture_output=False, stderr=subprocess.PIPE, timeout=120)
    assert closed_out.returncode == 1 and b"Traceback" not in closed_out.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_output_device_is_one_line_and_exit_2(log: Path) -> None:
    with Path("/dev/full").open("w") as full:
        result = subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", str(log)], stdout=full,
                                stderr=subprocess.PIPE, check=False, timeout=120)
    assert result.returncode == 2
    assert result.stderr.decode().strip().startswith("trainmedic: error: cannot write the output")
    assert b"Traceback" not in result.stderr


class _ClosedPipe(io.StringIO):
    """A reader that took the first bytes and went away (`| head -c 10`)."""

    def write(self, s: str) -> int:
        if self.tell() >= 10:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(s)


def test_a_closed_pipe_keeps_the_failure_exit_code(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trainmedic.cli.main._quiet_stdout", lambda: None)  # no fd juggling inside pytest
    env = Env(stdin=io.BytesIO(), stdout=_ClosedPipe(), stderr=io.StringIO(), stdout_isatty=False,
              stderr_isatty=False)
    assert main(["diagnose", str(log), "--format", "json"], env=env) == 1


def test_standard_input_twice_is_a_usage_error() -> None:
    result = subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", "-", "-"], input=LOG,
                            capture_output=True, check=False, timeout=120)
    assert result.returncode == 2 and b"more than once" in result.stderr


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_one_shot_command_ends_without_teardown_and_loses_no_output(log: Path, unbuffered: str) -> None:
    """diagnose leaves the process with os._exit once its output is flushed: the whole report arrives,
    buffered or not, with its exit code."""
    import json
    import os

    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    done = subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", str(log), "--json"], capture_output=True,
                          timeout=120, check=False, env=env)
    assert done.returncode == 1 and done.stderr == b""
    assert json.loads(done.stdout)["verdict"] == "failure"


def test_the_early_exit_waits_for_nothing_it_would_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """With another thread alive, or stdout that cannot be flushed, it returns: the ordinary exit runs."""
    import threading

    from trainmedic.cli import main as cli

    exited: list[int] = []
    monkeypatch.setattr(cli.os, "_exit", exited.append)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        cli._exit_now(1)
    finally:
        stop.set()
        worker.join()
    assert exited == []
    class Broken(io.StringIO):
        def flush(self) -> None:
            raise BrokenPipeError

    monkeypatch.setattr(cli.sys, "stdout", Broken())
    cli._exit_now(1)
    assert exited == []
    monkeypatch.setattr(cli.sys, "stdout", io.StringIO())
    cli._exit_now(1)
    assert exited == [1]
