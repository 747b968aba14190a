"""The in-process guard and the trainer callbacks.

The fd test runs a real DataLoader with a low RLIMIT_NOFILE in a subprocess. The guard's checks are
also driven directly with stand-in loaders (any iterable works), and the Lightning / HF Trainer
callbacks with minimal stand-in objects that follow their hook signatures: lightning and
transformers are not installed here.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.live.conftest import PROGRAMS, live_group, needs_torch
from trainmedic.catalog import load_library
from trainmedic.live.stacks import parse_faulthandler
from trainmedic.torch.guard import (
    GuardCore,
    GuardedLoader,
    WorkerState,
    guard_line,
    nofile_limit,
    zombie_status,
)

LINE = re.compile(r"^\[trainmedic\] guard: [a-z-]+(?: [a-z_]+=\S+)+$")


def _core(**kw: Any) -> tuple[GuardCore, io.StringIO]:
    out = io.StringIO()
    return GuardCore(stream=out, **kw), out


# ---------------------------------------------------------------- real: fds run out


@needs_torch
@live_group
def test_guard_warns_before_fd_exhaustion(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(PROGRAMS / "guarded_fds.py"), "256"], capture_output=True,
                          text=True, timeout=120, check=False, cwd=tmp_path)
    err = proc.stderr
    assert proc.returncode != 0
    crash = err.find("Too many open files")
    warn = re.search(r"^\[trainmedic\] guard: fds-near-limit pid=\d+ process=main open=(\d+) limit=256 "
                     r"percent=(\d+) sharing_strategy=file_descriptor$", err, re.M)
    assert warn, err[-3000:]
    assert crash > warn.start(), "the warning must come before the crash"
    assert int(warn.group(2)) >= 90
    # The warning is a precursor: the diagnosis of the whole output is still the crash's cause.
    log = tmp_path / "out.log"
    log.write_text(proc.stdout + err)
    d = run_cli("diagnose", "--json", str(log)).json()
    assert d["primary"]["id"] == "dataloader-worker-failure/fd-exhaustion"


# ---------------------------------------------------------------- the checks, driven directly


def test_lines_are_structured() -> None:
    line = guard_line("fds-near-limit", pid=12, process="main", open=231, limit=256, percent="90")
    assert line == "[trainmedic] guard: fds-near-limit pid=12 process=main open=231 limit=256 percent=90"
    assert LINE.match(line)


def test_fd_warning_once_then_rearmed() -> None:
    core, out = _core(fd_warn=1e-9)
    assert nofile_limit(os.getpid())
    core.check_main_fds()
    core.check_main_fds()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and LINE.match(lines[0]) and "process=main" in lines[0]
    core.fd_warn = 2.0  # far below the threshold: re-armed
    core._fd_checked = 0.0
    core.check_main_fds()
    core.fd_warn = 1e-9
    core._fd_checked = 0.0
    core.check_main_fds()
    assert len(out.getvalue().splitlines()) == 2


def test_shm_warning(tmp_path: Path) -> None:
    core, out = _core(shm_warn=0.0, shm_path=str(tmp_path))
    core.check_shm()
    core.check_shm()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert re.match(r"\[trainmedic\] guard: shm-near-full path=\S+ used_bytes=\d+ size_bytes=\d+ percent=\d+", lines[0])


def test_worker_deaths() -> None:
    core, out = _core()
    core.check_workers([WorkerState(0, 999_999_1, -9), WorkerState(1, 999_999_2, 0)])
    core.check_workers([WorkerState(0, 999_999_1, -9)])  # once per worker
    core.check_workers([WorkerState(2, 999_999_3, -11)], shutting_down=True)  # the loader is shutting down
    core.check_workers([WorkerState(3, 999_999_4, 1)])
    assert out.getvalue().splitlines() == [
        "[trainmedic] guard: worker-died pid=9999991 worker_id=0 signal=SIGKILL exitcode=-9 epoch=0",
        "[trainmedic] guard: worker-died pid=9999994 worker_id=3 signal=none exitcode=1 epoch=0",
    ]


def test_zombie_status_reads_a_dead_workers_signal_without_reaping() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    deadline = time.monotonic() + 30
    status = None
    while status is None and time.monotonic() < deadline:
        time.sleep(0.02)
        status = zombie_status(proc.pid)
    assert status is not None and status & 0x7F == 9
    assert proc.wait(timeout=10) == -9  # still ours to reap


class _FakeLoader:
    """A DataLoader stand-in: two workers, not persistent; each epoch's first item takes `first` seconds."""

    num_workers = 2
    persistent_workers = False
    batch_size = 4

    def __init__(self, first: float) -> None:
        self.first = first

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Iterator[int]:
        time.sleep(self.first)
        yield from range(3)


