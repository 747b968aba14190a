"""One verdict from the runs: change one variable at a time and see which change matters.

Each failed run arrives diagnosed (trainmedic.torch.isolate.diagnosis): the reasoner's finding on
its output and how sure it is, or what the measurements say. This module adds what only comparing
runs can tell: a failure at num_workers=0 too is the dataset's own; a failure only with workers is
about processes, shared memory or descriptors; one that the file_system sharing strategy makes pass
was descriptors; and a /dev/shm smaller than the batches in flight decides between the causes a
vague worker death could have. The ids, titles and fixes are the library's.
"""

from __future__ import annotations

from trainmedic.api import Diagnoser
from trainmedic.catalog import Library
from trainmedic.torch.isolate.diagnosis import (
    DATASET,
    FDS,
    HANG,
    SHM,
    alternatives,
    classify,
    machine_facts,
)
from trainmedic.torch.isolate.results import Conclusion, IsolateRun
from trainmedic.torch.isolate.stacks import stuck_frame

# Below this the reasoner's own finding is less likely than not: a measurement may then decide
# between it and the alternatives the reasoner names (a vague "worker exited unexpectedly" with a
# /dev/shm too small for the batches in flight is shm exhaustion).
UNSURE = 0.5


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def unsure(run: IsolateRun) -> bool:
    """Neither the log nor a measurement names the cause firmly: nothing named one, the reasoner's
    confidence is low, or the reasoner itself says a missing fact would decide (an unconfirmed kill
    or "exited unexpectedly": calibrated on real logs it may be likely, yet it is not settled)."""
    confidence = run.confidence
    if run.cause is None or (confidence is not None and confidence < UNSURE):
        return True
    primary = run.diagnosis.primary if run.diagnosis is not None else None
    return primary is not None and primary.id == run.cause and bool(primary.missing)


def open_to(run: IsolateRun, cause: str) -> bool:
    """Whether a measurement may settle this failed run as `cause`: nothing named a cause, or the
    reasoner is unsure and names `cause` among the alternatives."""
    return run.cause is None or (unsure(run) and cause in alternatives(run))


def descriptor_suspects(runs: tuple[IsolateRun, ...] | list[IsolateRun]) -> list[IsolateRun]:
    """Runs with workers that make descriptors a suspect, worth a rerun with file_system sharing."""
    return [
        r
        for r in runs
        if r.num_workers > 0
        and r.sharing_strategy != "file_system"
        and (r.cause == FDS or r.fds_near_limit or (not r.ok and r.cause is not None and open_to(r, FDS)))
    ]


def _strength(run: IsolateRun) -> tuple[int, float]:
    """How firmly a failed run's cause is named: a sure finding of the reasoner, then a measurement
    (a hang, a signal), then an unsure finding, then nothing."""
    confidence = run.confidence
    if confidence is not None:
        return (0 if unsure(run) else 2, confidence)
    return (1 if run.cause is not None else 0, 0.0)


def _describe(library: Library, cause: str) -> tuple[str, tuple[str, ...]]:
    try:
        _, found = library.resolve(cause)
    except KeyError:
        return "", ()
    return (found.title, found.fix) if found is not None else ("", ())


def _unconfirmed(run: IsolateRun, cause: str, library: Library) -> str:
    """What is still missing to confirm the cause: the reasoner's list for its finding (facts it was
    given are not missing), the library's for a cause named by a measurement."""
    primary = run.diagnosis.primary if run.diagnosis is not None else None
    if primary is not None and primary.id == cause:
        missing = primary.missing
    else:
        try:
            missing = library.cause(cause).missing
        except KeyError:
            missing = ()
    if not missing:
        return ""
    m = missing[0]
    return f"; not confirmed without {m.fact}: `{m.command}`"


