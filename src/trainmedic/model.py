"""The data every part of trainmedic passes around: frozen, so no renderer can change a verdict."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["initiating", "cascade", "teardown", "progress", "benign"]
Verdict = Literal["failure", "hang", "healthy"]
# What answers a missing fact: the kernel's log (handed in with --dmesg), or a probe run on the failing host
ProbeTopic = Literal["kernel", "nofile", "nproc", "shm", "memory"]

SCHEMA = "trainmedic.diagnosis/v1"
CODE_KEYS = ("pytorch", "hf_trainer", "deepspeed", "lightning")  # the frameworks an entry shows code for


class LibraryError(ValueError):
    """A library file that cannot be used; the message names the file and the fix."""


class ExitCode(enum.IntEnum):
    """One enum for every command, so scripts can rely on the numbers."""

    HEALTHY = 0
    FOUND = 1
    USAGE = 2
    INTERRUPTED = 130


# ---------------------------------------------------------------- library


@dataclass(frozen=True)
class Fingerprint:
    """A regex over one log line that points at a cause.

    `weight` is how strongly the line alone supports the cause (a likelihood, 0..1);
    `ambiguous` lines never make a cause certain on their own.
    """

    id: str
    regex: str
    weight: float
    ambiguous: bool = False
    ignore_case: bool = False
    precursor: bool = False  # a warning before a failure: evidence for one, never a failure alone
    warning: bool = False  # a warning-level message: context for a failure, never one alone
    # The framework saying it caught its cause and went on ("ran out of memory ..., skipping batch"):
    # the failure just before it, with progress after, ended nothing.
    handled: bool = False
    # A message only a process already on its way out prints (CUDA's "driver shutting down" once the
    # runtime unloads at interpreter exit): what it explains, a crash just above it, ended no work.
    at_exit: bool = False
    # An OOM record the job's own scheduler or container prints (Slurm's "Detected 1 oom-kill event(s)
    # in StepId=...", Kubernetes' OOMKilled): it names no process because its scope is the job's cgroup,
    # so a kill these logs show is one of its victims, as a kernel record naming the kill's pid would say.
    own_job: bool = False
    # A launcher's line that it prints only because one of its workers exited on its own (the DeepSpeed
    # launcher's "Killing subprocess N", torchrun's SIGTERM to the survivors), never on a signal it got itself.
    worker_exit: bool = False


@dataclass(frozen=True)
class Claim:
    """A reading of another cause's (`causes`) that is the claiming cause's when the exception (one of
    `exceptions`, substrings of its line) was raised in the innermost frame named by one of `frames`."""

    causes: tuple[str, ...]
    frames: tuple[str, ...]
    exceptions: tuple[str, ...]


@dataclass(frozen=True)
class MissingFact:
    fact: str
    command: str
    topic: str | None = None  # the ProbeTopic whose facts answer it


@dataclass(frozen=True)
class ActionPolicy:
    """A cause's answer to "what now with the job" (library data; reason/action.py applies it)."""

    owner: str  # model-code | data | configuration | platform | hardware | framework | unknown
    restart: bool  # a plain restart can succeed
    resume: str  # last | before-last | before-nonfinite | none
    why: str = ""


