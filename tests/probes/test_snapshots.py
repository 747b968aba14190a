"""Every probe against recorded machines: a Docker container, a Kubernetes pod and a workstation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainmedic.probes.base import MiB, ProbeContext
from trainmedic.probes.container import ContainerProbe, detect
from trainmedic.probes.cpu import CpuProbe, parse_cpu_list
from trainmedic.probes.memory import MemoryProbe
from trainmedic.probes.nofile import NofileProbe
from trainmedic.probes.nproc import NprocProbe
from trainmedic.probes.runner import run_probes
from trainmedic.probes.shm import ShmProbe
from trainmedic.probes.storage import StorageProbe

Machine = Callable[..., ProbeContext]


# ---------------------------------------------------------------- docker


def test_docker_is_detected_with_its_evidence(machine: Machine) -> None:
    info = detect(machine("docker"))
    assert info.kind == "docker"
    assert "/.dockerenv" in info.evidence
    assert "the root filesystem is overlay" in info.evidence
    assert any("/var/lib/docker/containers" in e for e in info.evidence)
    assert info.shm_default == 64 * MiB
    check = ContainerProbe().run(machine("docker"))
    assert check.status == "ok"
    assert check.value.startswith("docker (")
    assert "--shm-size" in check.fix


def test_docker_default_shm_warns_without_demand(machine: Machine) -> None:
    check = ShmProbe().run(machine("docker"))
    assert check.status == "warn"
    assert check.value == "size 64 MiB, free 63 MiB"
    assert check.data["size_bytes"] == 64 * MiB
    assert check.data["free_bytes"] == 63 * MiB
    assert "docker run --shm-size" in check.fix


def test_docker_shm_fails_when_workers_need_more_than_is_free(machine: Machine) -> None:
    check = ShmProbe().run(machine("docker", workers=4, batch_bytes=8 * MiB))
    assert check.status == "fail"
    # 4 workers x 2 (default prefetch) x 8 MiB = 64 MiB > 63 MiB free
    assert "demand 64 MiB (4 workers x 2 prefetch x 8 MiB)" in check.value
    assert check.data["demand_bytes"] == 64 * MiB
    assert "need 64 MiB but only 63 MiB is free" in check.why


def test_shm_warns_near_the_limit_and_passes_with_headroom(machine: Machine) -> None:
    # 3 x 2 x 9 MiB = 54 MiB: 86 % of 63 MiB free
    assert ShmProbe().run(machine("docker", workers=3, batch_bytes=9 * MiB)).status == "warn"
    check = ShmProbe().run(machine("bare-metal", workers=8, batch_bytes=256 * MiB, prefetch_factor=4))
    assert check.status == "ok"
    assert "demand 8 GiB (8 workers x 4 prefetch x 256 MiB)" in check.value


def test_docker_cgroup_v2_memory(machine: Machine) -> None:
    check = MemoryProbe().run(machine("docker"))
    assert check.status == "warn"
    assert check.value.startswith("limit 2 GiB, current 1.8 GiB, peak 1.9 GiB (cgroup v2); oom_kill 3;")
    assert check.data["cgroup_limit_bytes"] == 2 * 1024 * MiB
    assert check.data["oom_kill_count"] == 3
    assert "OOM-killed 3 process(es)" in check.why


def test_docker_cpu_quota_against_workers(machine: Machine) -> None:
    check = CpuProbe().run(machine("docker", workers=4))
    assert check.status == "warn"
    assert check.value == "32 CPUs, affinity 32, quota 2 CPUs (cgroup v2), usable 2, workers 4"
    assert check.fix == "set num_workers to at most 1"
    assert CpuProbe().run(machine("docker", workers=2)).status == "ok"


def test_docker_nofile_and_storage_are_fine(machine: Machine) -> None:
    nofile = NofileProbe().run(machine("docker"))
    assert nofile.status == "ok"
    assert nofile.value == "soft 1048576, hard 1048576, open 4"
    storage = StorageProbe().run(machine("docker"))
    assert storage.status == "ok"
    assert "cwd /workspace: 34.3 GiB free" in storage.value


# ---------------------------------------------------------------- kubernetes


def test_kubernetes_is_detected_and_the_fix_is_an_emptydir(machine: Machine) -> None:
    ctx = machine("kubernetes")
    info = detect(ctx)
    assert info.kind == "kubernetes"
    assert "KUBERNETES_SERVICE_HOST is set" in info.evidence
    assert "/proc/1/cgroup mentions kubepods" in info.evidence
    shm = ShmProbe().run(ctx)
    assert shm.status == "warn"
    assert "emptyDir" in shm.fix and "medium: Memory" in shm.fix


def test_kubernetes_without_the_env_variable_is_found_by_cgroup_path(machine: Machine) -> None:
    assert detect(machine("kubernetes", environ={})).kind == "kubernetes"


def test_kubernetes_cgroup_v1_memory_and_cpu(machine: Machine) -> None:
    ctx = machine("kubernetes")
    mem = MemoryProbe().run(ctx)
    assert mem.status == "warn"
    assert mem.value.startswith("limit 8 GiB, current 1 GiB, peak 7.9 GiB (cgroup v1); oom_kill 1;")
    assert "peak reached 99% of the limit" in mem.why
    cpu = CpuProbe().run(machine("kubernetes", workers=8))
    assert cpu.status == "warn"
    assert "quota 4 CPUs (cgroup v1)" in cpu.value


def test_kubernetes_low_nofile_warns_with_the_number(machine: Machine) -> None:
    check = NofileProbe().run(machine("kubernetes"))
    assert check.status == "warn"
    assert check.value == "soft 1024, hard 1048576, open 9"
    assert "1024 runs out" in check.why
    assert "ulimit -n 65536" in check.fix
    assert check.data["soft"] == 1024


def test_kubernetes_small_disk_warns(machine: Machine) -> None:
    check = StorageProbe().run(machine("kubernetes"))
    assert check.status == "warn"
    assert "2.3 GiB free" in check.value


# ---------------------------------------------------------------- bare metal


def test_bare_metal_is_healthy(machine: Machine) -> None:
    ctx = machine("bare-metal", workers=8, batch_bytes=64 * MiB)
    checks = {c.id: c for c in run_probes(ctx)}
    assert checks["container"].value == "none (no container markers)"
    assert checks["memory"].value.startswith("no cgroup limit (cgroup v2); oom_kill 0; host 238.4 GiB available")
    assert checks["cpu"].value == "16 CPUs, affinity 16, usable 16, workers 8"
    assert checks["nofile"].value == "soft 65536, hard 524288, open 3"
    for probe_id in ("shm", "container", "nofile", "nproc", "memory", "cpu", "storage"):
        assert checks[probe_id].status == "ok", checks[probe_id]
    assert checks["torch"].status == "unknown"  # disabled in snapshots: no interpreter given


def _copy(machine: Machine, name: str, tmp_path: Path) -> Path:
    """A writable copy of a recorded machine, to change one file of it."""
    import shutil

    root = tmp_path / name
    shutil.copytree(machine(name).proc_root.rsplit("/proc", 1)[0], root)
    return root


def test_cgroup_v2_limit_is_the_tightest_ancestor(machine: Machine, tmp_path) -> None:
    root = _copy(machine, "bare-metal", tmp_path)
    (root / "sys/fs/cgroup/user.slice/memory.max").write_text(str(16 * 1024 * MiB))
    (root / "sys/fs/cgroup/user.slice/user-1000.slice/memory.max").write_text(str(32 * 1024 * MiB))
    ctx = machine("bare-metal", proc_root=str(root / "proc"), sys_root=str(root / "sys"))
    check = MemoryProbe().run(ctx)
    assert check.data["cgroup_limit_bytes"] == 16 * 1024 * MiB
    assert check.value.startswith("limit 16 GiB, current 3 GiB, peak 9 GiB (cgroup v2)")


def test_cpu_list_parsing() -> None:
    assert parse_cpu_list("0-3,8,10-11") == 7
    assert parse_cpu_list("0") == 1
    assert parse_cpu_list("junk") is None


def test_a_lone_dockerenv_is_reported_as_thin_evidence(machine: Machine, tmp_path) -> None:
    (tmp_path / ".dockerenv").touch()
    info = detect(machine("bare-metal", fs_root=str(tmp_path)))
    assert info.kind == "docker"
    assert info.evidence == ("/.dockerenv only: no container cgroup path or overlay root",)


def test_podman_is_detected_from_containerenv(machine: Machine, tmp_path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").write_text('engine="podman-4.9.3"\nname="trainer"\n')
    info = detect(machine("bare-metal", fs_root=str(tmp_path)))
    assert (info.kind, info.evidence) == ("podman", ("/run/.containerenv",))
    assert "podman run --shm-size" in info.shm_fix


# ---------------------------------------------------------------- task limits (nproc)


def test_a_pids_limit_too_small_for_the_workers_threads_warns(machine: Machine, tmp_path) -> None:
    root = _copy(machine, "docker", tmp_path)
    (root / "sys/fs/cgroup/pids.max").write_text("1024\n")
    (root / "sys/fs/cgroup/pids.current").write_text("100\n")
    ctx = {"proc_root": str(root / "proc"), "sys_root": str(root / "sys")}
    few = NprocProbe().run(machine("docker", workers=2, **ctx))
    assert few.status == "ok", few
    assert "pids.max 1024, in use 100" in few.value
    many = NprocProbe().run(machine("docker", workers=32, **ctx))
    cores = many.data["cores"]
    assert isinstance(cores, int)
    assert many.status == "warn"
    assert many.data["demand"] == 33 * (cores + 4)
    assert "the limit leaves 924" in many.why
    assert "OMP_NUM_THREADS" in many.fix
    # Near miss: "max" in pids.max is no limit at all.
    (root / "sys/fs/cgroup/pids.max").write_text("max\n")
    assert NprocProbe().run(machine("docker", workers=32, **ctx)).status == "ok"


def test_a_users_threads_near_its_nproc_limit_warn(machine: Machine, tmp_path) -> None:
    root = _copy(machine, "bare-metal", tmp_path)
    limits = root / "proc/self/limits"
    limits.write_text(limits.read_text().replace(
        "Max processes             unlimited            unlimited", "Max processes             512                  4096"))
    status = root / "proc/self/status"
    status.write_text(status.read_text() + "Uid:\t1000\t1000\t1000\t1000\n")
    for pid, uid, threads in (("101", 1000, 300), ("102", 1000, 150), ("103", 0, 1000)):
        (root / "proc" / pid).mkdir()
        (root / "proc" / pid / "status").write_text(f"Name:\tpython\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nThreads:\t{threads}\n")
    ctx = machine("bare-metal", proc_root=str(root / "proc"), sys_root=str(root / "sys"))
    check = NprocProbe().run(ctx)
    assert check.data["user_threads"] == 450  # root's process does not count against user 1000's limit
    assert check.status == "warn"
    assert check.why == "450 of the 512 tasks ulimit -u allows are already in use"
    # Near miss: the kernel does not hold root to RLIMIT_NPROC.
    status.write_text(status.read_text().replace("Uid:\t1000\t1000\t1000\t1000", "Uid:\t0\t0\t0\t0"))
    root_check = NprocProbe().run(ctx)
    assert root_check.status == "ok"
    assert root_check.value.startswith("ulimit -u not enforced for root")
