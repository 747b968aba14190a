"""The causal reasoner: which failure started it, where, what it explains, and what is still unknown.

Rules that never bend (DESIGN.md): a cascade or teardown never outranks an initiating event; an
ambiguous signal is not promoted without a confirming record; when every rank shows only cascades,
the suspect is the rank that is missing or silent; every verdict quotes its evidence.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import replace

from trainmedic.catalog import Library
from trainmedic.logs.attribution import faulty_rank, first_timeout_rank, launcher_rank
from trainmedic.logs.blocks import MAX_LINE
from trainmedic.logs.tracebacks import SHELL_CRASH, THREAD_HEADERS_ABOVE
from trainmedic.model import (
    Alternative,
    Cause,
    Collateral,
    Diagnosis,
    Event,
    Evidence,
    Finding,
    Line,
    Match,
    MemoryTable,
    MissingFact,
    RankProgress,
    ScanResult,
    Verdict,
)
from trainmedic.reason import action, confidence, exits, memory, notable, patterns, phase, ranks, templates
from trainmedic.reason import facts as machine
from trainmedic.reason.context import SAME_MESSAGE, Context
from trainmedic.reason.events import (
    build_events,
    harmless_traceback,
    is_handled,
    is_precursor,
    pid_of,
    precursors,
    read_as_wait,
    stopped_at,
    strength,
    thread_after_the_end,
    with_cause,
)
from trainmedic.scan.database import EXTENSION_STEP, GROUP_FORMED, REGISTERED
from trainmedic.util.text import rank_ranges

HANG = "training-hang/stalled-progress"
EXITED = "unclassified-failure/process-exited"  # a rank the launcher saw exit on its own, reason unknown
SUMMARY = "launcher-teardown/failure-summary"  # the launcher's table of its workers' exit codes
_TB_HEADER = "Traceback (most recent call last)"
ERROR_LINES = "unclassified-failure/error-lines"  # error-worded lines after the last progress, known to none
_SAME_TIME = 1.0  # seconds within which two clocks cannot order events
_TABLE_SPAN = 40  # lines between an OOM and the memory summary printed with it
_WHAT_LINES = 2  # lines below "terminate called after throwing ..." where its "what():" message starts
_CLEARLY_STRONGER = 0.15  # a fingerprint this much stronger is the more specific reading of the incident
RAISED_IN_WEIGHT = 0.8  # a generic signal named by the function its traceback raised it in (asynchronous CUDA errors
# can surface a little later, so less than a definite message)
WEAK = 0.5  # an ambiguous signal weaker than this is a warning unless nothing else explains the failure
_OOM_REPORT_LINES = 200  # a kernel OOM report (header, call trace, memory dump, verdict) spans this many lines


# ---------------------------------------------------------------- helpers


def _evidence(lines: Sequence[Line], limit: int = 8) -> tuple[Evidence, ...]:
    return tuple(Evidence(ln.path, ln.number, ln.rank, ln.text[:500]) for ln in list(lines)[:limit])


def _before(a: Event, b: Event) -> int:
    """-1 when `a` clearly happened before `b`, 1 when after, 0 when the logs cannot tell."""
    if a.time is not None and b.time is not None and abs(a.time - b.time) > _SAME_TIME:
        return -1 if a.time < b.time else 1
    if a.path == b.path:
        return -1 if a.line < b.line else (1 if a.line > b.line else 0)
    return 0


def _first(events: list[Event]) -> Event:
    def cmp(a: Event, b: Event) -> int:
        order = _before(a, b)
        if order:
            return order
        # Unordered: the stronger, unambiguous signal leads; then lower rank, then arrival.
        key_a = (a.ambiguous, -a.weight, a.rank if a.rank is not None else 1 << 30, a.order)
        key_b = (b.ambiguous, -b.weight, b.rank if b.rank is not None else 1 << 30, b.order)
        return -1 if key_a < key_b else (1 if key_a > key_b else 0)

    return sorted(events, key=functools.cmp_to_key(cmp))[0]


def _link_kills(ctx: Context, events: list[Event]) -> tuple[list[Event], set[int]]:
    """A kernel OOM record for the pid of a killed process turns the kill into an OOM kill."""
    records = [e for e in events if e.cause in ctx.library.kill_records]
    fact_kills = machine.oom_kills(ctx.facts)
    confirmed: set[int] = set()
    if not records and not fact_kills:
        return events, confirmed
    out: list[Event] = []
    used: set[int] = set()
    for e in events:
        target = ctx.library.kills.get(e.cause)
        if target is None:
            out.append(e)
            continue
        pids = {e.pid} | {pid_of(ln.text) for ln in e.evidence}
        rec = next((r for r in records if r.pid is not None and r.pid in pids), None)
        fact_pid = next((p for p in pids if p in fact_kills), None)
        if rec is None and fact_pid is not None:
            upgraded = with_cause(ctx.library, e, target, (fact_kills[fact_pid][1],))
            confirmed.add(upgraded.order)
            out.append(upgraded)
            continue
        marks = ctx.library.worker_marks(e.cause.split("/")[0])
        if rec is None and marks:
            rec = next((r for r in records if any(m in ln.text for ln in r.evidence for m in marks)), None)
        if rec is None:
            # The job's own cgroup counted an OOM kill (Slurm, Kubernetes): its victims are this job's.
            rec = next((r for r in records if r.pid is None and _own_job(ctx.library, r)), None)
        if rec is None:
            out.append(e)
            continue
        used.add(rec.order)
        upgraded = with_cause(ctx.library, e, target, rec.evidence)
        confirmed.add(upgraded.order)
        out.append(upgraded)
    # One OOM kill is reported over many kernel lines ("invoked oom-killer", "oom-kill:...", "Killed
    # process ..."): the lines around a record that confirmed a kill belong to that same report.
    anchors = [(r.path, r.line) for r in records if r.order in used]
    used |= {r.order for r in records
             if any(r.path == path and abs(r.line - line) <= _OOM_REPORT_LINES for path, line in anchors)}
    return [e for e in out if e.order not in used], confirmed


def _own_job(library: Library, record: Event) -> bool:
    """An OOM record scoped to the job's own cgroup or container (fingerprint `own_job`)."""
    return any(fp is not None and fp.own_job for key, _ in record.fingerprints if (fp := library.fingerprint(key)))


def _missing(ctx: Context, cause_id: str) -> tuple[MissingFact, ...]:
    """A missing fact is no longer missing once the machine's facts cover its topic."""
    known = {f.id.split(".")[0] for f in ctx.facts}
    return tuple(m for m in ctx.library.cause(cause_id).missing if m.topic is None or m.topic not in known)


def _competing(ctx: Context, cause: Cause) -> list[Cause]:
    """The causes `cause` competes with, the one more often the answer in real logs (its prior) first."""
    return [ctx.library.cause(c) for c in sorted(cause.competes, key=lambda c: -ctx.library.priors.get(c, 0))]


def _check_with(*causes: Cause) -> str:
    """An alternative's "; check with `<command>`": the command that gets the missing fact of the first of
    these causes that names one; "" when none does."""
    need = next((c.missing[0].command for c in causes if c.missing), "")
    return f"; check with `{need}`" if need else ""


def _unconfirmed(c: Cause, read: Cause, primary_confidence: float) -> Alternative:
    """A cause the primary `read` competes with that this log neither shows nor rules out, with the
    command that would confirm it."""
    return Alternative(c.full_id, confidence.alternative(0.5, primary_confidence),
                       f"{c.title}: not confirmed by this log{_check_with(c, read)}")


def _finding(ctx: Context, cause_id: str, *, confidence_: float, rank: int | None, host: str | None,
             time: float | None, evidence: tuple[Evidence, ...], missing: tuple[MissingFact, ...],
             why: str, calibrate: bool = True) -> Finding:
    entry, cause = ctx.library.resolve(cause_id)
    assert cause is not None
    if calibrate:
        confidence_ = ctx.library.calibrated(cause_id, confidence_)
    if time is None and rank is not None:
        # The line itself has no clock: the launcher's failure record for the rank has one.
        time = next((r.time for s in ctx.scans for r in s.summaries if r.rank == rank and r.time is not None), None)
    return Finding(
        id=cause_id,
        title=f"{entry.title}: {cause.title}",
        category=entry.category,
        confidence=round(confidence.clamp(confidence_), 4),
        rank=rank,
        host=host,
        time=time,
        evidence=evidence,
        fix=cause.fix,
        verify=cause.verify,
        missing=missing,
        why=sentence(why),
    )


def sentence(why: str) -> str:
    """Reasons are written as clauses joined by "; ": shown, they read as one sentence."""
    why = why.strip().rstrip(".;")
    return why[:1].upper() + why[1:] + "." if why else ""


def _where(e: Event) -> str:
    rank = f"rank {e.rank}" if e.rank is not None else "an unranked process"
    return f"{rank}, {e.path}:{e.line}"


def _collateral(events: list[Event], primary_id: str, exclude_rank: int | None = None) -> tuple[Collateral, ...]:
    """Failures the primary explains, once per (cause, rank, file); the initiating rank's own echoes
    (its launcher record, its own later errors) are part of the primary incident, not collateral."""
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for e in events:
        if exclude_rank is not None and e.rank == exclude_rank:
            continue
        key = (e.cause, e.rank, e.path)
        if key in seen:
            continue
        seen.add(key)
        text = e.evidence[0].text if e.evidence else ""
        out.append(Collateral(e.cause, e.rank, e.path, e.line, primary_id, text[:300]))
    return tuple(out)


def _progress(ctx: Context) -> dict[int | None, RankProgress]:
    merged: dict[int | None, RankProgress] = {}
    for s in ctx.scans:
        for rank, p in s.progress.items():
            merged[rank] = p
    return merged


# ---------------------------------------------------------------- the verdict


def reason(ctx: Context) -> Diagnosis:
    d = _stated_rank(ctx, _often_instead(ctx, _reason(ctx)))
    return replace(d, action=action.decide(d, ctx.scans, ctx.library))


def _stated_rank(ctx: Context, d: Diagnosis) -> Diagnosis:
    """A failure no prefix ties to a rank, in an input with no rank prefixes at all whose process said
    which rank it was, one rank only ("Initializing distributed: GLOBAL_RANK: 0", "Process Group destroyed
    on rank 0"): the input is that rank's output, so the failure is that rank's. Two ranks saying so in
    one input (each Lightning rank prints its own) leave it open."""
    p = d.primary
    if p is None or p.rank is not None or not p.evidence:
        return d
    paths = {ev.path for ev in p.evidence}
    scans = [s for s in ctx.scans if s.path in paths]
    stated = {r for s in scans for r in s.stated_ranks}
    if len(stated) != 1 or any(s.ranks for s in scans):
        return d
    return replace(d, primary=replace(p, rank=stated.pop()))


def _often_instead(ctx: Context, d: Diagnosis) -> Diagnosis:
    """What real threads found instead, when they were given this answer: the dev split's measure
    (calibration.yaml `mistaken`) of the library causes that were the truth behind it. They follow the
    readings this log itself offers, each as likely as its share of those answers, with the fact that
    confirms it: a watchdog timeout with no rank's own error was a desync often enough to check."""
    p = d.primary
    if p is None or d.verdict == "healthy":
        return d
    answers, truths = ctx.library.mistaken.get(p.id, (0, ()))
    known = {a.id for a in d.alternatives} | {p.id}
    alts = list(d.alternatives)
    for truth, n in truths:
        if truth in known:
            continue
        c = ctx.library.cause(truth)
        if c.needs_context and not any(m in s.contexts for s in ctx.scans for m in c.needs_context):
            continue  # (a DataLoader cause where no DataLoader is in sight)
        alts.append(Alternative(truth, confidence.alternative(n / answers, p.confidence),
                                f"{c.title}: of {answers} real logs given this answer, {n} turned out to be "
                                f"this{_check_with(c)}"))
    if len(alts) == len(d.alternatives):
        return d
    alts.sort(key=lambda a: -a.confidence)
    return replace(d, alternatives=tuple(alts))