@dataclass(frozen=True)
class Cause:
    id: str
    title: str
    role: Role
    mechanism: str
    fingerprints: tuple[Fingerprint, ...]
    fix: tuple[str, ...]
    verify: tuple[str, ...]
    prevention: tuple[str, ...]
    missing: tuple[MissingFact, ...] = ()
    competes: tuple[str, ...] = ()
    # How this cause relates to others (library data the reasoner reads; see docs/architecture.md):
    confirmed_as: str | None = None  # a kill that a kernel OOM record for its pid turns into this cause
    kill_record: bool = False  # a kernel/cgroup OOM record: it confirms kills of the pid it names
    wrapper: bool = False  # a wrapper exception: a known initiating cause inside it is the finding
    keeps_inside: tuple[str, ...] = ()  # ... except causes of these categories: the wrapper stays the finding
    in_worker: str | None = None  # what this cause is when it happens inside one of the entry's workers
    fallback: bool = False  # stands for a failure no signature knows: leads only when nothing else does
    tail_only: bool = False  # its words are read over each input's tail only, into notable lines
    scale_floor: float | None = None  # its warnings are a failure once the loss scale they name falls this low
    # Its warnings say the scale could not be lowered ("Attempted loss scale: 1, reducing to 1"): the
    # scaler sits at its minimum, which is `bottomed_as`.
    bottomed_as: str | None = None
    finished_as: str | None = None  # this stop, after the run said training finished, is that cause
    after_finish: bool = False  # named by another cause's finished_as: a stop that outlived the work
    exit_order: bool = False  # after the run said training finished: its processes exiting, rank 0 first
    # The same error after the run made progress is that cause (a store the job cannot reach once it
    # has trained is a store that went away)
    mid_run_as: str | None = None
    # Its worker_exit lines alone, in a log that shows the workers' own output and no error, are this cause:
    # a worker died without a word.
    silent_exit_as: str | None = None
    silent_exit: bool = False  # named by another cause's silent_exit_as: read from the launcher's teardown
    work_mismatch: bool = False  # also read from timeouts at one sequence number in different operations
    store_overfull: bool = False  # read from a store barrier that counts more workers than the world size
    aborts_process: bool = False  # its watchdog ends the process with SIGABRT: a rank's bare exit -6 after it
    stranded_as: str | None = None  # an OOM whose own figures show more cached-but-free memory than it asked for
    data_wait_share: float | None = None  # metric lines where waiting for data takes this share of step time
    loss_jump: float | None = None  # a loss this many times the rank's earlier minimum, still there at the end
    loss_nonfinite: bool = False  # a loss that turned NaN or Inf in the metric lines and stayed so to the end
    loss_vanished: bool = False  # a loss that fell straight to exactly 0 and stayed there to the end
    persists: int | None = None  # its warnings on this many lines of one process are the failure
    trains_on: bool = False  # training runs on after it with nothing to learn from: later steps do not clear it
    stack_waits: tuple[str, ...] = ()
    # A timeout raised inside one of these (`with torch_distributed_zero_first(rank):`, HF's
    # `main_process_first()`): the other ranks wait there while rank 0 does the work alone first.
    main_first_frames: tuple[str, ...] = ()
    # Short phrases people paste into a search box for this cause ("Bus error"): it is ranked first.
    phrases: tuple[str, ...] = ()  # functions a process interrupted while waiting on this cause sits in
    owns_frames: tuple[str, ...] = ()  # a traceback through these paths is this cause's, not a failure of its own
    # ... when it ends in one of these exception classes (what the owner raises to report; empty: any)
    owns_exceptions: tuple[str, ...] = ()
    # Functions (a traceback frame's "in NAME") that name this cause when its entry's generic signal is
    # raised through them (a device-side assert raised inside binary_cross_entropy: the BCE input range).
    raised_in: tuple[str, ...] = ()
    claims: tuple[Claim, ...] = ()  # other causes' readings that are this cause's where they were raised
    inside_marks: tuple[str, ...] = ()  # where the incident or input shows one of these, it is `inside_as`
    inside_as: str | None = None
    needs_context: tuple[str, ...] = ()  # the incident must show one of these, else it is `otherwise`
    otherwise: str | None = None
    # marks that show the `otherwise` reading; when set and neither kind is in sight, the cause stays
    # (ambiguous) instead of moving: the bare message is then read by the commoner of the two
    otherwise_context: tuple[str, ...] = ()
    action: ActionPolicy = ActionPolicy("unknown", False, "last")
    entry_id: str = ""

    @property
    def full_id(self) -> str:
        return f"{self.entry_id}/{self.id}"

    @property
    def metric_shaped(self) -> bool:
        """Read from a shape of the metric lines (reason/patterns.py), which needs no line of its own."""
        return (self.data_wait_share is not None or self.loss_jump is not None or self.loss_nonfinite
                or self.loss_vanished)

    @property
    def lineless(self) -> bool:
        """Named without a fingerprint of its own: from metric shapes, as another cause's finished_as or
        silent_exit_as, or from the store barrier's own count."""
        return self.metric_shaped or self.after_finish or self.store_overfull or self.silent_exit


