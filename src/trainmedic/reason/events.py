"""Turn confirmed matches into events: one per traceback (all its matched lines together), else one per line."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace

from trainmedic.catalog import Library
from trainmedic.logs.attribution import split_prefix
from trainmedic.logs.tracebacks import raising
from trainmedic.model import Cause, Event, Fingerprint, Line, Match, ScanResult, Traceback

_N = r"(\d{1,18}(?!\d))"  # a number int() can take: no longer digit strings
_PID = re.compile(
    rf"\(pid(?:\(s\))?:? {_N}|[Kk]illed process {_N}|\bpid[=: ]+{_N}|by PID {_N}|[Ss]ending process {_N}"
)


# A Python warning quoting the repr of an exception it caught ("file.py:32: UserWarning: Failed to import
# diffusers plugin due to: ImportError('peft>=0.17.0 is required ...')"): the library handled that error and
# went on; what the exception says is context. (Not any warning: torch warns "The NVIDIA driver on your system
# is too old" before the failure it foretells.)
_PYTHON_WARNING = re.compile(r":\d{1,7}: [A-Z][A-Za-z]{0,40}Warning: [^\n]{0,300}?"
                             r"\b[A-Z][A-Za-z]{0,40}(?:Error|Exception)\(['\"]")
# The dataset's fetch() (torch/utils/data/_utils/fetch.py): where a batch is loaded, in a worker or in a loader
# without workers.
_LOADING = re.compile(r"utils[/\\]data[/\\]_utils[/\\]fetch\.py")
_FRAME_FUNCTION = re.compile(r'(?:File "([^"]*)", line \d+, )?in ([A-Za-z_][A-Za-z0-9_]*)$')
UNCAUGHT = "unclassified-failure/uncaught-exception"  # a traceback no fingerprint explains
STALL = "training-hang/stalled-progress"  # a stack sample of a live process, in no known wait
CLAIMED_WEIGHT = 0.8  # a reading taken over where it was raised (the library's `claims`): as strong as `raised_in`


# torch.multiprocessing.spawn's parent, reporting the child that failed: "-- Process 2 terminated with the
# following error:" (the child's traceback follows), "process 2 terminated with exit code 1" / "with signal
# SIGKILL" (ProcessExitedException). The process index is the child's local rank.
_SPAWN_CHILD = re.compile(r"-- Process (\d{1,6}) terminated with the following error|"
                          r"\bprocess (\d{1,6}) terminated with (?:exit code|signal)")


def tb_rank(tb: Traceback) -> int | None:
    """The rank a traceback is of: its prefix's, else the spawn child it came from, else the child the
    spawn parent's exception names."""
    if tb.rank is not None:
        return tb.rank
    if tb.process is not None:
        return tb.process
    m = _SPAWN_CHILD.search(tb.final)
    return int(m[1] or m[2]) if m else None


WAITED = "interrupted-wait"  # the reading of a process's stack that shows where it waited (waiting_event)


def read_as_wait(e: Event) -> bool:
    """The event is a stack read as a wait (waiting_event), not a matched line."""
    return any(f.endswith("#" + WAITED) for f, _ in e.fingerprints)


def waiting_event(library: Library, tb: Traceback, order: int) -> Event | None:
    """A run interrupted by hand (Ctrl-C) shows where it waited: a DataLoader queue, a collective, a
    lock. The library's `stack_waits` say which cause a waiting function stands for; a specific cause
    beats the generic hang (a fallback)."""
    calls = [(m.group(1) or "", m.group(2)) for f in tb.frames if (m := _FRAME_FUNCTION.search(f))]
    if not calls:
        return None

    def waits_in(spec: str, path: str, function: str) -> bool:
        """`function`, or `path-part:function` for a function that waits only in that file."""
        where, _, name = spec.rpartition(":")
        return name == function and where in path

    causes = sorted((c for c in library.causes() if c.stack_waits), key=lambda c: c.fallback)
    for cause in causes:
        at = next((i for i in reversed(range(len(calls)))
                   if any(waits_in(s, *calls[i]) for s in cause.stack_waits)), None)
        if at is None or any(_LOADING.search(p) and f == "fetch" for p, f in calls[at + 1:]):
            # (Below the DataLoader's wait, the dataset's fetch(): this process was loading the batch itself, a
            # loader without workers or a worker: working, not waiting.)
            continue
        where = calls[at][1]
        how = "a stack dump shows it" if tb.dump else "interrupted" if tb.interrupted else "the log ends"
        kind = "a stack dump, no error" if tb.dump else "a traceback with no error"
        return _stack_event(cause, tb, f"{how} while waiting in {where}() ({kind})",
                            WAITED, 0.7, ambiguous=False, order=order)
    return None


