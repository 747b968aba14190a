"""`trainmedic isolate`: run the user's dataset with 0, 1 and N workers, one fresh subprocess each.

Changing one variable at a time is the cheapest way to confirm a DataLoader diagnosis: an error that
shows at num_workers=0 too is the dataset's, one that needs workers is about processes, shared memory
or descriptors, and one that vanishes with the file_system sharing strategy was descriptors. Every run
is a fresh Python process in its own process group, sampled from outside and killed with its whole
group at the time limit, so a crash, a leak or a hang in the user's code never reaches the caller.
Nothing here imports torch or the user's code.

The parts, one job each:

- results: the values handed back (IsolateRun, IsolateReport, Conclusion, ...);
- sampler: RSS, descriptors and /dev/shm use of a run's processes, measured from outside;
- supervisor: starting one child (trainmedic.torch._isolate_child) under its time limits;
- stacks: the faulthandler dump of a stuck run, and the frame it was stuck in;
- diagnosis: each run's output through `trainmedic.api.Diagnoser`, plus what was measured;
- conclusion: comparing the runs into one verdict.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainmedic.api import Diagnoser
from trainmedic.catalog import Library, LibraryError
from trainmedic.torch.isolate.conclusion import conclude, descriptor_suspects
from trainmedic.torch.isolate.diagnosis import OutputWatch, classify, machine_facts
from trainmedic.torch.isolate.results import Conclusion, IsolateError, IsolateReport, IsolateRun, ProcessPeak
from trainmedic.torch.isolate.sampler import shm_size as host_shm_size
from trainmedic.torch.isolate.supervisor import (
    DEFAULT_STARTUP_TIMEOUT,
    Options,
    factory_spec,
    int_or_none,
    run_once,
)

__all__ = [
    "Conclusion",
    "IsolateError",
    "IsolateReport",
    "IsolateRun",
    "ProcessPeak",
    "conclude",
    "factory_spec",
    "isolate",
]

DEFAULT_PREFETCH = 2


def isolate(
    factory: str | Callable[..., Any],
    *,
    workers: int = 4,
    batch_size: int | None = None,
    batches: int = 10,
    timeout: float = 60.0,
    startup_timeout: float | None = None,
    nofile: int | None = None,
    python: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    progress: Callable[[IsolateRun], None] | None = None,
    library: Library | None = None,
) -> IsolateReport:
    """Iterate `batches` batches of the factory's loader with 0, 1 and `workers` workers, each in a
    fresh subprocess, rerun with the file_system sharing strategy when descriptors are the suspect,
    and conclude with a library id such as `dataloader-worker-failure/<cause>`.

    Each run gets `startup_timeout` seconds (default 120, or `timeout` if larger) to import and call
    the factory, then `timeout` seconds for its batches; a run past either is killed and is a hang.

    `factory` is "module:function" (module dotted or a .py path) or a module-level callable; it returns
    a Dataset (batched with `batch_size`, default 1) or a DataLoader (its settings are kept; `batch_size`
    overrides). `nofile` sets RLIMIT_NOFILE in the runs, to reproduce a limit. Each run's output is
    diagnosed with `library` (default: the one `diagnose` uses). Raises IsolateError when the factory
    cannot be imported, called or used.
    """
    if workers < 1:
        raise IsolateError("--workers must be at least 1 (0 and 1 are always run)")
    if batches < 1:
        raise IsolateError("--batches must be at least 1")
    if batch_size is not None and batch_size < 1:
        raise IsolateError("--batch-size must be at least 1")
    if timeout <= 0:
        raise IsolateError("--timeout must be positive")
    if startup_timeout is not None and startup_timeout <= 0:
        raise IsolateError("--startup-timeout must be positive")
    if nofile is not None and nofile < 32:
        raise IsolateError("--nofile below 32 leaves Python too few descriptors to start")
    spec = factory_spec(factory)
    opts = Options(
        spec=spec,
        batch_size=batch_size,
        batches=batches,
        timeout=float(timeout),
        startup_timeout=float(startup_timeout or max(DEFAULT_STARTUP_TIMEOUT, timeout)),
        nofile=nofile,
        python=python or sys.executable,
        cwd=str(cwd or Path.cwd()),
        env=dict(os.environ if env is None else env),
        # The caller's import path, so a factory it can import the child can too (same interpreter only).
        sys_path=tuple(p for p in sys.path if p) if python in (None, sys.executable) else (),
    )
    diagnoser = Diagnoser(library)
    try:
        diagnoser.warm()  # the pattern database, once, before the first run needs it
    except LibraryError as exc:
        raise IsolateError(f"library: {exc}") from exc

    runs: list[IsolateRun] = []
    loader: dict[str, Any] = {}
    shm_size_child: int | None = None

    def diagnosed(run: IsolateRun, oom_kills: int | None = None) -> IsolateRun:
        """The run classified with what was measured so far: its shm demand once a batch size is known,
        the OOM kills its memory cgroup counted while it ran."""
        batch_bytes = next((r.batch_bytes for r in (*runs, run) if r.batch_bytes is not None), None)
        prefetch = int_or_none(loader.get("prefetch_factor")) or DEFAULT_PREFETCH
        demand = run.num_workers * prefetch * batch_bytes if batch_bytes is not None and run.num_workers else None
        size = shm_size_child if shm_size_child is not None else host_shm_size()
        run = classify(run, diagnoser, machine_facts(shm_size=size, shm_demand=demand, oom_kills=oom_kills))
        runs.append(run)
        if progress:
            progress(run)
        return run

    for count in sorted({0, 1, workers}):
        run, events, kills = _run_counted(opts, count, "file_descriptor", OutputWatch(diagnoser))
        setup = next((e for e in events if e.get("event") == "setup_error"), None)
        if setup is not None:
            stage = {"import": "cannot import", "factory": "the factory failed", "build": "cannot build"}
            raise IsolateError(f"{stage.get(str(setup.get('stage')), 'cannot use')} {spec}: {setup.get('final')}")
        if count == 0 and not events and not run.hang:
            last = [line for line in run.output.splitlines() if line.strip()]
            raise IsolateError(f"the subprocess ({opts.python}) did not start: {last[-1] if last else 'no output'}")
        for event in events:
            if event.get("event") == "loader" and not loader:
                loader = {k: v for k, v in event.items() if k not in ("event", "t")}
            if event.get("event") == "start" and shm_size_child is None:
                shm_size_child = int_or_none(event.get("shm_size"))
        run = diagnosed(run, kills)
        if count == 0 and run.hang and run.startup is None:
            break  # the import or the factory itself hangs: every other run would wait as long

    suspects = descriptor_suspects(runs)
    if suspects:
        run, _, kills = _run_counted(opts, max(r.num_workers for r in suspects), "file_system",
                                     OutputWatch(diagnoser))
        diagnosed(run, kills)

    batch_bytes = next((r.batch_bytes for r in runs if r.batch_bytes is not None), None)
    prefetch = int_or_none(loader.get("prefetch_factor")) or DEFAULT_PREFETCH
    shm_demand = workers * prefetch * batch_bytes if batch_bytes is not None else None
    shm_size = shm_size_child if shm_size_child is not None else host_shm_size()
    runs_t = tuple(runs)
    return IsolateReport(
        factory=spec,
        workers=workers,
        batches=batches,
        timeout=float(timeout),
        runs=runs_t,
        batch_size=int_or_none(loader.get("batch_size")),
        prefetch_factor=prefetch,
        batch_bytes=batch_bytes,
        shm_demand=shm_demand,
        shm_size=shm_size,
        conclusion=conclude(runs_t, shm_demand=shm_demand, shm_size=shm_size, diagnoser=diagnoser),
        loader=loader,
    )


def cgroup_oom_kills() -> int | None:
    """The OOM kills this process's memory cgroup has counted (None: no cgroup to ask). The runs' workers
    share it, so the count rising during a run is an OOM kill of one of them."""
    from trainmedic.probes.base import ProbeContext
    from trainmedic.probes.memory import read_cgroup_memory

    try:
        found = read_cgroup_memory(ProbeContext())
    except OSError:
        return None
    return found.oom_kills if found is not None else None


def _run_counted(opts: Options, count: int, strategy: str,
                 watch: OutputWatch) -> tuple[IsolateRun, list[dict[str, Any]], int | None]:
    """One run, and the OOM kills the memory cgroup counted while it ran (None: not countable)."""
    before = cgroup_oom_kills()
    run, events = run_once(opts, count, strategy, watch)
    after = cgroup_oom_kills()
    return run, events, after - before if before is not None and after is not None and after >= before else None


class _CallableModule(types.ModuleType):
    """`trainmedic.torch.isolate(...)` must work after this package is imported too.

    Importing a submodule sets it as an attribute of its package, replacing the package's lazy
    `isolate` function of the same name; a callable module keeps both `trainmedic.torch.isolate(...)`
    and `import trainmedic.torch.isolate as m` working.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> IsolateReport:
        return isolate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
