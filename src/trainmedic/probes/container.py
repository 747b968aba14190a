"""Container detection: Docker, Podman and Kubernetes give /dev/shm 64 MiB unless told otherwise.

The kind decides the fix for a small /dev/shm (a docker flag, a pod volume), so the shm probe
asks `detect` too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trainmedic.probes import cgroup
from trainmedic.probes.base import Check, DataValue, MiB, ProbeContext, ProbeFact, stated, try_read

DOCKER_SHM_DEFAULT = 64 * MiB


@dataclass(frozen=True)
class ContainerInfo:
    kind: str  # kubernetes, podman, docker, containerd, lxc, container, none
    evidence: tuple[str, ...]
    shm_default: int | None  # bytes the runtime gives /dev/shm unless configured
    shm_fix: str


_FIXES = {
    "kubernetes": (
        DOCKER_SHM_DEFAULT,
        "mount an emptyDir volume with `medium: Memory` (and a sizeLimit) at /dev/shm in the pod spec",
    ),
    "docker": (
        DOCKER_SHM_DEFAULT,
        "start the container with `docker run --shm-size=16g` (compose: `shm_size: 16gb`) or `--ipc=host`",
    ),
    "podman": (DOCKER_SHM_DEFAULT, "start the container with `podman run --shm-size=16g` or `--ipc=host`"),
    "containerd": (
        DOCKER_SHM_DEFAULT,
        "start it with `nerdctl run --shm-size=16g`; under Kubernetes mount an emptyDir (medium: Memory)",
    ),
    "lxc": (None, "raise the /dev/shm tmpfs size in the container's config (lxc.mount.entry)"),
    "container": (None, "give the container a larger /dev/shm (its runtime's --shm-size or --ipc=host)"),
    "none": (None, "remount it larger: `sudo mount -o remount,size=16G /dev/shm`"),
}

# (kind, marker in a cgroup path)
_CGROUP_MARKERS = (
    ("kubernetes", "kubepods"),
    ("podman", "libpod"),
    ("docker", "/docker/"),
    ("docker", "docker-"),
    ("containerd", "containerd"),
    ("lxc", "/lxc/"),
    ("lxc", "lxc.payload"),
)

_ORDER = ("kubernetes", "podman", "docker", "containerd", "lxc", "container")


def detect(ctx: ProbeContext) -> ContainerInfo:
    """Name the container runtime from the marks each one leaves; `none` when there are none."""
    found: dict[str, list[str]] = {}

    def note(kind: str, why: str) -> None:
        found.setdefault(kind, []).append(why)

    if ctx.environ.get("KUBERNETES_SERVICE_HOST"):
        note("kubernetes", "KUBERNETES_SERVICE_HOST is set")
    if ctx.root("/.dockerenv").exists():
        note("docker", "/.dockerenv")
    containerenv = ctx.root("/run/.containerenv")
    if containerenv.exists():
        text = try_read(containerenv) or ""
        note("podman" if "podman" in text or not text.strip() else "container", "/run/.containerenv")
    for rel in ("1/cgroup", "self/cgroup"):
        text = try_read(ctx.proc(rel)) or ""
        for kind, marker in _CGROUP_MARKERS:
            if marker in text:
                note(kind, f"/proc/{rel} mentions {marker.strip('/-')}")
    environ1 = try_read(ctx.proc("1/environ")) or ""
    for item in environ1.split("\0"):
        if item.startswith("container="):
            value = item.split("=", 1)[1]
            note(value if value in _FIXES else "container", f"PID 1 has {item}")
    for m in cgroup.mounts(ctx):
        if m.point == "/" and m.fstype == "overlay":
            note("container", "the root filesystem is overlay")
        if "/docker/containers/" in m.root:
            note("docker", f"{m.point} is mounted from /var/lib/docker/containers")
    kind = next((k for k in _ORDER if k in found), "none")
    evidence = tuple(dict.fromkeys(why for k in _ORDER for why in found.get(k, [])))
    if evidence == ("/.dockerenv",):
        # the file survives into VMs and hosts built from a Docker image; say how thin the evidence is
        evidence = ("/.dockerenv only: no container cgroup path or overlay root",)
    shm_default, fix = _FIXES[kind]
    return ContainerInfo(kind, evidence, shm_default, fix)


class ContainerProbe:
    """Informational: which runtime, and what its /dev/shm default means for DataLoader workers."""

    id = "container"
    time_limit = 5.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The runtime's name: it decides which fix for a small /dev/shm applies."""
        kind = data.get("kind")
        return stated(("container.kind", kind if isinstance(kind, str) else None))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """The kind is the value's first word (`docker (/.dockerenv, ...)`)."""
        words = value.split()
        return {"kind": words[0] if words else None}

    def run(self, ctx: ProbeContext) -> Check:
        info = detect(ctx)
        if info.kind == "none":
            none: dict[str, DataValue] = {"kind": "none"}
            return Check(
                id=self.id,
                status="ok",
                value="none (no container markers)",
                threshold="",
                why="not in a container: /dev/shm is the host's tmpfs, by default half of RAM",
                fix="",
                data=none,
                facts=self.facts(none),
            )
        shm = (
            f"{info.kind} gives /dev/shm 64 MiB unless configured; DataLoader workers pass every batch through it"
            if info.shm_default
            else f"{info.kind} sets the /dev/shm size in its own config"
        )
        data = {"kind": info.kind, "shm_default_bytes": info.shm_default}
        return Check(
            id=self.id,
            status="ok",
            value=f"{info.kind} ({', '.join(info.evidence)})",
            threshold="",
            why=shm,
            fix=f"if /dev/shm is too small: {info.shm_fix}",
            data=data,
            facts=self.facts(data),
        )