def _stack_event(cause: Cause, tb: Traceback, text: str, reading: str, weight: float, *, ambiguous: bool,
                 order: int) -> Event:
    """An incident read from a traceback's frames rather than from a matched line."""
    line = Line(tb.path, tb.first_line, text, tb.rank)
    return Event(cause=cause.full_id, role=cause.role, rank=tb_rank(tb), host=None, time=None, path=tb.path,
                 line=tb.first_line, weight=weight, ambiguous=ambiguous, evidence=(line,), traceback=tb,
                 order=order, fingerprints=((f"{cause.full_id}#{reading}", weight),))


def cut_event(library: Library, tb: Traceback, order: int) -> Event | None:
    """A traceback the log ends in (its exception line was never written or was cut off): an
    exception propagated, but which one is unknown."""
    if UNCAUGHT not in library.cause_ids:
        return None
    return _stack_event(library.cause(UNCAUGHT), tb, f"a traceback the log ends in, last frame: {tb.frames[-1][:300]}",
                        "cut-traceback", 0.3, ambiguous=True, order=order)


def sample_event(library: Library, tb: Traceback, order: int) -> Event | None:
    """A stack a printer wrote of a live process (no header, no exception) in no function the library
    knows as a wait: the process was alive and somewhere it should not stay, a stall, not an error."""
    if STALL not in library.cause_ids:
        return cut_event(library, tb, order)
    return _stack_event(library.cause(STALL), tb, f"a stack dump, no error: the process was in {tb.frames[-1][:300]}",
                        "stack-sample", 0.25, ambiguous=True, order=order)


def exception_event(library: Library, tb: Traceback, order: int) -> Event | None:
    """A complete traceback whose exception line matches nothing: the exception itself is the evidence."""
    if UNCAUGHT not in library.cause_ids:
        return None
    line = Line(tb.path, tb.last_line, tb.exceptions[-1][:1000], tb.rank)
    return Event(cause=UNCAUGHT, role=library.cause(UNCAUGHT).role, rank=tb_rank(tb), host=None, time=None,
                 path=tb.path, line=tb.last_line, weight=0.3, ambiguous=True, evidence=(line,), traceback=tb,
                 order=order, fingerprints=((f"{UNCAUGHT}#unnamed-exception", 0.3),))


def pid_of(text: str) -> int | None:
    m = _PID.search(text)
    if not m:
        return None
    return int(next(g for g in m.groups() if g))


