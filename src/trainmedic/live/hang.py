"""Where a hung job waits: classify each process's stack, find the stuck one, name the likely cause.

A hang is many processes waiting on each other; only one of them is the reason. Ranks blocked in a
collective wait for the rank that is not in one; a main process blocked on the DataLoader queue
waits for a worker, and the worker that sits in dataset code (on a lock, in I/O, in a sleep) is
the stuck one. What each process waits in comes from the frames alone (file and function names,
the source line), so it works for any program, not only the lab's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from trainmedic.catalog import Library
from trainmedic.live.stacks import Frame, ProcessStacks, ThreadStack, format_stacks
from trainmedic.live.watchdog import watchdog_line
from trainmedic.model import Alternative, Diagnosis, Evidence, Finding
from trainmedic.reason.engine import HANG
from trainmedic.util.text import rank_label

WORKER_HANG = "dataloader-worker-failure/worker-hang"

_DATALOADER = "torch/utils/data/dataloader.py"
_DATALOADER_WAIT = {"_try_get_data", "_get_data", "_next_data", "__next__"}
_WORKER_LOOP = "torch/utils/data/_utils/worker.py"
_FETCH = "torch/utils/data/_utils/fetch.py"
_LAUNCHERS = ("torch/distributed/elastic/", "torch/distributed/run.py", "torch/distributed/launch.py",
              "accelerate/commands/", "deepspeed/launcher/")
_COLLECTIVE_FILES = ("torch/distributed/", "torch/nn/parallel/distributed.py")
_BACKWARD = {"_engine_run_backward", "run_backward", "backward"}
_SERIALIZATION = "torch/serialization.py"
_SLEEP = re.compile(r"\bsleep\s*\(")
_LOCK_CODE = re.compile(r"(?i)\block\b|_lock\b|lock\s*:|\.acquire\(|mutex|semaphore|condition|\.join\(")
_LOCK_FUNCS = {"acquire", "_acquire_restore", "wait", "join", "_wait_for_tstate_lock", "__enter__"}
_IO_FUNCS = {"read", "readinto", "readline", "recv", "recv_into", "_recv", "_recv_bytes", "recvfrom", "accept",
             "connect", "create_connection", "getaddrinfo", "urlopen", "open", "send", "sendall", "write",
             "select", "poll", "_poll", "flush", "fsync", "stat", "listdir", "scandir"}
_IO_CODE = re.compile(r"\.(?:read|recv|readinto|readline|send|sendall|write|fsync)\w*\(|\bopen\(|urlopen|requests\.")


@dataclass(frozen=True)
class Wait:
    """What one process is doing: a kind (below), the frame that says so, and a phrase for people."""

    kind: str  # dataloader-wait, collective, checkpoint-io, starting, sleep, lock, io, busy, blocked, idle,
    # launcher, unknown
    frame: Frame | None
    phrase: str  # "is blocked on a lock in f (x.py:3)"
    quote_code: bool = False  # the frame's source line says more than its name (the user's own code)

    @property
    def detail(self) -> str:
        """The phrase with the source line it points at, when that line is the user's."""
        if self.quote_code and self.frame is not None and self.frame.code:
            return f"{self.phrase}: `{self.frame.code}`"
        return self.phrase


def _is_stdlib(path: str) -> bool:
    p = path.replace("\\", "/")
    return p.startswith("<frozen") or ("/lib/python3" in p and "-packages/" not in p)


def _is_user(f: Frame) -> bool:
    p = f.path.replace("\\", "/")
    return not _is_stdlib(p) and "-packages/" not in p


def _has(frames: Sequence[Frame], path_part: str, names: set[str] | None = None) -> Frame | None:
    for f in frames:
        if path_part in f.path.replace("\\", "/") and (names is None or f.function.rsplit(".", 1)[-1] in names):
            return f
    return None


