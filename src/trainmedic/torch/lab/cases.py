"""The lab's cases: which real failure each one provokes, and the diagnosis its log must get.

The registry is data, so the CLI, the capture script and the tests share one ground truth. Two
ids are kept apart on purpose: `injected` is what the program really did, `expected_id` is what a
diagnosis can honestly name from the captured files alone (None when the log cannot name a cause,
e.g. a run that just stops). No torch here: the registry is read by tests that run without torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from trainmedic.torch.lab.case import (
    CONSOLE_LOG,
    DWF,
    HANG,
    KERNEL_LOG,
    PROGRAMS_DIR,
    RANK_LOG_DIR,
    Case,
    Launcher,
    RankLogs,
    Verdict,
    others,
)
from trainmedic.torch.lab.frameworks import FRAMEWORK_CASES

__all__ = ["CONSOLE_LOG", "KERNEL_LOG", "PROGRAMS_DIR", "RANK_LOG_DIR", "Case", "Launcher", "Verdict"]


_KILLED = r"DataLoader worker \(pid \d+\) is killed by signal: Killed\."
_SUMMARY_ROOT = r"Root Cause \(first observed failure\):"


def _ddp(
    name: str,
    description: str,
    *,
    failure: str,
    fail_rank: int,
    expected_id: str | None,
    expect_text: tuple[str, ...],
    expected_verdict: Verdict = "failure",
    injected: str | None = None,
    rank_logs: RankLogs = "",
    drop_rank_logs: int | None = None,
    extra: tuple[str, ...] = (),
    time_limit: float = 60.0,
    notes: str = "",
    summary: bool = True,  # a failing run ends in torchrun's failure summary
) -> Case:
    healthy = expected_verdict == "healthy"
    return Case(
        name=name,
        description=description,
        program="ddp.py",
        args=("--failure", failure, "--fail-rank", str(fail_rank), *extra),
        expected_verdict=expected_verdict,
        expected_id=expected_id,
        expected_rank=None if healthy else fail_rank,
        expected_collateral_ranks=frozenset() if healthy else others(4, fail_rank),
        injected=injected or expected_id,
        expect_text=(*expect_text, _SUMMARY_ROOT) if summary else expect_text,
        launcher="torchrun",
        nproc=4,
        rank_logs=rank_logs,
        drop_rank_logs=drop_rank_logs,
        time_limit=time_limit,
        notes=notes,
    )


CASES: tuple[Case, ...] = (
    Case(
        name="shm-exhausted",
        description="workers yield 8 MiB samples through a 4 MiB /dev/shm (private mount namespace)",
        program="shm.py",
        args=("--mode", "collate", "--sample-mb", "8"),
        expected_id=f"{DWF}/shm-exhausted",
        expect_text=(
            r"unable to allocate shared memory\(shm\) for file </torch_[^>]+>: No space left on device \(28\)",
        ),
        shm_size="4m",
        notes="torch 2.13 preallocates the shm file, so the collate path fails with ENOSPC, not SIGBUS; "
        "the ENOSPC comes back wrapped as 'Caught RuntimeError in DataLoader worker process 0'.",
    ),
    Case(
        name="shm-control",
        description="the same 8 MiB samples with a 256 MiB /dev/shm: passes",
        program="shm.py",
        args=("--mode", "collate", "--sample-mb", "8"),
        expected_verdict="healthy",
        expect_text=(r"^done$",),
        forbid_text=(r"Traceback",),
        shm_size="256m",
    ),
    Case(
        name="shm-bus-error",
        description="the dataset writes 8 MiB into a sparse /dev/shm file with a 4 MiB /dev/shm: SIGBUS",
        program="shm.py",
        args=("--mode", "write", "--sample-mb", "8"),
        expected_id=f"{DWF}/shm-exhausted",
        expect_text=(
            r"Unexpected bus error encountered in worker\. This might be caused by insufficient shared memory",
            r"DataLoader worker \(pid \d+\) is killed by signal: Bus error\.",
        ),
        shm_size="4m",
        notes="the worker's 'Unexpected bus error' line ends with a NUL byte.",
    ),
    Case(
        name="worker-sigkill",
        description="a worker sends itself SIGKILL while loading sample 9",
        program="worker_signal.py",
        args=("--signal", "kill"),
        expected_id=f"{DWF}/worker-killed",
        expect_text=(_KILLED, r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"),
        notes="identical to an OOM kill in the log: only the kernel log can tell them apart.",
    ),
    Case(
        name="worker-segfault",
        description="a worker reads address 0 through ctypes (a native crash) while loading sample 9",
        program="worker_signal.py",
        args=("--signal", "segv"),
        expected_id=f"{DWF}/worker-segfault",
        expect_text=(
            r"Unexpected segmentation fault encountered in worker\.",
            r"DataLoader worker \(pid \d+\) is killed by signal: Segmentation fault\.",
        ),
    ),
    Case(
        name="worker-oom",
        description="workers in a 256 MiB memory cgroup; one sample allocates 2 GiB: the kernel OOM-kills it",
        program="worker_oom.py",
        args=("--limit", "cgroup", "--hog-mb", "2048"),
        expected_id=f"{DWF}/worker-oom",
        expect_text=(_KILLED, r"Killed process \d+ \(pt_data_worker\)"),
        cgroup_memory_mb=256,
        kernel_log=True,
        notes="the files are the run's output and the kernel messages of the run (dmesg -T).",
    ),
    Case(
        name="worker-oom-rlimit",
        description="RLIMIT_AS set in worker_init_fn; one sample allocates 2 GiB: the allocation fails",
        program="worker_oom.py",
        args=("--limit", "rlimit", "--hog-mb", "2048"),
        expected_id=f"{DWF}/worker-oom",
        expect_text=(
            r"Caught RuntimeError in DataLoader worker process \d+\.",
            r"DefaultCPUAllocator: can't allocate memory: you tried to allocate \d+ bytes\. "
            r"Error code 12 \(Cannot allocate memory\)",
        ),
        notes="an address-space limit is not an OOM kill: the worker survives to ship the allocator's "
        "RuntimeError, so the log reads like a __getitem__ exception whose message is the allocation.",
    ),
    Case(
        name="fd-exhaustion",
        description="RLIMIT_NOFILE=256, file_descriptor sharing, 8 tensors per sample, batches kept",
        program="fd_exhaustion.py",
        args=("--sharing-strategy", "file_descriptor", "--nofile", "256"),
        expected_id=f"{DWF}/fd-exhaustion",
        expect_text=(
            r"Too many open files\. Communication with the workers is no longer possible\. "
            r"Please increase the limit using `ulimit -n` in the shell or change the sharing strategy",
        ),
    ),
    Case(
        name="fd-exhaustion-control",
        description="the same run with the file_system sharing strategy: passes",
        program="fd_exhaustion.py",
        args=("--sharing-strategy", "file_system", "--nofile", "256"),
        expected_verdict="healthy",
        expect_text=(r"^done$",),
        forbid_text=(r"Traceback",),
    ),
    Case(
        name="autograd-no-grad",
        description="every parameter frozen at step 3 under reentrant checkpointing: nothing to differentiate",
        program="autograd.py",
        args=("--mode", "no-grad"),
        expected_id="autograd-error/loss-without-grad",
        expect_text=(r"None of the inputs have requires_grad=True\. Gradients will be None",
                     r"element 0 of tensors does not require grad and does not have a grad_fn"),
        notes="checkpoint's warning comes first and is evidence of the failure, never one on its own.",
    ),
    Case(
        name="autograd-inplace",
        description="at step 3 an output saved for backward is changed in place before backward",
        program="autograd.py",
        args=("--mode", "inplace"),
        expected_id="autograd-error/inplace-modification",
        expect_text=(r"one of the variables needed for gradient computation has been modified by an inplace "
                     r"operation",),
    ),
    Case(
        name="autograd-twice",
        description="a hidden state carried from step 0 to step 1 without detach(): backward reaches a freed graph",
        program="autograd.py",
        args=("--mode", "twice"),
        expected_id="autograd-error/backward-twice",
        expect_text=(r"Trying to backward through the graph a second time",),
    ),
    Case(
        name="batchnorm-batch-of-one",
        description="9 samples in batches of 4 without drop_last: the third batch of one reaches BatchNorm",
        program="setup_mistakes.py",
        args=("--mode", "batch-of-one"),
        expected_id="tensor-shape-mismatch/batchnorm-single-sample",
        expect_text=(r"Expected more than 1 value per channel when training, got input size",),
    ),
    Case(
        name="no-process-group",
        description="a script written for torchrun run with plain python: its barrier needs a process group",
        program="setup_mistakes.py",
        args=("--mode", "no-process-group"),
        expected_id="rendezvous-failure/process-group-not-initialized",
        expect_text=(r"Default process group has not been initialized",),
    ),
    Case(
        name="getitem-exception",
        description="__getitem__ raises KeyError on sample 13, num_workers=2",
        program="getitem_exception.py",
        args=("--workers", "2"),
        expected_id=f"{DWF}/getitem-exception",
        expect_text=(r"KeyError: Caught KeyError in DataLoader worker process \d+\.", r"KeyError: 'dgo'"),
    ),
    Case(
        name="getitem-exception-w0",
        description="__getitem__ raises KeyError on sample 13, num_workers=0",
        program="getitem_exception.py",
        args=("--workers", "0"),
        expected_id=f"{DWF}/getitem-exception",
        expect_text=(r"in __getitem__", r"^KeyError: 'dgo'$"),
        forbid_text=(r"DataLoader worker process",),
        notes="no 'Caught ... in DataLoader worker' line: only the traceback frames "
        "(torch/utils/data/_utils/fetch.py, __getitem__) say it came from the dataset.",
    ),
    Case(
        name="worker-hang",
        description="workers forked while a thread holds the dataset's lock; DataLoader(timeout=5)",
        program="worker_hang.py",
        args=("--timeout", "5"),
        expected_id=f"{DWF}/worker-hang",
        expect_text=(r"RuntimeError: DataLoader timed out after 5 seconds",),
    ),
    Case(
        name="worker-hang-silent",
        description="the same deadlock without a timeout; stopped with SIGTERM after 12 s: the log just stops",
        program="worker_hang.py",
        args=("--timeout", "0"),
        expected_verdict="healthy",
        expected_id=None,
        injected=f"{DWF}/worker-hang",
        expect_text=(r"^epoch 1 with num_workers=2 timeout=0$",),
        forbid_text=(r"Traceback", r"^done$"),
        stop_after=12.0,
        notes=("the log names no cause and no rank is behind: a log that merely ends is not a hang (no "
               "positive evidence), so the diagnosis is healthy with a note saying where the log ends and "
               "how to take stacks; the live watchdog is what catches this hang while it happens."),
    ),
    Case(
        name="slow-worker-respawn",
        description="2 s per-worker setup, persistent_workers=False, 3 epochs: every epoch waits ~2 s",
        program="slow_respawn.py",
        args=("--no-persistent-workers",),
        expected_verdict="healthy",
        injected=f"{DWF}/slow-worker-respawn",
        expect_text=(r"^epoch 2: first batch after [1-9]\d*\.\d\d s \(persistent_workers=False\)$",),
        forbid_text=(r"Traceback",),
        notes="the run succeeds; only timing shows the respawn (trainmedic's guard prints the line "
        "the library matches).",
    ),
    Case(
        name="slow-worker-respawn-control",
        description="the same with persistent_workers=True: only the first epoch waits",
        program="slow_respawn.py",
        args=("--persistent-workers",),
        expected_verdict="healthy",
        expect_text=(r"^epoch 2: first batch after 0\.\d\d s \(persistent_workers=True\)$",),
        forbid_text=(r"Traceback",),
    ),
    _ddp(
        "ddp-worker-crash",
        "torchrun 4 ranks (gloo): rank 2's DataLoader worker is SIGKILLed mid-training",
        failure="worker-kill",
        fail_rank=2,
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank2\]: RuntimeError: {_KILLED}",),
    ),
    _ddp(
        "ddp-worker-crash-logdir",
        "as ddp-worker-crash, with per-rank files (--log-dir --redirects 3) and the launcher's console",
        failure="worker-kill",
        fail_rank=2,
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank2\]: RuntimeError: {_KILLED}",),
        rank_logs="redirects",
    ),
    _ddp(
        "ddp-worker-crash-missing-rank",
        "as ddp-worker-crash-logdir, with rank 2's files deleted: the failing rank's log is missing",
        failure="worker-kill",
        fail_rank=2,
        expected_id=None,
        injected=f"{DWF}/worker-killed",
        expect_text=(r"rank\s+: 2 \(local_rank: 2\)\n\s+exitcode\s+: 1 ",),
        rank_logs="redirects",
        drop_rank_logs=2,
        notes="the launcher's summary says rank 2 failed first (exitcode 1); the reason is only in "
        "rank 2's missing file, so the diagnosis must ask for it.",
    ),
    _ddp(
        "ddp-worker-crash-record",
        "as ddp-worker-crash, with the training function wrapped in torchelastic's @record",
        failure="worker-kill",
        fail_rank=2,
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank2\]: RuntimeError: {_KILLED}", r"error_file: \S+error\.json"),
        extra=("--record",),
    ),
    _ddp(
        "ddp-rank-raises",
        "torchrun 4 ranks (gloo): rank 1 raises (loads a checkpoint of the wrong shape) at step 4",
        failure="raise",
        fail_rank=1,
        expected_id="checkpoint-load-mismatch/state-dict-mismatch",
        expect_text=(
            r"\[rank1\]: RuntimeError: Error\(s\) in loading state_dict for Linear:",
            r"size mismatch for weight: copying a param with shape torch\.Size\(\[4, 8\]\) from checkpoint",
        ),
    ),
    _ddp(
        "ddp-rank-raises-tee",
        "as ddp-rank-raises with --log-dir --tee 3: console lines carry [defaultN]: and per-rank files",
        failure="raise",
        fail_rank=1,
        expected_id="checkpoint-load-mismatch/state-dict-mismatch",
        expect_text=(r"\[default1\]:\[rank1\]: RuntimeError: Error\(s\) in loading state_dict for Linear:",),
        rank_logs="tee",
        notes="the console and the per-rank files hold the same rank lines: evidence must be deduplicated.",
    ),
    _ddp(
        "ddp-healthy",
        "torchrun 4 ranks (gloo): 8 steps, no failure: the baseline of ddp-unknown-exception",
        failure="none",
        fail_rank=1,
        expected_id=None,
        expected_verdict="healthy",
        expect_text=(r"rank 1 step 7 loss",),
        summary=False,
    ),
    _ddp(
        "ddp-unknown-exception",
        "torchrun 4 ranks (gloo): rank 1 gives up at step 4 with the job's own exception, in words no "
        "library entry knows; the others time out",
        failure="lease",
        fail_rank=1,
        expected_id="unclassified-failure/uncaught-exception",
        expect_text=(r"\[rank1\]: (?:__main__\.)?LeaseExpired: shard 3 has had no owner for 3 heartbeats",),
        notes="a failure new to the library: diagnosed against the ddp-healthy capture as its baseline, the "
        "rank's own lines, which the healthy run never printed, lead the evidence.",
    ),
    _ddp(
        "ddp-rank-hang",
        "torchrun 4 ranks (gloo, 20 s timeout): rank 3 stops at step 4; the others time out",
        failure="hang",
        fail_rank=3,
        expected_id=HANG,
        expected_verdict="hang",
        expect_text=(r"Timed out waiting 20000ms for (?:send|recv) operation to complete",),
        time_limit=75.0,
        notes="torchrun's Root Cause names a rank that timed out, not rank 3; rank 3 shows only as "
        "exitcode -15 (SIGTERM) and by its missing step-4 line.",
    ),
    *FRAMEWORK_CASES,
)

# What to do with the job after each failure, and from which checkpoint (step): the lab's ground truth
# of reason/action.py. A worker killed or out of memory, a full /dev/shm: the platform's to fix, then
# resume; an exception no entry knows: stop and look; a hang with no cause: a restart may pass.
_FIX = "fix-then-resume"
_FIXED_THEN_RESUMED = (
    "shm-exhausted", "shm-bus-error", "worker-sigkill", "worker-segfault", "worker-oom", "worker-oom-rlimit",
    "fd-exhaustion", "getitem-exception", "getitem-exception-w0", "worker-hang", "ddp-worker-crash",
    "ddp-worker-crash-logdir", "ddp-worker-crash-record", "ddp-rank-raises", "ddp-rank-raises-tee",
    "hf-worker-killed", "hf-getitem-exception", "hf-nan-loss", "hf-resume-shape-mismatch",
    "hf-ddp-getitem-exception", "accelerate-worker-killed", "lightning-worker-killed",
    "deepspeed-worker-killed", "deepspeed-batch-config", "autograd-no-grad", "autograd-inplace", "autograd-twice",
    "accelerate-rank-raises", "lightning-rank-raises",  # a shape error in the model code: fix it, then resume
    "batchnorm-batch-of-one", "no-process-group", "hf-model-not-found",
)
# (ddp-worker-crash-missing-rank: the logs hold only collateral, so: stop and get rank 2's log first)
_STOPPED = ("ddp-unknown-exception", "lightning-callback-raises", "ddp-worker-crash-missing-rank")
_RESTARTED = ("ddp-rank-hang", "accelerate-rank-hang", "lightning-rank-hang")
_ACTIONS: dict[str, tuple[str, int | None]] = {
    **dict.fromkeys(_FIXED_THEN_RESUMED, (_FIX, None)),
    "hf-checkpoint-disk-full": (_FIX, 2),  # checkpoint-4 was being written when the disk filled
    "hf-nan-after-checkpoint": (_FIX, 2),  # the last save before the first NaN, not checkpoint-8
    **dict.fromkeys(_STOPPED, ("stop", None)),
    **dict.fromkeys(_RESTARTED, ("restart", None)),
}
CASES = tuple(replace(c, expected_action=_ACTIONS[c.name][0], expected_checkpoint_step=_ACTIONS[c.name][1])
              if c.name in _ACTIONS else c for c in CASES)

BY_NAME: dict[str, Case] = {c.name: c for c in CASES}


def get(name: str) -> Case:
    """The case called `name`; KeyError with the known names otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown lab case {name!r}; known: {', '.join(BY_NAME)}") from None


