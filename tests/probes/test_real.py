"""Real probes on this machine: a private /dev/shm, a lowered ulimit, a memory cgroup, an unprivileged user.

Each test runs `python -m trainmedic doctor --json` in a subprocess set up the way a failing host
is, and skips with the reason when the machine does not allow the setup.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from trainmedic.probes import cgroup
from trainmedic.probes.base import ProbeContext

ROOT = Path(__file__).resolve().parents[2]
DOCTOR = ["-m", "trainmedic", "doctor", "--json"]

pytestmark = pytest.mark.slow


def _doctor(
    argv: Sequence[str],
    preexec: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any], str]:
    out = subprocess.run(
        list(argv),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        env=env,
        check=False,
    )
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        doc = {}
    return out.returncode, doc, out.stderr


def _check(doc: dict[str, Any], probe_id: str) -> dict[str, Any]:
    return next(c for c in doc["checks"] if c["id"] == probe_id)


def test_small_shm_in_a_private_mount_namespace_fails_with_the_numbers() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    script = 'mount -t tmpfs -o size=4M tmpfs /dev/shm && exec "$0" "$@"'
    argv = ["unshare", "-m", "sh", "-c", script, sys.executable, *DOCTOR, "--workers", "4", "--batch-bytes", "8M"]
    code, doc, err = _doctor(argv)
    if not doc:
        pytest.skip(f"cannot make a private mount namespace with a tmpfs here: {err.strip()[:200]}")
    shm = _check(doc, "shm")
    assert shm["status"] == "fail", shm
    assert shm["value"] == "size 4 MiB, free 4 MiB, demand 64 MiB (4 workers x 2 prefetch x 8 MiB)"
    assert "need 64 MiB but only 4 MiB is free" in shm["why"]
    assert code == 1
    # the real /dev/shm was not touched
    st = os.statvfs("/dev/shm")
    assert st.f_frsize * st.f_blocks != 4 * 1024 * 1024


def test_lowered_nofile_limit_warns_with_the_number() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = 256 if hard == resource.RLIM_INFINITY or hard >= 256 else hard

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    _, doc, err = _doctor([sys.executable, *DOCTOR], preexec=lower)
    assert doc, err
    nofile = _check(doc, "nofile")
    assert nofile["status"] == "warn", nofile
    assert nofile["value"].startswith(f"soft {low}, hard ")
    assert f"{low} runs out with 'Too many open files'" in nofile["why"]


@contextlib.contextmanager
def _memory_cgroup(limit: int) -> Iterator[Path]:
    """A child of this process's memory cgroup with `limit`, removed afterwards; skips when not allowed."""
    found = cgroup.find(ProbeContext(), "memory")
    if found is None:
        pytest.skip("no memory cgroup controller is visible to this process")
    child = found.path / f"trainmedic-test-{uuid.uuid4().hex[:8]}"
    limit_file = "memory.max" if found.version == 2 else "memory.limit_in_bytes"
    try:
        if found.version == 2:
            with contextlib.suppress(OSError):
                (found.path / "cgroup.subtree_control").write_text("+memory")
        child.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a cgroup under {found.path}: {exc.strerror}")
    try:
        if not (child / limit_file).exists():
            pytest.skip(f"the memory controller is not enabled for {child} (cgroup v{found.version})")
        (child / limit_file).write_text(str(limit))
        yield child
    finally:
        for _ in range(50):  # the kernel frees the group a moment after its last process exits
            try:
                child.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def test_cgroup_memory_limit_is_read_from_a_real_cgroup() -> None:
    limit = 1024 * 1024 * 1024  # 1 GiB: room for the torch probe's import
    with _memory_cgroup(limit) as group:

        def join() -> None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

        _, doc, err = _doctor([sys.executable, *DOCTOR], preexec=join)
    assert doc, err
    memory = _check(doc, "memory")
    assert memory["value"].startswith("limit 1 GiB, current "), memory
    assert memory["status"] in ("ok", "warn")


def _unprivileged_python() -> tuple[str, dict[str, str]] | None:
    """An interpreter uid 65534 can run, with this environment's packages on its path."""
    paths = [str(ROOT / "src"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        try:
            probe = subprocess.run(
                [python, "-c", "import trainmedic.cli.doctor"],
                env=env,
                capture_output=True,
                timeout=60,
                preexec_fn=_drop_root,
                check=False,
            )
        except OSError:  # not there, or not executable by uid 65534 (e.g. under a 0700 /root)
            continue
        if probe.returncode == 0:
            return python, env
    return None


def _drop_root() -> None:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_doctor_runs_without_root_and_says_what_it_could_not_read() -> None:
    if os.geteuid() != 0:
        code, doc, err = _doctor([sys.executable, *DOCTOR])
    else:
        found = _unprivileged_python()
        if found is None:
            pytest.skip("no interpreter with trainmedic's dependencies is readable by uid 65534")
        python, env = found
        code, doc, err = _doctor([python, *DOCTOR], preexec=_drop_root, env=env)
    assert doc, err
    assert "Traceback" not in err
    assert [c["id"] for c in doc["checks"]] == [
        "shm", "container", "nofile", "nproc", "memory", "kernel-log", "torch", "cpu", "storage"
    ]  # fmt: skip
    kernel = _check(doc, "kernel-log")
    if kernel["status"] == "unknown":
        assert kernel["value"].startswith("no kernel log readable: ")
    assert code in (0, 1)