def test_slow_first_batch_line_from_epoch_one_and_diagnose_reads_it(tmp_path: Path) -> None:
    out = io.StringIO()
    loader = GuardedLoader(_FakeLoader(0.05), stream=out, slow_first_batch=0.02, interval=0.05)
    assert len(loader) == 3 and loader.batch_size == 4
    for _epoch in range(2):
        assert list(loader) == [0, 1, 2]
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines  # epoch 0 always waits for the workers' start-up: no line
    assert re.match(r"\[trainmedic\] guard: slow-first-batch seconds=\d+\.\d persistent_workers=False "
                    r"num_workers=2 epoch=1$", lines[0])
    assert loader.stats.batches == 6 and len(loader.stats.first_batch) == 2
    lib = load_library()
    cause = lib.cause("dataloader-worker-failure/slow-worker-respawn")
    assert any(re.search(fp.regex, lines[0]) for fp in cause.fingerprints)
    log = tmp_path / "train.log"
    log.write_text(lines[0] + "\n")
    # time lost, not a failure: the run is healthy, and the note names the cause and its fix's entry
    report = run_cli("diagnose", "--json", str(log)).json()
    assert report["verdict"] == "healthy" and report["primary"] is None
    assert any(cause.full_id in note for note in report["notes"])


def test_stack_dump_on_sigusr1_to_the_stack_dir(tmp_path: Path) -> None:
    """In a subprocess (never register SIGUSR1 in the test runner): the dump lands in <dir>/<pid>.txt."""
    code = ("import os, signal, time\n"
            "from trainmedic.torch.guard import install_stack_dump\n"
            f"assert install_stack_dump({str(tmp_path)!r})\n"
            "def waiting_here():\n"
            "    os.kill(os.getpid(), signal.SIGUSR1)\n"
            "    time.sleep(0.2)\n"
            "waiting_here()\n"
            "print(os.getpid())\n")
    pid = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         check=True).stdout.strip()
    threads = parse_faulthandler((tmp_path / f"{pid}.txt").read_text())
    main = next(t for t in threads if t.main)
    assert main.frames[0].function == "waiting_here"


# ---------------------------------------------------------------- callbacks, with stand-ins


def test_callbacks_import_neither_torch_nor_the_frameworks_until_a_guard_is_asked_for() -> None:
    code = ("import sys, importlib.util\n"
            "import trainmedic.torch.callbacks as c\n"
            "print(any(m in sys.modules for m in ('torch', 'lightning', 'transformers')))\n"
            "print(c.LightningGuard.__mro__[-2].__module__.split('.')[0],\n"
            "      importlib.util.find_spec('lightning') is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    imported, line = out.stdout.splitlines()
    assert imported == "False"
    base, installed = line.split()
    # built on the framework's own Callback when it is installed, on object otherwise
    assert base == ("lightning" if installed == "True" else "builtins")


def test_lightning_guard_with_stand_ins() -> None:
    from trainmedic.torch.callbacks import LightningGuard

    out = io.StringIO()
    cb = LightningGuard(stream=out, slow_first_batch=0.02, interval=0.05)
    loader = SimpleNamespace(num_workers=2, persistent_workers=False)
    trainer = SimpleNamespace(current_epoch=0, train_dataloader=loader)
    module = object()
    cb.setup(trainer, module, "fit")
    try:
        for epoch in range(2):
            trainer.current_epoch = epoch
            cb.on_train_epoch_start(trainer, module)
            time.sleep(0.05)  # the first batch of the epoch: workers start
            for i in range(3):
                cb.on_train_batch_start(trainer, module, batch=i, batch_idx=i)
                cb.on_train_batch_end(trainer, module, outputs=None, batch=i, batch_idx=i)
            cb.on_train_epoch_end(trainer, module)
    finally:
        cb.teardown(trainer, module, "fit")
    assert cb.stats.batches == 6
    assert cb.stats.first_batch[0] >= 0.04
    lines = out.getvalue().splitlines()
    assert [ln.split()[2] for ln in lines] == ["slow-first-batch"]
    assert "epoch=1" in lines[0]


def test_hf_trainer_guard_with_stand_ins() -> None:
    from trainmedic.torch.callbacks import HFTrainerGuard

    out = io.StringIO()
    cb = HFTrainerGuard(stream=out, slow_first_batch=0.02, fd_warn=1e-9, interval=0.05)
    args = SimpleNamespace(dataloader_num_workers=4, dataloader_persistent_workers=False)
    state = SimpleNamespace(epoch=0.0)
    control = SimpleNamespace()
    cb.on_train_begin(args, state, control)
    try:
        for epoch in range(2):
            state.epoch = float(epoch)
            cb.on_epoch_begin(args, state, control, train_dataloader=None)
            time.sleep(0.05)
            for _ in range(2):
                cb.on_step_begin(args, state, control)
                cb.on_step_end(args, state, control)
            cb.on_epoch_end(args, state, control)
    finally:
        cb.on_train_end(args, state, control)
    kinds = [ln.split()[2] for ln in out.getvalue().splitlines()]
    assert "slow-first-batch" in kinds
    assert "fds-near-limit" in kinds  # the monitor thread ran the descriptor check
    assert cb.stats.batches == 4


@pytest.mark.parametrize("name", ["LightningGuard", "HFTrainerGuard"])
def test_unknown_attribute(name: str) -> None:
    import trainmedic.torch.callbacks as c

    assert getattr(c, name).__name__ == name
    with pytest.raises(AttributeError):
        _ = c.NoSuchGuard