# ---------------------------------------------------------------- checking captures and diagnoses


_RANK_PREFIX = re.compile(r"^\[(?:rank|default)(\d+)\]:", re.MULTILINE)
_SUMMARY_RANK = re.compile(r"^\s*rank\s+: (\d+) \(local_rank: \d+\)", re.MULTILINE)
_RANK_FILE = re.compile(r"attempt_\d+/(\d+)/(?:stdout|stderr)\.log$")


def read_text(paths: Iterable[Path]) -> str:
    """All files as one text (bytes decoded leniently: crash messages carry NUL bytes)."""
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in paths)


def ranks_seen(paths: Iterable[Path]) -> set[int]:
    """Ranks that left any trace in the files: prefixed lines, launcher summary, non-empty rank files.

    A cheap, independent check that a capture can support the expected collateral ranks; it is not
    the diagnosis.
    """
    seen: set[int] = set()
    for path in paths:
        data = path.read_bytes()
        m = _RANK_FILE.search(path.as_posix())
        if m and data.strip():
            seen.add(int(m.group(1)))
        text = data.decode("utf-8", "replace")
        seen.update(int(r) for r in _RANK_PREFIX.findall(text))
        seen.update(int(r) for r in _SUMMARY_RANK.findall(text))
    return seen


def capture_problems(case: Case, paths: Sequence[Path]) -> list[str]:
    """Why a capture does not show what the case is meant to show ([] when it does)."""
    problems: list[str] = []
    text = read_text(paths)
    for pattern in case.expect_text:
        if not re.search(pattern, text, re.MULTILINE):
            problems.append(f"missing expected text /{pattern}/")
    for pattern in case.forbid_text:
        if re.search(pattern, text, re.MULTILINE):
            problems.append(f"unexpected text /{pattern}/")
    missing = case.expected_collateral_ranks - ranks_seen(paths)
    if missing and not _torn_down(case, text):
        problems.append(f"no trace of collateral rank(s) {sorted(missing)}")
    return problems