def _event(library: Library, matches: list[Match], tb: Traceback | None, order: int,
           weight_of: dict[str, float] | None = None, contexts: frozenset[str] = frozenset()) -> Event:
    def _fp(m: Match) -> Fingerprint:
        fp = library.fingerprint(m.fingerprint)
        if fp is None:
            raise KeyError(m.fingerprint)
        return fp

    def weight(m: Match) -> float:
        return (weight_of or {}).get(m.fingerprint, _fp(m).weight)

    def ambiguous(m: Match) -> bool:
        return _fp(m).ambiguous

    ranked = sorted(matches, key=lambda m: (-weight(m), m.line.number))
    best = ranked[0]
    decided = False  # an ambiguous line the wrapper of its own entry gives its context
    # A wrapper ("Caught X in DataLoader worker process N") is judged by the known cause it wraps;
    # a cause that has a meaning of its own inside a worker (host memory -> the worker's OOM) takes it.
    if best.cause in library.wrappers:
        wrapper = best.cause
        inner = [
            m for m in ranked[1:]
            if m.cause not in library.wrappers
            and library.cause(m.cause).role == "initiating"
            and m.cause not in library.fallbacks
            # (not a mistake of a kind the wrapper keeps as its own: a shape error in a dataset's code)
            and not library.keeps_inside(best.cause, m.cause)
            # weak alone, but the wrapper of its own entry is the context that decides it ("initialization
            # error" inside "Caught RuntimeError in DataLoader worker process 0")
            and (weight(m) >= 0.7 or m.cause.partition("/")[0] == best.cause.partition("/")[0]
                 # (or one whose meaning inside a worker the library names: the wrapper is that context)
                 or m.cause in library.in_worker)
        ] or [  # what it carries is another rank's failure (a collective's remote error): it is that echo
            m for m in ranked[1:]
            if m.cause not in library.wrappers and library.cause(m.cause).role == "cascade" and weight(m) >= 0.7
        ]
        if inner:
            decided = weight(inner[0]) < 0.7  # only a line of the wrapper's own entry gets in below 0.7
            best = inner[0]
            inside = library.in_worker.get(best.cause)
            # (the marks of the entry it moves to, or of the wrapper's: its line says which worker it was)
            marks = (library.worker_marks(inside.split("/")[0]) + library.worker_marks(wrapper.partition("/")[0])
                     if inside else ())
            if inside and any(mark in m.line.text for m in matches for mark in marks):
                best = Match(best.fingerprint, inside, best.line)
                return _event(library, [best], tb, order, weight_of={best.fingerprint: weight(inner[0])})
    cause = library.cause(best.cause)
    bare = False
    # (the lines context is looked for in, gathered only for a cause that reads context)
    seen = ([m.line.text for m in matches] + list(tb.frames + tb.exceptions if tb else ())
            if cause.inside_as or (cause.needs_context and cause.otherwise) else [])

    def shows(marks: tuple[str, ...]) -> bool:
        return any(mark in text for text in seen for mark in marks) or bool(contexts & set(marks))

    if cause.inside_as and shows(cause.inside_marks):
        # Context names the owner: a generic failure (a JIT extension's ninja build) inside a framework's
        # own machinery (one of DeepSpeed's ops) is that framework's cause, with its fix.
        moved = [Match(m.fingerprint, cause.inside_as, m.line) for m in matches if m.cause == best.cause]
        return _event(library, moved, tb, order, weight_of={m.fingerprint: weight(m) for m in moved})
    if cause.needs_context and cause.otherwise:
        # Context decides: the same message means another cause where the incident shows none of
        # the marks this cause needs (CUDA re-initialised in a fork with no DataLoader in sight).
        if not shows(cause.needs_context) and cause.otherwise_context and not shows(cause.otherwise_context):
            # Neither reading is in sight (a bare message): this cause, the commoner, stays, ambiguous,
            # and the other is named among the alternatives (`competes`).
            bare = True
        elif not shows(cause.needs_context):
            moved = [Match(m.fingerprint, cause.otherwise, m.line) for m in matches if m.cause == best.cause]
            # Absence of context is weaker evidence than its presence: the event stays ambiguous, so the
            # cause it was taken from is still named among the alternatives (`competes`).
            return replace(_event(library, moved, tb, order, weight_of={m.fingerprint: weight(m) for m in moved}),
                           ambiguous=True)
    same = [m for m in matches if m.cause == best.cause]
    # Noisy-OR over distinct fingerprints of the chosen cause: two different messages agreeing
    # are stronger evidence than one; the same message repeated is not.
    distinct = {m.fingerprint: weight(m) for m in same}
    miss = 1.0
    for w in distinct.values():
        miss *= 1.0 - w
    evidence = tuple(sorted({m.line for m in matches}, key=lambda ln: ln.number))
    first = min(same, key=lambda m: m.line.number).line
    times = [m.line.time for m in matches if m.line.time is not None]
    pid = next((p for m in same if (p := pid_of(m.line.text)) is not None), None)
    return Event(
        cause=best.cause,
        role=cause.role,
        rank=first.rank if first.rank is not None else (tb_rank(tb) if tb is not None else None),
        host=next((m.line.host for m in matches if m.line.host), None),
        time=min(times) if times else None,
        path=first.path,
        line=first.number,
        weight=1.0 - miss,
        ambiguous=(bare or all(ambiguous(m) for m in same)) and not decided,
        evidence=evidence,
        traceback=tb,
        pid=pid,
        order=order,
        fingerprints=tuple(sorted(distinct.items())),
        warning=all(_fp(m).warning or (tb is None and _PYTHON_WARNING.search(m.line.text) is not None)
                    for m in same),
    )