@dataclass(frozen=True)
class Symptom:
    symptom: str
    why: str


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    category: str
    summary: str
    tags: tuple[str, ...]
    affects: tuple[str, ...]
    symptoms: tuple[Symptom, ...]
    causes: tuple[Cause, ...]
    confirm: tuple[str, ...]
    scale: str
    code: tuple[tuple[str, str], ...]
    related: tuple[str, ...]
    references: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    worker_marks: tuple[str, ...] = ()  # substrings that place a line in one of this entry's worker processes
    source: str = ""

    def cause(self, cause_id: str) -> Cause:
        for c in self.causes:
            if c.id == cause_id:
                return c
        raise KeyError(f"{self.id}/{cause_id}")


# ---------------------------------------------------------------- log side


@dataclass(frozen=True)
class Line:
    """One decoded log line with where it came from."""

    path: str
    number: int
    text: str
    rank: int | None = None
    host: str | None = None
    time: float | None = None


@dataclass(frozen=True)
class Match:
    """A fingerprint hit on a line."""

    fingerprint: str  # "<entry>/<cause>#<fingerprint>"
    cause: str  # "<entry>/<cause>"
    line: Line


@dataclass(frozen=True)
class Notable:
    """A line of an input's tail that reads as a failure by its own words (an error or fatal level, a
    word like "failed" or "Killed"), whether or not a fingerprint knows it: what a failure no
    signature knows is found by."""

    line: Line
    severity: int  # 2: an error, 3: fatal (a crash, a kill, an abort)


@dataclass(frozen=True)
class Marker:
    """A tail line that says what the job was doing (loading, evaluating, saving a checkpoint)."""

    line: Line
    phase: str  # launch | setup | checkpoint-load | evaluation | checkpoint-save | shutdown | restart


@dataclass(frozen=True)
class Traceback:
    """A Python traceback assembled from possibly interleaved lines."""

    path: str
    first_line: int
    last_line: int
    rank: int | None
    frames: tuple[str, ...]
    exceptions: tuple[str, ...]  # final exception lines, outermost chain order
    interrupted: bool = False  # Ctrl-C (KeyboardInterrupt, a "^C" echo): the frames show where it waited
    truncated: bool = False  # the log ends inside it: no exception line, only frames
    ignored: bool = False  # printed under "Exception ignored in": Python went on, it ended nothing
    process: int | None = None  # mp.spawn's "-- Process N terminated with the following error:" above it
    dump: bool = False  # a stack dump someone took of a live process (py-spy): where it waited, no error
    thread: bool = False  # printed under "Exception in thread NAME:": a helper thread died, not the process
    logged: bool = False  # printed under a warning record (logging's exc_info): part of that warning

    @property
    def final(self) -> str:
        return self.exceptions[-1] if self.exceptions else ""


@dataclass(frozen=True)
class Event:
    """One incident: the fingerprint matches that belong together (a traceback, or one line)."""

    cause: str
    role: Role
    rank: int | None
    host: str | None
    time: float | None
    path: str
    line: int
    weight: float
    ambiguous: bool
    evidence: tuple[Line, ...]
    traceback: Traceback | None = None
    pid: int | None = None
    order: int = 0  # global arrival order across inputs, for "what came first" without clocks
    fingerprints: tuple[tuple[str, float], ...] = ()  # (fingerprint id, weight) behind `cause`
    warning: bool = False  # every line behind `cause` is warning-level


# ---------------------------------------------------------------- verdict


@dataclass(frozen=True)
class Evidence:
    path: str
    line: int
    rank: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "rank": self.rank, "text": self.text}


@dataclass(frozen=True)
class Fact:
    """A fact about the machine or the run, from a probe or the reasoner."""

    id: str
    value: str
    source: str
    effect: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "value": self.value, "source": self.source, "effect": self.effect}


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    category: str
    confidence: float
    rank: int | None
    host: str | None
    time: float | None
    evidence: tuple[Evidence, ...]
    fix: tuple[str, ...]
    verify: tuple[str, ...]
    missing: tuple[MissingFact, ...]
    why: str = ""

    def __post_init__(self) -> None:
        # The precision the JSON keeps: a report rendered from stored JSON says the same percentage.
        object.__setattr__(self, "confidence", round(self.confidence, 3))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "category": self.category,
            "confidence": round(self.confidence, 3),
            "rank": self.rank,
            "host": self.host,
            "time": self.time,
            "why": self.why,
            "evidence": [e.to_json() for e in self.evidence],
            "fix": list(self.fix),
            "verify": list(self.verify),
            "missing": [{"fact": m.fact, "command": m.command, **({"topic": m.topic} if m.topic else {})}
                        for m in self.missing],
        }


