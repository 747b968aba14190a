"""What `trainmedic isolate` hands back: each run's outcome and measurements, and the verdict over them.

Plain frozen values: the supervisor fills in a run, the reasoner's diagnosis of its output is
attached to it (trainmedic.torch.isolate.diagnosis), and the conclusion compares the runs. Each type
writes its own part of the `--json` object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainmedic.model import Diagnosis

FD_NEAR_LIMIT = 0.8  # a process at this share of RLIMIT_NOFILE makes descriptors a suspect


class IsolateError(ValueError):
    """The factory cannot be run (bad spec, import error, wrong type): a usage error, not a finding."""


@dataclass(frozen=True)
class ProcessPeak:
    """The highest RSS and descriptor count one process of a run reached while it was sampled."""

    pid: int
    role: str  # "main", "worker" or "helper" (torch_shm_manager and other descendants)
    name: str
    peak_rss: int
    max_fds: int

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "role": self.role,
            "name": self.name,
            "peak_rss": self.peak_rss,
            "max_fds": self.max_fds,
        }


@dataclass(frozen=True)
class IsolateRun:
    """One subprocess run: a worker count and sharing strategy, its outcome and what it used."""

    num_workers: int
    sharing_strategy: str
    ok: bool
    error: str | None
    traceback: str
    cause: str | None  # the `<entry>/<cause>` this run's own evidence points at, when it failed
    evidence: str  # the line (or, for a hang, the frame) behind `cause`
    hang: bool
    stalled: bool  # stopped early: the output named a failure and the loader stopped delivering batches
    elapsed: float
    startup: float | None  # seconds until the loader existed: interpreter, imports, the factory
    batches: int
    batch_bytes: int | None
    peak_rss: int | None
    max_fds: int | None
    fd_limit: int | None
    shm_bytes: int | None
    returncode: int | None
    processes: tuple[ProcessPeak, ...] = ()
    stack: str = ""  # faulthandler's dump of the stuck processes, for hangs
    output: str = ""  # the tail of the run's stdout and stderr
    # The reasoner's diagnosis of what the run printed (None until diagnosed; see diagnosis.classify).
    diagnosis: Diagnosis | None = field(default=None, compare=False, repr=False)

    @property
    def worker_rss(self) -> tuple[int, ...]:
        return tuple(p.peak_rss for p in self.processes if p.role == "worker")

    @property
    def worker_fds(self) -> tuple[int, ...]:
        return tuple(p.max_fds for p in self.processes if p.role == "worker")

    @property
    def main_rss(self) -> int | None:
        return next((p.peak_rss for p in self.processes if p.role == "main"), None)

    @property
    def fds_near_limit(self) -> bool:
        return bool(self.max_fds and self.fd_limit and self.max_fds >= FD_NEAR_LIMIT * self.fd_limit)

    @property
    def confidence(self) -> float | None:
        """How sure the reasoner is of `cause`; None when the cause comes from measurements alone."""
        primary = self.diagnosis.primary if self.diagnosis is not None else None
        return primary.confidence if primary is not None and primary.id == self.cause else None

    def to_json(self) -> dict[str, Any]:
        confidence = self.confidence
        return {
            "num_workers": self.num_workers,
            "sharing_strategy": self.sharing_strategy,
            "ok": self.ok,
            "error": self.error,
            "peak_rss": self.peak_rss,
            "max_fds": self.max_fds,
            "shm_bytes": self.shm_bytes,
            "hang": self.hang,
            "stalled": self.stalled,
            "elapsed": round(self.elapsed, 3),
            "startup": None if self.startup is None else round(self.startup, 3),
            "batches": self.batches,
            "batch_bytes": self.batch_bytes,
            "main_rss": self.main_rss,
            "worker_rss": list(self.worker_rss),
            "worker_fds": list(self.worker_fds),
            "fd_limit": self.fd_limit,
            "cause": self.cause,
            "confidence": None if confidence is None else round(confidence, 3),
            "evidence": self.evidence,
            "returncode": self.returncode,
            "traceback": self.traceback,
            "stack": self.stack,
            "processes": [p.to_json() for p in self.processes],
            "diagnosis": None if self.diagnosis is None else self.diagnosis.to_json(),
        }


@dataclass(frozen=True)
class Conclusion:
    """The verdict over all runs: a library id (`None` when healthy) and the reason in one sentence."""

    id: str | None
    why: str
    title: str = ""
    fix: tuple[str, ...] = ()  # the library's fix steps, for the text report
    confidence: float | None = None  # the reasoner's, when the verdict is its finding on a run's output


@dataclass(frozen=True)
class IsolateReport:
    factory: str
    workers: int
    batches: int
    timeout: float
    runs: tuple[IsolateRun, ...]
    batch_size: int | None
    prefetch_factor: int | None
    batch_bytes: int | None
    shm_demand: int | None  # workers x prefetch_factor x batch bytes
    shm_size: int | None
    conclusion: Conclusion
    loader: Mapping[str, Any] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return self.conclusion.id is None

    def to_json(self) -> dict[str, Any]:
        """The `--json` contract: exactly these keys at the top and in the conclusion; runs may grow."""
        return {
            "runs": [r.to_json() for r in self.runs],
            "shm_demand": self.shm_demand,
            "shm_size": self.shm_size,
            "conclusion": {"id": self.conclusion.id, "why": self.conclusion.why},
        }