def is_precursor(library: Library, m: Match) -> bool:
    fp = library.fingerprint(m.fingerprint)
    return fp is not None and fp.precursor


def is_handled(library: Library, m: Match) -> bool:
    fp = library.fingerprint(m.fingerprint)
    return fp is not None and fp.handled


def is_at_exit(library: Library, m: Match) -> bool:
    fp = library.fingerprint(m.fingerprint)
    return fp is not None and fp.at_exit


def precursors(library: Library, scans: list[ScanResult]) -> list[Match]:
    """Warnings that came before a possible failure (the guard's "fds at 90 % of ulimit -n")."""
    return [m for scan in scans for m in scan.matches if is_precursor(library, m)]


def stopped_by_hand(library: Library, scan: ScanResult, tb: Traceback) -> bool:
    """Ctrl-C (KeyboardInterrupt, the launcher's SIGINT) pressed on a run that had been training: the
    same output shows its progress (other ranks' bars may run on below the first traceback), and the
    frames show no wait (those read as a hang). The person stopped a working run; it did not fail."""
    return (tb.interrupted and not tb.dump and not tb.ignored
            and any(p.path == tb.path for p in scan.progress.values())
            and waiting_event(library, tb, 0) is None)


def stopped_at(library: Library, scan: ScanResult) -> int | None:
    """Where a person stopped the run by hand (`stopped_by_hand`), if they did."""
    return min((t.first_line for t in scan.tracebacks if stopped_by_hand(library, scan, t)), default=None)


def thread_after_the_end(scan: ScanResult, tb: Traceback, stop: int | None) -> bool:
    """A helper thread (pin_memory, a logger) died once the run had said it finished, or below where a person
    stopped it by hand (`stop`: the pin_memory thread's queue is torn down under it): the main thread had
    done its work or been stopped; the thread's error ended nothing."""
    return tb.thread and (scan.done or (stop is not None and tb.first_line > stop))


def _own_job_line(library: Library, m: Match) -> bool:
    """A line of the job's scheduler, container runtime or notebook (fingerprint `own_job`), never Python's."""
    fp = library.fingerprint(m.fingerprint)
    return fp is not None and fp.own_job


