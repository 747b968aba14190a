"""An in-process DataLoader guard: warns before the crash and leaves lines that `diagnose` understands.

DataLoader failures give little warning from outside: descriptors and /dev/shm fill up silently,
then a worker dies and the traceback names the consequence. Inside the training process the guard
can watch the causes as they build up:

- the wait for each batch (the first batch of an epoch without persistent workers repeats the
  workers' start-up);
- each worker's liveness and, when one dies, the signal that killed it;
- open descriptors of the main process and of each worker against RLIMIT_NOFILE;
- /dev/shm use against its size.

It writes one structured line per event on stderr, `[trainmedic] guard: <kind> key=value ...`,
and registers faulthandler on SIGUSR1, so `trainmedic run`'s watchdog can take stacks even where
py-spy cannot attach. Reading /proc never needs torch; torch is imported only to build a
DataLoader for `GuardedDataLoader`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from trainmedic.live.stacks import MAIN_THREAD_HEADER, STACK_DIR_ENV

GUARD_PREFIX = "[trainmedic] guard:"
FD_WARN = 0.9  # "fds at 90 % of ulimit -n"
SHM_WARN = 0.95  # "/dev/shm 95 % full"
SLOW_FIRST_BATCH = 10.0  # seconds: an epoch's first batch waiting longer than this is worth a line
INTERVAL = 0.5  # seconds between the monitor thread's checks
SHM_PATH = "/dev/shm"
_REARM = 0.05  # a warning re-arms once use falls this far below its threshold


def guard_line(kind: str, **fields: object) -> str:
    """`[trainmedic] guard: <kind> key=value ...`: one event, grep-able and matched by the library."""
    return " ".join([GUARD_PREFIX, kind, *(f"{k}={v}" for k, v in fields.items())])


# ---------------------------------------------------------------- /proc readers


def count_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))  # noqa: PTH208  # per batch near the limit: names only, no Paths
    except OSError:
        return None


def nofile_limit(pid: int) -> int | None:
    """The soft RLIMIT_NOFILE of a process (None when unlimited or unreadable)."""
    try:
        text = Path(f"/proc/{pid}/limits").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Max open files"):
            soft = line[len("Max open files") :].split()[0]
            return int(soft) if soft.isdigit() else None
    return None


def shm_usage(path: str = SHM_PATH) -> tuple[int, int] | None:
    """(used, size) bytes of the tmpfs behind /dev/shm."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    size = st.f_frsize * st.f_blocks
    return (size - st.f_frsize * st.f_bavail, size) if size else None


