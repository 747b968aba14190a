"""What each run's evidence points at: its output read by the reasoner, and what was measured.

A run's log is what it printed (stdout and stderr, then the exception the child reported, where
Python would have printed it) and goes through `trainmedic.api.Diagnoser` like any other log (scan,
then reason: what `Diagnoser.diagnose` does, keeping the matched lines at hand for the evidence), with
the machine facts the supervisor measured (RLIMIT_NOFILE, /dev/shm size and demand), so isolate and
`diagnose` give the same id for the same text. Recognising failures is the library's job; this module
holds no patterns. Only what the log cannot say comes from measurements: a run killed at its time
limit without a batch hung, and a run whose main process died of a signal, with nothing printed,
died of that signal.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Sequence
from dataclasses import replace

from trainmedic.api import Diagnoser, InputError, Named
from trainmedic.model import Fact, Finding, ScanResult
from trainmedic.torch.isolate.results import IsolateRun
from trainmedic.torch.isolate.stacks import stuck_frame
from trainmedic.torch.isolate.supervisor import signal_name

# The library's ids for what isolate measures or compares itself; which text means what is the library's.
ENTRY = "dataloader-worker-failure"
HANG = f"{ENTRY}/worker-hang"  # no batch before the time limit
DATASET = f"{ENTRY}/getitem-exception"  # fails without workers too: the dataset's own code
SHM = f"{ENTRY}/shm-exhausted"  # batches in flight need more /dev/shm than there is
FDS = f"{ENTRY}/fd-exhaustion"  # the file_system sharing strategy makes it pass
# The run's main process died of a signal and printed nothing the library recognises.
EXIT_SIGNALS: dict[int, str] = {
    signal.SIGBUS: SHM,  # a page of a /dev/shm file that tmpfs could not back
    signal.SIGSEGV: f"{ENTRY}/worker-segfault",
    signal.SIGABRT: f"{ENTRY}/worker-segfault",
    signal.SIGFPE: f"{ENTRY}/worker-segfault",
    signal.SIGILL: f"{ENTRY}/worker-segfault",
    signal.SIGKILL: f"{ENTRY}/worker-killed",
}
# Findings after which the loader stops delivering batches instead of raising: a worker that cannot
# pass a descriptor drops its batch, and the main process waits for it forever.
STALLS = frozenset({FDS})
SOURCE = "trainmedic isolate"


def log_name(run: IsolateRun) -> str:
    """The run's log as the reasoner names it in evidence (not a per-rank name: isolate has no ranks)."""
    return f"isolate-num_workers-{run.num_workers}-{run.sharing_strategy}.log"


def run_log(run: IsolateRun) -> bytes:
    """What the run printed, then the exception the child caught, where Python would have printed it.

    A run with workers starts with isolate's own line saying so: the reasoner reads a fork error
    differently when the input shows DataLoader worker processes (library: `needs_context`)."""
    head = (f"isolate: DataLoader(num_workers={run.num_workers}) reads through {run.num_workers} worker process(es)"
            if run.num_workers > 0 else "")
    return "\n".join(part.rstrip("\n") for part in (head, run.output, run.traceback) if part).encode()


def machine_facts(
    *, fd_limit: int | None = None, shm_size: int | None = None, shm_demand: int | None = None,
    oom_kills: int | None = None,
) -> tuple[Fact, ...]:
    """Measurements as the reasoner's facts: they confirm or weaken shm and descriptor findings, and the
    OOM kills the memory cgroup counted during the run tell an OOM kill from another SIGKILL."""
    facts = []
    if oom_kills is not None:
        facts.append(Fact("memory.oom_kill_count", str(oom_kills), SOURCE))
    if fd_limit is not None:
        facts.append(Fact("nofile.soft", str(fd_limit), SOURCE))
    if shm_size is not None:
        facts.append(Fact("shm.size_bytes", str(shm_size), SOURCE))
    if shm_demand is not None:
        facts.append(Fact("shm.demand_bytes", str(shm_demand), SOURCE))
    return tuple(facts)