def build_events(library: Library, scans: list[ScanResult]) -> list[Event]:
    events: list[Event] = []
    order = 0
    for scan in scans:
        by_tb: dict[int, list[Match]] = defaultdict(list)
        loose: list[Match] = []
        tbs = sorted(scan.tracebacks, key=lambda t: t.first_line)
        for m in sorted(scan.matches, key=lambda m: m.line.number):
            if is_precursor(library, m) or is_handled(library, m) or is_at_exit(library, m):
                continue
            if _source_context(m.line.text):
                continue
            owner = _owner(tbs, m.line)
            # A launcher's teardown line run into an exception's message ("RuntimeError: ... Killing
            # subprocess 53629") is the launcher's, not the exception's; so is the job's scheduler or
            # container runtime reporting an OOM kill in its cgroup (slurmstepd's "Detected 3 oom_kill
            # events"), right below the traceback of the process it killed.
            if owner is None or library.cause(m.cause).role == "teardown" or _own_job_line(library, m):
                loose.append(m)
            else:
                by_tb[owner].append(m)
        # A run interrupted by hand while it waited is judged by where it waited, not by the generic
        # exception line (KeyboardInterrupt) that ends its traceback.
        # (Not one Python printed under "Exception ignored in" and went on from, cut off or not.)
        # (A frame a fingerprint names, a DataLoader worker's loop, says where an interrupted process was,
        # not that it failed there: Ctrl-C reaches every worker waiting on its queue.)
        # (A stack cut before its exception with a complete traceback after it is a piece of that one, split
        # by another process's lines: what it raised is below, not a wait. Not a destructor's ignored one.)
        # (A stack cut while it raised, its last frame's source a `raise` or an `assert`, waited nowhere: an
        # exception was on its way, read as a cut traceback.)
        stalls = {i: None if raising(tb) and not tb.interrupted else waiting_event(library, tb, 0)
                  for i, tb in enumerate(tbs) if (tb.interrupted or tb.truncated)
                  and not (tb.ignored and not tb.interrupted)
                  and (tb.interrupted or not any(t.exceptions and not t.ignored and t.first_line > tb.last_line
                                                 for t in tbs[i + 1:]))
                  and all(m.cause in library.fallbacks or (tb.interrupted and _frame_line(m.line.text))
                          for m in by_tb.get(i, ()))}
        # Where the last exception nobody caught starts (not a helper thread's): one that ended the run.
        uncaught_last = max((t.first_line for t in tbs if t.exceptions and not t.ignored and not t.thread),
                            default=-1)
        # (each traceback's stop by hand decided once: it is read where a run's tracebacks are grouped, and
        # where its threads are)
        by_hand = {i for i, t in enumerate(tbs) if stopped_by_hand(library, scan, t)}
        stop = min((tbs[i].first_line for i in by_hand), default=None)  # = stopped_at(library, scan)
        waiting = {i for i, ev in stalls.items() if ev is not None or (tbs[i].truncated and i not in by_tb)}
        stall_at = {tbs[i].first_line: stalls[i] for i in waiting}  # one traceback starts on each line
        grouped: list[tuple[int, list[Match], Traceback | None]] = [
            (min(m.line.number for m in ms), ms, tbs[i]) for i, ms in by_tb.items() if i not in waiting
            and not (i in by_hand
                     and all(m.cause in library.fallbacks or _frame_line(m.line.text) for m in ms))
        ]
        grouped += [(tbs[i].first_line, [], tbs[i]) for i in waiting]
        # A traceback whose exception no fingerprint knows, not even by its name ("StoreLeaseExpired",
        # "KeyboardInterrupt"): an exception still ended the run.
        # (Not Ctrl-C pressed on a run that was training: a stop by hand in no wait is no failure.)
        grouped += [(t.last_line, [], t) for i, t in enumerate(tbs)
                    if i not in by_tb and i not in waiting and t.exceptions and not t.truncated
                    and i not in by_hand]
        # Several causes can match one line (a kernel record for `pt_data_worker` is both a worker
        # OOM and a host OOM): one line is one incident, explained by its strongest cause.
        by_line: dict[int, list[Match]] = defaultdict(list)
        # (a launcher's teardown line by where it stands: one that is a traceback's exception line echoes it)
        teardown_at = {m.line.number: m.cause for m in loose if library.cause(m.cause).role == "teardown"}
        for m in loose:
            by_line[m.line.number].append(m)
        grouped += [(n, ms, None) for n, ms in by_line.items()]
        for _, ms, tb in sorted(grouped, key=lambda g: g[0]):
            if ms or tb is None:
                event: Event | None = _event(library, ms, tb, order, contexts=scan.contexts)
            elif tb.first_line in stall_at:
                stalled = stall_at[tb.first_line]
                event = (replace(stalled, order=order) if stalled is not None
                         else sample_event(library, tb, order) if tb.dump else cut_event(library, tb, order))
            else:
                event = exception_event(library, tb, order)
            if event is not None and tb is not None and (
                    claimed := library.claimed(event.cause, tb.frames, tb.final)) is not None:
                # Raised where another cause's state is used, the error is that cause's (the library's
                # `claims`): a shape mismatch inside an optimizer's update is its state restored for other
                # parameters, not the model's own shapes.
                event = replace(event, cause=claimed, role=library.cause(claimed).role, ambiguous=False,
                                weight=CLAIMED_WEIGHT, fingerprints=((f"{claimed}#claims", CLAIMED_WEIGHT),))
            if event is not None and tb is not None and event.cause in library.fallbacks:
                # (A launcher that raised something else failed itself: its arguments or its config.)
                echo_of = library.frame_owner(tb.frames, _exception_class(tb.final))
                if echo_of is None:
                    # (A wrapper that ran the launcher as a subprocess (ultralytics' DDP trainer runs `python -m
                    # torch.distributed.run`) raised its report as the wrapper's own: the exception line is a
                    # launcher's line, the workers' failure echoed.)
                    echo_of = teardown_at.get(tb.last_line)
                if echo_of is not None:  # the launcher's own traceback: an echo of its workers' failure
                    event = replace(event, cause=echo_of, role=library.cause(echo_of).role)
            if event is not None and tb is not None and (
                    thread_after_the_end(scan, tb, stop) or harmless_traceback(tb)):
                # A helper thread died once the run had finished or been stopped by hand (thread_after_the_end):
                # its error ended nothing. An experiment tracker's own
                # thread (wandb's file stream, a TensorBoard writer) ends nothing training waits on. A
                # thread whose work was cancelled (a feeder's enqueue when the session closes) was
                # stopped on purpose: that is how a program shuts its helpers down. A traceback a logger
                # printed under a warning is that warning's detail.
                event = None
            if event is not None and tb is not None and tb.ignored and not (
                    tb.interrupted and tb.first_line in stall_at and stall_at[tb.first_line] is not None) and (
                    uncaught_last > tb.last_line
                    or (not _sigchld_report(tb) and (
                        event.cause in library.fallbacks
                        or all(_frame_line(ln.text) for ln in event.evidence)
                        or (bool(ms) and all(_frame_line(m.line.text) or _generic(library, m) for m in ms
                                       if m.cause not in library.fallbacks))))):
                # An exception Python reported and ignored (a destructor at shutdown) is no failure of its
                # own; its frames say only where it happened (and an exception line only the fallback or an
                # ambiguous fingerprint knows, "ConnectionResetError: ...", says nothing more). A known message
                # inside it still counts
                # (DeepSpeed's op that never loaded shows first in the optimizer's destructor),
                # unless an exception nobody caught follows it: that one ended the run, and the destructors
                # ran as it unwound (a DataLoader iterator's, finding its worker aborted under a CUDA OOM).
                # The DataLoader's SIGCHLD handler raising into such code is no destructor's noise: a worker died.
                event = None
            if event is not None:
                events.append(event)
                order += 1
    return events


