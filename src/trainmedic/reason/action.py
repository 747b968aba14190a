"""What to do with the job once the cause is known: restart it, restart it without a host, fix the cause
and resume from a named checkpoint, or stop.

The cause's library data says whose problem it is, whether a plain restart can succeed and which
checkpoint is safe (`action:` in its entry; model.ActionPolicy). The logs say which checkpoints exist:
each save the frameworks printed (logs/checkpoints.py), and whether it finished. A save finished when
the framework said so, or when the run went on past it (a later save, or later progress on its rank);
the last save with nothing after it but the failure, while the job was saving, was cut short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from trainmedic.catalog import Library
from trainmedic.model import Action, Checkpoint, Diagnosis, Evidence, ScanResult

_OWNER = {
    "model-code": "the training code",
    "data": "the data",
    "configuration": "the job's configuration",
    "platform": "the machine or the cluster",
    "hardware": "the hardware",
    "framework": "the framework (a bug, or a combination it does not support)",
}
_GPU = re.compile(r"\b(?:GPU|gpu|device|Device)[ :#]?(\d{1,3})\b")


def _finished(saves: list[Checkpoint], done: list[Checkpoint], scans: Sequence[ScanResult],
              saving_at_stop: bool) -> list[Checkpoint]:
    """Each save with `completed` decided where the logs can decide it."""
    out = []
    for i, save in enumerate(saves):
        later = [s for s in saves[i + 1:] if s.line.path == save.line.path]
        said = any(d.line.path == save.line.path and d.line.number > save.line.number
                   and (d.step == save.step or (d.path and d.path in save.path)) for d in done)
        # Progress past the save's own step: a progress bar the save prints itself ("Writing model
        # shards 0/1") is not the run going on.
        went_on = any(p.path == save.line.path and p.line > save.line.number
                      and (save.line.rank is None or p.rank in (None, save.line.rank))
                      and (save.step is None or p.step is None or p.step > save.step)
                      for s in scans if s.path == save.line.path for p in s.progress.values())
        if said or later or went_on:
            out.append(replace(save, completed=True))
        elif i == len(saves) - 1 and saving_at_stop:
            out.append(replace(save, completed=False))  # the failure struck while it was being written
        else:
            out.append(save)
    return out


def _before(c: Checkpoint, ev: Evidence) -> bool:
    if c.line.path == ev.path:
        return c.line.number < ev.line
    return False  # another file: no order known


def _pick(resume: str, saves: list[Checkpoint], first: Evidence | None) -> tuple[Checkpoint | None, str]:
    """The checkpoint to resume from, and why that one. A save known to have finished is preferred to a
    later one the logs cannot vouch for (its files may be partial)."""
    sure = [s for s in saves if s.completed]
    if resume == "before-last":
        pool = [s for s in saves if s.completed is not False]
        return (pool[-2] if len(pool) >= 2 else None), "the one before the last, which is the suspect one"
    if resume == "before-nonfinite" and first is not None:
        before = [s for s in saves if s.completed is not False and _before(s, first)]
        if len(before) >= 2:
            return before[-1], (f"the last checkpoint saved before the failure's first sign (its weights computed the "
                                f"next step: if that was already non-finite, use {before[-2].path})")
        return (before[-1] if before else None), "the last checkpoint saved before the failure's first sign"
    unknown = [s for s in saves if s.completed is None and (not sure or s.line.number > sure[-1].line.number)]
    if sure:
        if unknown:
            return sure[-1], (f"the last one known to have finished (the save of {unknown[-1].path} is newer, but "
                              "nothing in the logs says it finished: use it only if its files are complete)")
        cut = [s for s in saves if s.completed is False]
        return sure[-1], ("the last one that finished; the save after it was cut short by the failure" if cut
                          else "the last one that finished")
    if unknown:
        return unknown[-1], "the last one saved; nothing in the logs says it finished, so check its files first"
    return None, ""


def decide(d: Diagnosis, scans: Sequence[ScanResult], library: Library) -> Action | None:
    if d.verdict == "healthy" or d.primary is None:
        return None
    p = d.primary
    try:
        cause = library.cause(p.id)
    except KeyError:  # a cause from another library version
        return None
    policy = cause.action
    if cause.role != "initiating" and p.missing:
        # Only collateral in the logs given, and the fact that would name its cause is missing (a rank's
        # log): whether a restart can pass depends on what that was.
        return Action("stop", "unknown", f"Stop before restarting: these logs show only the collateral of a failure "
                      f"they do not contain; get {p.missing[0].fact} first, and diagnose again with it.", None, None,
                      tuple(p.evidence[:1]))
    marks = sorted((c for s in scans for c in s.checkpoints), key=lambda c: (c.line.path, c.line.number))
    saving = d.phase is not None and d.phase.name == "checkpoint-save"
    saves = _finished([c for c in marks if c.kind == "save"], [c for c in marks if c.kind == "done"], scans, saving)
    first = p.evidence[0] if p.evidence else None
    checkpoint, which = _pick(policy.resume, saves, first)
    lies = ("the cause is not known yet" if policy.owner == "unknown"
            else f"the cause lies in {_OWNER.get(policy.owner, policy.owner)}")
    why = f" ({policy.why})" if policy.why else ""
    evidence = tuple(e for e in (first,) if e is not None)
    if checkpoint is not None:
        evidence += (Evidence(checkpoint.line.path, checkpoint.line.number, checkpoint.line.rank,
                              checkpoint.line.text),)
    if checkpoint is not None:
        step = f" (step {checkpoint.step})" if checkpoint.step is not None else ""
        where = f"; resume from {checkpoint.path}{step}, {which}"
    elif saves:
        where = "; no checkpoint the logs show is safe to resume from: start again, or from one known to be sound"
    else:
        where = "; the logs name no checkpoint: resume from the last one the job saved, if it completed"
    if policy.resume == "none":
        return Action("stop", policy.owner, f"Stop: {lies}{why}; no checkpoint of this run is safe to resume "
                      "from. Fix it and start again.", None, None, evidence[:1])
    if policy.restart:
        if policy.owner == "hardware" and p.host:
            gpu = next((m.group(1) for e in p.evidence for m in [_GPU.search(e.text)] if m), None)
            exclude = p.host + (f" (GPU {gpu})" if gpu is not None else "")
            return Action("restart-without", policy.owner, f"Restart without {exclude}: {lies}{why}{where}.",
                          checkpoint, exclude, evidence)
        return Action("restart", policy.owner, f"Restart: a plain restart can succeed; {lies}{why}{where}.",
                      checkpoint, None, evidence)
    if p.id in library.fallbacks:
        return Action("stop", policy.owner, "Stop and investigate: no known cause explains this failure, so a "
                      "restart would likely fail the same way.", checkpoint, None, evidence)
    return Action("fix-then-resume", policy.owner, f"Fix, then resume: {lies}{why}; a plain restart would fail "
                  f"the same way{where}.", checkpoint, None, evidence)