_TEARDOWN = re.compile(r"\bsigkill_handler\] Killing subprocess \d+")


def _torn_down(case: Case, text: str) -> bool:
    """The DeepSpeed launcher's teardown is in the capture (see `silenced_by_teardown`)."""
    return case.launcher == "deepspeed" and _TEARDOWN.search(text) is not None


def silenced_by_teardown(case: Case, paths: Sequence[Path]) -> frozenset[int]:
    """Collateral ranks the DeepSpeed launcher killed before they printed anything.

    That launcher polls its children once a second and SIGTERMs every rank as soon as one has
    failed; a collateral rank still waiting for its peer's socket to close (slow on a loaded
    machine) dies without a line. No log can name such a rank, so the case cannot expect it.
    """
    if not _torn_down(case, read_text(paths)):
        return frozenset()
    return frozenset(case.expected_collateral_ranks - ranks_seen(paths))


class _FindingLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def rank(self) -> int | None: ...


class _CollateralLike(Protocol):
    @property
    def rank(self) -> int | None: ...


class DiagnosisLike(Protocol):
    """What the lab reads from `trainmedic.model.Diagnosis`; structural, so a stand-in works in tests."""

    @property
    def verdict(self) -> str: ...
    @property
    def primary(self) -> _FindingLike | None: ...
    @property
    def collateral(self) -> Sequence[_CollateralLike]: ...