def _reason(ctx: Context) -> Diagnosis:
    d = _warned_readings(ctx, _verdict(ctx))
    d = replace(d, phase=phase.at_stop(d, ctx.scans))
    if ctx.baseline is None:
        return d
    worded = {(n.line.path, n.line.number) for s in ctx.scans for n in s.notable}
    last_progress = {s.path: max((p.line for p in s.progress.values()), default=0) for s in ctx.scans}
    found = templates.unseen(ctx.baseline, ctx.scans)
    if d.primary is not None and d.primary.evidence:
        stop: tuple[str, int] | None = (d.primary.evidence[0].path, d.primary.evidence[0].line)
    else:
        stop = templates.onset(found, last_progress)
    new = tuple(templates.novel_lines(found, worded, stop))
    if d.verdict == "healthy":
        after = [n.line for n in new if n.line.number > last_progress.get(n.line.path, 0)]
        if not after or any(s.done for s in ctx.scans):
            return d
        # Nothing says "error", but the run stopped on lines its good run never printed, unfinished.
        first = min(after, key=lambda ln: (ln.path, ln.number))
        why = (f"no signature explains this run and nothing in it reads as an error, but it stopped on "
               f"{len(after)} kind(s) of line the baseline run never printed, without finishing; the first "
               f"is at {first.path}:{first.number}")
        # Not calibrated: no real log of the corpus was judged this way, so its evidence speaks for itself.
        primary = _unknown(ctx, after[:3], first, 0.4, why, calibrate=False)
        d = replace(d, verdict="failure", primary=primary, novel=new)
        return replace(d, phase=phase.at_stop(d, ctx.scans))
    d = replace(d, novel=new)
    p = d.primary
    if p is not None and new and p.id in ctx.library.fallbacks:
        # No signature names it: what the good run never printed, nearest the stop, leads the evidence.
        lead = _evidence([n.line for n in new[:3]])
        rest = tuple(e for e in p.evidence if (e.path, e.line) not in {(x.path, x.line) for x in lead})
        why = sentence(p.why.rstrip(".") + "; its first evidence lines are ones the baseline never printed")
        d = replace(d, primary=replace(p, evidence=(*lead, *rest)[:8], why=why))
    return d


def _warned_readings(ctx: Context, d: Diagnosis) -> Diagnosis:
    """A failure no signature names, after a precursor warned of a known cause (NCCL picking the
    loopback interface, then its bootstrap fails): that cause is the first reading to check. When the
    warning came before the failure's first line, it leads (the likeliest reading the log offers), and
    the failure in words no signature knows stays as the next reading."""
    p = d.primary
    if p is None or p.id not in ctx.library.fallbacks:
        return d
    warned = precursors(ctx.library, list(ctx.scans))
    first = p.evidence[0] if p.evidence else None
    before = [m for m in warned if first is not None and m.line.path == first.path and m.line.number < first.line
              and m.cause not in ctx.library.fallbacks]
    if before and first is not None:
        m = before[-1]
        why = (f"{ctx.library.cause(m.cause).title}: its warning came first ({m.line.path}:{m.line.number}), and "
               f"the failure that followed is in words no signature knows ({first.path}:{first.line})")
        lead = _finding(ctx, m.cause, confidence_=0.55, rank=p.rank if p.rank is not None else m.line.rank,
                        host=p.host, time=p.time, evidence=(*_evidence([m.line], 1), *p.evidence)[:8],
                        missing=_missing(ctx, m.cause), why=why)
        rest = Alternative(p.id, confidence.alternative(0.5, lead.confidence),
                           f"{ctx.library.cause(p.id).title}: the failure itself, if the warning was unrelated")
        alternatives = tuple(sorted((rest, *d.alternatives), key=lambda a: -a.confidence))
        return replace(d, primary=lead, alternatives=alternatives)
    known = {a.id for a in d.alternatives}
    alts = list(d.alternatives)
    for m in warned:
        if m.cause in known or m.cause in ctx.library.fallbacks:
            continue
        known.add(m.cause)
        title = ctx.library.cause(m.cause).title
        alts.append(Alternative(m.cause, confidence.alternative(0.6, p.confidence),
                                f"{title}: a warning before the failure points to it ({m.line.path}:{m.line.number})"))
    alts.sort(key=lambda a: -a.confidence)
    return replace(d, alternatives=tuple(alts))


def _unknown(ctx: Context, lines: Sequence[Line], first: Line, confidence_: float, why: str, *,
             time: float | None = None, calibrate: bool = True) -> Finding:
    """The finding for a failure no fingerprint knows (unclassified-failure/error-lines): `lines` are
    its evidence, `first` the line that places it (its rank and host)."""
    return _finding(ctx, ERROR_LINES, confidence_=confidence_, rank=first.rank, host=first.host, time=time,
                    evidence=_evidence(lines), missing=_missing(ctx, ERROR_LINES), why=why, calibrate=calibrate)


