"""Run all probes at once, each under its own time limit, so one stuck source cannot hang doctor.

A probe that raises or overruns becomes an `unknown` check carrying the reason. Probes run in
daemon threads: a thread stuck in a kernel call (a hung NFS statvfs) cannot be killed, but it
must not keep the process alive either.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from trainmedic.probes.base import Check, FactProbe, Probe, ProbeContext, unknown
from trainmedic.probes.container import ContainerProbe
from trainmedic.probes.cpu import CpuProbe
from trainmedic.probes.kernel_log import KernelLogProbe
from trainmedic.probes.memory import MemoryProbe
from trainmedic.probes.nofile import NofileProbe
from trainmedic.probes.nproc import NprocProbe
from trainmedic.probes.shm import ShmProbe
from trainmedic.probes.storage import StorageProbe
from trainmedic.probes.torch_env import TorchProbe

ALL_PROBES: tuple[FactProbe, ...] = (
    ShmProbe(),
    ContainerProbe(),
    NofileProbe(),
    NprocProbe(),
    MemoryProbe(),
    KernelLogProbe(),
    TorchProbe(),
    CpuProbe(),
    StorageProbe(),
)
PROBES: Mapping[str, FactProbe] = {p.id: p for p in ALL_PROBES}  # a check's id -> the probe that reads it back


class _Slot:
    def __init__(self) -> None:
        self.check: Check | None = None
        self.done = threading.Event()


def _worker(probe: Probe, ctx: ProbeContext, slot: _Slot) -> None:
    try:
        check = probe.run(ctx)
        if check.id != probe.id:
            check = unknown(probe.id, f"probe returned a check for {check.id!r}")
        slot.check = check
    except Exception as exc:  # any failure of one probe is that probe's unknown, never doctor's crash
        slot.check = unknown(probe.id, f"probe error: {type(exc).__name__}: {exc}")
    finally:
        slot.done.set()


def run_probes(
    ctx: ProbeContext,
    probes: Sequence[Probe] = ALL_PROBES,
    time_limit: float | None = None,
) -> list[Check]:
    """Run `probes` concurrently; return their checks in order. `time_limit` caps every probe's own."""
    started = time.monotonic()
    slots: list[tuple[Probe, _Slot, float]] = []
    for probe in probes:
        slot = _Slot()
        limit = probe.time_limit if time_limit is None else min(probe.time_limit, time_limit)
        thread = threading.Thread(target=_worker, args=(probe, ctx, slot), name=f"probe-{probe.id}", daemon=True)
        thread.start()
        slots.append((probe, slot, limit))
    checks: list[Check] = []
    for probe, slot, limit in slots:
        remaining = started + limit - time.monotonic()
        if slot.done.wait(max(0.0, remaining)) and slot.check is not None:
            checks.append(slot.check)
        else:
            checks.append(unknown(probe.id, f"timed out after {limit:g}s"))
    return checks