# IPython and Jupyter print each frame's source around the line it ran, numbered ("    305     raise
# RuntimeError(", "    306         "Cannot re-initialize CUDA in forked subprocess. ..."): code, which may
# quote any message (a library's check for something else), never what was raised. The line that ran is
# marked with an arrow ("---> 51     assert (boxes1[:, 2:] >= boxes1[:, :2]).all()") and stays: it is the
# failing statement. A number, then a statement or a literal: not a log's numbered row ("500 loss = nan",
# "  120  loss nan").
_IPY_SOURCE = re.compile(r"\d{1,6} +(?:(?:raise|return|if|elif|else|for|while|def|class|with|try|except"
                         r"|import|from|assert|yield|await|lambda)\b|[\w.\[\]]+ *[-+*/]?= (?!-?(?:nan|inf|\d))"
                         r"|[\"'#@)\]}])")


def _source_context(text: str) -> bool:
    """A numbered source line of an IPython-style traceback: its words are code, not the failure."""
    return _IPY_SOURCE.match(split_prefix(text).rest.strip()) is not None


def _generic(library: Library, m: Match) -> bool:
    """A match by an ambiguous fingerprint: words several causes print."""
    fp = library.fingerprint(m.fingerprint)
    return fp is not None and fp.ambiguous


# Experiment trackers' packages: their background threads upload metrics; training never waits on them.
_TRACKERS = ("/wandb/", "/tensorboard/", "/tensorboardX/", "/mlflow/", "/comet_ml/", "/neptune/", "/clearml/")


