"""What a lab case is: the program, the condition it runs under, and the ground truth its capture must get.

No torch here: the registry is read by tests that run without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Verdict = Literal["failure", "hang", "healthy"]
Launcher = Literal["python", "torchrun", "accelerate", "deepspeed"]  # python: one process, or a framework
# that starts its ranks itself (Lightning)
RankLogs = Literal["", "tee", "redirects"]

DWF = "dataloader-worker-failure"
HANG = "training-hang/stalled-progress"
PROGRAMS_DIR = Path(__file__).parent / "programs"
CONSOLE_LOG = "output.log"
KERNEL_LOG = "dmesg.log"
RANK_LOG_DIR = "logdir"


@dataclass(frozen=True)
class Case:
    """One reproduction: the program, the condition it runs under, and the ground truth."""

    name: str
    description: str
    program: str  # a file in programs/
    args: tuple[str, ...] = ()
    # ground truth
    expected_verdict: Verdict = "failure"
    expected_id: str | None = None
    expected_rank: int | None = None
    expected_collateral_ranks: frozenset[int] = frozenset()
    injected: str | None = None  # the cause really provoked, even where the log cannot show it
    # what to do with the job (reason/action.py): restart | restart-without | fix-then-resume | stop; None
    # for a healthy run
    expected_action: str | None = None
    expected_checkpoint_step: int | None = None  # the step of the checkpoint to resume from, if any
    # what the capture must (not) contain: real messages, as regexes (multiline)
    expect_text: tuple[str, ...] = ()
    forbid_text: tuple[str, ...] = ()
    # how it runs
    launcher: Launcher = "python"
    nproc: int = 1
    rank_logs: RankLogs = ""  # torchrun --log-dir with --tee 3 or --redirects 3
    drop_rank_logs: int | None = None  # delete this rank's per-rank files: "the failing rank's log is lost"
    shm_size: str | None = None  # needs a private /dev/shm of this size (root + unshare)
    cgroup_memory_mb: int | None = None  # needs a memory cgroup with this limit for the workers
    kernel_log: bool = False  # keep the kernel messages printed during the run (dmesg)
    small_fs: str | None = None  # a tmpfs of this size at $TMPDIR/small (a disk that fills): root + unshare
    env: tuple[tuple[str, str], ...] = ()  # set for the run (DS_ACCELERATOR=cpu)
    requires: tuple[str, ...] = ()  # modules the program imports besides torch (transformers, lightning, ...)
    every_rank: bool = False  # every rank fails alike (a bad config): any rank may be named first
    time_limit: float = 60.0  # hard limit, seconds; past it the run is killed and reported
    # Python run once per process before the case's first run, outside its time limit: a one-time
    # build (DeepSpeed's CPU comm op) that a busy machine could otherwise mistake for a hung run
    warmup: str = ""
    stop_after: float | None = None  # the run is expected to stall: stop it (SIGTERM) after this long
    notes: str = ""

    @property
    def program_path(self) -> Path:
        return PROGRAMS_DIR / self.program

    @property
    def needs_root(self) -> bool:
        return (self.shm_size is not None or self.small_fs is not None or self.cgroup_memory_mb is not None
                or self.kernel_log)

    def ground_truth(self) -> dict[str, Any]:
        return {
            "expected_verdict": self.expected_verdict,
            "expected_id": self.expected_id,
            "expected_rank": self.expected_rank,
            "expected_collateral_ranks": sorted(self.expected_collateral_ranks),
            "injected": self.injected or self.expected_id,
            "expected_action": self.expected_action,
            "expected_checkpoint_step": self.expected_checkpoint_step,
        }


def others(world: int, failing: int) -> frozenset[int]:
    return frozenset(r for r in range(world) if r != failing)