def _leaf_wait(frames: Sequence[Frame], active: bool | None) -> Wait:
    """Classify the innermost frames: the call a blocked process sits in."""
    if not frames:
        return Wait("unknown", None, "has no Python frames")
    leaf = frames[0]
    user = next((f for f in frames if _is_user(f)), leaf)
    fn = leaf.function.rsplit(".", 1)[-1]
    if _SLEEP.search(user.code) or _SLEEP.search(leaf.code):
        return Wait("sleep", user, f"sleeps in {user.where()}", True)
    if (fn in _LOCK_FUNCS and (_is_stdlib(leaf.path) or leaf is user)) or _LOCK_CODE.search(user.code):
        return Wait("lock", user, f"is blocked on a lock in {user.where()}", True)
    if fn in _IO_FUNCS or _IO_CODE.search(user.code):
        return Wait("io", user, f"is blocked in I/O in {user.where()}", True)
    if active:
        return Wait("busy", user, f"is busy (on CPU) in {user.where()}: an endless loop or a very slow step", True)
    return Wait("blocked", user, f"waits in {user.where()}", True)


def classify(ps: ProcessStacks) -> tuple[str, Wait]:
    """(role, wait) of one process; role is launcher, worker, main or other."""
    thread = ps.main_thread()
    if thread is None:
        why = ps.error or "no stack"
        return "other", Wait("unknown", None, f"has no Python stack ({why})")
    frames = thread.frames
    all_frames = [f for t in ps.threads for f in t.frames]
    if ps.process.name == "pt_data_worker" or _has(all_frames, _WORKER_LOOP, {"_worker_loop"}):
        return "worker", _worker_wait(thread)
    if any(_has(frames, part) for part in _LAUNCHERS):
        return "launcher", Wait("launcher", frames[0] if frames else None, "is the launcher, watching its workers")
    return "main", _main_wait(ps, thread)


def _worker_wait(thread: ThreadStack) -> Wait:
    frames = thread.frames
    loop = next((i for i, f in enumerate(frames) if f.function.rsplit(".", 1)[-1] == "_worker_loop"), len(frames))
    inner = frames[:loop]
    if not any(_FETCH in f.path.replace("\\", "/") or _is_user(f) for f in inner):
        return Wait("idle", frames[0] if frames else None, "is idle, waiting for sample indices")
    return _leaf_wait(inner, thread.active)


def _importing(frames: Sequence[Frame]) -> Frame | None:
    """The innermost module being imported, when the thread is inside an import (a slow start, not a hang)."""
    modules = [f for f in frames if f.function == "<module>" and not f.path.startswith("<")]
    frozen = any(f.path.startswith("<frozen importlib") for f in frames)
    if modules and (frozen or len(modules) >= 2):
        return modules[0]
    return None


def _main_wait(ps: ProcessStacks, thread: ThreadStack) -> Wait:
    frames = thread.frames
    imp = _importing(frames)
    if imp is not None:
        return Wait("starting", imp, f"is still starting: importing {imp.where()}")
    dl = _has(frames, _DATALOADER, _DATALOADER_WAIT)
    if dl is not None:
        return Wait("dataloader-wait", dl, f"waits for a batch from its DataLoader workers in {dl.where()}")
    coll = next((f for f in frames if any(p in f.path.replace("\\", "/") for p in _COLLECTIVE_FILES)
                 and "/elastic/" not in f.path), None)
    if coll is not None:
        return Wait("collective", coll, f"waits in a collective: {coll.where()}")
    if ps.process.rank is not None:
        bw = _has(frames, "torch/autograd/", _BACKWARD)
        if bw is not None:
            return Wait("collective", bw, f"waits in backward() at {bw.where()}: DDP's gradient all-reduce "
                        "cannot finish until every rank joins")
    ser = _has(frames, _SERIALIZATION)
    if ser is not None:
        return Wait("checkpoint-io", ser, f"is in checkpoint I/O: {ser.where()}")
    return _leaf_wait(frames, thread.active)


# ---------------------------------------------------------------- the report


@dataclass(frozen=True)
class Inspected:
    stacks: ProcessStacks
    role: str
    wait: Wait