def _verdict(ctx: Context) -> Diagnosis:
    events = build_events(ctx.library, list(ctx.scans))
    tables = [t for s in ctx.scans for t in s.memory_tables]
    events = [_overfull(ctx, _mid_run(ctx, _finished(ctx, _stranded(ctx.library, e, tables)))) for e in events]
    events, confirmed = _link_kills(ctx, events)
    records = [r for s in ctx.scans for r in s.summaries]
    inputs = tuple(s.summary() for s in ctx.scans)
    progress = _progress(ctx)
    warnings = precursors(ctx.library, list(ctx.scans))
    base = Diagnosis(verdict="healthy", primary=None, inputs=inputs,
                     progress=tuple(p for _, p in sorted(progress.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))),
                     facts=ctx.facts, notes=(*_notes(ctx), *(
                         f"warning before any failure at {m.line.path}:{m.line.number}: {m.line.text[:200]}"
                         for m in warnings[:10])))

    # The launcher's summary maps process ids to ranks: "Sending process N closing signal" is rank r's;
    # so does the DeepSpeed launcher's kill list (its processes in the order it started them). A line about
    # a process of the summary is that rank's, whatever prefix the line carries: srun's "0: " before the
    # agent's "failed (exitcode: -11) local_rank: 2 (pid: 542818)" labels the node's launcher, not rank 0.
    by_pid = {**ranks.deepspeed_pids(ctx), **{r.pid: r.rank for r in records if r.pid is not None}}
    if by_pid:
        events = [replace(e, rank=by_pid[e.pid]) if e.pid in by_pid else e for e in events]
    # Local evidence first (a worker's unprefixed line just before its rank's traceback), then the
    # launcher's summary for what is still unranked.
    initiating = ranks.adopt_ranks([e for e in events if e.role == "initiating"], ctx.library.fallbacks)
    initiating = [
        replace(e, rank=ranks.rank_from_summary(records)) if e.rank is None and records else e for e in initiating
    ]
    # Still unranked: the message itself may name its rank ("did not receive grad for rank 2"), or the
    # launcher may have named the one rank that failed on its own.
    initiating = [replace(e, rank=ranks.rank_named(e, initiating)) if e.rank is None else e for e in initiating]
    # A line that names the rank the others waited for ("[missing ranks: 1]" in rank 0's output) is
    # about that rank, not the one that printed it.
    initiating = [replace(e, rank=r) if (r := ranks.waited_for(e)) is not None else e for e in initiating]
    # (or, when no matched line says it, the launcher's own notice in the tail: "mpirun noticed that process
    # rank 1 ... exited on signal 11")
    reported = ranks.failed_ranks(events) or ranks.failed_in([n.line for s in ctx.scans for n in s.notable])
    if len(reported) == 1:
        initiating = [replace(e, rank=next(iter(reported))) if e.rank is None else e for e in initiating]
    collateral_events = [e for e in events if e.role in ("cascade", "teardown")]
    context: list[Event] = []
    kill_records = ctx.library.kill_records
    # (A weak, ambiguous signal, such as a cancel with no reason, does not demote a kill record; nor does a
    # process's exit whose reason no line gives, which the kill may well be.)
    if any((e.cause not in kill_records or e.order in confirmed) and not (e.ambiguous and e.weight < WEAK)
           and e.cause != EXITED for e in initiating):
        # A kernel OOM kill of a process these logs never mention is context, not the cause of
        # this run's failure: it may be another job on the host.
        context = [e for e in initiating if e.cause in kill_records and e.order not in confirmed and e.rank is None]
        initiating = [e for e in initiating if e not in context]

    # A warning (a tokenizers fork notice, an fp16 overflow that skipped a step) is context, never a
    # failure alone, unless it shows the pattern that makes it one (the loss scale collapsing).
    initiating = _bottomed(ctx.library, initiating)
    # The framework caught it and said so ("ran out of memory ..., skipping batch"), and training went on.
    handled = [m for s in ctx.scans for m in s.matches if is_handled(ctx.library, m)]
    caught = [e for e in initiating if _progress_after(ctx, e) and any(
        m.cause == e.cause and m.line.path == e.path and 0 <= m.line.number - e.line <= SAME_MESSAGE
        for m in handled)]
    if caught:
        initiating = [e for e in initiating if e not in caught]
        base = replace(base, notes=(*base.notes, *(
            f"{e.cause} at {_where(e)} was handled by the framework, and training went on" for e in caught[:5])))
    # A crash whose own message says the process was already on its way out (an abort whose "what():" is
    # CUDA's "driver shutting down"): a destructor ran after the runtime unloaded, once the work was done.
    at_exit = exits.explained(ctx.library, ctx.scans, initiating)
    if at_exit:
        initiating = [e for e in initiating if e not in at_exit]
        base = replace(base, notes=(*base.notes, *(
            f"{e.cause} at {_where(e)} happened while the process exited ({exits.CAUSE_WORDS}): after its work "
            "was done, not a failure of it" for e in at_exit[:5])))
    # An abort right below a traceback ("terminate called after throwing ..." under "RuntimeError: CUDA
    # error: ...") is the process dying of the exception just printed: the exception's line says more.
    initiating = [_with_exception_above(ctx, e, initiating) if e.cause in ctx.library.wrappers else e
                  for e in initiating]
    warned = [e for e in initiating if e.warning and not _scale_collapsed(ctx, e) and not _nan_filtered(ctx, e)
              and not _persisted(ctx, e)]
    if warned:
        initiating = [e for e in initiating if e not in warned]
        base = replace(base, notes=(*base.notes, *(
            f"warning at {_where(e)} ({e.cause}): a warning alone is not a failure" for e in warned[:5])))
    # A failure no signature knows (an uncaught exception) leads only when no known cause does.
    # (Unless every known cause is an ambiguous sign that came after it: a step "CANCELLED" with no
    # reason after a task exited with its own error code is srun tearing the step down.)
    fallbacks = [e for e in initiating if e.cause in ctx.library.fallbacks]
    # A process's exit reported with no reason (a wrapper's "Step 1 exited with non-zero status 1", Ray's job
    # status above the job's last logs) beside an exception whose traceback ended that process: the
    # exception is the reason, the exit its echo.
    raised = [e for e in fallbacks if e.cause != EXITED and e.traceback is not None and not e.traceback.truncated]
    echoes = [e for e in fallbacks if e.cause == EXITED and e.traceback is None
              and any(e.rank is None or e.rank == r.rank for r in raised)]
    if echoes:
        initiating = [e for e in initiating if e not in echoes]
        fallbacks = [e for e in fallbacks if e not in echoes]
    known = [e for e in initiating if e not in fallbacks]
    # Processes a person interrupted while they waited (Ctrl-C's tracebacks in a queue's get, a join), below the
    # traceback of an exception nobody caught, with no step rising in between: they waited on the process that
    # had died; its exception is where it started.
    waits = [e for e in initiating if e.traceback is not None and e.traceback.interrupted and read_as_wait(e)]
    died = [e for e in raised if e not in waits and e.traceback is not None and not e.traceback.thread
            and not e.traceback.interrupted and not _progress_after(ctx, e)
            and all(w.path == e.path and w.line > e.traceback.last_line for w in waits)] if waits else []
    if waits and died and all(e in waits for e in known):
        initiating = [e for e in initiating if e not in waits]
        fallbacks = [e for e in fallbacks if e not in waits]
        known = []
        base = replace(base, notes=(*base.notes, *(
            f"interrupted at {_where(e)} while it waited ({e.cause}), after the exception at {_where(died[0])}"
            for e in waits[:5])))
    # A line that announces an exception (Hydra's "Error executing job with overrides: [...]") right above the
    # traceback that holds it is that exception's: the traceback's cause is the finding.
    announced = [f for f in fallbacks if f.traceback is None and any(
        k.traceback is not None and k.path == f.path and 0 < k.traceback.first_line - f.line <= SAME_MESSAGE
        for k in known)]
    if announced:
        initiating = [e for e in initiating if e not in announced]
        fallbacks = [e for e in fallbacks if e not in announced]
    # An exception no signature knows whose own process then prints, right below its traceback, what the
    # device runtime reported (torch_npu raises "NPU error, error code is 107020" and CANN's lines after it
    # say "hccl fftsplus task timeout occurred"): those lines are the exception's detail, not a later failure
    # it caused, and what they name is the finding.
    detailed = {f: d for f in fallbacks if f.traceback is not None and not f.traceback.truncated
                for d in collateral_events if d.path == f.path and d.rank == f.rank
                and 0 < d.line - f.traceback.last_line <= SAME_MESSAGE and _runtime_detail(ctx, d)}
    if detailed and not known:
        initiating = [*[e for e in initiating if e not in detailed], *dict.fromkeys(detailed.values())]
        collateral_events = [e for e in collateral_events if e not in detailed.values()]
        fallbacks = [e for e in fallbacks if e not in detailed]
        known = [e for e in initiating if e not in fallbacks]
    # (A weak, ambiguous sign, a NaN in one metric line, is no known cause here: it meets the exception below.)
    strong = [e for e in known if not (e.ambiguous and e.weight < WEAK)]
    set_aside: list[Event] = []
    if fallbacks and strong and not all(e.ambiguous and _first([*fallbacks, e]) is not e for e in strong):
        set_aside = [e for e in initiating if e not in known]
        initiating = known
    explained: frozenset[int] = frozenset()
    if collateral_events:
        # A traceback the log ends in, with no exception line, is too little to outrank what the other
        # ranks report: it may well be one more of their errors, cut off.
        initiating = [e for e in initiating
                      if not (e.traceback is not None and e.traceback.truncated and e.cause in ctx.library.fallbacks)]
        died_of = [e for e in initiating if any(_death_by(ctx, e, c) for c in collateral_events)]
        initiating = [e for e in initiating if e not in died_of]
        # (ranks the launcher saw die of what the timeouts did to them: no sign that they failed first)
        explained = frozenset(e.rank for e in died_of if e.rank is not None)
        # Every known cause that outranked an exception no signature knows was itself what the timeouts did
        # (a watchdog's abort, its "terminate called"): the exception, its traceback printed on its rank
        # before any collateral error of its input, is where it started.
        first_echo: dict[str, int] = {}
        for c in collateral_events if set_aside else ():
            first_echo[c.path] = min(c.line, first_echo.get(c.path, c.line))
        before = [e for e in set_aside if e.cause != EXITED and e.rank is not None and e.traceback is not None
                  and not e.traceback.truncated and e.line < first_echo.get(e.path, 0)]
        if before and not any(e in initiating for e in strong):
            initiating = sorted([*initiating, *before], key=lambda e: e.order)
    # An error after which its process trained on (a later line of its rank shows the step or epoch
    # rising) did not end the run: a note, not the failure.
    went_on = [e for e in initiating if _went_on(ctx, e)]
    if went_on and not [e for e in initiating if e not in went_on]:
        # (and the collateral it brought, when the process trained on after that too)
        went_on += [e for e in collateral_events if _went_on(ctx, e)]
        collateral_events = [e for e in collateral_events if e not in went_on]
    if went_on:
        initiating = [e for e in initiating if e not in went_on]
        base = replace(base, notes=(*base.notes, *(
            f"error at {_where(e)} ({e.cause}); training went on after it (its step rose later)"
            for e in went_on[:5])))
    # A weak, ambiguous signal (a tokenizers fork warning, a recompile limit) never outranks a real
    # error; and when training went on after it, it was a warning, not the failure.
    # (The scheduler's cancel whose sender is unknown is weak too; but the steps a process prints in the
    # grace before its kill are no sign that training went on. A weak precursor of a kill, tcmalloc's report
    # of a huge allocation, is a warning when steps follow.)
    weak = [e for e in initiating if e.ambiguous and e.weight < WEAK]
    trained_on = {e.order for e in weak if _trained_past(ctx, e) and not _launcher_stop(ctx, e)}
    if weak and len(weak) == len(initiating) and any(
            e.cause in ctx.library.fallbacks and e.order not in trained_on for e in weak):
        # (all weak, and an exception no signature knows ended the run: a sign that training went on
        # after is a note beside it, not the failure)
        weak = [e for e in weak if e.order in trained_on and e.cause not in ctx.library.fallbacks]
    if weak and (len(weak) < len(initiating) or all(e.order in trained_on for e in weak)):
        initiating = [e for e in initiating if e not in weak]
        base = replace(base, notes=(*base.notes, *(
            f"warning at {_where(e)} ({e.cause}); "
            + ("training went on" if e.order in trained_on else "a stronger signal explains the failure")
            for e in weak[:5])))
    # A process that could not reach the store or its peers, and then the group formed (its client
    # retried): what it reported did not stop the launch.
    joined = [e for e in initiating if _formed_after(ctx, e)]
    if joined:
        initiating = [e for e in initiating if e not in joined]
        base = replace(base, notes=(*base.notes, *(
            f"error at {_where(e)} ({e.cause}); the process group formed after it" for e in joined[:5])))
    # An error the launcher answered by restarting the worker group (torch elastic with restarts left), after
    # which the new workers trained: the run recovered from it; a note, not the failure.
    restarted = [e for e in (*initiating, *collateral_events) if _restarted(ctx, e)]
    if restarted:
        base = replace(base, notes=(*base.notes, *(
            f"error at {_where(e)} ({e.cause}); the launcher restarted the worker group and training went on"
            for e in ([e for e in initiating if e in restarted] or restarted[:1])[:5])))
        initiating = [e for e in initiating if e not in restarted]
        collateral_events = [e for e in collateral_events if e not in restarted]
    if initiating and _recovered(ctx, initiating, collateral_events):
        return replace(base, notes=(*base.notes, *(
            f"handled error at {_where(e)} ({e.cause}); training went on and finished" for e in initiating[:5]
        )))
    if initiating:
        return _from_initiating(ctx, base, initiating, collateral_events, confirmed, context, warnings)
    exited = [e for e in collateral_events if _exit_order(ctx, e)]
    if exited and len(exited) == len(collateral_events):
        # Only the store lost, after the run said training finished: rank 0, the store's host, exited
        # first and the others' last store calls found it gone. The work was done.
        return replace(base, notes=(*base.notes, *(
            f"error at {_where(e)} ({e.cause}) after the run said training finished: its processes exiting "
            f"in another order, not a failure" for e in exited[:5])))
    if collateral_events:
        return _cascade_only(ctx, base, collateral_events, progress, explained)
    finished = any(s.done for s in ctx.scans)
    found = [f for f in (patterns.nonfinite(ctx.library, progress),
                         patterns.loss_jumped(ctx.library, progress, finished),
                         patterns.vanished(ctx.library, progress), patterns.starved(ctx.library, progress))
             if f is not None]
    gone = [f for f in found if not f.failed]
    if gone:
        base = replace(base, notes=(*base.notes, *(f"{f.why} at {f.progress.path}:{f.line}; training went on"
                                                   for f in gone)))
    failed = next((f for f in found if f.failed), None)
    if failed is not None:
        # No line says so, but the metric lines do: a pattern-shaped failure (reason/patterns.py).
        p = failed.progress
        ev = (Evidence(p.path, failed.line, p.rank, failed.text),)
        primary = _finding(ctx, failed.cause, confidence_=0.75, rank=p.rank, host=None, time=None, evidence=ev,
                           missing=_missing(ctx, failed.cause), why=failed.why)
        # The metric lines show the shape, not what stopped the run: the readings the same shape fits
        # (a jump that stayed up: a detector's stop, or a run that diverged for good) follow it.
        read = ctx.library.cause(failed.cause)
        alts = tuple(Alternative(c.full_id, confidence.alternative(0.5, primary.confidence),
                                 f"{c.title}: the same metric lines fit it{_check_with(c, read)}")
                     for c in _competing(ctx, read))
        return replace(base, verdict="failure", primary=primary, alternatives=alts)
    # (Nor a line a fingerprint reads as a warning or a precursor: its error-sounding words are advice.)
    quiet = [m for s in ctx.scans for m in s.matches if is_precursor(ctx.library, m)
             or ((fp := ctx.library.fingerprint(m.fingerprint)) is not None and fp.warning)]
    # (Nor the lines of a helper thread's traceback that ended nothing, from its "Exception in thread" on:
    # two threads dying at once print both headers, and maybe a line of the main thread, before both
    # tracebacks: the header the reader found within THREAD_HEADERS_ABOVE lines, and its twin's above it.)
    # (Likewise a helper thread's traceback below where a person stopped the run by hand.)
    stops = {s.path: stopped_at(ctx.library, s) for s in ctx.scans}
    harmless = {(t.path, n) for s in ctx.scans for t in s.tracebacks
                if harmless_traceback(t) or thread_after_the_end(s, t, stops[s.path])
                for n in range(t.first_line - (THREAD_HEADERS_ABOVE + 1 if t.thread else 1), t.last_line + 1)}
    # (Nor a crash at exit and the message that says so: "terminate called ..." above "driver shutting down".)
    exit_lines = exits.lines(ctx.library, ctx.scans)
    logged = [t for s in ctx.scans for t in s.tracebacks if t.logged]
    if logged:
        base = replace(base, notes=(*base.notes, *(
            f"traceback at {t.path}:{t.first_line} printed with a warning record ({t.final.strip()[:120]}): "
            "the program caught it and went on" for t in logged[:5])))
    unknown = _error_lines(ctx, base, progress,
                           {(m.line.path, m.line.number) for m in (*handled, *quiet)} | harmless | exit_lines)
    if unknown is not None:
        return unknown
    return _hang_or_healthy(ctx, base, progress)


def _error_lines(ctx: Context, base: Diagnosis, progress: dict[int | None, RankProgress],
                 caught: set[tuple[str, int]]) -> Diagnosis | None:
    """No fingerprint explains the run, but it stopped with error lines and never said it finished.
    `caught`: the lines of a framework's note that it caught a failure and went on ("ran out of memory
    ..., skipping batch"): error-worded, they say the opposite of an error."""
    if any(s.done for s in ctx.scans):
        return None
    lines = [n for n in notable.after_progress(ctx.scans, progress) if (n.line.path, n.line.number) not in caught]
    went_on = notable.went_on_after(ctx.scans, progress) if lines else set()
    lines = [n for n in lines if notable.template(n.line.text) not in went_on]
    if not lines:
        return None
    top = notable.quoted(lines)
    first = top[0].line
    fatal = any(n.severity >= 3 for n in top)
    why = (f"no signature explains this run; it stopped with {len(lines)} error line(s) after its last progress "
           f"and no sign that it finished; the first is at {first.path}:{first.number}"
           + (f" (rank {first.rank})" if first.rank is not None else ""))
    primary = _unknown(ctx, [n.line for n in top], first, 0.55 if fatal else 0.45, why, time=first.time)
    silent = ranks.silent_rank(ctx, lines)
    if silent is not None:
        # Every other rank printed the same error and one printed none: the others were waiting for it.
        why = (f"no signature explains this run; every rank but {silent} printed the same error (first at "
               f"{first.path}:{first.number}) and rank {silent} printed none: it is the one they waited for")
        primary = replace(primary, rank=silent, host=None, why=sentence(why),
                          confidence=round(confidence.clamp(primary.confidence * 0.9), 4))
    elif len(named := {r for n in lines if (r := faulty_rank(n.line.text)) is not None}
                     or {r for n in lines if (r := first_timeout_rank(n.line.text, n.line.rank)) is not None}) == 1:
        # The lines themselves point at one rank: the one the others name as missing, or the one whose
        # timeout came first (the flight recorder's words).
        rank = next(iter(named))
        why = (f"no signature explains this run; it stopped with {len(lines)} error line(s) and they name rank "
               f"{rank} as the one the others waited for (first at {first.path}:{first.number})")
        primary = replace(primary, rank=rank, host=None, why=sentence(why))
    elif first.rank != 0 and notable.waiting([first.text]) and ranks.rank_0_likeliest(ctx, None):
        # The first error says its process failed waiting on another (what follows is how it went down):
        # its rank is not the failure's own; rank 0 is the likeliest one it waited for.
        why = (f"no signature explains this run; its first error line ({first.path}:{first.number}) says its "
               f"process failed waiting on another, and no line names which; rank 0 printed none and is the one "
               f"others most often wait for: look there first")
        primary = replace(primary, rank=0, host=None, why=sentence(why))
    elif primary.rank is None and len(exited := ranks.failed_in([n.line for n in lines])) == 1:
        # The launcher's own line says which rank exited on its own ("mpirun noticed that process rank
        # 7 ... exited on signal 9").
        primary = replace(primary, rank=next(iter(exited)))
    return replace(base, verdict="failure", primary=primary)


# A loss scale named in an overflow line: "loss scale: 32, reducing to 16" (DeepSpeed), "reducing
# loss scale to 1e-205" (apex), "setting scale to 0.5" (fairseq), "from 65536 to 32768".
# Not "Reducing hysteresis to 1".
SCALE_IN_TEXT = re.compile(
    r"(?:[Ss]cale(?::| to:?| from [0-9.e+-]+ to:?)|[Rr]educing(?: loss scale)? to:?) *"
    r"([0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?)\b")


