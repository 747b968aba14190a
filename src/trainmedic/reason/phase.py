"""Where in its life the job was when it stopped: launch, setup, a checkpoint load, training,
evaluation, a checkpoint save or shutdown, at which step and how long after its last progress.

Read from the input that holds the failure (or, for a run with none, the one that went on longest):
the last phase marker (model.Marker) and the last progress line before the stop. A marker after the
last progress names what the job had moved on to ("Saving model checkpoint to ..."); with progress
after every marker the job was training.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainmedic.logs.attribution import parse_time
from trainmedic.model import Diagnosis, Marker, Phase, RankProgress, ScanResult

LABELS = {
    "launch": "launch and rendezvous",
    "setup": "model and data setup",
    "checkpoint-load": "checkpoint load",
    "training": "training",
    "evaluation": "evaluation",
    "checkpoint-save": "checkpoint save",
    "shutdown": "shutdown",
    "restart": "the launcher's restart of the worker group",
}


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def _stop(d: Diagnosis, scans: Sequence[ScanResult]) -> tuple[str, int, float | None] | None:
    """(input, line, time) of the stop: the primary's first evidence line, else the end of the input
    whose progress went furthest."""
    p = d.primary
    if p is not None and p.evidence:
        first = min(p.evidence, key=lambda e: (e.path, e.line))
        return first.path, first.line, p.time
    with_progress = [s for s in scans if s.progress]
    if not with_progress:
        return None
    s = max(with_progress, key=lambda s: max(pr.line for pr in s.progress.values()))
    return s.path, s.lines + 1, None


def at_stop(d: Diagnosis, scans: Sequence[ScanResult]) -> Phase | None:
    """The phase the job was in when it stopped, or None for a run that did not stop or says nothing."""
    if d.verdict == "healthy":
        return None
    stop = _stop(d, scans)
    if stop is None:
        return None
    path, line, when = stop
    scan = next((s for s in scans if s.path == path), None)
    if scan is None:
        return None
    rank = d.primary.rank if d.primary is not None else None
    progress = [pr for pr in scan.progress.values() if pr.line < line and (rank is None or pr.rank in (rank, None))]
    last: RankProgress | None = max(progress, key=lambda pr: pr.line, default=None)
    markers: list[Marker] = [m for m in scan.markers if m.line.number < line
                             and (rank is None or m.line.rank in (rank, None))]
    marker = max(markers, key=lambda m: m.line.number, default=None)
    if marker is not None and (last is None or marker.line.number >= last.line):
        name, at_path, at_line = marker.phase, marker.line.path, marker.line.number
        if last is not None and last.line == marker.line.number:
            last = None  # the phase's own progress bar ("Loading checkpoint shards: 2/2"), not training's
    elif last is not None:
        name, at_path, at_line = "training", last.path, last.line
    else:
        return None
    step = last.step if last is not None else None
    if name == "checkpoint-save":
        # the save being written names its own step ("Saving model checkpoint to out/checkpoint-4")
        saving = [c for c in scan.checkpoints if c.kind == "save" and c.line.number <= line and c.step is not None]
        if saving and (last is None or saving[-1].line.number >= last.line):
            step = saving[-1].step
    since = None
    if last is not None and when is not None:
        then = last.time if last.time is not None else parse_time(last.text)
        if then is not None and when >= then:
            since = round(when - then, 1)
    summary = f"stopped during {LABELS[name]}"
    if step is not None:
        summary += f" at step {step:,}"
        if last is not None and last.rank is not None:
            summary += f" on rank {last.rank}"
    elif last is not None:
        summary += " (no step number in its progress lines)"
    if since is not None:
        summary += f", {_ago(since)} after the last progress line"
    return Phase(name, summary, step, since, at_path, at_line)