def classify(run: IsolateRun, diagnoser: Diagnoser, facts: Iterable[Fact] = ()) -> IsolateRun:
    """The run with `cause`, `evidence` and `diagnosis` filled in; a passing run is returned as is.

    The reasoner's primary finding on the run's log is the cause. When the log names none, the
    measurements do: a hang is `worker-hang` (evidence: the frame the run was stuck in), a death by
    signal is what that signal means for a DataLoader. Otherwise the cause stays None: the run failed
    and neither its log nor the measurements say why (the conclusion compares it with the others).
    """
    if run.ok:
        return run
    own = machine_facts(fd_limit=run.fd_limit)
    extra = tuple(f for f in facts if f.id not in {o.id for o in own})
    scans = diagnoser.scan([Named(log_name(run), run_log(run))])
    diagnosis = diagnoser.reason(scans, (*own, *extra))
    primary = diagnosis.primary
    # A fallback (an unclassified exception, a generic stall) names no cause: the measurements and
    # the comparison between runs still decide, as when the log names nothing.
    if primary is not None and primary.id not in diagnoser.library.fallbacks:
        return replace(run, cause=primary.id, evidence=_evidence(primary, scans, run), diagnosis=diagnosis)
    if run.hang:
        return replace(run, cause=HANG, evidence=stuck_frame(run.stack) or run.error or "", diagnosis=diagnosis)
    if run.returncode is not None and run.returncode < 0:
        cause = EXIT_SIGNALS.get(-run.returncode)
        if cause is not None:
            evidence = run.error or f"the run's main process was killed by signal {signal_name(-run.returncode)}"
            return replace(run, cause=cause, evidence=evidence, diagnosis=diagnosis)
    return replace(run, cause=None, evidence=run.error or "", diagnosis=diagnosis)


def _evidence(primary: Finding, scans: Sequence[ScanResult], run: IsolateRun) -> str:
    """The line behind the finding: one the library matched for the finding's own cause (not the
    wrapper around it), preferably in what the loader raised (the child's traceback), which says
    plainly what a worker's own stderr line says too."""
    own = {(m.line.path, m.line.number) for s in scans for m in s.matches if m.cause == primary.id}
    lines = [e.text.strip() for e in primary.evidence if (e.path, e.line) in own and e.text.strip()]
    lines = lines or [e.text.strip() for e in primary.evidence if e.text.strip()]
    return next((line for line in lines if line in run.traceback), lines[0] if lines else "")


def alternatives(run: IsolateRun) -> frozenset[str]:
    """The ids the reasoner found competing with (or seen after) the run's primary finding."""
    if run.diagnosis is None:
        return frozenset()
    return frozenset(a.id for a in run.diagnosis.alternatives)


class OutputWatch:
    """A run's output, read by the reasoner as it arrives: names the line once it shows a failure
    after which the loader stalls (see STALLS), so the supervisor can stop waiting for batches."""

    def __init__(self, diagnoser: Diagnoser, name: str = "isolate-output.log", facts: Iterable[Fact] = ()) -> None:
        self._diagnoser = diagnoser
        self._facts = tuple(facts)
        self._state = diagnoser.stream(name)
        self._reading = True
        self._matches = 0

    def __call__(self, data: bytes) -> str | None:
        if not data or not self._reading:
            return None
        try:
            # Worker crash messages end with a NUL byte: not a sign of a binary file.
            self._state.feed(data.replace(b"\x00", b""))
            self._state.flush()
            scan = self._state.snapshot()
        except InputError:  # not text after all: nothing more to read here
            self._reading = False
            return None
        if len(scan.matches) == self._matches:
            return None  # nothing new the library recognises: the diagnosis cannot have changed
        self._matches = len(scan.matches)
        primary = self._diagnoser.reason([scan], self._facts).primary
        if primary is None or primary.id not in STALLS:
            return None
        return next((e.text.strip() for e in primary.evidence if e.text.strip()), primary.id)