def _stranded(library: Library, e: Event, tables: Sequence[MemoryTable] = ()) -> Event:
    """An OOM whose own figures show the cache held more free memory than the request (in gaps between
    live tensors) is the allocator's fragmentation, not a full device (reason/memory.py); so is one
    beside a memory summary whose reserved memory far exceeds what tensors held."""
    target = library.cause(e.cause).stranded_as
    if target is None:
        return e
    if not any(memory.stranded(ln.text) for ln in e.evidence):
        t = next((t for t in tables if t.path == e.path and abs(t.line - e.line) <= _TABLE_SPAN
                  and memory.stranded_table(t.allocated, t.reserved)), None)
        if t is None:
            return e
        said = (f"memory summary at {t.path}:{t.line}: {t.allocated / 2**20:.0f} MiB allocated, "
                f"{t.reserved / 2**20:.0f} MiB reserved: the cache held {(t.reserved - t.allocated) / 2**30:.1f} GiB "
                f"it could not hand out")
        e = replace(e, evidence=(*e.evidence, Line(t.path, t.line, said, e.rank)))
    return replace(e, cause=target, role=library.cause(target).role,
                   fingerprints=((f"{target}#stranded-cache", e.weight),))


def _finished(ctx: Context, e: Event) -> Event:
    """A stop from outside (the scheduler's time limit, a cancel) after the run said training finished
    is its cause's `finished_as`: the processes outlived their work, blocked at exit."""
    target = ctx.library.cause(e.cause).finished_as
    done = _done_line(ctx, e.path)
    if target is None or not done or done > e.line:
        return e
    said = f"after the run said training finished ({e.path}:{done}), {e.cause} stopped it"
    return replace(e, cause=target, role=ctx.library.cause(target).role, ambiguous=False,
                   evidence=(*e.evidence, Line(e.path, e.line, said, e.rank)),
                   fingerprints=((f"{target}#stopped-after-finish", e.weight),))


def _exit_order(ctx: Context, e: Event) -> bool:
    """The event's cause reads as processes exiting in another order (`exit_order`), and its input said
    training finished before it."""
    if not ctx.library.cause(e.cause).exit_order:
        return False
    done = _done_line(ctx, e.path)
    return 0 < done < e.line


def _done_line(ctx: Context, path: str) -> int:
    """Where the input at `path` said training finished (its last such line; 0: it never did)."""
    return max((s.done_line for s in ctx.scans if s.path == path), default=0)


def _mid_run(ctx: Context, e: Event) -> Event:
    """An error its cause reads as a start-up failure, after its input showed training progress, is its
    cause's `mid_run_as`: what the run could reach before is what went away."""
    target = ctx.library.cause(e.cause).mid_run_as
    if target is None or not any(p.line < e.line or any(r < e.line for r in p.rises)
                                 for s in ctx.scans if s.path == e.path for p in s.progress.values()):
        return e
    return replace(e, cause=target, role=ctx.library.cause(target).role,
                   fingerprints=((f"{target}#after-progress", e.weight),))


def _overfull(ctx: Context, e: Event) -> Event:
    """The store barrier's own timeout counts its workers ("Timed out initializing process group in store
    based barrier on rank: 0, ... (world_size=4, worker_count=16, ...)"): more than the world size means
    another job's processes, or a stale init file's entries, share the store (the cause with
    `store_overfull`), not a rank that was late."""
    counts = [(int(m[1]), int(m[2])) for ln in e.evidence[:4] if (m := _BARRIER_COUNT.search(ln.text[:2000]))]
    if not any(count > world for world, count in counts):
        return e
    target = ctx.library.store_overfull
    if target is None or e.cause == target:
        return e
    return replace(e, cause=target, role=ctx.library.cause(target).role, ambiguous=False,
                   fingerprints=((f"{target}#barrier-counts-too-many", e.weight),))


# Where one overflow message starts (apex's "Gradient overflow.", DeepSpeed's "OVERFLOW!", "Grad overflow on ...").
_OVERFLOW_MESSAGE = re.compile(r"(?=Gradient overflow|OVERFLOW!|Grad overflow)")


def _line_scales(text: str) -> list[float]:
    return [float(m.group(1)) for m in SCALE_IN_TEXT.finditer(text[:500])]


def _scales(e: Event) -> list[float]:
    return [s for ln in e.evidence for s in _line_scales(ln.text)]


def _bottomed(library: Library, events: list[Event]) -> list[Event]:
    """Overflow warnings whose scaler could not lower the scale any more ("Attempted loss scale: 1,
    reducing to 1": the scale it tried is the one it keeps): it sits at its minimum and every step is
    skipped, which is their cause's `bottomed_as`, a failure in its own right. One such line makes
    every overflow warning of that cause part of the same incident.
    (Not a scale kept high up, "Attempted loss scale: 4294967296, reducing to 4294967296": DeepSpeed's
    hysteresis spends a skipped step before it halves, so the scale kept above the cause's floor is a
    delay, not a minimum.)"""
    stuck: set[str] = set()
    for e in events:
        cause = library.cause(e.cause)
        if cause.bottomed_as is None:
            continue
        floor = cause.scale_floor
        for ln in e.evidence:
            # (per message: ranks that print without newlines glue several "... reducing loss scale to 1024.0"
            # on one line, each naming the scale once)
            for message in _OVERFLOW_MESSAGE.split(ln.text[:2000]):
                named = _line_scales(message)
                if len(named) >= 2 and len(set(named)) == 1 and (floor is None or named[0] <= floor):
                    stuck.add(e.cause)
    out = []
    for e in events:
        target = library.cause(e.cause).bottomed_as if e.cause in stuck else None
        out.append(e if target is None else replace(e, cause=target, role=library.cause(target).role, warning=False,
                                                     fingerprints=((f"{target}#scale-at-minimum", e.weight),)))
    return out


def _scale_collapsed(ctx: Context, e: Event) -> bool:
    """An overflow warning that names a loss scale at or below its cause's floor: fp16 training can no
    longer make progress (every step overflows, updates are skipped or vanish)."""
    floor = ctx.library.cause(e.cause).scale_floor
    if floor is None:
        return False
    scales = _scales(e)
    return bool(scales) and min(scales) <= floor


def _its_progress(ctx: Context, e: Event) -> list[RankProgress]:
    """The progress records of the event's process: its rank's in its file (for an unranked event, every
    rank's there), and the file's unranked ones."""
    return [p for s in ctx.scans for p in s.progress.values()
            if p.path == e.path and (e.rank is None or p.rank in (e.rank, None))]


def _nan_filtered(ctx: Context, e: Event) -> bool:
    """A warning of a non-finite loss (an evaluation's NaN) where the same process logged a training loss
    of exactly 0 at every step: HF's Trainer leaves NaN and Inf steps out of the loss it logs
    (`logging_nan_inf_filter`, on by default), so a loss NaN at every step prints as 0.0. The training
    loss was NaN too; the warning is the failure."""
    if not ctx.library.cause(e.cause).loss_nonfinite:
        return False
    return any(p.losses > 0 and p.loss_max == 0.0 for p in _its_progress(ctx, e))


def _runtime_detail(ctx: Context, e: Event) -> bool:
    """A cascade cause's line (a timeout, a lost peer) that is not a launcher's teardown: what a device
    runtime prints below the exception that reported its error code."""
    cause = ctx.library.cause(e.cause)
    return cause.role == "cascade" and ctx.library.entry(cause.entry_id).category != "launcher"


def _cause_lines(ctx: Context, e: Event) -> set[int]:
    """The lines of its input where the event's cause matched, printed by its rank (or by any, unranked)."""
    return {m.line.number for s in ctx.scans if s.path == e.path for m in s.matches
            if m.cause == e.cause and (e.rank is None or m.line.rank in (e.rank, None))}


def _persisted(ctx: Context, e: Event) -> bool:
    """A warning its process logged again and again, at least the cause's `persists` times (every
    evaluation's `'eval_loss': nan`; LLaVA masking every sample's labels): one can be a bad batch or an odd
    sample, one that never stops is the run learning nothing, which is the failure whatever else it
    printed. Unless a finite loss came after the last of them (an fp16 run's early infinite gradient
    norms, then training on); a loss of exactly 0 is no such sign (HF's Trainer prints a NaN step's loss
    as 0: `_nan_filtered`; a run whose every label is masked prints 0 too)."""
    need = ctx.library.cause(e.cause).persists
    if need is None:
        return False
    lines = _cause_lines(ctx, e)
    if len(lines) < need:
        # (Fewer, where the last loss its process printed is exactly 0: the run is already learning nothing,
        # every label masked or every step NaN, which is what so many warnings would have shown.)
        return bool(lines) and any(p.loss_last == 0.0 for p in _its_progress(ctx, e))
    last = max(lines)
    return not any(p.line > last and p.loss_last is not None and math.isfinite(p.loss_last) and p.loss_last != 0.0
                   for p in _its_progress(ctx, e))


def _trained_past(ctx: Context, e: Event) -> bool:
    """Training went on past a weak signal: a later progress line of its rank. For a non-finite loss read
    from the metrics, a finite training loss (or loss term) printed after it: a NaN run goes on printing
    epochs and steps, each with its NaN or with no loss at all; never while the last loss its process
    printed is still NaN or Inf (the reader's `nonfinite`)."""
    cause = ctx.library.cause(e.cause)
    if not (cause.loss_nonfinite and e.traceback is None):
        return _progress_after(ctx, e)
    last = max(_cause_lines(ctx, e), default=e.line)
    mine = _its_progress(ctx, e)
    return not any(p.nonfinite is not None for p in mine) and any(
        p.finite_line is not None and p.finite_line > last for p in mine)


def _progress_after(ctx: Context, e: Event) -> bool:
    """Training went on after the event: a later progress line of its rank. A bar still at step 0 is
    no progress; nor, below a traceback that ended the program, a bar that shows no step beyond the
    one it had reached (tqdm prints its last state once more as the process exits: "1135/1136" again
    below the traceback); a line with no step (a loss dict) is."""
    tb = e.traceback
    end = tb.last_line if tb is not None and not tb.thread and not tb.ignored else None

    def went_on(p: RankProgress) -> bool:
        if p.step is None or end is None:
            return p.step != 0
        return any(n > end for n in p.rises)

    return any(p.path == e.path and p.line > e.line and (e.rank is None or p.rank in (e.rank, None)) and went_on(p)
               for s in ctx.scans for p in s.progress.values())


_QUEUE_FEEDER = re.compile(r'multiprocessing[/\\]queues\.py", line \d+, in _feed$')


def _went_on(ctx: Context, e: Event) -> bool:
    """Its rank's step rose after the event's last line (the last line of the same cause by that rank):
    the process trained on. Only for an error raised inside the process: a stop from outside (the
    scheduler's cancel, the launcher's teardown, a kill) lands when the signal does, and a process that
    catches SIGTERM prints a few more steps first; nor for a cause read from the metrics (a NaN loss
    goes on printing steps: a non-finite loss went on only when finite losses came after it)."""
    cause = ctx.library.cause(e.cause)
    if cause.loss_nonfinite and e.traceback is None:
        return _finite_after(ctx, e)
    if (cause.trains_on or cause.metric_shaped or _from_outside(ctx, e)
            or (e.cause in ctx.library.fallbacks and e.traceback is None)):
        return False
    if _unprefixed_among_several(ctx, e):
        return False  # the steps may well be another process's
    last = max((m.line.number for s in ctx.scans if s.path == e.path for m in s.matches
                if m.cause == e.cause and m.line.rank == e.rank), default=e.line)
    last = max(last, e.traceback.last_line if e.traceback is not None else e.line)
    if e.traceback is not None and any(_QUEUE_FEEDER.search(f) for f in e.traceback.frames[-8:]):
        # Raised in a multiprocessing queue's feeder thread (a DataLoader worker pickling a batch into shared
        # memory): that batch never reaches the queue, and the consumer waits for it for ever; the steps
        # printed after are the batches already in flight.
        return False
    if e.cause not in ctx.library.fallbacks and any(
            t.truncated and not (t.dump or t.thread or t.ignored) and t.first_line > last and t.rank == e.rank
            for s in ctx.scans if s.path == e.path for t in s.tracebacks):
        # The process's main thread then raised, and the log ends inside that traceback (which exception
        # is cut off): it did not go on; the error before it, a thread's (the pin-memory loop's), is why.
        return False
    return any(p.path == e.path and p.rank == e.rank and any(n > last for n in p.rises)
               for s in ctx.scans for p in s.progress.values())


def _launcher_stop(ctx: Context, e: Event) -> bool:
    """A stop the scheduler or the launcher made (a cancel, a time limit, the launcher's teardown)."""
    return ctx.library.entry(ctx.library.cause(e.cause).entry_id).category == "launcher"