@dataclass(frozen=True)
class Outcome:
    """What the diagnosis said, in the terms of the ground truth."""

    verdict: str
    id: str | None
    rank: int | None
    collateral_ranks: frozenset[int]
    action: str | None = None
    checkpoint_step: int | None = None
    alternative: str | None = None  # the first alternative's id

    @classmethod
    def of(cls, d: DiagnosisLike) -> Outcome:
        ranks = frozenset(c.rank for c in d.collateral if c.rank is not None)
        act = getattr(d, "action", None)
        kind = getattr(act, "kind", None)
        step = getattr(getattr(act, "checkpoint", None), "step", None)
        if d.primary is None:
            return cls(d.verdict, None, None, ranks, kind, step)
        alts = getattr(d, "alternatives", ())
        return cls(d.verdict, d.primary.id, d.primary.rank, ranks, kind, step, alts[0].id if alts else None)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "id": self.id,
            "rank": self.rank,
            "collateral_ranks": sorted(self.collateral_ranks),
            "action": self.action,
            "checkpoint_step": self.checkpoint_step,
        }


def _read_as_its_sender(kill: str, got: Outcome) -> bool:
    """A kill the lab sent itself prints exactly what an OOM kill prints: with no kernel record, the
    diagnosis leads with the likelier sender and names the kill as its first alternative."""
    from trainmedic.catalog import load_library

    return load_library().read_as_sender(kill, got.id or "", got.alternative)


