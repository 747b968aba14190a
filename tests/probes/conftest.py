"""Probe contexts built from the recorded machine snapshots under tests/fixtures/machine/."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from trainmedic.probes.base import DiskUsage, FakeStatvfs, LogSource, ProbeContext

MACHINES = Path(__file__).resolve().parents[1] / "fixtures" / "machine"
KERNEL_LOGS = MACHINES / "kernel-log"


def snapshot_context(name: str, **overrides: Any) -> ProbeContext:
    """A ProbeContext whose roots are the snapshot folder; statvfs and disk usage come from snapshot.json."""
    folder = MACHINES / name
    meta = json.loads((folder / "snapshot.json").read_text())

    def statvfs(path: str) -> FakeStatvfs:
        if path not in meta["statvfs"]:
            raise FileNotFoundError(2, "No such file or directory", path)
        return FakeStatvfs(**meta["statvfs"][path])

    def disk_usage(path: str) -> DiskUsage:
        if path not in meta["disk_usage"]:
            raise FileNotFoundError(2, "No such file or directory", path)
        return DiskUsage(*meta["disk_usage"][path])

    fields: dict[str, Any] = {
        "proc_root": str(folder / "proc"),
        "sys_root": str(folder / "sys"),
        "etc_root": str(folder / "etc"),
        "fs_root": str(folder / "root"),
        "environ": meta["environ"],
        "statvfs": statvfs,
        "disk_usage": disk_usage,
        "cwd": meta["cwd"],
        "cpu_count": meta["cpu_count"],
        "kernel_log_sources": (LogSource("kern.log", path=str(KERNEL_LOGS / "kern.log")),),
        "python": "",  # the torch probe asks a real interpreter; snapshots have none
    }
    fields.update(overrides)
    return ProbeContext(**fields)


@pytest.fixture
def machine() -> Callable[..., ProbeContext]:
    return snapshot_context
