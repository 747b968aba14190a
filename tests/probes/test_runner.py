"""Probes never hang and never crash doctor: a blocking source or a raising probe becomes `unknown`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trainmedic.probes.base import Check, LogSource, ProbeContext, run_command
from trainmedic.probes.runner import ALL_PROBES, run_probes
from trainmedic.probes.shm import ShmProbe

Machine = Callable[..., ProbeContext]


def _sleeper(tmp_path: Path, name: str = "dmesg") -> str:
    """A stand-in for dmesg that hangs, with a grandchild holding the pipe open too."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    path.chmod(0o755)
    return str(path)


def test_all_probes_return_in_time_when_dmesg_blocks(machine: Machine, tmp_path: Path) -> None:
    ctx = machine(
        "docker",
        kernel_log_sources=(LogSource("dmesg", argv=(_sleeper(tmp_path),)),),
        command_timeout=1.0,
    )
    started = time.monotonic()
    checks = run_probes(ctx)
    elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed
    assert [c.id for c in checks] == [p.id for p in ALL_PROBES]
    kernel = next(c for c in checks if c.id == "kernel-log")
    assert kernel.status == "unknown"
    assert "did not finish within 1s" in kernel.value


def test_a_command_that_overruns_is_killed_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    script = tmp_path / "stubborn"
    script.write_text(f"#!/bin/sh\n(sleep 2; touch {marker}) &\nsleep 60\n")
    script.chmod(0o755)
    started = time.monotonic()
    try:
        run_command([str(script)], timeout=0.5)
    except Exception as exc:
        assert "did not finish within 0.5s" in str(exc)
    assert time.monotonic() - started < 3
    time.sleep(2.5)
    assert not marker.exists(), "the grandchild survived the time limit"


def test_a_blocking_statvfs_times_out(machine: Machine) -> None:
    def hung_nfs(path: str) -> os.statvfs_result:
        time.sleep(30)
        raise AssertionError("unreachable")

    started = time.monotonic()
    (check,) = run_probes(machine("docker", statvfs=hung_nfs), [ShmProbe()], time_limit=0.5)
    assert time.monotonic() - started < 2
    assert check.status == "unknown"
    assert check.value == "timed out after 0.5s"


class _Raising:
    id = "boom"
    time_limit = 5.0

    def run(self, ctx: ProbeContext) -> Check:
        raise RuntimeError("cannot parse /proc/self/weird")


def test_a_raising_probe_is_unknown_with_the_reason(machine: Machine) -> None:
    (check,) = run_probes(machine("docker"), [_Raising()])
    assert check.status == "unknown"
    assert check.value == "probe error: RuntimeError: cannot parse /proc/self/weird"


def test_unreadable_roots_give_unknown_not_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    def no_statvfs(path: str) -> os.statvfs_result:
        raise PermissionError(13, "Permission denied", path)

    ctx = ProbeContext(
        proc_root=str(empty),
        sys_root=str(empty),
        etc_root=str(empty),
        fs_root=str(empty),
        environ={},
        statvfs=no_statvfs,
        disk_usage=no_statvfs,  # type: ignore[arg-type]
        cpu_count=None,
        kernel_log_sources=(),
        python="",
    )
    checks = {c.id: c for c in run_probes(ctx)}
    assert checks["shm"].value == "cannot statvfs /dev/shm: Permission denied"
    assert checks["nofile"].status == "unknown"
    assert checks["memory"].status == "unknown"
    assert checks["cpu"].status == "unknown"
    assert checks["storage"].status == "unknown"
    assert checks["kernel-log"].status == "unknown"
    assert checks["container"].value == "none (no container markers)"
    assert {c.status for c in checks.values()} <= {"unknown", "ok"}


def test_the_core_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "import trainmedic.probes, trainmedic.probes.facts, trainmedic.cli.doctor\n"
        "from trainmedic.probes import ProbeContext, run_probes\n"
        "checks = run_probes(ProbeContext())\n"
        "assert 'torch' not in sys.modules, 'torch was imported in-process'\n"
        "print(len(checks))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(len(ALL_PROBES))
