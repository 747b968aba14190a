"""Run one lab case for real, bounded, and leave nothing behind.

Every process of a run carries a random marker in its environment, so the runner can find and
kill all of them afterwards, including torchrun's workers (they start their own sessions) and
orphaned DataLoader workers, without touching anyone else's processes. Each run gets its own
temporary directory (TMPDIR, torchrun's log dir) and, where possible, a private /dev/shm in its
own mount namespace, so no shared-memory file or mount outlives it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainmedic.torch.lab.cases import CONSOLE_LOG, KERNEL_LOG, RANK_LOG_DIR, Case

MARKER = "TRAINMEDIC_LAB_RUN"
DEFAULT_SHM = "1g"  # the private /dev/shm of cases that do not test its size: roomy, and gone afterwards
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
LEFTOVER_GRACE = 3.0  # seconds processes may take to exit after the main one did
_RANK_FILES = ("stdout.log", "stderr.log", "error.json")
WARMUP_LIMIT = 900.0  # seconds a case's one-time warm-up (a build) may take
# torch's extension builds for lab runs (DeepSpeed's CPU comm op): the lab's own directory, so a lock
# a killed build leaves behind is the lab's to clear, never one in the user's ~/.cache/torch_extensions.
EXTENSIONS_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainmedic" / "lab-extensions"
_warmed: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
# Variables that would make a program think it already runs under a launcher.
_LAUNCHER_VARS = re.compile(
    r"^(?:RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT|TORCHELASTIC_\w+)$"
)


@dataclass(frozen=True)
class RunResult:
    """What happened when a case ran; `files` are relative to `directory`, listed in reading order."""

    case: Case
    directory: Path
    skipped: str | None = None
    returncode: int | None = None
    timed_out: bool = False  # hit the hard time limit: the reproduction misbehaved
    stopped: bool = False  # stopped on purpose after `stop_after` (a stall case)
    duration: float = 0.0
    files: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    leftovers: int = 0  # processes still alive when the run ended, killed by the runner
    work: str = ""  # the run's temporary directory (gone now; it appears in `command`)
    token: str = ""  # the marker value every process of the run carried (see marked_pids)

    @property
    def paths(self) -> list[Path]:
        return [self.directory / f for f in self.files]

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


# ---------------------------------------------------------------- what this machine allows


@functools.cache
def private_shm_problem() -> str | None:
    """Why a private /dev/shm cannot be made here (None when it can): needs root and unshare -m."""
    if os.geteuid() != 0:
        return "needs root to mount a private /dev/shm (unshare -m + mount -t tmpfs)"
    if shutil.which("unshare") is None:
        return "the unshare command (util-linux) is not installed"
    probe = subprocess.run([*_unshare_prefix("1m"), "true"], capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        detail = probe.stderr.strip().splitlines()[-1:] or [f"exit {probe.returncode}"]
        return f"cannot mount a private /dev/shm here: {detail[0]}"
    return None


@dataclass(frozen=True)
class _CgroupRoot:
    path: Path
    version: int


@functools.cache
def _memory_cgroup_root() -> _CgroupRoot | str:
    """Where a memory cgroup can be created (v2 with memory delegated, or v1), or why not."""
    if os.geteuid() != 0:
        return "needs root to create a memory cgroup"
    v2 = Path("/sys/fs/cgroup")
    with contextlib.suppress(OSError):
        if "memory" in (v2 / "cgroup.subtree_control").read_text().split() and os.access(v2, os.W_OK):
            return _CgroupRoot(v2, 2)
    v1 = Path("/sys/fs/cgroup/memory")
    if (v1 / "memory.limit_in_bytes").exists() and os.access(v1, os.W_OK):
        return _CgroupRoot(v1, 1)
    return "no writable memory cgroup (cgroup v2 with +memory in subtree_control, or v1 memory)"


def memory_cgroup_problem() -> str | None:
    root = _memory_cgroup_root()
    return root if isinstance(root, str) else None


@functools.cache
def kernel_log_problem() -> str | None:
    if shutil.which("dmesg") is None:
        return "dmesg is not installed"
    probe = subprocess.run(["dmesg"], capture_output=True, timeout=30, check=False)
    if probe.returncode != 0:
        return "cannot read the kernel log (dmesg): " + probe.stderr.decode(errors="replace").strip()
    return None


def torch_version(python: str | None = None) -> str:
    """The torch version the programs run with (asked in a subprocess: no torch in this process)."""
    out = subprocess.run(
        [python or sys.executable, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


def skip_reason(case: Case) -> str | None:
    """Why `case` cannot run on this machine, or None."""
    if not case.program_path.is_file():
        return f"program {case.program} is missing"
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (pip install 'trainmedic[torch]')"
    for module in case.requires:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'trainmedic[lab]')"
    if (case.shm_size is not None or case.small_fs is not None) and (problem := private_shm_problem()):
        return problem
    if case.cgroup_memory_mb is not None and (problem := memory_cgroup_problem()):
        return problem
    if case.kernel_log and (problem := kernel_log_problem()):
        return problem
    return None


# ---------------------------------------------------------------- building the command


def _unshare_prefix(shm_size: str, small_fs: str | None = None) -> list[str]:
    # sh's $0 is the size, "$@" the program: no quoting of the program's own arguments needed.
    script = 'mount -t tmpfs -o "size=$0" tmpfs /dev/shm && exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c"]
    if small_fs is None:
        return [*prefix, script, shm_size]
    # A small filesystem at $TMPDIR/small (TMPDIR is the run's directory): a disk that fills.
    script = ('mount -t tmpfs -o "size=$0" tmpfs /dev/shm && mkdir -p "$TMPDIR/small" && '
              'mount -t tmpfs -o "size=$1" tmpfs "$TMPDIR/small" && shift && exec "$@"')
    return [*prefix, script, shm_size, small_fs]


def _free_port() -> int:
    """A loopback port free now, for launchers that take a fixed one (a race with another process
    taking it first is possible, and shows as a failed run, never as a wrong capture)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_command(case: Case, *, python: str, work: Path, cgroup: Path | None = None) -> list[str]:
    """The exact argv of a case: launcher, program and flags, inside a private /dev/shm if possible."""
    program = [str(case.program_path), *case.args]
    if cgroup is not None:
        program += ["--cgroup", str(cgroup)]
    if case.launcher == "torchrun":
        argv = [
            python,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={case.nproc}",
            "--rdzv-backend=c10d",
            "--rdzv-endpoint=127.0.0.1:0",
        ]
        if case.rank_logs:
            argv += ["--log-dir", str(work / RANK_LOG_DIR), f"--{case.rank_logs}", "3"]
        argv += program
    elif case.launcher == "accelerate":
        # --multi_gpu is accelerate's launcher for N local processes (torchrun underneath); with no GPU
        # and Accelerator(cpu=True) the ranks run on gloo.
        argv = [python, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(case.nproc),
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", str(_free_port()), *program]
    elif case.launcher == "deepspeed":
        argv = [python, "-m", "deepspeed.launcher.runner", "--num_accelerators", str(case.nproc),
                "--master_port", str(_free_port()), *program]
    else:
        argv = [python, *program]
    if case.shm_size is not None or case.small_fs is not None or private_shm_problem() is None:
        argv = [*_unshare_prefix(case.shm_size or DEFAULT_SHM, case.small_fs), *argv]
    return argv


def _environment(case: Case, token: str, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _LAUNCHER_VARS.match(k)}
    env.update(
        {
            MARKER: token,
            "TMPDIR": str(work),  # multiprocessing's pymp-* dirs, torchrun's default log dir
            "PYTHONUNBUFFERED": "1",  # lines land in the order they were printed
            "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ next to the programs
            # HF libraries: nothing is downloaded (the models are built from configs), nothing reported
            "HF_HUB_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TORCH_EXTENSIONS_DIR": str(EXTENSIONS_DIR),
        }
    )
    env.update(dict(case.env))
    return env


def _warm_up(case: Case, python: str) -> None:
    """Run the case's warm-up once per process, bounded by WARMUP_LIMIT. A failed or killed warm-up is
    not reported here: the run then meets the same problem and reports it within its own limit.

    A build killed midway leaves torch's lock file, and every later build would wait on it for ten
    minutes: a lock older than any build is cleared first, and a killed warm-up clears its own.
    """
    key = (python, case.warmup, case.env)
    if not case.warmup or key in _warmed:
        return
    _warmed.add(key)
    EXTENSIONS_DIR.mkdir(parents=True, exist_ok=True)
    _clear_locks(older_than=time.time() - WARMUP_LIMIT)
    # The run's own environment and marker: a build the limit cuts short is reaped like a run's leftovers.
    token = secrets.token_hex(8)
    work = Path(tempfile.mkdtemp(prefix="trainmedic-lab-warmup-"))
    started = time.time()
    proc = subprocess.Popen(
        [python, "-c", case.warmup],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_environment(case, token, work),
        start_new_session=True,
    )
    try:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=WARMUP_LIMIT)
    finally:  # (a KeyboardInterrupt too: no build is left running, nor its lock)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            kill_leftovers(token)
            _clear_locks(newer_than=started)
        shutil.rmtree(work, ignore_errors=True)