def _from_outside(ctx: Context, e: Event) -> bool:
    """A stop from outside the process (the scheduler's cancel, the launcher's teardown, a kill): it lands
    when the signal does, whatever the process prints in the moments before it dies."""
    return _launcher_stop(ctx, e) or ctx.library.cause(e.cause).kill_record or e.cause in ctx.library.kills


def _restarted(ctx: Context, e: Event) -> bool:
    """The launcher restarted the worker group after the event's last line ("will restart worker group") and
    the new workers' steps rose after that: the run went on from a restart (the steps may start lower, from
    the checkpoint the new workers loaded; any rank's, since the restart may renumber them)."""
    last = max(_cause_lines(ctx, e), default=e.line)
    last = max(last, e.line, e.traceback.last_line if e.traceback is not None else e.line)
    for s in ctx.scans:
        if s.path != e.path:
            continue
        restart = min((m.line.number for m in s.markers if m.phase == "restart" and m.line.number > last),
                      default=None)
        if restart is not None and any(n > restart for p in s.progress.values() for n in p.rises):
            return True
    return False


def _unprefixed_among_several(ctx: Context, e: Event) -> bool:
    """An event on a line no rank prefix claims, in a job of several processes (ranks named, or a world
    size above one): the progress lines around it may be any process's."""
    return e.rank is None and any(s.ranks or any(w > 1 for w in s.world_sizes) for s in ctx.scans)


def _finite_after(ctx: Context, e: Event) -> bool:
    """A non-finite loss its process trained past: two steps on from the last line where the cause
    matched, it logged a finite, non-zero loss (a NaN run goes on printing steps, NaN each; one NaN
    step of an fp16 or RL run, then normal losses, is a skipped step). As `_persisted` gives way; a loss
    of exactly 0 is no such sign (HF's Trainer prints a NaN step's loss as 0)."""
    if _unprefixed_among_several(ctx, e):
        return False  # the losses may well be another process's
    last = max(_cause_lines(ctx, e), default=e.line)
    return any(p.path == e.path and p.rank == e.rank and p.line > last and sum(n > last for n in p.rises) >= 2
               and p.loss_last is not None and math.isfinite(p.loss_last) and p.loss_last != 0.0
               for s in ctx.scans for p in s.progress.values())


FORMED = re.compile(GROUP_FORMED)  # (scan.database: the words that say the process group formed)


def _formed_after(ctx: Context, e: Event) -> bool:
    """A rendezvous failure its input shows the process group forming after: a retried connection."""
    if ctx.library.cause(e.cause).entry_id != "rendezvous-failure":
        return False
    last = e.traceback.last_line if e.traceback is not None else e.line
    # (gloo's line says so only when every peer it expected connected)
    return any(m.line.number > last and (f := FORMED.search(m.line.text)) is not None and f[1] == f[2]
               for s in ctx.scans if s.path == e.path for m in s.markers)


def _recovered(ctx: Context, initiating: list[Event], collateral: list[Event]) -> bool:
    """A try/except that logged an error and went on: progress resumed after it and the run finished."""
    if collateral or not any(s.done for s in ctx.scans):
        return False
    for e in initiating:
        if ctx.library.cause(e.cause).trains_on:
            return False  # (its run trains on to the end all the same: the end does not clear it)
        # Progress by the same rank (or, for an unranked error, by anyone in that file) after the error's
        # last line: an error that every later step repeats (a NaN in each metrics line) was not handled.
        last = max(_cause_lines(ctx, e), default=e.line)
        after = _its_progress(ctx, e)
        end = max(last, e.line)
        # (a bar reprinted at its end, "100%|...| 20/20", is no step taken after the error: its step must
        # have risen after it; a line with no step, a loss dict, is progress by being there. A NaN in the
        # metrics is printed with the step it belongs to, and the bar moves to that step after it: one rise
        # after the last NaN line is that step, two are training that went on.)
        need = 2 if ctx.library.cause(e.cause).metric_shaped else 1
        if not any(p.line > end and (p.step is None or sum(n > end for n in p.rises) >= need) for p in after):
            return False
    return True


def _from_initiating(ctx: Context, base: Diagnosis, initiating: list[Event],
                     collateral_events: list[Event], confirmed: set[int], context: list[Event],
                     warnings: list[Match]) -> Diagnosis:
    first = ranks.root_cause_record(ctx, _first(initiating), initiating)
    kills = ctx.library.kills
    entry_of = first.cause.split("/")[0]
    # The same incident: same rank, same entry (e.g. the worker's own message and the main process's).
    incident = [e for e in initiating if e.rank == first.rank and e.cause.split("/")[0] == entry_of]
    # Specific beats generic within one message: NCCL's "invalid usage" and, a few lines on, its
    # "Last error: Duplicate GPU detected" are one incident, named by the clearly stronger line, whatever
    # entry that line belongs to ("unhandled system error" ... "Failed to open libnvidia-ml.so.1").
    # (Not the shell's report below a traceback that the process then crashed: it died of that exception.)
    ends = first.traceback.last_line if first.traceback is not None and not first.traceback.truncated else None
    specific = max((e for e in initiating if e.rank == first.rank and e.path == first.path
                    and 0 < e.line - first.line <= SAME_MESSAGE and not e.ambiguous
                    and not (ends is not None and e.line > ends
                             and any(SHELL_CRASH.match(ln.text.strip()) for ln in e.evidence))),
                   key=lambda e: e.weight, default=None)
    if specific is not None and specific.weight >= first.weight + _CLEARLY_STRONGER:
        first = specific
        entry_of = first.cause.split("/")[0]
        incident = [e for e in initiating if e.rank == first.rank and e.cause.split("/")[0] == entry_of]
    # A signal that cannot say why on its own ("device-side assert triggered") is named by the definite
    # message of the same family that the same output printed later (the kernel's assertion, which
    # reaches stdout after the exception).
    if first.ambiguous:
        # (torchrun prefixes a rank's stderr, not always its stdout: an unprefixed line may be its own)
        definite = [e for e in initiating if e.rank in (first.rank, None) and e.cause.split("/")[0] == entry_of
                    and not e.ambiguous and e.path == first.path and e.line > first.line and e.traceback is None]
        if definite:
            named = min(definite, key=lambda e: e.line)
            first = replace(named, rank=first.rank) if named.rank is None else named
        elif first.traceback is not None and (inside := ctx.library.raised_in(entry_of, first.traceback.frames)):
            # No definite message, but the traceback says where it was raised: a device-side assert
            # raised inside binary_cross_entropy is the BCE input's range (the library's `raised_in`).
            first = replace(first, cause=inside, role=ctx.library.cause(inside).role, ambiguous=False,
                            weight=RAISED_IN_WEIGHT, fingerprints=((f"{inside}#raised-in", RAISED_IN_WEIGHT),))
    # The root beats its echo: a wrapper printed as loose lines ("terminate called after throwing ...",
    # then "what(): CUDA error: ...") is judged by the known cause on the lines right after it.
    if first.cause in ctx.library.wrappers:
        # The wrapper's message runs on through the traceback it carries ("Caught X in DataLoader worker
        # process 0." then "Original Traceback (most recent call last):" ... the worker's own exception).
        reach = first.line + SAME_MESSAGE
        carried = [t.last_line for s in ctx.scans for t in s.tracebacks
                   if t.path == first.path and 0 < t.first_line - first.line <= 2]
        reach = max([reach, *carried])
        # (A paste that lost its line breaks holds the wrapper and what it wraps on one line.)
        # Not the death it caused: a cause that names the wrapper among its own sharper readings (a bare
        # abort, which std::terminate explains) is what the wrapper led to, not what it wraps.
        wrapped = [e for e in initiating if e.path == first.path and e.rank == first.rank
                   and first.line <= e.line <= reach and e.cause not in ctx.library.wrappers
                   and e.cause not in ctx.library.fallbacks
                   and first.cause not in ctx.library.cause(e.cause).competes
                   and not ctx.library.keeps_inside(first.cause, e.cause)]
        if wrapped:
            wrapper, first = first, min(wrapped, key=lambda e: e.line)
            # What it wraps has a meaning of its own inside the wrapper's workers (host memory -> the
            # worker's OOM), as it does when both are read as one incident (events.py).
            inside = ctx.library.in_worker.get(first.cause)
            marks = ctx.library.worker_marks(inside.split("/")[0]) if inside else ()
            if inside and any(mark in ln.text for ln in wrapper.evidence for mark in marks):
                first = with_cause(ctx.library, first, inside, tuple(wrapper.evidence))
            entry_of = first.cause.split("/")[0]
            incident = [e for e in initiating if e.rank == first.rank and e.cause.split("/")[0] == entry_of]
    others = [e for e in initiating if e not in incident]
    evidence_lines: list[Line] = []
    for e in sorted(incident, key=lambda e: (e.path, e.line)):
        evidence_lines.extend(ln for ln in e.evidence if ln not in evidence_lines)
    if first.cause in ctx.library.fallbacks:
        # A failure no fingerprint names: the error lines it printed just before (a kernel's assertion, a
        # compiler's fatal error) say more than a traceback's header does.
        own = [n for n in notable.after_progress(ctx.scans, _progress(ctx))
               if n.line.path == first.path and n.line.number < first.line]
        lead_in = [n.line for n in notable.quoted(own)][:2]
        rest = [ln for ln in evidence_lines if ln not in lead_in and not ln.text.lstrip().startswith(_TB_HEADER)]
        evidence_lines = lead_in + (rest or [ln for ln in evidence_lines if ln not in lead_in])
    unordered, later, alternatives, also_collateral = [], [], [], []
    for e in others:
        order = _before(first, e)
        if e.cause == first.cause or e.cause in kills or e.cause.startswith(entry_of + "/"):
            also_collateral.append(e)  # the same failure seen on another rank, or its echo
            continue
        if order == 0 and not e.ambiguous:
            unordered.append(e.weight)
        else:
            later.append(e.weight)
        alternatives.append(e)
    is_confirmed = first.order in confirmed
    same_cause = [e for e in incident if e.cause == first.cause]
    conf = confidence.primary(strength(same_cause), ambiguous=all(e.ambiguous for e in same_cause),
                              confirmed=is_confirmed,
                              unordered=unordered, later=later)
    cgroup_ooms = machine.cgroup_oom_count(ctx.facts)
    if not is_confirmed and first.cause in kills and cgroup_ooms:
        # No record names the pid, but the container's own counter saw OOM kills.
        first = with_cause(ctx.library, first, kills[first.cause])
        conf = confidence.clamp(0.8)
    signal: Event | None = None  # a signal that cannot say why, read as its likeliest cause
    counted_none = first.cause in kills and cgroup_ooms == 0
    # (A kill is read as the OOM killer only when its signal could be the OOM killer's: the library marks
    # SIGKILL's lines ambiguous, not SIGTERM's, which a scheduler, a launcher or a person sent.)
    unexplained = first.ambiguous and not (is_confirmed or cgroup_ooms or counted_none)
    sender = ctx.library.likeliest_reading(first.cause) if unexplained else None
    guessing = sender is not None and first.cause not in kills
    told = next((e for e in also_collateral if guessing and not e.ambiguous and e.cause != first.cause
                 and e.cause.startswith(entry_of + "/")), None)
    if told is not None:
        # A bare device-side assert, and the same failure's own words elsewhere in the log (the kernel's
        # assertion text, printed by another rank or out of order): they say which; no guess is needed.
        first, sender = with_cause(ctx.library, first, told.cause, told.evidence[:1]), None
        conf = confidence.clamp(max(conf, 0.85))
        evidence_lines.extend(ln for ln in told.evidence[:1] if ln not in evidence_lines)
    if sender is not None:
        # A SIGKILL names no sender, a bare device-side assert no kernel: lead with what real threads
        # most often found behind it (measured on the dev split: the OOM killer, a class label out of
        # range), keep the signal as the first alternative, and ask for the fact that decides. The
        # share is the confidence, as measured, not pulled by calibration.
        signal, first = first, with_cause(ctx.library, first, sender[0])
        conf = confidence.clamp(sender[1])
    # Warnings the guard wrote before this failure, on the same rank: they corroborate their cause.
    before = [m for m in warnings if m.line.rank == first.rank and
              (m.line.path != first.path or m.line.number < first.line)]
    supporting = [m for m in before if m.cause == first.cause]
    if supporting:
        conf = confidence.clamp(1.0 - (1.0 - conf) * 0.7)
        evidence_lines.extend(m.line for m in supporting[:2] if m.line not in evidence_lines)
    adj = machine.adjust(first.cause, conf, ctx.facts)
    conf = adj.confidence
    why_parts = [f"rank {first.rank} failed first" if first.rank is not None
                 else "it is the first failure the log shows"]
    if is_confirmed:
        why_parts.append("a kernel OOM-killer record names the same process")
    if cgroup_ooms and first.cause in kills.values() and not is_confirmed:
        why_parts.append(f"the cgroup counted {cgroup_ooms} OOM kill(s) (memory.events)")
    why_parts.extend(adj.notes)
    if told is not None:
        on = f" on rank {told.rank}" if told.rank is not None else ""
        why_parts.append(f"which one, the failure's own words say ({told.path}:{told.line}{on})")
    if first.ambiguous and not is_confirmed:
        why_parts.append("the log alone cannot say why")
    if counted_none:
        why_parts.append("the cgroup counted no OOM kill (memory.events): another sender")
    if signal is not None and sender is not None and kills.get(signal.cause) == sender[0]:
        why_parts.append(f"no sender named: the OOM killer in {sender[3]} of {sender[2]} threads that found one")
    elif signal is not None and sender is not None:
        why_parts.append(f"{ctx.library.cause(signal.cause).title.rstrip('.')}: the log does not say which; this in "
                         f"{sender[3]} of {sender[2]} threads that found the cause")
    coll = _collateral(sorted(also_collateral + collateral_events, key=lambda e: (e.path, e.line)), first.cause,
                       exclude_rank=first.rank)
    if coll:
        hit = sorted({c.rank for c in coll if c.rank is not None})
        on = (f" on rank {hit[0]}" if len(hit) == 1 else f" on ranks {rank_ranges(hit)}") if hit else ""
        why_parts.append(f"the {len(coll)} later failure{'s' if len(coll) != 1 else ''}{on} followed from it")
    missing = _missing(ctx, first.cause) if (first.ambiguous and not is_confirmed) or conf < 0.8 else ()
    if signal is not None:
        missing = _missing(ctx, signal.cause)  # the record that tells the OOM killer from the other senders
    host = first.host or next((r.host for s in ctx.scans for r in s.summaries if r.rank == first.rank and r.host), None)
    rank = first.rank
    if first.cause in ctx.library.fallbacks or (first.cause in ctx.library.wrappers and first.rank is None):
        # An error no signature knows, raised alike by every rank but one: the quiet one is where it
        # started (the others failed waiting for it), as with a timeout no signature names.
        quiet = ranks.quiet_one(ctx, {e.rank for e in (first, *also_collateral)
                                 if e.cause == first.cause and e.rank is not None})
        if quiet is None and first.rank is None:
            # The same error line on every rank but one, in words no fingerprint knows (a timeout whose
            # entry is missing), beside an exception (or a process abort) no rank claims: the quiet rank
            # is the suspect.
            # (Every such line, not only those after the last progress: the quiet rank's progress bar
            # may well have gone on, unprefixed, while the others timed out waiting for it.)
            quiet = ranks.silent_rank(ctx, notable.every(ctx.scans))
        if quiet is not None:
            rank, host = quiet, None
            why_parts = [f"every rank but {rank} raised the same error no signature knows, and rank {rank} "
                         f"raised none: it is the one they waited for"]
            conf = confidence.clamp(conf * 0.6)
        elif first.rank != 0 and first.cause in ctx.library.fallbacks and (notable.waiting(
                [ln.text for ln in evidence_lines] + list(first.traceback.exceptions if first.traceback else ())
        ) or ranks.cut_in_a_collective(first.traceback)) and ranks.rank_0_likeliest(ctx, first.traceback):
            # It failed waiting on another process and nothing names which: rank 0, the one that works
            # alone, is the likeliest (a lead from real logs, as for a collective timeout).
            who = "it" if first.rank is None else f"rank {first.rank}"
            rank, host = 0, None
            why_parts = [f"{who} failed waiting on another process, in words no signature knows, and no line "
                         f"names which; rank 0 is the one others most often wait for: look there first"]
    if rank is None and (len(exp := ranks.expected_ranks(ctx)) > 1 or exp == {0}):
        # A job of several ranks, and the failing line names none: output no prefix claims is most often
        # rank 0's (the rank that logs, and that prints alone under `if rank == 0`); on dev, 12 of the 15
        # failures read with no rank whose thread established one were on rank 0. The same when rank 0 is
        # the only rank any line names (a rank-zero logger's "[rank: 0]", one process's "[rank0]:"): the
        # unprefixed failure is that process's (dev: 2 more right, none wrong).
        rank = 0
        why_parts.append("its line names no rank; unprefixed output is most often rank 0's"
                         + (", the only rank the log names" if exp == {0} else ""))
    primary = _finding(ctx, first.cause, confidence_=conf, rank=rank, host=host, time=first.time,
                       evidence=_evidence(evidence_lines), missing=missing, why="; ".join(why_parts),
                       calibrate=signal is None)
    conf = primary.confidence  # calibrated: what the alternatives share is what it leaves
    alts: list[Alternative] = []
    cause = ctx.library.cause(first.cause)
    if signal is not None:
        kill = ctx.library.cause(signal.cause)
        said = ("a scheduler's limit, an eviction, a launcher or a person send the same SIGKILL"
                if signal.cause in kills else "the other causes of the same signal")
        alts.append(Alternative(signal.cause, confidence.alternative(1.0, conf),
                                f"{kill.title}: {said}{_check_with(kill)}"))
    # (a signal read as its likeliest cause: what else it competes with, as for an ambiguous primary)
    read = ctx.library.cause(signal.cause) if signal is not None else cause
    if (first.ambiguous or signal is not None) and not is_confirmed:
        # The log cannot tell them apart: the one more often the answer in real logs comes first.
        for c in _competing(ctx, read):
            comp = c.full_id
            if comp == first.cause:
                continue
            check = _check_with(c, read)
            warned = [m for m in before if m.cause == comp]
            if warned:
                why = f"{c.title}: the guard warned first ({warned[0].line.path}:{warned[0].line.number}){check}"
                alts.append(Alternative(comp, confidence.alternative(0.65, conf), why))
            else:
                alts.append(_unconfirmed(c, read, conf))
    # Another cause of the same entry seen in the same incident (a generic "device-side assert" beside
    # a specific "target out of bounds"): a competing reading of it, not an echo to hide.
    for e in sorted(incident + also_collateral, key=lambda e: -e.weight):
        known = {a.id for a in alts}
        if e.cause in known or e.cause == first.cause or e.cause in kills or e.cause.split("/")[0] != entry_of:
            continue
        alts.append(Alternative(e.cause, confidence.alternative(e.weight * 0.5, conf),
                                f"another reading of the same incident, at {_where(e)}"))
    for e in alternatives:
        if any(a.id == e.cause for a in alts) or e.cause == first.cause:
            continue
        rel = "later" if _before(first, e) < 0 else "at an unknown time relative to the primary"
        alts.append(Alternative(e.cause, confidence.alternative(e.weight * 0.5, conf),
                                f"also seen at {_where(e)}, {rel}"))
    for e in context:
        alts.append(Alternative(e.cause, confidence.alternative(0.3, conf),
                                f"kernel OOM kill at {e.path}:{e.line} of a process these logs do not name"))
    alts.sort(key=lambda a: -a.confidence)
    verdict: Verdict = "hang" if first.cause.partition("/")[0] == HANG.partition("/")[0] else "failure"
    return replace(base, verdict=verdict, primary=primary, alternatives=tuple(alts), collateral=coll,
                   facts=machine.merge(ctx.facts, adj.used))