def conclude(
    runs: tuple[IsolateRun, ...],
    *,
    shm_demand: int | None,
    shm_size: int | None,
    diagnoser: Diagnoser | None = None,
) -> Conclusion:
    """One verdict from the runs. A failed run not yet diagnosed is diagnosed here."""
    diagnoser = diagnoser or Diagnoser()
    library = diagnoser.library
    facts = machine_facts(shm_size=shm_size)
    runs = tuple(r if r.ok or r.diagnosis is not None else classify(r, diagnoser, facts) for r in runs)

    def done(cause: str | None, why: str, run: IsolateRun | None = None) -> Conclusion:
        if cause is None:
            return Conclusion(None, why)
        title, fix = _describe(library, cause)
        confidence = run.confidence if run is not None and run.cause == cause else None
        return Conclusion(cause, why, title, fix, confidence)

    base = [r for r in runs if r.sharing_strategy != "file_system"]
    zero = next((r for r in base if r.num_workers == 0), None)
    if zero is not None and not zero.ok:
        if zero.hang:
            where = stuck_frame(zero.stack)
            at = f" (stuck at {where})" if where else ""
            if zero.startup is None:
                return done(HANG, f"{zero.error}{at}: the factory itself blocks, before any worker")
            return done(HANG, f"hangs at num_workers=0 too{at}: the dataset itself blocks, not the workers")
        if zero.cause is not None and zero.cause != DATASET:
            return done(zero.cause, f"fails at num_workers=0 too: {zero.error}", zero)
        return done(DATASET, f"fails at num_workers=0 too → the dataset, not the workers: {zero.error}", zero)

    failed = [r for r in base if not r.ok and r.num_workers > 0]
    rerun = [r for r in runs if r.sharing_strategy == "file_system"]
    over = shm_demand is not None and shm_size is not None and shm_demand > shm_size
    demand = (
        f"shm demand {fmt_bytes(shm_demand)} (workers × prefetch_factor × batch bytes) "
        f"vs /dev/shm {fmt_bytes(shm_size)}"
    )
    if not failed:
        parts = [f"passes with num_workers={', '.join(str(r.num_workers) for r in base)}"]
        near = [r for r in base if r.fds_near_limit]
        if near:
            parts.append(f"but descriptors reached {near[0].max_fds} of the {near[0].fd_limit} limit")
        if over:
            parts.append(f"but the {demand} leaves no margin")
        return done(None, "healthy: " + "; ".join(parts))

    # The run whose cause is named most firmly leads; among equals, the one with fewest workers.
    best = max(_strength(r) for r in failed)
    run = next(r for r in failed if _strength(r) == best)
    cause = run.cause
    fixed = [r for r in rerun if r.ok]
    if over and open_to(run, SHM):
        cause = SHM
    elif open_to(run, FDS) and (fixed or run.fds_near_limit):
        cause = FDS
    lead = "passes at num_workers=0, fails "
    said = f"with num_workers={run.num_workers}: {run.evidence or run.error}"

    if cause == SHM:
        said = said if run.cause == SHM else f"with workers: {run.error}"
        return done(SHM, f"{lead}{said}; {demand}", run)
    if cause == FDS:
        if fixed:
            tail = f"; passes with sharing strategy file_system (num_workers={fixed[0].num_workers})"
        elif rerun:
            tail = f"; still fails with file_system ({rerun[0].error}): raise `ulimit -n` too"
        else:
            tail = ""
        return done(FDS, f"{lead}on descriptors {said}{tail}", run)
    if cause == HANG and run.hang:
        where = stuck_frame(run.stack)
        at = f"; stuck at {where}" if where else ""
        return done(
            HANG, f"{lead}with num_workers={run.num_workers}: no batch for the rest of the time limit (hang){at}", run
        )
    if cause is None or cause == DATASET:
        return done(
            DATASET,
            f"{lead}{said}: the dataset raises only inside workers "
            "(code that depends on worker state or on what fork copied)",
            run,
        )
    return done(cause, f"{lead}{said}{_unconfirmed(run, cause, library)}", run)