def zombie_status(pid: int) -> int | None:
    """The wait status of a dead, not yet reaped process, read without reaping it.

    Reaping is multiprocessing's business (torch asks it whether a worker is alive); a second
    waitpid from here could make it miss the death. /proc/<pid>/stat carries the exit code of a
    zombie in its last field.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()
    if not rest or rest[0] != "Z" or len(rest) < 50:
        return None
    return int(rest[49])


def child_pids(parent: int) -> list[int]:
    """Direct children of `parent` (from /proc/<pid>/task/*/children, else a scan of /proc)."""
    out: list[int] = []
    try:
        for task in Path(f"/proc/{parent}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(p) for p in (task / "children").read_text().split()]
        return out
    except OSError:
        pass
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = (entry / "stat").read_text()
                if int(text[text.rfind(")") + 2 :].split()[1]) == parent:
                    out.append(int(entry.name))
    return out


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


# ---------------------------------------------------------------- stacks on SIGUSR1

class _StackDump:
    """Where this process's SIGUSR1 dump goes; `pid` tells a forked child it is not installed yet."""

    pid = 0
    file: Any = None


def install_stack_dump(stack_dir: str | None = None) -> bool:
    """SIGUSR1 dumps every thread's Python stack (faulthandler): the watchdog's fallback to py-spy.

    Under `trainmedic run` the dump goes to a file per process in $TRAINMEDIC_STACK_DIR, whose first
    line names the main thread; otherwise to stderr. A program that handles SIGUSR1 itself keeps its
    handler. Returns whether the dump is installed in this process.
    """
    if _StackDump.pid == os.getpid():
        return True
    if signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, None):
        return False
    directory = stack_dir or os.environ.get(STACK_DIR_ENV)
    target: Any = sys.stderr
    if directory:
        try:
            target = Path(directory, f"{os.getpid()}.txt").open("a", encoding="utf-8")  # noqa: SIM115  # kept open: faulthandler writes to its fd
            ident = threading.main_thread().ident or threading.get_ident()
            target.write(f"{MAIN_THREAD_HEADER}{ident:016x}\n")
            target.flush()
        except OSError:
            target = sys.stderr
    try:
        faulthandler.register(signal.SIGUSR1, file=target, all_threads=True, chain=False)
    except (RuntimeError, ValueError, OSError, AttributeError):  # no fileno (a captured stderr), or no signal
        return False
    _StackDump.file, _StackDump.pid = target, os.getpid()
    return True


class WorkerInit:
    """worker_init_fn wrapper: each DataLoader worker registers its own stack dump file, then the user's init.

    A module-level class, so it pickles for the spawn and forkserver start methods.
    """

    def __init__(self, inner: Callable[[int], None] | None, stack_dir: str) -> None:
        self.inner = inner
        self.stack_dir = stack_dir

    def __call__(self, worker_id: int) -> None:
        _StackDump.pid = 0  # inherited from the parent by fork: this is a new process
        install_stack_dump(self.stack_dir)
        if self.inner is not None:
            self.inner(worker_id)


# ---------------------------------------------------------------- the checks


@dataclass
class GuardStats:
    """What the guard measured: the wait per batch (seconds) and each epoch's first-batch wait."""

    batches: int = 0
    total_wait: float = 0.0
    max_wait: float = 0.0
    last_wait: float = 0.0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    first_batch: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def mean_wait(self) -> float:
        return self.total_wait / self.batches if self.batches else 0.0


@dataclass(frozen=True)
class WorkerState:
    worker_id: int | None
    pid: int
    exitcode: int | None  # None while alive; negative: killed by that signal


class GuardCore:
    """The checks, shared by the DataLoader wrapper and the Lightning / HF Trainer callbacks."""

    def __init__(self, *, stream: TextIO | None = None, fd_warn: float = FD_WARN, shm_warn: float = SHM_WARN,
                 slow_first_batch: float = SLOW_FIRST_BATCH, shm_path: str = SHM_PATH,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self.fd_warn = fd_warn
        self.shm_warn = shm_warn
        self.slow_first_batch = slow_first_batch
        self.shm_path = shm_path
        self.clock = clock
        self.stats = GuardStats()
        self.epoch = 0
        self.persistent_workers = False
        self.num_workers = 0
        self.sharing_strategy = ""
        self._first = True
        self._fd_warned: set[int] = set()
        self._fd_checked = 0.0
        self._fd_ratio = 0.0
        self._shm_warned = False
        self._dead: set[int] = set()
        self._lock = threading.Lock()

    def emit(self, kind: str, **fields: object) -> str:
        line = guard_line(kind, **fields)
        stream = self._stream or sys.stderr
        with self._lock, contextlib.suppress(OSError, ValueError):
            stream.write(line + "\n")
            stream.flush()
        self.stats.warnings.append(line)
        return line

    def epoch_start(self, epoch: int, *, persistent_workers: bool, num_workers: int) -> None:
        self.epoch = epoch
        self.persistent_workers = persistent_workers
        self.num_workers = num_workers
        self._first = True

    def batch(self, wait: float) -> None:
        """A batch arrived after `wait` seconds (from the request, or the epoch's start for the first)."""
        s = self.stats
        s.batches += 1
        s.total_wait += wait
        s.max_wait = max(s.max_wait, wait)
        s.last_wait = wait
        s.recent.append(wait)
        if self._first:
            self._first = False
            s.first_batch.append(wait)
            # Epoch 0 always pays the workers' start-up; from epoch 1 on, only non-persistent workers do.
            if (self.epoch >= 1 and not self.persistent_workers and self.num_workers > 0
                    and wait >= self.slow_first_batch):
                self.emit("slow-first-batch", seconds=f"{wait:.1f}", persistent_workers=False,
                          num_workers=self.num_workers, epoch=self.epoch)
        self.check_main_fds()

    def check_main_fds(self) -> None:
        """Cheap enough per batch near the limit (descriptors can run out within a few batches)."""
        now = self.clock()
        if self._fd_ratio < 0.5 and now - self._fd_checked < 0.1:
            return
        self._fd_checked = now
        ratio = self.check_fds(os.getpid(), "main")
        if ratio is not None:
            self._fd_ratio = ratio

    def check_fds(self, pid: int, role: str, worker_id: int | None = None) -> float | None:
        open_ = count_fds(pid)
        limit = nofile_limit(pid)
        if open_ is None or not limit:
            return None
        ratio = open_ / limit
        if ratio >= self.fd_warn and pid not in self._fd_warned:
            self._fd_warned.add(pid)
            fields: dict[str, object] = {"pid": pid, "process": role}
            if worker_id is not None:
                fields["worker_id"] = worker_id
            fields.update(open=open_, limit=limit, percent=f"{100 * ratio:.0f}")
            if self.sharing_strategy:
                fields["sharing_strategy"] = self.sharing_strategy
            self.emit("fds-near-limit", **fields)
        elif ratio < self.fd_warn - _REARM:
            self._fd_warned.discard(pid)
        return ratio

    def check_shm(self) -> float | None:
        usage = shm_usage(self.shm_path)
        if usage is None:
            return None
        used, size = usage
        ratio = used / size
        if ratio >= self.shm_warn and not self._shm_warned:
            self._shm_warned = True
            self.emit("shm-near-full", path=self.shm_path, used_bytes=used, size_bytes=size,
                      percent=f"{100 * ratio:.0f}", num_workers=self.num_workers)
        elif ratio < self.shm_warn - _REARM:
            self._shm_warned = False
        return ratio

    def check_workers(self, workers: Sequence[WorkerState], shutting_down: bool = False) -> None:
        """Each worker's descriptors while it lives; its exit signal once it dies (unless shutting down)."""
        for w in workers:
            if w.exitcode is None:
                self.check_fds(w.pid, "worker", w.worker_id)
                continue
            if shutting_down or w.exitcode == 0 or w.pid in self._dead:
                continue
            self._dead.add(w.pid)
            if w.exitcode < 0:
                try:
                    sig = signal.Signals(-w.exitcode).name
                except ValueError:
                    sig = f"SIG{-w.exitcode}"
            else:
                sig = "none"
            self.emit("worker-died", pid=w.pid, worker_id="?" if w.worker_id is None else w.worker_id,
                      signal=sig, exitcode=w.exitcode, epoch=self.epoch)

    def check_all(self, workers: Sequence[WorkerState], shutting_down: bool = False) -> None:
        self.check_workers(workers, shutting_down)
        self.check_fds(os.getpid(), "main")
        self.check_shm()


class Monitor:
    """A daemon thread running the checks every `interval` seconds; a guard never breaks training."""

    def __init__(self, core: GuardCore, workers: Callable[[], tuple[list[WorkerState], bool]],
                 interval: float = INTERVAL) -> None:
        self.core = core
        self.workers = workers
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trainmedic-guard", daemon=True)

    def start(self) -> Monitor:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self) -> None:
        with contextlib.suppress(Exception):  # a /proc race or an odd loader must not kill training
            states, shutting_down = self.workers()
            self.core.check_all(states, shutting_down)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.interval + 1)


def iterator_workers(iterator: Any) -> tuple[list[WorkerState], bool]:
    """Workers of a torch multi-process DataLoader iterator, with exit codes read without reaping."""
    procs = getattr(iterator, "_workers", None) or []
    out = []
    for worker_id, w in enumerate(procs):
        pid = getattr(w, "pid", None)
        if not pid:
            continue
        status = zombie_status(pid)
        code: int | None = None
        if status is not None:
            code = -(status & 0x7F) if status & 0x7F else (status >> 8) & 0xFF
        else:
            popen = getattr(w, "_popen", None)
            code = getattr(popen, "returncode", None)  # already reaped by multiprocessing
        out.append(WorkerState(worker_id, int(pid), code))
    return out, bool(getattr(iterator, "_shutdown", False))


def worker_children(parent: int | None = None) -> list[WorkerState]:
    """DataLoader workers (comm pt_data_worker) among this process's children, for the callbacks that
    cannot reach the DataLoader's iterator (HF Trainer keeps it in a local variable). A worker that
    died stays a zombie until the DataLoader joins it (torch's SIGCHLD check waits with WNOWAIT), so
    its exit signal is read from there, without reaping it."""
    me = parent or os.getpid()
    out = []
    for pid in child_pids(me):
        if process_name(pid) != "pt_data_worker":
            continue
        status = zombie_status(pid)
        code = None if status is None else (-(status & 0x7F) if status & 0x7F else (status >> 8) & 0xFF)
        out.append(WorkerState(None, pid, code))
    return out


def _sharing_strategy() -> str:
    mp = sys.modules.get("torch.multiprocessing")
    with contextlib.suppress(Exception):
        return str(mp.get_sharing_strategy()) if mp is not None else ""
    return ""


# ---------------------------------------------------------------- the DataLoader wrapper


class GuardedLoader:
    """Iterates a DataLoader like the DataLoader itself, with the guard's checks around it.

    Everything else (len, dataset, batch_size, sampler ...) is the wrapped loader's.
    """

    def __init__(self, loader: Any, *, stream: TextIO | None = None, fd_warn: float = FD_WARN,
                 shm_warn: float = SHM_WARN, slow_first_batch: float = SLOW_FIRST_BATCH,
                 interval: float = INTERVAL, shm_path: str = SHM_PATH) -> None:
        self.loader = loader
        self.core = GuardCore(stream=stream, fd_warn=fd_warn, shm_warn=shm_warn,
                              slow_first_batch=slow_first_batch, shm_path=shm_path)
        self.interval = interval
        self._epoch = 0
        install_stack_dump()
        stack_dir = os.environ.get(STACK_DIR_ENV)
        has_workers = bool(getattr(loader, "num_workers", 0))
        wrapped = isinstance(getattr(loader, "worker_init_fn", None), WorkerInit)
        if stack_dir and has_workers and not wrapped:
            with contextlib.suppress(AttributeError, ValueError):
                loader.worker_init_fn = WorkerInit(loader.worker_init_fn, stack_dir)

    @property
    def stats(self) -> GuardStats:
        return self.core.stats

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not set yet (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __iter__(self) -> Iterator[Any]:
        core = self.core
        core.sharing_strategy = _sharing_strategy()
        epoch, self._epoch = self._epoch, self._epoch + 1
        started = time.monotonic()
        iterator = iter(self.loader)
        core.epoch_start(epoch, persistent_workers=bool(getattr(self.loader, "persistent_workers", False)),
                         num_workers=int(getattr(self.loader, "num_workers", 0) or 0))
        monitor = Monitor(core, lambda: iterator_workers(iterator), self.interval).start()
        try:
            asked = started
            while True:
                try:
                    batch = next(iterator)
                except StopIteration:
                    return
                core.batch(time.monotonic() - asked)
                yield batch
                asked = time.monotonic()
        finally:
            monitor.stop()
            monitor.tick()  # a worker that died as the epoch failed still gets its line


class GuardedDataLoader(GuardedLoader):
    """`torch.utils.data.DataLoader(*args, **kwargs)`, guarded. Guard options are keyword-only."""

    def __init__(self, *args: Any, stream: TextIO | None = None, fd_warn: float = FD_WARN,
                 shm_warn: float = SHM_WARN, slow_first_batch: float = SLOW_FIRST_BATCH,
                 interval: float = INTERVAL, shm_path: str = SHM_PATH, **kwargs: Any) -> None:
        from torch.utils.data import DataLoader

        super().__init__(DataLoader(*args, **kwargs), stream=stream, fd_warn=fd_warn, shm_warn=shm_warn,
                         slow_first_batch=slow_first_batch, interval=interval, shm_path=shm_path)


def guard(loader: Any, **options: Any) -> GuardedLoader:
    """Wrap an existing DataLoader: `for batch in guard(loader): ...`. Options as for GuardedLoader."""
    return loader if isinstance(loader, GuardedLoader) else GuardedLoader(loader, **options)


class _CallableModule(types.ModuleType):
    """`trainmedic.torch.guard(loader)` must keep working once this submodule is imported.

    Importing a submodule sets it as an attribute of its package, replacing the package's lazy
    `guard` function of the same name; a callable module keeps both spellings working.
    """

    def __call__(self, loader: Any, **options: Any) -> GuardedLoader:
        return guard(loader, **options)


sys.modules[__name__].__class__ = _CallableModule
