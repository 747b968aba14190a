"""The code `trainmedic isolate` runs inside each fresh subprocess: build the user's loader, iterate it, report.

It lives apart from the trainmedic.torch.isolate package (whose supervisor starts it) so the parent
never imports torch or the user's code (a crash, a hang or a leak then stays in a process the parent
can kill). It talks to the parent through one JSON-lines file, one line per event, flushed at once, so
a crash loses at most the line being written. It imports nothing from trainmedic: the child only needs
torch and the user's module.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import json
import os
import resource
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SETUP = 3  # the factory could not be imported, called or used: a usage error, not a finding
# The parent sends this to stuck workers just before it kills them; each dumps its Python stacks.
DUMP_SIGNAL = signal.SIGUSR1


class Events:
    """Append-only JSON lines to the parent; each write is flushed so a crash loses at most one line."""

    def __init__(self, path: str) -> None:
        self._file: IO[str] = Path(path).open("a", encoding="utf-8")  # noqa: SIM115  # lives until os._exit

    def emit(self, event: str, **fields: Any) -> None:
        self._file.write(json.dumps({"event": event, "t": time.time(), **fields}, default=str) + "\n")
        self._file.flush()


class SetupError(Exception):
    """The factory spec cannot be turned into a loader; the parent reports it as a usage error."""


def load_factory(spec: str) -> Any:
    """Import `module:attr` where module is dotted (from sys.path) or a path to a .py file."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise SetupError(f"expected MODULE:FACTORY, got {spec!r}")
    if module_part.endswith(".py") or os.sep in module_part:
        path = Path(module_part).resolve()
        if not path.is_file():
            raise SetupError(f"no such file: {module_part}")
        # Its folder joins sys.path so the module imports its siblings and spawned workers (which
        # unpickle the dataset by module name) find it; last, so a folder named torch cannot shadow torch.
        if str(path.parent) not in sys.path:
            sys.path.append(str(path.parent))
        name = path.stem
        loaded = sys.modules.get(name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path:
            name = f"_trainmedic_isolate_{path.stem}"
        spec_obj = importlib.util.spec_from_file_location(name, path)
        if spec_obj is None or spec_obj.loader is None:
            raise SetupError(f"cannot import {module_part}")
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[name] = module
        spec_obj.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SetupError(f"{module_part} has no attribute {attr!r}") from None
    return obj


def final_line(exc: BaseException) -> str:
    """The line that says what went wrong; for a worker's error, the original exception's last line."""
    text = "".join(traceback.format_exception_only(type(exc), exc))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if "Original Traceback" in text:
        return lines[-1]
    return lines[0]


def tensor_bytes(obj: Any, depth: int = 0) -> int:
    """Sum of tensor nbytes in a (nested) batch: what the workers must put in shared memory."""
    import torch

    if depth > 20:
        return 0
    if isinstance(obj, torch.Tensor):
        return int(obj.nbytes)
    if isinstance(obj, Mapping):
        return sum(tensor_bytes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(tensor_bytes(v, depth + 1) for v in obj)
    return 0


class WorkerInit:
    """Makes each worker dump its stacks on SIGUSR1, then calls the user's worker_init_fn.

    Forked workers inherit the handler already; spawned ones need it here. A module-level class (not
    a closure) so spawned workers can unpickle it.
    """

    def __init__(self, user_fn: Callable[[int], Any] | None) -> None:
        self.user_fn = user_fn

    def __call__(self, worker_id: int) -> None:
        faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True)
        if self.user_fn is not None:
            self.user_fn(worker_id)


def build_loader(obj: Any, config: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A DataLoader with the requested worker count, keeping everything else the user chose."""
    from torch.utils.data import DataLoader, Dataset, IterableDataset

    workers = int(config["num_workers"])
    batch_size = config.get("batch_size")
    kwargs: dict[str, Any] = {"num_workers": workers, "pin_memory": False}
    user_init = None
    prefetch = None
    context = None
    if isinstance(obj, DataLoader):
        kind = "DataLoader"
        dataset = obj.dataset
        kwargs.update(collate_fn=obj.collate_fn, drop_last=obj.drop_last, timeout=obj.timeout)
        if obj.generator is not None:
            kwargs["generator"] = obj.generator
        if not isinstance(dataset, IterableDataset):
            kwargs["sampler"] = obj.sampler
        if batch_size is not None:
            kwargs["batch_size"] = batch_size
        elif obj.batch_size is None and obj.batch_sampler is not None:
            kwargs.pop("sampler", None)
            kwargs.pop("drop_last")
            kwargs["batch_sampler"] = obj.batch_sampler
        else:
            kwargs["batch_size"] = obj.batch_size
        user_init = obj.worker_init_fn
        prefetch = obj.prefetch_factor
        context = obj.multiprocessing_context
    elif isinstance(obj, Dataset):
        kind = "IterableDataset" if isinstance(obj, IterableDataset) else "Dataset"
        dataset = obj
        kwargs["batch_size"] = batch_size if batch_size is not None else 1
    else:
        raise SetupError(f"the factory returned {type(obj).__name__}, not a torch Dataset or DataLoader")
    prefetch = prefetch or 2
    if workers > 0:
        kwargs["prefetch_factor"] = prefetch
        kwargs["worker_init_fn"] = WorkerInit(user_init)
        if context is not None:
            kwargs["multiprocessing_context"] = context
    elif user_init is not None:
        kwargs["worker_init_fn"] = user_init
    loader = DataLoader(dataset, **kwargs)
    try:
        length: int | None = len(dataset)  # type: ignore[arg-type]  # Dataset may define __len__
    except TypeError:
        length = None
    info = {
        "kind": kind,
        "dataset": type(dataset).__qualname__,
        "length": length,
        "batch_size": loader.batch_size,
        "prefetch_factor": prefetch,
        "start_method": _start_method(context),
    }
    return loader, info


def _start_method(context: Any) -> str:
    if context is not None:
        return str(context.get_start_method()) if hasattr(context, "get_start_method") else str(context)
    import multiprocessing

    return str(multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_start_method())


def _apply_nofile(nofile: int | None) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if nofile is not None:
        soft = nofile if hard == resource.RLIM_INFINITY else min(nofile, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


def _shm_size() -> int | None:
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def run(config: Mapping[str, Any], events: Events) -> int:
    """Import, build, iterate; every outcome becomes an event. Returns the exit code."""
    fd_limit = _apply_nofile(config.get("nofile"))
    faulthandler.enable(file=sys.stderr)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True)
    dump_at = float(config["dump_at"])
    _arm_dump(dump_at)
    for entry in config.get("sys_path", []):
        if entry not in sys.path:
            sys.path.append(entry)
    events.emit("start", pid=os.getpid(), fd_limit=fd_limit, shm_size=_shm_size())

    stage = "import"
    try:
        target = load_factory(str(config["factory"]))
        stage = "factory"
        obj = target() if callable(target) and not _is_data(target) else target
        stage = "build"
        import torch.multiprocessing

        strategy = str(config.get("sharing_strategy") or "file_descriptor")
        if strategy != torch.multiprocessing.get_sharing_strategy():  # type: ignore[no-untyped-call]
            torch.multiprocessing.set_sharing_strategy(strategy)  # type: ignore[no-untyped-call]
        loader, info = build_loader(obj, config)
    except BaseException as exc:
        events.emit(
            "setup_error",
            stage=stage,
            type=type(exc).__name__,
            final=exc.args[0] if isinstance(exc, SetupError) else final_line(exc),
            traceback="".join(traceback.format_exception(exc)),
        )
        return EXIT_SETUP
    # From here the batch time limit runs (the parent starts it on this event).
    faulthandler.cancel_dump_traceback_later()
    dump_at = time.time() + float(config["iterate_dump_after"])
    events.emit("loader", sharing_strategy=strategy, **info)

    batches = int(config["batches"])
    done = 0
    started = time.monotonic()
    iterator = None
    try:
        # faulthandler's watchdog thread does not survive fork, but its "running" state does: a worker
        # forked while it is armed deadlocks on its first faulthandler call. Disarm around the fork.
        faulthandler.cancel_dump_traceback_later()
        iterator = iter(loader)
        _arm_dump(dump_at)
        for batch in iterator:
            if done == 0:
                events.emit("first_batch", seconds=time.monotonic() - started, batch_bytes=tensor_bytes(batch))
            done += 1
            events.emit("batch", n=done)
            del batch
            if done >= batches:
                break
    except BaseException as exc:
        events.emit(
            "error",
            type=type(exc).__name__,
            final=final_line(exc),
            traceback="".join(traceback.format_exception(exc)),
            batches=done,
        )
        _report_processes(events, iterator)
        # Do not wait for workers that may be stuck: the parent kills the whole process group.
        return EXIT_FAILED
    _report_processes(events, iterator)
    # A clean shutdown lets the workers (and torch's shm manager) release shared memory themselves.
    del iterator
    events.emit("done", batches=done, seconds=time.monotonic() - started)
    return EXIT_OK


def proc_facts(pid: int) -> dict[str, Any] | None:
    """Peak RSS (the kernel's high-water mark, exact where sampling is not) and open descriptors."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
        fds = len(os.listdir(f"/proc/{pid}/fd"))  # noqa: PTH208  # only the count is needed
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    hwm = fields.get("VmHWM", "").split()
    return {
        "pid": pid,
        "name": fields.get("Name", "").strip(),
        "peak_rss": int(hwm[0]) * 1024 if hwm and hwm[0].isdigit() else None,
        "fds": fds,
    }


def _report_processes(events: Events, iterator: Any) -> None:
    """The main process's and each live worker's facts, read before the workers are shut down: a
    short run can end between two of the parent's samples."""
    try:
        pids = [int(w.pid) for w in getattr(iterator, "_workers", None) or [] if w.pid]
        workers = [f for f in map(proc_facts, pids) if f is not None]
        events.emit("processes", main=proc_facts(os.getpid()), workers=workers)
    except Exception as exc:  # best effort: never hide the run's own outcome
        events.emit("processes_error", error=repr(exc))


def _arm_dump(dump_at: float) -> None:
    """Dump this process's stacks shortly before the parent's time limit, in case it hangs."""
    remaining = dump_at - time.time()
    if remaining > 0:
        faulthandler.dump_traceback_later(remaining, exit=False, file=sys.stderr)


def _is_data(obj: Any) -> bool:
    """A module-level Dataset or DataLoader instance is used as is, not called."""
    from torch.utils.data import DataLoader, Dataset

    return isinstance(obj, (Dataset, DataLoader))


def main(argv: list[str] | None = None) -> None:
    """Entry point: `python -c 'from trainmedic.torch._isolate_child import main; main()' CONFIG.json`."""
    args = sys.argv[1:] if argv is None else argv
    config = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    events = Events(str(config["events"]))
    code = run(config, events)
    faulthandler.cancel_dump_traceback_later()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