@dataclass(frozen=True)
class HangReport:
    """What the watchdog found: every process's wait, the stuck one, the likely cause."""

    stalled: float
    processes: tuple[Inspected, ...]
    stuck: Inspected | None
    cause: str
    confidence: float
    summary: str  # one phrase: who is stuck, where, why
    others: str  # what the rest of the job does meanwhile

    @property
    def rank(self) -> int | None:
        return self.stuck.stacks.process.rank if self.stuck else None

    def line(self) -> str:
        """The watchdog's line for the log: the library's hang fingerprint, then what the stacks say."""
        if self.stuck is None:
            return watchdog_line(self.stalled, self.summary)
        parts = [f"stuck: {self.summary}", self.others, f"likely {self.cause}"]
        return watchdog_line(self.stalled, "; ".join(p for p in parts if p), self.rank)

    def describe(self, item: Inspected) -> str:
        return describe(item, self.processes)

    def notes(self) -> list[str]:
        names = {i.stacks.process.pid: self.describe(i) for i in self.processes}
        waits = [f"{self.describe(i)}: {i.wait.detail}" for i in self.processes if i.stacks.threads]
        failed = [f"{self.describe(i)}: {i.stacks.error}" for i in self.processes
                  if not i.stacks.threads and i.role != "other"]
        out = ["where each process waits:\n  " + "\n  ".join(waits)] if waits else []
        if failed:
            out.append("no stack for:\n  " + "\n  ".join(failed))
        out.extend(format_stacks([i.stacks for i in self.processes], names))
        return out

    def evidence(self) -> tuple[Evidence, ...]:
        """The frames the verdict rests on, as path:line of the source a reader can open."""
        items = [self.stuck] if self.stuck else []
        items += [i for i in self.processes if i is not self.stuck and i.wait.kind in ("dataloader-wait", "collective")]
        out = []
        for i in items[:6]:
            f = i.wait.frame
            if f is not None:
                out.append(Evidence(f.path, f.line, i.stacks.process.rank, f"{self.describe(i)} {i.wait.detail}"))
        return tuple(out)


def describe(item: Inspected, everyone: Sequence[Inspected] = ()) -> str:
    p = item.stacks.process
    if item.role == "worker":
        parent = next((i for i in everyone if i.stacks.process.pid == p.ppid), None)
        owner = f" of {describe(parent)}" if parent is not None else ""
        return f"DataLoader worker pid {p.pid}{owner}"
    if item.role == "launcher":
        return f"launcher pid {p.pid}"
    return f"{rank_label(p.rank)} (pid {p.pid})" if p.rank is not None else f"main process pid {p.pid}"


_STUCK_KINDS = ("lock", "io", "sleep", "busy", "blocked", "checkpoint-io", "starting")


def _supervisors(items: tuple[Inspected, ...]) -> tuple[Inspected, ...]:
    """A process whose children run the job (a shell script, `trainmedic run`, a custom launcher) only waits
    for them: it is a launcher, whatever its own stack looks like."""
    parents = {i.stacks.process.ppid for i in items if i.role in ("main", "launcher")}
    return tuple(
        Inspected(i.stacks, "launcher", Wait("launcher", i.wait.frame, "supervises the job's processes"))
        if i.role == "main" and i.stacks.process.pid in parents else i
        for i in items
    )