def _tracker_thread(tb: Traceback) -> bool:
    """A thread's traceback whose innermost frames are an experiment tracker's own code, or whose thread
    runs a tracker's code (its first frame past threading.py's bootstrap: a TensorBoard writer's run()
    that died in the multiprocessing queue it reads when the program closed it at exit)."""
    frames = [f.replace("\\", "/") for f in tb.frames if f.startswith('File "')]
    inner = frames[-4:]
    tracker = [any(t in f for t in _TRACKERS) for f in inner]
    if any(tracker) and all(own or "/threading.py" in f for own, f in zip(tracker, inner, strict=True)):
        return True
    target = next((f for f in frames if "/threading.py" not in f), None)
    return target is not None and "/threading.py" in frames[0] and any(t in target for t in _TRACKERS)


def _exception_class(line: str) -> str:
    """`torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ...` -> `ChildFailedError`."""
    head = split_prefix(line).rest.strip().split(":", 1)[0].split(" ", 1)[0]
    return head.rsplit(".", 1)[-1] if _CLASS.fullmatch(head) else ""


_CLASS = re.compile(r"[A-Za-z_][\w.]*")


def _frame_line(text: str) -> bool:
    """A traceback's frame line ('File "...", line N, in f'), whatever launcher prefix it carries; or IPython's
    ('File /path/x.py:12, in f(...)', 'Cell In[3], line 2', '/path/x.py in f(self)', '<ipython-input-5-0f0b> in
    <module>')."""
    rest = split_prefix(text).rest.lstrip()
    if rest.startswith(('File "', "Cell In[", "Input In [")):
        return True
    head, sep, _ = rest.partition(" in ")
    return bool(sep) and (head.endswith(".py") or (head.startswith(("File ", "<ipython-input-"))
                                                   and head.endswith((">", ","))))


def _sigchld_report(tb: Traceback) -> bool:
    """The DataLoader's SIGCHLD handler (torch/utils/data/_utils/signal_handling.py) raised that a worker died,
    inside code whose exceptions Python ignores (logging's _releaseLock, a destructor): "Exception ignored in",
    but the worker is dead all the same, and the loader waits on it or fails at its next batch."""
    last = next((f for f in reversed(tb.frames) if f.startswith('File "')), "")
    return "signal_handling.py" in last and last.endswith("in handler")


def harmless_traceback(tb: Traceback) -> bool:
    """A helper thread's death that ends nothing, whether or not the run says it finished; or a
    traceback a logger printed with a warning record (its exc_info): the program caught it and went on."""
    return tb.logged or (tb.thread and (_tracker_thread(tb) or _cancelled(tb)))


def _cancelled(tb: Traceback) -> bool:
    """A traceback whose exception is a cancellation (asyncio's, concurrent.futures', TensorFlow's
    CancelledError): the program cancelled the work itself."""
    return any(_CANCELLED.match(split_prefix(e).rest.lstrip()) for e in tb.exceptions)


_CANCELLED = re.compile(r"(?:[A-Za-z_][\w.]*\.)?CancelledError\b")


def _owner(tbs: list[Traceback], line: Line) -> int | None:
    for i, tb in enumerate(tbs):
        if tb.first_line <= line.number <= tb.last_line and tb.rank == line.rank:
            return i
        if tb.first_line > line.number:
            break
    return None


def with_cause(library: Library, event: Event, cause_id: str, extra: tuple[Line, ...] = ()) -> Event:
    """The same incident, now explained by a more specific cause (e.g. a kill confirmed as an OOM kill)."""
    cause = library.cause(cause_id)
    evidence = tuple(sorted(set(event.evidence) | set(extra), key=lambda ln: (ln.path, ln.number)))
    return replace(event, cause=cause_id, role=cause.role, ambiguous=False, evidence=evidence,
                   weight=max(event.weight, 0.9), fingerprints=((f"{cause_id}#confirmed-kill", 0.9),))


def strength(events: list[Event]) -> float:
    """Noisy-OR over the distinct fingerprints of several events of one incident."""
    distinct: dict[str, float] = {}
    for e in events:
        distinct.update(e.fingerprints)
    miss = 1.0
    for w in distinct.values():
        miss *= 1.0 - w
    return max(1.0 - miss, max((e.weight for e in events), default=0.0))