def _work_mismatch(ctx: Context, base: Diagnosis, events: list[Event]) -> Diagnosis | None:
    """Ranks that timed out at the same sequence number of their group in different collectives (an
    ALLREDUCE on ranks 1 and 2, a BROADCAST on rank 3): they were not running the same collective, so
    nothing was late; the code called different collectives on different ranks. The rank whose
    operation the fewest share took the other path."""
    target = ctx.library.work_mismatch
    if target is None:
        return None
    for seq, by_op in ranks.collectives_that_differ(events):
        rank = ranks.odd_one(by_op)
        groups = sorted(by_op.values(), key=len)
        lines = [ln for g in groups for ln in list(g.values())[:2]]
        said = [f"{op}{' of ' + n if n else ''} on rank{'s' if len(g) > 1 else ''} {rank_ranges(sorted(g))}"
                for (op, n), g in sorted(by_op.items(), key=lambda kv: len(kv[1]))]
        at = f"at one sequence number ({seq})" if seq >= 0 else "together"
        why = (f"ranks timed out {at} in different collectives: " + "; ".join(said)
               + (f"; rank {rank} alone took the other path" if rank is not None else ""))
        return _mismatched(ctx, base, events, target, 0.75, rank, lines, why)
    diverged = ranks.streams_that_diverged(events)
    if diverged is not None:
        rank = ranks.odd_one(diverged)
        lines = [ln for g in diverged.values() for ln in g.values()][:4]
        said = [f"{op} as collective {seq} on rank{'s' if len(g) > 1 else ''} {rank_ranges(sorted(g))}"
                for (op, seq), g in sorted(diverged.items(), key=lambda kv: int(kv[0][1]))]
        why = ("each rank timed out in a collective of its own, of different kinds at different sequence "
               "numbers: " + "; ".join(said) + ". A rank that is only behind has nothing pending; these were "
               "calling different collectives")
        return _mismatched(ctx, base, events, target, 0.6, rank, lines, why)
    return None


def _mismatched(ctx: Context, base: Diagnosis, events: list[Event], target: str, conf: float, rank: int | None,
                lines: list[Line], why: str) -> Diagnosis:
    """The failure of ranks that called different collectives, every timeout its collateral."""
    primary = _finding(ctx, target, confidence_=conf, rank=rank, host=None, time=None, evidence=_evidence(lines),
                       missing=_missing(ctx, target), why=why)
    coll = _collateral(sorted(events, key=lambda e: (e.path, e.line)), target, exclude_rank=rank)
    return replace(base, verdict="failure", primary=primary, collateral=coll)


def _still_busy(progress: dict[int | None, RankProgress], first: Event) -> RankProgress | None:
    """Progress no rank prefix claims, printed in the same file at or after the first timeout."""
    p = progress.get(None)
    return p if p is not None and p.path == first.path and p.line >= first.line and p.step != 0 else None


def _death_by(ctx: Context, e: Event, c: Event) -> bool:
    """The root beats its echo: a process abort ("terminate called after throwing ...") printed right
    after a collective timeout (or on its line, in a paste that lost its breaks) is how the timeout ended
    that process; so is one whose "what():" on the next lines is the timeout. A rank's death with no
    message of its own (the launcher's "exitcode: -6" for it) after that rank's own collective timeout is
    the watchdog taking it down, however many teardown lines came between. So is a death the launcher
    reports for no rank (the DeepSpeed launcher's "exits with return code = -6" names the command it spawned
    last, not the process that died) after collective timeouts: a launcher reports the first death at once
    and tears the job down, so a death it reports only after the timeouts were printed is one they caused.
    And another rank's bare abort reported after a timeout whose watchdog aborts the process (the library's
    `aborts_process`): had it died first, of its own, its death would have been reported before anyone's
    watchdog fired; alive until then, it was held up at the same collective (stuck short of it, or waiting in
    it), and its own watchdog ended it. Which of the two `ranks.suspects` says ("aborted")."""
    if c.path != e.path:
        return False
    if e.cause in ctx.library.wrappers and (
            (0 <= e.line - c.line <= SAME_MESSAGE and c.rank in (e.rank, None))
            or (c.role == "cascade" and 0 < c.line - e.line <= _WHAT_LINES
                and (c.rank in (e.rank, None) or e.rank is None))):
        return True
    return (e.cause in ctx.library.deaths and c.role == "cascade" and c.line < e.line
            and (e.rank is None or c.rank == e.rank
                 or (c.cause in ctx.library.aborters and e.cause not in ctx.library.wrappers)))


def _with_exception_above(ctx: Context, e: Event, events: list[Event]) -> Event:
    above = next((f for f in events if f.cause in ctx.library.fallbacks and f.traceback is not None
                  and f.path == e.path and f.rank == e.rank and 0 < e.line - f.traceback.last_line <= SAME_MESSAGE),
                 None)
    return replace(e, evidence=(*above.evidence[:1], *e.evidence)) if above is not None else e


