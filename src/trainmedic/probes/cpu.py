"""CPUs this process may really use (count, affinity, cgroup quota) against the requested workers.

os.cpu_count() reports the host; a container's affinity mask or CFS quota can be much smaller,
and workers beyond it only add context switches and throttling.
"""

from __future__ import annotations

import math
import os

from trainmedic.probes import cgroup
from trainmedic.probes.base import Check, ProbeContext, StatesNoFacts, try_int, try_read, unknown


def parse_cpu_list(text: str) -> int | None:
    """Count the CPUs in a list like `0-3,8,10-11`."""
    total = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            total += int(hi or lo) - int(lo) + 1
        except ValueError:
            return None
    return total or None


def affinity(ctx: ProbeContext) -> int | None:
    for line in (try_read(ctx.proc("self/status")) or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return parse_cpu_list(line.split(":", 1)[1])
    if ctx.proc_root == "/proc" and hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return None


def quota(ctx: ProbeContext) -> tuple[float | None, int | None]:
    """(CPUs allowed by the CFS quota or None for no quota, cgroup version or None)."""
    found = cgroup.find(ctx, "cpu")
    if found is None:
        return None, None
    best: float | None = None
    if found.version == 2:
        for folder in found.ancestors():
            fields = (try_read(folder / "cpu.max") or "").split()
            if len(fields) == 2 and fields[0] != "max":
                try:
                    cpus = int(fields[0]) / int(fields[1])
                except (ValueError, ZeroDivisionError):
                    continue
                best = cpus if best is None else min(best, cpus)
        return best, 2
    q = try_int(found.path / "cpu.cfs_quota_us")
    period = try_int(found.path / "cpu.cfs_period_us")
    if q is not None and q > 0 and period:
        best = q / period
    return best, 1


class CpuProbe(StatesNoFacts):
    id = "cpu"
    time_limit = 5.0

    def run(self, ctx: ProbeContext) -> Check:
        count = ctx.cpu_count
        allowed = affinity(ctx)
        cpus_quota, version = quota(ctx)
        candidates = [c for c in (count, allowed) if c]
        if cpus_quota is not None:
            candidates.append(max(1, math.ceil(cpus_quota)))
        if not candidates:
            return unknown(self.id, "neither the CPU count, the affinity nor a cgroup quota is readable")
        effective = min(candidates)
        parts = [f"{count} CPUs" if count else "CPU count unknown"]
        if allowed is not None:
            parts.append(f"affinity {allowed}")
        if cpus_quota is not None:
            parts.append(f"quota {cpus_quota:g} CPUs (cgroup v{version})")
        parts.append(f"usable {effective}")
        if ctx.workers is not None:
            parts.append(f"workers {ctx.workers}")
        data = {
            "cpu_count": count,
            "affinity": allowed,
            "quota_cpus": cpus_quota,
            "usable": effective,
            "workers": ctx.workers,
        }
        threshold = f"workers <= {effective} usable CPUs"
        if ctx.workers is not None and ctx.workers > effective:
            return Check(
                id=self.id,
                status="warn",
                value=", ".join(parts),
                threshold=threshold,
                why=(
                    f"{ctx.workers} workers share {effective} usable CPUs with the main process: loading "
                    "slows down and the quota throttles, which looks like a hang"
                ),
                fix=f"set num_workers to at most {max(1, effective - 1)}",
                data=data,
            )
        return Check(
            id=self.id,
            status="ok",
            value=", ".join(parts),
            threshold=threshold,
            why="os.cpu_count() reports the host; affinity and the cgroup quota are what workers get",
            fix="",
            data=data,
        )
