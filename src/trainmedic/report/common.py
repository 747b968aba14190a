"""Small wording shared by the renderers, so text and markdown say the same thing."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from trainmedic.model import Diagnosis, Evidence, Finding, ProbeTopic

if TYPE_CHECKING:
    from trainmedic.catalog import Library
from trainmedic.util.text import rank_label, rank_ranges

HEADLINES = {
    "failure": "The run failed",
    "hang": "The run hung",
    "healthy": "No failure found",
}


def when(t: float | None) -> str:
    if t is None:
        return ""
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def where(p: Finding) -> str:
    """Rank, host and time of a finding, as one phrase."""
    parts = [rank_label(p.rank)]
    if p.host:
        parts.append(f"host {p.host}")
    if p.time is not None:
        parts.append(when(p.time))
    return ", ".join(parts)


def collateral_by_rank(d: Diagnosis) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for c in d.collateral:
        groups.setdefault(rank_label(c.rank), []).append(f"{c.id} ({c.path}:{c.line})")
    return sorted(groups.items(), key=lambda kv: (kv[0] == "no rank", len(kv[0]), kv[0]))


def relative(path: str) -> str:
    """A path under the working directory as pytest and ruff print it (relative); any other name as is."""
    if not Path(path).is_absolute():
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


_DIGITS = re.compile(r"\d+")


def folded_evidence(evidence: Sequence[Evidence], shown: int) -> tuple[list[tuple[Evidence, int]], int]:
    """The first `shown` evidence lines that differ in more than their numbers, each with how many
    more like it (same rank, same words) follow; and how many other lines are left unshown."""
    firsts: dict[tuple[int | None, str], int] = {}
    out: list[list[Any]] = []
    for e in evidence:
        key = (e.rank, _DIGITS.sub("#", e.text))
        if key in firsts:
            out[firsts[key]][1] += 1
            continue
        firsts[key] = len(out)
        out.append([e, 0])
    kept = [(e, int(n)) for e, n in out[:shown]]
    rest = sum(1 + int(n) for _, n in out[shown:])
    return kept, rest


def report_library() -> Library | None:
    """The library the report's ids come from, for titles and links; None when it cannot load (a
    stored report is still shown, with bare ids)."""
    from trainmedic.catalog import LibraryError, load_library

    try:
        return load_library()
    except LibraryError:
        return None


def library_ids() -> frozenset[str]:
    """Every entry and cause id of the library: what a fix step may point to."""
    library = report_library()
    return library.linkable_ids if library is not None else frozenset()


_ROLE_WORDS = {"cascade": "cascade", "teardown": "teardown", "initiating": "the same failure seen again"}
_ROLE_ORDER = {"cascade": 0, "teardown": 1, "initiating": 2}


def collateral_groups(d: Diagnosis) -> list[tuple[str, str, str]]:
    """Collateral folded by what it is: (which ranks, the cause's title, its role in words), the
    cascade first, then the launcher's teardown, then echoes of the failure itself."""
    library = report_library()
    groups: dict[str, set[int | None]] = {}
    for c in d.collateral:
        groups.setdefault(c.id, set()).add(c.rank)
    rows = []
    for cid, ranks in groups.items():
        title, role = cid, "collateral"
        if library is not None and cid in library.cause_ids:
            cause = library.cause(cid)
            title, role = cause.title, cause.role
            if title[1:2].islower():  # "Surviving workers ..." mid-sentence; "NCCL ..." stays
                title = title[0].lower() + title[1:]
        known = sorted(r for r in ranks if r is not None)
        who = (f"rank {known[0]}" if len(known) == 1 else f"ranks {rank_ranges(known)}") if known else "the launcher"
        if known and None in ranks:
            who += " and the launcher"
        rows.append((_ROLE_ORDER.get(role, 3), known[:1] or [1 << 30], who, title, _ROLE_WORDS.get(role, role)))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [(who, title, role) for _, _, who, title, role in rows]


PROBED_TOPICS = tuple(t for t in get_args(ProbeTopic) if t != "kernel")  # read by a probe, not handed in as a file

# How each face asks for the facts the logs lack, by the probe topic that answers them
# (MissingFact.topic): the kernel's log can be saved anywhere and passed in; the others are read on
# the failing host by a probe.
def feedback(topics: Sequence[str], face: str) -> str:
    """One sentence that says how to hand facts of `topics` back to trainmedic in `face` ("cli",
    "web"), a command between backticks; "" when no topic can be handed back."""
    kernel = "kernel" in topics
    probed = any(t in PROBED_TOPICS for t in topics)
    if face == "web":
        parts = []
        if kernel:
            parts.append("save the kernel log on the failing host (`dmesg -T > dmesg.txt`) and send it with the logs")
        if probed:
            parts.append("run `trainmedic doctor` on the failing host for the machine's side")
        return "Then " + "; ".join(parts) + "." if parts else ""
    if kernel and probed:
        return ("Then rerun with `--dmesg dmesg.txt` (from `dmesg -T > dmesg.txt` on the failing host), "
                "or with `--probe` on that host.")
    if kernel:
        return "Then save `dmesg -T > dmesg.txt` on the failing host and rerun with `--dmesg dmesg.txt`."
    if probed:
        return ("Then rerun with `--probe` on the failing host (or with `--facts facts.json`, "
                "saved there by `trainmedic doctor --json > facts.json`).")
    return ""


_ID = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?:/[a-z0-9]+(?:-[a-z0-9]+)*)?\b")


def references(text: str, ids: Collection[str]) -> list[tuple[str, bool]]:
    """`text` cut into pieces, each flagged when it is a library id (`entry` or `entry/cause`) that the
    text names: a fix step that points to another cause links to its page."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for m in _ID.finditer(text):
        if m.group(0) in ids:
            pieces += [(text[at:m.start()], False), (m.group(0), True)]
            at = m.end()
    return [*pieces, (text[at:], False)]


_CHECK = re.compile(r"; check with `([^`]*)`")


def without_printed(why: str, printed: Collection[str]) -> str:
    """An alternative's reason without its "; check with `CMD`" when CMD is printed elsewhere in the
    report already: each command once."""
    return _CHECK.sub(lambda m: "" if m.group(1) in printed else m.group(0), why)


_ACTION_HEAD = {"restart": "restart the job", "restart-without": "restart the job without {exclude}",
                "fix-then-resume": "fix the cause, then resume", "stop": "stop"}


def action_line(d: Diagnosis) -> str:
    """The next action in a few words ("fix the cause, then resume from out/checkpoint-2 (step 2)"), for
    faces short of room; the action's `reason` says it in full."""
    a = d.action
    if a is None:
        return ""
    head = _ACTION_HEAD.get(a.kind, a.kind).format(exclude=a.exclude or "the faulty host")
    if a.kind == "stop":
        head += ": find the cause before running again" if a.checkpoint is None and a.owner == "unknown" else (
            ": no checkpoint of this run is safe" if a.checkpoint is None else "")
    if a.checkpoint is not None and a.kind != "stop":
        step = f" (step {a.checkpoint.step})" if a.checkpoint.step is not None else ""
        head += f" from {a.checkpoint.path}{step}"
    owner = "" if a.owner == "unknown" else f"; owner: {a.owner}"
    return head[:1].upper() + head[1:] + owner