def _clear_locks(*, older_than: float | None = None, newer_than: float | None = None) -> None:
    for lock in EXTENSIONS_DIR.glob("*/*/lock"):
        with contextlib.suppress(OSError):
            mtime = lock.stat().st_mtime
            if (older_than is not None and mtime < older_than) or (newer_than is not None and mtime >= newer_than):
                lock.unlink()


# ---------------------------------------------------------------- processes


def marked_pids(token: str) -> list[int]:
    """Live processes whose environment carries this run's marker (zombies have none)."""
    needle = f"\0{MARKER}={token}\0".encode()
    me = os.getpid()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            data = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in b"\0" + data + b"\0":
            found.append(int(entry.name))
    return found


def _signal(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _stop(proc: subprocess.Popen[bytes], token: str, sig: int) -> None:
    """Send `sig` to the run's process group and to every marked process, like a job scheduler."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    _signal(marked_pids(token), sig)


def kill_leftovers(token: str, *, grace: float = 0.0, within: float = 10.0) -> int:
    """SIGKILL every process still carrying the marker until none is left; return how many there were.

    `grace` first gives exiting helpers (torch_shm_manager, workers noticing their parent died) time
    to leave on their own.
    """
    deadline = time.monotonic() + grace
    while marked_pids(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    seen: set[int] = set()
    deadline = time.monotonic() + within
    while pids := marked_pids(token):
        seen.update(pids)
        _signal(pids, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise RuntimeError(f"lab: processes {pids} survive SIGKILL")
        time.sleep(0.05)
    return len(seen)


# ---------------------------------------------------------------- cgroup and kernel log


@contextlib.contextmanager
def _memory_cgroup(case: Case, token: str) -> Iterator[Path | None]:
    if case.cgroup_memory_mb is None:
        yield None
        return
    root = _memory_cgroup_root()
    if isinstance(root, str):
        raise RuntimeError(root)
    path = root.path / f"trainmedic-lab-{token}"
    path.mkdir()
    try:
        limit = str(case.cgroup_memory_mb * 1024 * 1024)
        if root.version == 2:
            (path / "memory.max").write_text(limit)
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")
        else:
            (path / "memory.limit_in_bytes").write_text(limit)
            with contextlib.suppress(OSError):  # absent without swap accounting
                (path / "memory.memsw.limit_in_bytes").write_text(limit)
        yield path
    finally:
        _remove_cgroup(path)


def _remove_cgroup(path: Path, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # busy until the last member is reaped
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _kernel_lines(*flags: str) -> list[bytes]:
    out = subprocess.run(["dmesg", *flags], capture_output=True, timeout=30, check=False).stdout
    return out.splitlines(keepends=True)


def _new_kernel_lines(before: list[bytes]) -> bytes:
    """The kernel messages printed since `before` (raw `dmesg`), as `dmesg -T` shows them.

    Positions are found on the raw form, whose timestamps never change between calls; the
    human-readable form people paste (-T) is what is kept.
    """
    after = _kernel_lines()
    if after[: len(before)] == before:
        count = len(after) - len(before)
    elif before and before[-1] in after:  # the ring buffer moved on: count from the last line seen
        count = after[::-1].index(before[-1])
    else:
        count = len(after)
    readable = _kernel_lines("-T")
    return b"".join(readable[len(readable) - count :] if count else [])


# ---------------------------------------------------------------- running


_KNOWN_OUTPUTS = (CONSOLE_LOG, KERNEL_LOG, RANK_LOG_DIR)


def _prepare(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in _KNOWN_OUTPUTS:  # only what an earlier run of the lab wrote
        target = directory / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def _collect_rank_files(work: Path, directory: Path, drop_rank: int | None) -> list[str]:
    """Copy torchrun's per-rank files (<run_id>/attempt_N/<rank>/...) out of the temporary dir."""
    kept: list[str] = []
    for src in sorted(work.rglob("*")):
        parts = src.relative_to(work).parts
        if src.name not in _RANK_FILES or len(parts) < 4 or not parts[-3].startswith("attempt_"):
            continue
        if drop_rank is not None and parts[-2] == str(drop_rank):
            continue
        rel = Path(RANK_LOG_DIR, *parts[-4:])
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, directory / rel)
        kept.append(rel.as_posix())
    return kept