def inspect(stacks: Sequence[ProcessStacks], stalled: float) -> HangReport:
    """Find the stuck process among the job's stacks and the likely cause."""
    items = _supervisors(tuple(Inspected(ps, *classify(ps)) for ps in stacks))
    mains = [i for i in items if i.role == "main"]
    workers = [i for i in items if i.role == "worker"]
    in_collective = [i for i in mains if i.wait.kind == "collective"]
    outside = [i for i in mains if i.wait.kind != "collective"]
    suspects = outside if in_collective and outside else mains
    suspects = sorted(suspects, key=lambda i: (i.stacks.process.rank is None, i.stacks.process.rank or 0,
                                               i.stacks.process.pid))

    def report(stuck: Inspected | None, cause: str, confidence: float, summary: str) -> HangReport:
        return HangReport(stalled, items, stuck, cause, confidence, summary, _others(items, stuck, in_collective))

    # A main process waiting for its DataLoader: the worker that sits in dataset code is the stuck one.
    for main in suspects:
        if main.wait.kind != "dataloader-wait":
            continue
        mine = [w for w in workers if w.stacks.process.ppid == main.stacks.process.pid]
        blocked = [w for w in mine if w.wait.kind in _STUCK_KINDS]
        if blocked:
            w = blocked[0]
            more = f" (and {len(blocked) - 1} more worker(s) like it)" if len(blocked) > 1 else ""
            return report(w, WORKER_HANG, 0.85,
                          f"{describe(w, items)} {w.wait.phrase}{more}, so {describe(main)} waits for its batch")
        why = "its workers are idle or gone" if mine else "no worker process is left"
        return report(main, WORKER_HANG, 0.6, f"{describe(main)} {main.wait.phrase}; {why}")
    for main in suspects:
        if main.wait.kind in _STUCK_KINDS:
            conf = 0.85 if in_collective else 0.7
            return report(main, HANG, conf, f"{describe(main)} {main.wait.phrase}")
    if in_collective and not outside:
        return report(None, HANG, 0.5, "every rank here waits in a collective: the rank they wait for is not on "
                      "this machine, or it exited")
    if suspects:
        main = suspects[0]
        return report(main, HANG, 0.5, f"{describe(main)} {main.wait.phrase}")
    errors = "; ".join(sorted({i.stacks.error for i in items if i.stacks.error}))[:300]
    return report(None, HANG, 0.5, f"no Python stack could be taken ({errors or 'no live process'})")


def _others(items: Sequence[Inspected], stuck: Inspected | None, in_collective: Sequence[Inspected]) -> str:
    rest = [i for i in in_collective if i is not stuck]
    if not rest or stuck is None:
        return ""
    ranks = sorted(i.stacks.process.rank for i in rest if i.stacks.process.rank is not None)
    if not ranks:
        return "the other ranks wait for it in a collective"
    who = f"{rank_label(ranks[0])} waits" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))} wait"
    return f"{who} for it in a collective"


def apply(d: Diagnosis, report: HangReport, library: Library) -> Diagnosis:
    """Put what the stacks say into the diagnosis: the stuck process, its frame, the likely cause, the stacks.

    Only a hang verdict resting on the watchdog's line is rewritten; any other primary (a failure
    that came first) stays, and the stacks are added as notes.
    """
    notes = (*d.notes, *report.notes())
    p = d.primary
    if d.verdict != "hang" or p is None or p.id != HANG:
        return replace(d, notes=notes)
    try:
        entry, cause = library.resolve(report.cause)
    except KeyError:
        entry, cause = library.resolve(HANG)
    if cause is None:  # pragma: no cover - ids above always name a cause
        return replace(d, notes=notes)
    why = f"no progress for {report.stalled:.1f} s while the processes live; {report.summary}"
    if report.stuck is not None and report.stuck.wait.quote_code and report.stuck.wait.frame is not None:
        why += f"; it waits on `{report.stuck.wait.frame.code}`" if report.stuck.wait.frame.code else ""
    if report.others:
        why += f"; {report.others}"
    finding = Finding(
        id=cause.full_id, title=f"{entry.title}: {cause.title}", category=entry.category,
        confidence=report.confidence, rank=report.rank if report.stuck else p.rank, host=p.host, time=p.time,
        evidence=(*p.evidence[:2], *report.evidence()), fix=cause.fix, verify=cause.verify,
        missing=() if report.stuck else p.missing, why=why,
    )
    alts = d.alternatives
    if cause.full_id != HANG:
        alts = (Alternative(HANG, round(min(0.9, report.confidence) * 0.5, 3),
                            "the generic verdict: progress stopped; the stacks point at the cause above"), *alts)
    return replace(d, primary=finding, alternatives=alts, notes=notes)