@dataclass(frozen=True)
class Alternative:
    id: str
    confidence: float
    why: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "confidence", round(self.confidence, 3))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "confidence": round(self.confidence, 3), "why": self.why}


@dataclass(frozen=True)
class Collateral:
    id: str
    rank: int | None
    path: str
    line: int
    explained_by: str
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rank": self.rank,
            "path": self.path,
            "line": self.line,
            "explained_by": self.explained_by,
        }


@dataclass(frozen=True)
class InputSummary:
    path: str
    bytes: int
    lines: int
    ranks: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes, "lines": self.lines, "ranks": list(self.ranks)}


@dataclass(frozen=True)
class RankProgress:
    """The last sign of progress a rank gave, for hangs."""

    rank: int | None
    step: int | None
    path: str
    line: int
    text: str
    # What the rank's metric lines said along the way (the tail of its log): time waiting for data
    # against step time, and its loss. Pattern-shaped failures are read from these (reason/patterns.py).
    data_time: float = 0.0
    step_time: float = 0.0
    timed: int = 0  # metric lines that gave both
    loss_min: float | None = None
    loss_last: float | None = None
    losses: int = 0
    # (line, text, loss / earlier minimum) of the largest jump that took the loss above its first figure
    spike: tuple[int, str, float] | None = None
    # AverageMeter's iteration 0 ("Time 203.6 (203.6)  Data 196.4 (196.4)"), or a run's first record of
    # "time: ..., data_time: ...": the workers' start-up, left out of the times later lines give (step time,
    # data time).
    first_meters: tuple[float, float] | None = None
    # (line, text, metric lines since) where the loss turned NaN or Inf, when no finite loss came after:
    # the run went on computing nothing from there.
    nonfinite: tuple[int, str, int] | None = None
    # Lines where its step or epoch rose over its previous progress line (the last RISES_KEPT): an error
    # before one of them did not end the run.
    rises: tuple[int, ...] = ()
    epoch: int | None = None  # the epoch its line names besides the step ("Epoch 3: 41/49 [...]", "epoch=7/10")
    time: float | None = None  # the time its line carries (a timestamp before the line is not in `text`)
    # (line, text, metric lines since) where the loss fell straight from a real value to exactly 0, when
    # every later loss was 0 too: nothing trains any more (all labels masked, a loss replaced by 0).
    vanished: tuple[int, str, int] | None = None
    # The last step any of its progress lines showed: a line with none of its own (the loss dict HF's Trainer
    # prints between two states of its bar) neither rises nor hides the next rise from it.
    known_step: int | None = None
    loss_max: float | None = None  # the largest training loss it printed (0.0 throughout: HF filtered every NaN)
    loss_first: float | None = None  # the first training loss of its lines: where this stretch of training began
    # The last line where it printed a finite training loss, or a finite loss term that cleared a NaN before it
    # ("D_loss: 0.693" after "D_loss: nan"): whether training came back from a NaN.
    finite_line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "step": self.step, "path": self.path, "line": self.line, "text": self.text}


@dataclass(frozen=True)
class MemoryTable:
    """torch.cuda.memory_summary()'s current usage: what PyTorch's tensors held (allocated) against what
    its cache held from the device (reserved). Printed beside an OOM, it says whether the cache was full
    of tensors or of free bytes in gaps between them."""

    path: str
    line: int
    allocated: float  # bytes
    reserved: float  # bytes


@dataclass(frozen=True)
class SummaryRecord:
    """One rank's record in torchrun's failure summary (ChildFailedError)."""

    rank: int
    local_rank: int
    host: str | None
    exitcode: int | None
    pid: int | None
    traceback: str
    root_cause: bool
    path: str
    line: int
    time: float | None = None  # its `time :` field: when the launcher saw the rank fail