def run_case(case: Case, directory: Path, *, python: str | None = None) -> RunResult:
    """Run `case` with its output captured under `directory`; never leaves a process, mount or file.

    The console (stdout and stderr of every process, merged) goes to output.log byte for byte;
    per-rank files and kernel messages are copied next to it when the case has them.
    """
    reason = skip_reason(case)
    if reason is not None:
        return RunResult(case, directory, skipped=reason)
    python = python or sys.executable
    _prepare(directory)
    _warm_up(case, python)
    token = secrets.token_hex(8)
    work = Path(tempfile.mkdtemp(prefix=f"trainmedic-lab-{case.name}-"))
    try:
        with _memory_cgroup(case, token) as cgroup:
            argv = build_command(case, python=python, work=work, cgroup=cgroup)
            kernel_before = _kernel_lines() if case.kernel_log else []
            start = time.monotonic()
            proc: subprocess.Popen[bytes] | None = None
            try:
                with (directory / CONSOLE_LOG).open("wb") as console:
                    proc = subprocess.Popen(
                        argv,
                        stdin=subprocess.DEVNULL,
                        stdout=console,
                        stderr=subprocess.STDOUT,
                        cwd=work,
                        env=_environment(case, token, work),
                        start_new_session=True,
                    )
                    returncode, timed_out, stopped = _wait(proc, case, token)
                duration = time.monotonic() - start
            finally:  # also on KeyboardInterrupt: nothing of the run may survive it
                if proc is not None and proc.poll() is None:
                    _stop(proc, token, signal.SIGKILL)
                    proc.wait()
                leftovers = kill_leftovers(token, grace=LEFTOVER_GRACE)  # before the cgroup goes
        files = [CONSOLE_LOG]
        if case.kernel_log:
            (directory / KERNEL_LOG).write_bytes(_new_kernel_lines(kernel_before))
            files.append(KERNEL_LOG)
        files += _collect_rank_files(work, directory, case.drop_rank_logs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return RunResult(
        case,
        directory,
        returncode=returncode,
        timed_out=timed_out,
        stopped=stopped,
        duration=duration,
        files=tuple(files),
        command=tuple(argv),
        leftovers=leftovers,
        work=str(work),
        token=token,
    )


def _wait(proc: subprocess.Popen[bytes], case: Case, token: str) -> tuple[int, bool, bool]:
    """Wait for the run; stop it after `stop_after` (expected) or `time_limit` (a failure)."""
    stopping = case.stop_after is not None and case.stop_after < case.time_limit
    limit = case.stop_after if stopping and case.stop_after is not None else case.time_limit
    try:
        return proc.wait(timeout=limit), False, False
    except subprocess.TimeoutExpired:
        pass
    _stop(proc, token, signal.SIGTERM)
    try:
        returncode = proc.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        _stop(proc, token, signal.SIGKILL)
        returncode = proc.wait()
    return returncode, not stopping, stopping
