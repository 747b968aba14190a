"""Find this process's cgroup folder for a controller, on cgroup v1, v2 or a hybrid of both.

Shared by the memory and cpu probes. The path in /proc/self/cgroup is relative to the mount's
root (which differs inside containers without a cgroup namespace), so the mount table decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainmedic.probes.base import ProbeContext, try_read


@dataclass(frozen=True)
class Mount:
    root: str
    point: str
    fstype: str
    source: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class CgroupLine:
    hierarchy: str
    controllers: tuple[str, ...]
    path: str


@dataclass(frozen=True)
class CgroupDir:
    """The folder holding a controller's files for this process, and the mount it lives in."""

    version: int
    path: Path
    mount: Path
    group: str  # the path as /proc/self/cgroup names it

    def ancestors(self) -> Iterator[Path]:
        """The group folder, then each parent up to the mount: limits are inherited downwards."""
        current = self.path
        yield current
        while current != self.mount and self.mount in current.parents:
            current = current.parent
            yield current


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        a, b = left.split(), right.split()
        if len(a) < 5 or len(b) < 2:
            continue
        options = tuple(b[2].split(",")) if len(b) > 2 else ()
        mounts.append(Mount(_unescape(a[3]), _unescape(a[4]), b[0], b[1], options))
    return mounts


def parse_proc_cgroup(text: str) -> list[CgroupLine]:
    lines = []
    for raw in text.splitlines():
        parts = raw.split(":", 2)
        if len(parts) != 3:
            continue
        controllers = tuple(c for c in parts[1].split(",") if c)
        lines.append(CgroupLine(parts[0], controllers, parts[2]))
    return lines


def mounts(ctx: ProbeContext) -> list[Mount]:
    text = try_read(ctx.proc("self/mountinfo"))
    return parse_mountinfo(text) if text else []


def _join(ctx: ProbeContext, mount: Mount | None, fallback_point: str, group: str) -> tuple[Path, Path]:
    point = mount.point if mount else fallback_point
    rel = group
    if mount and mount.root not in ("", "/"):
        inside = group == mount.root or group.startswith(mount.root.rstrip("/") + "/")
        # a group outside what is mounted here: the mount itself is our view of it
        rel = group[len(mount.root) :] if inside else "/"
    base = ctx.host_path(point)
    target = base / rel.lstrip("/") if rel.strip("/") else base
    if not target.is_dir():
        target = base  # e.g. a private cgroup namespace shown through a host-style path
    return target, base


def find(ctx: ProbeContext, controller: str) -> CgroupDir | None:
    """The folder with `controller`'s files (memory, cpu) for this process, or None."""
    text = try_read(ctx.proc("self/cgroup"))
    if text is None:
        return None
    lines = parse_proc_cgroup(text)
    table = mounts(ctx)
    for line in lines:
        if controller in line.controllers:
            mount = next(
                (m for m in table if m.fstype == "cgroup" and controller in m.options),
                None,
            )
            path, base = _join(ctx, mount, f"/sys/fs/cgroup/{controller}", line.path)
            if path.is_dir():
                return CgroupDir(1, path, base, line.path)
    for line in lines:
        if line.hierarchy == "0" and not line.controllers:
            mount = next((m for m in table if m.fstype == "cgroup2"), None)
            path, base = _join(ctx, mount, "/sys/fs/cgroup", line.path)
            available = (try_read(path / "cgroup.controllers") or "").split()
            available += (try_read(base / "cgroup.controllers") or "").split()
            if path.is_dir() and controller in available:
                return CgroupDir(2, path, base, line.path)
    return None