@dataclass(frozen=True)
class ScanResult:
    """What the scan of one input hands the reasoner: the contract between `logs/` and `reason/`.

    Frozen, so a parallel scan, a live snapshot and a renamed rotation are all new values made by
    `relocated`, never field-by-field copies that can miss a field.
    """

    path: str  # the input's name: a path, "<text>", an upload's or a stream's name
    bytes: int = 0
    lines: int = 0
    ranks: frozenset[int] = frozenset()
    matches: tuple[Match, ...] = ()
    tracebacks: tuple[Traceback, ...] = ()
    summaries: tuple[SummaryRecord, ...] = ()
    memory_tables: tuple[MemoryTable, ...] = ()  # torch.cuda.memory_summary() tables (reader: a few kept)
    world_sizes: frozenset[int] = frozenset()
    stated_ranks: frozenset[int] = frozenset()  # ranks its unprefixed lines say they are ("GLOBAL_RANK: 0")
    progress: Mapping[int | None, RankProgress] = field(default_factory=dict)
    tqdm_incomplete: Mapping[int | None, bool] = field(default_factory=dict)
    done: bool = False  # the log printed a line that says training finished
    done_line: int = 0  # the last such line of the tail (0: none)
    prompt_line: int = 0  # the tail's last line that is a shell's prompt alone: the program had exited (0: none)
    last_line_rank: Mapping[int | None, int] = field(default_factory=dict)
    dropped: Mapping[str, int] = field(default_factory=dict)  # fingerprint key -> hits not kept
    cut_lines: int = 0  # lines too long for a block, read only to their first MAX_LINE bytes
    # fingerprint key -> every rank whose lines matched it, including the lines past the hit cap
    seen_ranks: Mapping[str, frozenset[int]] = field(default_factory=dict)
    contexts: frozenset[str] = frozenset()  # the library's context marks this input mentions somewhere
    unreadable: str = ""  # a file of a directory that could not be read (and why): skipped, not fatal
    notable: tuple[Notable, ...] = ()  # error-worded lines of the tail (reader: NOTABLE_KEEP at most)
    markers: tuple[Marker, ...] = ()  # phase markers of the tail (reader: MARKERS_KEEP, the last ones)
    tail_lines: tuple[Line, ...] = ()  # the tail's lines, only when the reader keeps them (a baseline)
    checkpoints: tuple[Checkpoint, ...] = ()  # saves, loads and completions, in file order (capped)

    def summary(self) -> InputSummary:
        return InputSummary(self.path, self.bytes, self.lines, tuple(sorted(self.ranks)))

    def relocated(self, *, path: str | None = None, line_offset: int = 0,
                  line_map: Callable[[int], int] | None = None) -> ScanResult:
        """The same findings under another name (a rotated file) and/or shifted by the lines before
        them (a range of a file scanned on its own), or renumbered line by line (`line_map`: the kept
        lines of a reduced log, scanned without their gaps, back at their numbers in the original)."""
        old, new = self.path, path or self.path

        def at(p: str) -> str:
            return new if p == old else p

        def num(n: int) -> int:
            return line_map(n) if line_map is not None else n + line_offset

        def line(ln: Line) -> Line:
            return replace(ln, path=at(ln.path), number=num(ln.number))

        return replace(
            self,
            path=new,
            lines=num(self.lines) if line_map is not None else self.lines,
            matches=tuple(replace(m, line=line(m.line)) for m in self.matches),
            tracebacks=tuple(replace(t, path=at(t.path), first_line=num(t.first_line),
                                     last_line=num(t.last_line)) for t in self.tracebacks),
            summaries=tuple(replace(r, path=at(r.path), line=num(r.line)) for r in self.summaries),
            memory_tables=tuple(replace(t, path=at(t.path), line=num(t.line)) for t in self.memory_tables),
            progress={k: replace(p, path=at(p.path), line=num(p.line),
                                 spike=(num(p.spike[0]), p.spike[1], p.spike[2]) if p.spike else None,
                                 nonfinite=(num(p.nonfinite[0]), *p.nonfinite[1:]) if p.nonfinite else None,
                                 vanished=(num(p.vanished[0]), *p.vanished[1:]) if p.vanished else None,
                                 rises=tuple(num(n) for n in p.rises),
                                 finite_line=num(p.finite_line) if p.finite_line else None)
                      for k, p in self.progress.items()},
            done_line=num(self.done_line) if self.done_line else 0,
            prompt_line=num(self.prompt_line) if self.prompt_line else 0,
            last_line_rank={k: num(v) for k, v in self.last_line_rank.items()},
            notable=tuple(replace(n, line=line(n.line)) for n in self.notable),
            markers=tuple(replace(m, line=line(m.line)) for m in self.markers),
            tail_lines=tuple(line(ln) for ln in self.tail_lines),
            checkpoints=tuple(replace(c, line=line(c.line)) for c in self.checkpoints),
        )


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint save, load or a save's completion, as a log line names it (logs/checkpoints.py)."""

    kind: str  # save | load | done (the framework said a save finished)
    path: str
    step: int | None
    line: Line
    completed: bool | None = None  # a save: True once known finished, False when the failure cut it short

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "checkpoint": self.path, "step": self.step, "completed": self.completed,
                "path": self.line.path, "line": self.line.number, "rank": self.line.rank, "time": self.line.time}


