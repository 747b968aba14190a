"""/dev/shm size and free space against what the DataLoader workers will put there.

Each worker hands its batches to the main process through shared memory; with
`prefetch_factor` batches in flight per worker, the demand is workers x prefetch x batch bytes.
When /dev/shm fills up, workers die with "Bus error" or "No space left on device".
"""

from __future__ import annotations

from collections.abc import Mapping

from trainmedic.probes.base import (
    Check,
    DataValue,
    ProbeContext,
    ProbeFact,
    format_size,
    size_after,
    stated,
    unknown,
    whole,
)
from trainmedic.probes.container import DOCKER_SHM_DEFAULT, detect

DEFAULT_PREFETCH = 2  # torch.utils.data.DataLoader's prefetch_factor default with workers
WARN_FRACTION = 0.8

WHY = (
    "DataLoader workers pass every batch through /dev/shm; when it is full they die with "
    "'Bus error' or 'No space left on device' (shm-exhausted)"
)


class ShmProbe:
    id = "shm"
    time_limit = 5.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """Size, free space and the workers' demand in bytes: what confirms or refutes shm-exhausted."""
        return stated(*((f"shm.{key}", whole(data.get(key))) for key in ("size_bytes", "free_bytes", "demand_bytes")))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """Sizes as printed (`size 64 MiB, free 63 MiB, demand ...`): rounded to ~0.1 unit."""
        return {f"{label}_bytes": size_after(label, value) for label in ("size", "free", "demand")}

    def run(self, ctx: ProbeContext) -> Check:
        try:
            st = ctx.statvfs(ctx.dev_shm)
        except OSError as exc:
            return unknown(self.id, f"cannot statvfs {ctx.dev_shm}: {exc.strerror or exc}")
        size = st.f_frsize * st.f_blocks
        free = st.f_frsize * st.f_bavail
        prefetch = ctx.prefetch_factor if ctx.prefetch_factor is not None else DEFAULT_PREFETCH
        demand: int | None = None
        if ctx.workers and ctx.batch_bytes:
            demand = ctx.workers * prefetch * ctx.batch_bytes

        value = f"size {format_size(size)}, free {format_size(free)}"
        if demand is not None:
            value += (
                f", demand {format_size(demand)} "
                f"({ctx.workers} workers x {prefetch} prefetch x {format_size(ctx.batch_bytes or 0)})"
            )
        data = {
            "size_bytes": size,
            "free_bytes": free,
            "demand_bytes": demand,
            "workers": ctx.workers,
            "prefetch_factor": prefetch if ctx.workers else None,
            "batch_bytes": ctx.batch_bytes,
        }
        facts = self.facts(data)
        threshold_parts = [f"size > {format_size(DOCKER_SHM_DEFAULT)} (Docker's default)"]
        if demand is not None:
            threshold_parts.insert(0, f"demand <= {int(WARN_FRACTION * 100)}% of free")
        threshold = "; ".join(threshold_parts)

        fix = detect(ctx).shm_fix
        lower = "or lower num_workers, prefetch_factor or the batch size"
        if demand is not None and demand > free:
            return Check(
                id=self.id,
                status="fail",
                value=value,
                threshold=threshold,
                why=f"{WHY}: the workers need {format_size(demand)} but only {format_size(free)} is free",
                fix=f"{fix}; {lower}",
                data=data,
                facts=facts,
            )
        if demand is not None and demand > WARN_FRACTION * free:
            return Check(
                id=self.id,
                status="warn",
                value=value,
                threshold=threshold,
                why=f"{WHY}: the workers need {demand / free:.0%} of the free space, leaving no headroom",
                fix=f"{fix}; {lower}",
                data=data,
                facts=facts,
            )
        if size <= DOCKER_SHM_DEFAULT:
            return Check(
                id=self.id,
                status="warn",
                value=value,
                threshold=threshold,
                why=f"{WHY}: {format_size(size)} is the container default and fills with a few large batches",
                fix=fix,
                data=data,
                facts=facts,
            )
        why = WHY
        if ctx.workers == 0:
            why = "num_workers=0 loads batches in the main process: /dev/shm is not used for them"
        elif demand is None:
            why += "; pass --workers and --batch-bytes to compare with your DataLoader's demand"
        return Check(
            id=self.id, status="ok", value=value, threshold=threshold, why=why, fix="", data=data, facts=facts
        )
