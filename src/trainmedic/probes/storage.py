"""Free space where checkpoints, caches and temporary files land: the working directory and TMPDIR.

A full disk shows up far from its cause: a truncated checkpoint, "No space left on device" from
torch.save, or a DataLoader that cannot spill to TMPDIR.
"""

from __future__ import annotations

from trainmedic.probes.base import Check, GiB, ProbeContext, StatesNoFacts, format_size, unknown

WARN_FREE = 5 * GiB
FAIL_FREE = 1 * GiB


class StorageProbe(StatesNoFacts):
    id = "storage"
    time_limit = 10.0

    def run(self, ctx: ProbeContext) -> Check:
        tmpdir = ctx.environ.get("TMPDIR") or "/tmp"
        places = [("cwd", ctx.cwd), ("TMPDIR", tmpdir)]
        seen: dict[str, int] = {}
        parts: list[str] = []
        unreadable: list[str] = []
        data: dict[str, int | str | None] = {"cwd": ctx.cwd, "tmpdir": tmpdir}
        for label, path in places:
            try:
                free = ctx.disk_usage(path).free
            except OSError as exc:
                unreadable.append(f"{label} {path}: {exc.strerror or exc}")
                data[f"{label.lower()}_free_bytes"] = None
                continue
            seen[f"{label} {path}"] = free
            data[f"{label.lower()}_free_bytes"] = free
            parts.append(f"{label} {path}: {format_size(free)} free")
        if not seen:
            return unknown(self.id, "; ".join(unreadable))
        worst_place, worst = min(seen.items(), key=lambda kv: kv[1])
        threshold = f"free >= {format_size(WARN_FREE)} (fail < {format_size(FAIL_FREE)})"
        value = "; ".join(parts + [f"{u} (unreadable)" for u in unreadable])
        fix = "free space or point TMPDIR / checkpoint paths at a larger disk"
        if worst >= WARN_FREE:
            return Check(
                id=self.id,
                status="ok",
                value=value,
                threshold=threshold,
                why="checkpoints and temporary files fail with 'No space left on device' on a full disk",
                fix="",
                data=data,
            )
        return Check(
            id=self.id,
            status="fail" if worst < FAIL_FREE else "warn",
            value=value,
            threshold=threshold,
            why=(
                f"only {format_size(worst)} free at {worst_place}: torch.save and temporary files fail with "
                "'No space left on device'"
            ),
            fix=fix,
            data=data,
        )