@dataclass(frozen=True)
class Action:
    """What to do with the job next (reason/action.py): additive to trainmedic.diagnosis/v1."""

    kind: str  # restart | restart-without | fix-then-resume | stop
    owner: str  # whose problem: model-code | data | configuration | platform | hardware | framework | unknown
    reason: str
    checkpoint: Checkpoint | None = None  # the save to resume from (fix-then-resume, restart)
    exclude: str | None = None  # the host (and GPU) to leave out (restart-without)
    evidence: tuple[Evidence, ...] = ()  # the failure's first line, the checkpoint's line

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "owner": self.owner, "reason": self.reason,
                "checkpoint": self.checkpoint.to_json() if self.checkpoint else None, "exclude": self.exclude,
                "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class Novel:
    """A line of the failing run that no good run of the same job printed (reason/templates.py)."""

    line: Line
    score: float  # near the stop, rare in the failing run, worded as a failure: higher
    template: str  # the line with its variable parts masked, as the template miner saw it

    def to_json(self) -> dict[str, Any]:
        return {"path": self.line.path, "line": self.line.number, "rank": self.line.rank, "text": self.line.text,
                "score": round(self.score, 4), "template": self.template}


@dataclass(frozen=True)
class Phase:
    """Where in its life the job was when it stopped (reason/phase.py)."""

    name: str  # launch | setup | checkpoint-load | training | evaluation | checkpoint-save | shutdown
    summary: str  # "stopped during checkpoint save at step 12,000, 4 minutes after the last progress line"
    step: int | None = None  # the last step its progress showed before it stopped
    since_progress_s: float | None = None  # from that progress line to the stop, where both carry a time
    path: str | None = None  # the line that says so (a marker, or the last progress)
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "step": self.step,
                "since_progress_s": self.since_progress_s, "path": self.path, "line": self.line}


@dataclass(frozen=True)
class Diagnosis:
    verdict: Verdict
    primary: Finding | None
    alternatives: tuple[Alternative, ...] = ()
    collateral: tuple[Collateral, ...] = ()
    inputs: tuple[InputSummary, ...] = ()
    progress: tuple[RankProgress, ...] = ()
    facts: tuple[Fact, ...] = ()
    notes: tuple[str, ...] = field(default=())
    phase: Phase | None = None  # additive to v1: where the job was when it stopped
    novel: tuple[Novel, ...] = ()  # additive to v1: with a baseline, lines no good run printed, best first
    action: Action | None = None  # additive to v1: restart, restart without a host, fix then resume, or stop

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "primary": self.primary.to_json() if self.primary else None,
            "alternatives": [a.to_json() for a in self.alternatives],
            "collateral": [c.to_json() for c in self.collateral],
            "inputs": [i.to_json() for i in self.inputs],
            "progress": [p.to_json() for p in self.progress],
            "facts": [f.to_json() for f in self.facts],
            "notes": list(self.notes),
            "phase": self.phase.to_json() if self.phase else None,
            "novel": [n.to_json() for n in self.novel],
            "action": self.action.to_json() if self.action else None,
        }