def _cascade_only(ctx: Context, base: Diagnosis, events: list[Event],
                  progress: dict[int | None, RankProgress], explained: frozenset[int] = frozenset()) -> Diagnosis:
    odd = notable.odd_rank_out(ctx.scans, {(ln.path, ln.number) for e in events for ln in e.evidence})
    if odd:
        # The odd rank out: it alone printed errors of its own while every other rank only reported
        # the collateral. Its first such line is where it started.
        first_line = odd[0].line
        why = (f"every other rank shows only collateral errors ({_first(events).cause}); rank {first_line.rank} "
               f"alone printed errors of its own, which no signature knows; the first is at "
               f"{first_line.path}:{first_line.number}")
        primary = _unknown(ctx, [n.line for n in notable.quoted(odd)], first_line, 0.5, why, time=first_line.time)
        coll = _collateral(sorted(events, key=lambda e: (e.path, e.line)), ERROR_LINES, exclude_rank=first_line.rank)
        return replace(base, verdict="failure", primary=primary, collateral=coll)
    suspects, kind = ranks.suspects(ctx, events, progress, explained)
    # (a rank stuck until its watchdog aborted it, while the others timed out waiting, says more than
    # where in their collectives the waiting ranks stood)
    mismatch = _work_mismatch(ctx, base, events) if kind != "aborted" else None
    if mismatch is not None:
        return mismatch
    cascades = [e for e in events if e.role == "cascade"]
    lead = cascades or events
    counts: dict[str, int] = {}
    specific: dict[str, int] = {}  # lines that say which collateral it is (not the words every kind prints)
    for e in lead:
        counts[e.cause] = counts.get(e.cause, 0) + 1
        specific[e.cause] = specific.get(e.cause, 0) + (not e.ambiguous)
    earliest = _first(lead).cause  # by time where the lines carry one, else by order
    cause_id = max(counts, key=lambda c: (specific[c], counts[c], c == earliest,
                                          -min(e.order for e in lead if e.cause == c)))
    first = _first([e for e in lead if e.cause == cause_id])
    missing: list[MissingFact] = []
    verdict: Verdict = "failure"
    rank: int | None = None
    if len(suspects) == 1:
        rank = suspects[0]
        if kind == "missing":
            why = (f"every rank in these logs shows only collateral errors ({cause_id}); rank {rank} is missing "
                   f"from the inputs: its log holds the initiating failure")
            where = f"torchrun --log-dir DIR: DIR/*/attempt_*/{rank}/"
            missing.append(MissingFact(f"the log of rank {rank}", f"collect rank {rank}'s stdout/stderr ({where})"))
        elif kind == "behind":
            why = (f"every rank shows only collateral errors ({cause_id}); rank {rank}'s last collective is "
                   f"behind the others' (NCCL sequence numbers): it stopped first, the others waited for it")
            missing.append(MissingFact(f"where rank {rank} stopped",
                                       f"rank {rank}'s own log, or py-spy dump --pid <pid of rank {rank}>"))
        elif kind == "odd-collective":
            why = (f"every rank shows only collateral errors ({cause_id}); rank {rank} timed out in another "
                   f"collective than the others at the same point: it took another path through the code "
                   f"(a branch only it ran, or a step it skipped), and the others waited for it")
            missing.append(MissingFact(f"the code path rank {rank} took",
                                       "TORCH_DISTRIBUTED_DEBUG=DETAIL names the collective each rank called"))
        elif kind == "main-first":
            why = (f"the ranks that report timed out in a barrier that waits for rank 0 to do its work alone "
                   f"first ({cause_id}): rank 0 was still busy there (caching a dataset, preprocessing) or failed")
            missing.append(MissingFact("what rank 0 was doing", "rank 0's own output before the timeouts"))
        elif kind == "named":
            why = (f"every rank shows only collateral errors ({cause_id}), and they name rank {rank} as the one "
                   f"that failed to join them; its own log says why")
            missing.append(MissingFact(f"the log of rank {rank}",
                                       f"collect rank {rank}'s stderr (torchrun --log-dir, or --tee 3)"))
        elif kind in ("likeliest", "likeliest-unranked"):
            quiet0 = ("no line names the rank that printed it" if kind == "likeliest-unranked" else
                      "rank 0 reported no timeout of its own")
            why = (f"every rank in these logs shows only collateral errors ({cause_id}) and no line says which rank "
                   f"stopped first; {quiet0}, and rank 0 is the rank others most often wait for (it alone saves "
                   f"checkpoints, evaluates and preprocesses): look there first")
            missing.append(MissingFact("where rank 0 was when the others timed out",
                                       "rank 0's last log lines, or py-spy dump --pid <pid of rank 0>"))
        elif kind == "first-timeout":
            why = (f"every rank shows only collateral errors ({cause_id}); their flight-recorder lines say the "
                   f"timeout was first detected on rank {rank}: it waited longest, so the collective it waited in "
                   f"is where the job stopped (a rank that never joined it, or rank {rank} itself out of step)")
            missing.append(MissingFact(f"what rank {rank} waited for",
                                       "the flight recorder's dump (TORCH_NCCL_TRACE_BUFFER_SIZE, "
                                       "TORCH_NCCL_DEBUG_INFO_TEMP_FILE), read with torchfrtrace"))
        elif kind == "aborted":
            why = (f"every rank shows only collateral errors ({cause_id}); rank {rank} printed no timeout of its own, "
                   f"and the launcher saw it die of SIGABRT after the others' timeouts, as the collective's watchdog "
                   f"ends a process: it was stuck (not waiting in the collective) when the others timed out")
            missing.append(MissingFact(f"where rank {rank} was stuck",
                                       f"rank {rank}'s own output before the timeouts (torchrun --log-dir or --tee 3)"))
        elif kind == "exited":
            why = (f"every rank shows only collateral errors ({cause_id}), but the launcher saw rank {rank} exit "
                   f"on its own first; its own error output is not in these inputs")
            if EXITED in ctx.library.cause_ids:
                cause_id = EXITED
            missing.append(MissingFact(f"the stderr of rank {rank}",
                                       f"collect rank {rank}'s stderr (torchrun --log-dir, or --tee 3)"))
        elif kind == "terminated":
            why = (f"the launcher saw rank {rank} die first, of a SIGTERM it did not send: it got no death signal "
                   f"itself and signalled only the other workers, after; something outside it stopped rank {rank} "
                   f"(a person's kill, a memory watchdog such as earlyoom or systemd-oomd, a job runner)")
            if EXITED in ctx.library.cause_ids:
                cause_id = EXITED
            missing.append(MissingFact(f"who sent rank {rank} its SIGTERM",
                                       "journalctl --since <the failure's time> (earlyoom, systemd-oomd, a runner's "
                                       "log), the scheduler's accounting, and the shell history of who ran kill"))
        elif (busy := _still_busy(progress, first)) is not None:
            # Silent, but the unranked output (its progress bar: only one rank prints it) was still
            # moving when the others' collective timed out: it was doing work alone, not hung.
            why = (f"every other rank failed waiting for rank {rank} ({first.cause}); rank {rank} printed no "
                   f"error and was still working ({busy.path}:{busy.line}) when they timed out: the work it "
                   f"did alone took longer than the timeout")
            missing.append(MissingFact(f"what rank {rank} was doing alone",
                                       "the progress bar or log lines right before the timeouts"))
        elif rank == 0:
            # Rank 0 alone saves checkpoints, evaluates, preprocesses and logs: silent while the others
            # time out, it is far more often busy with that work than hung.
            why = (f"every other rank failed waiting for rank 0 ({first.cause}); rank 0 printed no error: it was "
                   f"most likely busy with work it does alone (a checkpoint save, evaluation, preprocessing) "
                   f"for longer than the timeout, or hung there")
            missing.append(MissingFact("where rank 0 was",
                                       "rank 0's last log lines, or py-spy dump --pid <pid of rank 0>"))
        else:
            # Present but silent while everyone else timed out waiting for it: it hung.
            cause_id, verdict = HANG, "hang"
            said = [n for s in ctx.scans for n in s.notable if n.line.rank == rank]
            if said:  # it printed errors all ranks printed alike: not its own failure, but not silence
                said_where = f"{said[0].line.path}:{said[0].line.number}"
                why = (f"every other rank failed waiting for rank {rank} ({first.cause}); rank {rank} printed no "
                       f"timeout of its own, only error lines the other ranks printed too (first at "
                       f"{said_where}), and stopped making progress: it hung or died there")
            else:
                why = (f"every other rank failed waiting for rank {rank} ({first.cause}); rank {rank} printed no "
                       f"error and stopped making progress: it hung (or died without a word)")
            missing.append(MissingFact(f"where rank {rank} is blocked",
                                       f"py-spy dump --pid <pid of rank {rank}>  (while it hangs)"))
    else:
        who = f"ranks {rank_ranges(suspects)}" if suspects else "a rank or host not in these inputs"
        why = f"every rank shows only collateral errors ({cause_id}); the initiating failure is on {who}"
        silent_as = next((c.silent_exit_as for e in lead if (c := ctx.library.cause(e.cause)).silent_exit_as), None)
        before = _died_silently(ctx, events) if silent_as and not suspects else None
        if silent_as and before is not None:
            why = (f"the launcher stopped its workers ({first.path}:{first.line}) because one of them exited on its "
                   f"own, and the workers' output in the same stream ({before} line(s) before) holds no error: "
                   f"the worker died of something it could not report")
            cause_id = silent_as
        elif cause_id == SUMMARY and EXITED in ctx.library.cause_ids:
            # Only the launcher's summary of exit codes: a worker exited with an error printed elsewhere
            # (the finding real logs that end so most often lead to), the summary its echo.
            why = (f"only the launcher's summary of its workers' exit ({cause_id}) is here: a worker exited with "
                   f"an error that is not in these inputs ({who})")
            cause_id = EXITED
        if before is None:
            missing.append(MissingFact("the logs of every rank and host of the job", "collect all ranks' "
                                       "stdout/stderr (torchrun --log-dir) and `dmesg -T` on each host"))
    missing.extend(m for m in _missing(ctx, cause_id) if m not in missing)
    guess = kind.startswith("likeliest")  # a lead from what real logs most often show, not from this log's lines
    conf = confidence.hang(True) if cause_id == HANG else confidence.cascade_only(0 if guess else len(suspects))
    ev = _evidence(first.evidence)
    if kind in ("exited", "terminated") and rank is not None:
        # The launcher's own line on that rank's exit comes first: it is the failure's only trace here.
        named = [ln for e in sorted(events, key=lambda e: (e.path, e.line)) for ln in e.evidence
                 if launcher_rank(ln.text) == rank]
        ev = (*_evidence(named[:1]), *(x for x in ev if not named or (x.path, x.line) != (named[0].path,
                                                                                           named[0].number)))
    if rank is not None and rank in progress:
        p = progress[rank]
        ev = (*ev, Evidence(p.path, p.line, p.rank, f"last progress of rank {rank}: {p.text}"))
    # With a lead to one rank (its log is missing, it exited, it was named, it is behind), the symptom
    # is not the answer and its low confidence says so; with no lead (or only the likeliest rank as
    # one), the symptom is what real logs most often end at, and the calibration measured how often.
    primary = _finding(ctx, cause_id, confidence_=conf, rank=rank, host=None, time=first.time,
                       evidence=ev, missing=tuple(missing), why=why, calibrate=rank is None or guess)
    coll = _collateral(sorted(events, key=lambda e: (e.path, e.line)), cause_id, exclude_rank=rank)
    silent = ctx.library.cause(cause_id).silent_exit
    reading = ctx.library.likeliest_reading(cause_id) if silent and rank is None else None
    if reading is not None:
        # A death no line explains: lead with what real threads most often found behind one (measured on
        # the dev split: the signal, then that signal's sender, each once), the silent death itself and the
        # signal the next readings, and ask for the facts that decide.
        target, share, resolved, hits = reading
        found_by = f"of {resolved} threads that found what ended such a death, {hits} found {target}"
        # (the next readings, likeliest first: the signal when its sender is read on, then the death itself)
        nexts = [(cause_id, f"{primary.title}: the log does not say which signal or exit ended it")]
        sender = ctx.library.likeliest_reading(target)
        if sender is not None:
            signal = ctx.library.cause(target)
            nexts.insert(0, (target, f"{signal.title}: who sent it, the log does not say{_check_with(signal)}"))
            found_by += f", and of {sender[2]} that found who sent one, {sender[3]} found {sender[0]}"
            target, share = sender[0], share * sender[1]
        # (`missing` holds the silent death's own facts already)
        facts = {m.command: m for m in (*missing, *_missing(ctx, reading[0]))}
        answer = _finding(ctx, target, confidence_=share, rank=None, host=None, time=first.time, evidence=ev,
                          missing=tuple(facts.values()), why=f"{why}; {found_by}", calibrate=False)
        alts = tuple(Alternative(cid, confidence.alternative(1.0 - 0.5 * i, answer.confidence), said)
                     for i, (cid, said) in enumerate(nexts))
        return replace(base, verdict=verdict, primary=answer, alternatives=alts, collateral=coll)
    if silent:
        # (the senders such a death competes for, each with the fact that would confirm it)
        read = ctx.library.cause(cause_id)
        competing = tuple(_unconfirmed(c, read, primary.confidence) for c in _competing(ctx, read))
        return replace(base, verdict=verdict, primary=primary, alternatives=competing, collateral=coll)
    return replace(base, verdict=verdict, primary=primary, collateral=coll)