def mismatches(case: Case, got: Outcome, silenced: frozenset[int] = frozenset()) -> list[str]:
    """How a diagnosis differs from the case's ground truth ([] when it matches).

    The verdict and the collateral ranks are always compared. The id is compared when the case
    names one; the rank when the case names one or the diagnosis has a primary finding (whose rank
    must then be None for a single-process run). `silenced`: collateral ranks the capture cannot
    show (`silenced_by_teardown`), not expected of the diagnosis.
    """
    out: list[str] = []
    if got.verdict != case.expected_verdict:
        out.append(f"verdict {got.verdict!r} != {case.expected_verdict!r}")
    if case.expected_verdict == "healthy" and got.action is not None:
        out.append(f"action {got.action!r} for a healthy run")
    if case.expected_action is not None and (got.action, got.checkpoint_step) != (
            case.expected_action, case.expected_checkpoint_step):
        out.append(f"action {got.action!r} from step {got.checkpoint_step!r} != {case.expected_action!r} from step "
                   f"{case.expected_checkpoint_step!r}")
    if case.expected_id is not None and got.id != case.expected_id and not _read_as_its_sender(case.expected_id, got):
        out.append(f"id {got.id!r} != {case.expected_id!r}")
    if case.every_rank:  # any rank may come first; the others are then its collateral
        if got.rank is None or got.collateral_ranks != frozenset(range(case.nproc)) - {got.rank}:
            out.append(f"rank {got.rank!r} with collateral {sorted(got.collateral_ranks)}: not one of "
                       f"{case.nproc} ranks with the rest as collateral")
        return out
    if (case.expected_rank is not None or got.id is not None) and got.rank != case.expected_rank:
        out.append(f"rank {got.rank!r} != {case.expected_rank!r}")
    if got.collateral_ranks != case.expected_collateral_ranks - silenced:
        out.append(f"collateral ranks {sorted(got.collateral_ranks)} != "
                   f"{sorted(case.expected_collateral_ranks - silenced)}")
    return out