def _died_silently(ctx: Context, events: list[Event]) -> int | None:
    """How many lines the workers' stream holds before the launcher stopped them, when every collateral
    line is one a launcher prints as a worker exits on its own (fingerprint `worker_exit`) and no other
    line reads as an error; None otherwise (also when the teardown is all the input holds). The workers
    write to the launcher's stream: one that raised would have left its traceback there."""
    if not events:
        return None
    for e in events:
        fps = [ctx.library.fingerprint(key) for key, _ in e.fingerprints]
        if not fps or not all(fp is not None and fp.worker_exit for fp in fps):
            return None
    first = min(events, key=lambda e: (e.path, e.line))
    scan = next((s for s in ctx.scans if s.path == first.path), None)
    shown = first.line - 1
    own = {ln.number for e in events if e.path == first.path for ln in e.evidence}
    if scan is None or not shown or scan.tracebacks or any(n.line.number not in own for n in scan.notable):
        return None
    return shown


# the store barrier's count in its wait and timeout messages (torch 1.x-2.0)
_BARRIER_COUNT = re.compile(r"\(world_size=(\d{1,6}), worker_count=(\d{1,6})")
# torch's _store_based_barrier, every 10 s while the process group forms (torch 1.x-2.0).
_STORE_WAIT = re.compile(r"Waiting in store based barrier to initialize process group for rank: (\d{1,6}), "
                         r"key: \S{1,200} " + _BARRIER_COUNT.pattern)
# Lightning's line as each process joins ("initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8" in 1.x,
# "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/8" since): the world size it took from the
# cluster environment (SLURM's tasks, devices x num_nodes), and who came.
_MEMBER = re.compile(r"GLOBAL_RANK: (\d{1,6}), MEMBER: (\d{1,6})/(\d{1,6})")


def _ends_at(s: ScanResult, line: int) -> bool:
    """The input ends at `line`: within a few lines of it, with no progress after. What a stopped process
    prints on its way out after it (Ctrl-C's traceback, a destructor's ignored exception) does not count."""
    exiting = sum(t.last_line - t.first_line + 2 for t in s.tracebacks
                  if t.first_line > line and (t.ignored or t.interrupted))
    return line >= s.lines - 5 - exiting and not any(p.path == s.path and p.line > line for p in s.progress.values())


def _stuck_in_store_barrier(ctx: Context, base: Diagnosis) -> Diagnosis | None:
    """The log ends while its ranks still wait to form the process group, fewer of them than the world
    size (torch's store barrier, or Lightning's members joining): positive evidence of a hang at launch;
    the missing ranks never came."""
    for s in ctx.scans:
        # (line, (rank, world size, how many came)); Lightning's lines leave the count to the ranks seen
        waits = [(m.line, (int(w[1]), int(w[2]), int(w[3])))
                 for m in s.markers if (w := _STORE_WAIT.search(m.line.text))]
        joined = [(m.line, (int(w[1]), int(w[3]), 0)) for m in s.markers if (w := _MEMBER.search(m.line.text))]
        if not waits and not joined:
            continue
        lines = waits or joined
        last = max(ln.number for ln, _ in lines)
        if not _ends_at(s, last):
            continue  # the group formed and the run went on
        world = max(w[1] for _, w in lines)
        came = {w[0] for _, w in lines}
        count = max(w[2] for _, w in lines) if waits else len(came)
        if waits and count > world:
            # (without a cause for it in the library, the barrier that can never complete is still a hang)
            shared = ctx.library.store_overfull or HANG
            # More workers checked in than the job has ranks: another job's ranks, or a stale init file's
            # entries, are in the same store; the count will never equal the world size.
            why = (f"the log ends while rank {waits[-1][1][0]} waits in the store barrier that forms the process "
                   f"group, and the store counts {count} workers for a world size of {world}: processes of "
                   f"another job (the same port) or an earlier run's init file are in this job's store")
            primary = _finding(ctx, shared, confidence_=0.8, rank=None, host=None, time=lines[-1][0].time,
                               evidence=_evidence([ln for ln, _ in lines[-3:]]), missing=_missing(ctx, shared),
                               why=why)
            return replace(base, verdict="hang", primary=primary)
        if count >= world:
            if waits or any(m.line.number > last and REGISTERED in m.line.text for m in s.markers):
                continue
            # Every member announced itself and joined init_process_group, and the log ends before rank 0
            # said the group formed: they did not reach one another (the store's address or port, a
            # firewall, the interface the backend chose).
            why = (f"the log ends after all {world} ranks began to join Lightning's process group, before rank 0 "
                   f"said it formed ('{REGISTERED}'): the processes did not reach one another; it hung at launch")
            primary = _finding(ctx, HANG, confidence_=0.5, rank=None, host=None, time=lines[-1][0].time,
                               evidence=_evidence([ln for ln, _ in lines[-3:]]), missing=_missing(ctx, HANG), why=why)
            return replace(base, verdict="hang", primary=primary)
        missing = sorted(set(range(world)) - came)
        rank = missing[0] if len(missing) == 1 else None
        who = f"rank {rank} never arrived" if rank is not None else "some ranks never arrived"
        where = ("wait in the store barrier that forms the process group" if waits else
                 "join Lightning's process group, which took its world size from the cluster environment")
        why = f"the log ends while the ranks {where} ({count} of {world} came): {who}; it hung at launch" + (
            "" if waits else "; on SLURM, start the processes with srun, --ntasks-per-node equal to devices and "
                             "--nodes equal to num_nodes")
        ev = _evidence([ln for ln, _ in lines[-3:]])
        primary = _finding(ctx, HANG, confidence_=0.6, rank=rank, host=None, time=lines[-1][0].time,
                           evidence=ev, missing=_missing(ctx, HANG), why=why)
        return replace(base, verdict="hang", primary=primary)
    return None


_EXTENSION_STEP = re.compile(EXTENSION_STEP)
# the extension a step names ("Building extension module fused_adam...", "Loading extension module dvr..."),
# and DeepSpeed's word that one process has it loaded ("Time to load fused_adam op: 0.5 seconds")
_EXTENSION_NAMED = re.compile(r"(?:Building|Loading) extension module (\w{1,200})")
_EXTENSION_LOADED = re.compile(r"Time to load (\w{1,200}) op: ")
EXTENSION_LOCK = "training-hang/extension-build-lock"


def _stuck_in_extension_build(ctx: Context, base: Diagnosis) -> Diagnosis | None:
    """The log ends inside torch's just-in-time build of a C++/CUDA extension, with no progress after
    it: every process that did not take the build's lock file polls for it to go, and a lock a killed
    build left behind never goes. Positive evidence of a stall at setup, though a build still compiling
    reads the same (the lock file's age tells them apart). A process that finished loading the same
    extension (DeepSpeed's "Time to load X op") says the lock was not stale."""
    for s in ctx.scans:
        steps = [m.line for m in s.markers if _EXTENSION_STEP.search(m.line.text)]
        if not steps:
            continue
        last = steps[-1]
        if not _ends_at(s, last.number):
            continue  # the build finished and the run went on
        loaded = {m[1] for ln in steps if (m := _EXTENSION_LOADED.search(ln.text))}
        named = next((m[1] for ln in reversed(steps) if (m := _EXTENSION_NAMED.search(ln.text))), None)
        if _EXTENSION_LOADED.search(last.text) or (named is not None and named in loaded):
            continue
        what = f"the extension {named}" if named else "a just-in-time extension"
        why = (f"the log ends while torch builds or loads {what} ({last.text.strip()[:160]}) and nothing follows: "
               f"the processes wait on the build's lock file, which a build killed earlier leaves behind for every "
               f"later run (or the build itself is still compiling: the lock file's age tells)")
        primary = _finding(ctx, EXTENSION_LOCK, confidence_=0.5, rank=None, host=None, time=last.time,
                           evidence=_evidence(steps[-3:]), missing=_missing(ctx, EXTENSION_LOCK), why=why)
        return replace(base, verdict="hang", primary=primary)
    return None


PROMPT_AFTER_BAR = 3  # lines: the shell's prompt this close below the last bar came back when the program ended


def _exited_mid_loop(ctx: Context, base: Diagnosis) -> Diagnosis | None:
    """A pasted terminal session that ends at the shell's prompt, right below a bar its loop left unfinished
    ("0/402"): the program returned to the shell mid-training without a word of its own, an exit, not a
    run that may still go on. Which exit (a native crash that Windows reports nowhere, a kill the shell did
    not print, a script's own quiet exit) only its exit status says."""
    for s in ctx.scans:
        mine = [p for p in s.progress.values() if p.path == s.path]
        if not s.prompt_line or not mine:
            continue
        last = max(mine, key=lambda p: p.line)
        if not s.tqdm_incomplete.get(last.rank) or not 0 < s.prompt_line - last.line <= PROMPT_AFTER_BAR:
            continue
        if s.prompt_line < max(s.last_line_rank.values(), default=0):
            continue  # (the session went on after that prompt)
        prompt = next((ln.text for ln in s.tail_lines if ln.number == s.prompt_line), "the shell's prompt")
        ev = (Evidence(s.path, last.line, last.rank, f"last progress: {last.text}"),
              Evidence(s.path, s.prompt_line, last.rank, prompt))
        why = (f"the shell's prompt came back right after the training bar, left at {last.text.strip()[:80]}: the "
               f"program exited mid-training and printed no error; its exit status (`echo $?`, or "
               f"`$LASTEXITCODE` in PowerShell) and the system's log (dmesg, or Windows' Event Viewer) say how")
        primary = _finding(ctx, EXITED, confidence_=0.4, rank=last.rank, host=None, time=last.time, evidence=ev,
                           missing=_missing(ctx, EXITED), why=why)
        return replace(base, verdict="failure", primary=primary)
    return None


def _hang_or_healthy(ctx: Context, base: Diagnosis, progress: dict[int | None, RankProgress]) -> Diagnosis:
    stuck = _stuck_in_store_barrier(ctx, base) or _stuck_in_extension_build(ctx, base)
    if stuck is not None:
        return stuck
    if not progress or any(s.done for s in ctx.scans):
        return base
    exited = _exited_mid_loop(ctx, base)
    if exited is not None:
        return exited
    incomplete = any(v for s in ctx.scans for v in s.tqdm_incomplete.values())
    steps = {r: p.step for r, p in progress.items() if p.step is not None}
    laggard: int | None = None
    ranked = {r: s for r, s in steps.items() if r is not None}
    if len(ranked) > 1 and len(set(ranked.values())) > 1:
        low = min(ranked.values())
        lows = [r for r, s in ranked.items() if s == low]
        if len(lows) == 1:
            laggard = lows[0]
    at_end = any(
        p.line >= max(s.last_line_rank.values(), default=0) - 20
        for s in ctx.scans for p in s.progress.values() if p.path == s.path
    )
    if laggard is None:
        # A log that merely ends is not a hang: the job may still run, or was stopped on purpose.
        if incomplete or at_end:
            last = max(progress.values(), key=lambda p: (p.path, p.line))
            return replace(base, notes=(*base.notes, (
                f"the log ends at {last.path}:{last.line} during training with no error and no sign that the run "
                f"finished; if the job is still running or stopped without a word, take its stacks with "
                f"`py-spy dump --pid <pid>` and diagnose again with them")))
        return base
    lines = sorted(progress.values(), key=lambda p: (p.step is None, p.step or 0))
    ev = tuple(Evidence(p.path, p.line, p.rank, f"last progress: {p.text}") for p in lines[:8])
    why = (f"the log stops mid-training with no error; rank {laggard} is behind "
           f"(step {ranked[laggard]} vs {max(ranked.values())}): it blocked first")
    primary = _finding(ctx, HANG, confidence_=confidence.hang(True), rank=laggard, host=None, time=None,
                       evidence=ev, missing=_missing(ctx, HANG), why=why)
    return replace(base, verdict="hang", primary=primary)


def _notes(ctx: Context) -> tuple[str, ...]:
    notes = []
    for s in ctx.scans:
        for key, n in s.dropped.items():
            notes.append(f"{s.path}: {n} more lines like {key} not kept")
        if s.unreadable:
            notes.append(f"skipped, could not be read: {s.unreadable}")
        stop = stopped_at(ctx.library, s)
        if stop is not None:
            notes.append(f"stopped by hand (Ctrl-C) at {s.path}:{stop}, a run that showed progress, "
                         f"in no wait: a stop, not a failure (if the run was stuck, its frames say where)")
        if s.cut_lines:
            notes.append(f"{s.path}: {s.cut_lines} line(s) too long to keep whole were read only to their first "
                         f"{MAX_LINE >> 20} MiB (the rest of such a line is skipped)")
    return tuple(notes)
