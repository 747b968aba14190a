"""Which rank started it: ranks read from launcher reports and summaries, from messages that name
the rank others waited for, from who printed what, and, when every rank shows only collateral
errors, the suspects (a missing log, a rank that exited on its own, a silent rank, the one behind)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace

from trainmedic.logs.attribution import faulty_rank, first_timeout_rank, launcher_rank, rank_from_path, rank_in_text
from trainmedic.model import Event, Line, Notable, RankProgress, SummaryRecord, Traceback
from trainmedic.reason import notable
from trainmedic.reason.context import SAME_MESSAGE, Context


def waited_for(e: Event) -> int | None:
    named = {r for ln in e.evidence[:4] if (r := faulty_rank(ln.text)) is not None}
    return named.pop() if len(named) == 1 else None


def rank_named(e: Event, incident: Sequence[Event] = ()) -> int | None:
    """The rank an event's own message names: the faulty one other ranks point at ("check rank 0 logs
    for faulty rank"), else the one it is about ("did not receive grad for rank 2"), in its lines or in
    the rest of its exception's message, or in the lines of the same cause just below it (Horovod's
    stall warning, then "allreduce.avg_loss [missing ranks: 1]")."""
    texts = [ln.text for ln in e.evidence[:4]] + list(e.traceback.exceptions[-4:] if e.traceback else ())
    texts += [ln.text for o in incident if o is not e and o.cause == e.cause and o.path == e.path
              and 0 < o.line - e.line <= SAME_MESSAGE for ln in o.evidence[:2]]
    return next((r for t in texts if (r := faulty_rank(t)) is not None),
                next((r for t in texts if (r := rank_in_text(t)) is not None), None))


def failed_ranks(events: list[Event]) -> set[int]:
    """Ranks the launcher reports as failed on their own (not stopped by it). Only the launcher's own
    report counts (whatever cause its line was matched as): a cascade's "on rank 3" names the rank
    that waited, not the one that failed."""
    return failed_in([ln for e in events for ln in e.evidence[:4]])


def failed_in(lines: Sequence[Line]) -> set[int]:
    out: set[int] = set()
    for ln in lines:
        if ("SIGTERM" in ln.text or "exitcode: -15" in ln.text or "on signal 15 " in ln.text
                or "from signal 15" in ln.text):
            continue  # the launcher's own teardown, not a rank that failed
        r = launcher_rank(ln.text)
        if r == 0 and ln.host is not None and "exits with return code" in ln.text:
            continue  # the DeepSpeed launcher of one node of several: its one worker's global rank is unknown
        if r is not None:
            out.add(r)
    return out


def rank_from_summary(records: list[SummaryRecord]) -> int | None:
    """The one rank the launcher saw fail on its own (the engine has already mapped pids to ranks)."""
    failed = [r for r in records if r.exitcode not in (None, -15, 0)]
    if len({r.rank for r in failed}) == 1:
        return failed[0].rank
    return None


def expected_ranks(ctx: Context, fill_gaps: bool = True) -> set[int]:
    """The job's ranks: those its lines name, its world size's, and (`fill_gaps`) every rank below
    the highest named."""
    ranks: set[int] = set()
    for s in ctx.scans:
        ranks |= s.ranks
        ranks |= {r.rank for r in s.summaries}
    worlds = [w for s in ctx.scans for w in s.world_sizes]
    if worlds and ranks:
        world = max(worlds)
        if world <= max(64, 4 * (max(ranks) + 1)):  # ignore world sizes that are clearly not rank counts
            ranks |= set(range(world))
    if fill_gaps and len(ranks) > 1 and max(ranks) < 64:
        # A combined log of several ranks: ranks count from 0, so ranks 1-3 reporting means rank 0 exists.
        ranks |= set(range(max(ranks) + 1))
    return ranks


def cut_in_a_collective(tb: Traceback | None) -> bool:
    """A traceback the log ends in, whose innermost frames are torch.distributed's: the rank was inside
    a collective or a barrier, waiting for the others, when its output stopped."""
    return tb is not None and tb.truncated and any(
        "torch/distributed/" in f.replace("\\", "/") for f in tb.frames[-3:])


def rank_0_likeliest(ctx: Context, tb: Traceback | None) -> bool:
    """In a job of several processes (ranks in the logs, or a torch.distributed frame), rank 0 printed
    no error line: the rank others most often wait for is a lead (a single process names no rank)."""
    printed = {n.line.rank for s in ctx.scans for n in s.notable if n.line.rank is not None}
    several = bool(expected_ranks(ctx)) or any("distributed" in f for f in (tb.frames if tb else ()))
    return several and 0 not in printed


def silent_rank(ctx: Context, lines: Sequence[Notable]) -> int | None:
    """The one expected rank that printed no error when every other rank printed the same one."""
    by_rank: dict[int, set[str]] = {}
    for n in lines:
        if n.line.rank is not None:
            by_rank.setdefault(n.line.rank, set()).add(notable.template(n.line.text))
    if len(by_rank) < 2 or not set.intersection(*by_rank.values()):
        return None
    return quiet_one(ctx, set(by_rank))


def quiet_one(ctx: Context, said: set[int]) -> int | None:
    """When two or more ranks said the same thing, the one expected rank that said nothing."""
    quiet = sorted(expected_ranks(ctx) - said)
    return quiet[0] if len(said) >= 2 and len(quiet) == 1 else None


def adopt_ranks(events: list[Event], fallbacks: frozenset[str] | set[str], window: int = 60) -> list[Event]:
    """An unranked line (a worker's own stderr, a CUDA kernel's assert) just before a ranked event of the
    same entry in the same file belongs to that rank: the process prints, then its rank raises. A ranked
    traceback no signature explains (cut off, or an exception no entry knows) is taken for that same
    error reaching Python."""
    ranked = [e for e in events if e.rank is not None]
    out = []
    for e in events:
        adopted = e
        if e.rank is None:
            entry = e.cause.split("/")[0]
            near = [r for r in ranked if r.path == e.path and (r.cause.split("/")[0] == entry or r.cause in fallbacks)
                    and 0 <= r.line - e.line <= window]
            if near:
                adopted = replace(e, rank=min(near, key=lambda r: r.line).rank)
        out.append(adopted)
    return out


_RECORD_SPAN = (3, 6)  # lines above and below a summary record's "rank : N" line that belong to it


_RECORD_FIELD = re.compile(r"^\s*(?:exitcode|traceback|error_file|msg)\s*: ")  # one of the record's own lines


def root_cause_record(ctx: Context, first: Event, initiating: list[Event]) -> Event:
    """torchrun's failure summary lists the other failures first and the first observed one last
    ("Root Cause (first observed failure)"), often within the same second: of one summary's records
    reporting the same failure, the root cause's leads, whatever their order in the file; so it does
    over the launcher's unranked line of that failure ("failed (exitcode: -7) local_rank: 0"). A rank's own
    line stands, unless the root cause's rank printed the same failure too."""
    def record_of(e: Event) -> SummaryRecord | None:
        if not e.evidence or not _RECORD_FIELD.match(e.evidence[0].text):
            return None
        return next((r for s in ctx.scans for r in s.summaries if r.path == e.path and r.rank == e.rank
                     and -_RECORD_SPAN[0] <= e.line - r.line <= _RECORD_SPAN[1]), None)

    mine = record_of(first)
    if mine is not None and mine.root_cause:
        return first
    if mine is None and any(ln.rank is not None for ln in first.evidence):
        # A rank's own line: the summary has no say over it, unless other ranks printed the same failure:
        # their processes' output interleaves in no order of time, and the launcher saw which one exited first.
        observed = {r.rank for s in ctx.scans for r in s.summaries if r.root_cause}
        same = [e for e in initiating if e.cause == first.cause and e.rank in observed and e.rank != first.rank
                and record_of(e) is None and any(ln.rank is not None for ln in e.evidence)]
        return min(same, key=lambda e: e.line) if same else first
    roots = [e for e in initiating if e.cause == first.cause and e.path == first.path
             and (r := record_of(e)) is not None and r.root_cause]
    return min(roots, key=lambda e: e.line) if roots else first


def suspects(ctx: Context, events: list[Event], progress: dict[int | None, RankProgress],
             explained: frozenset[int] = frozenset()) -> tuple[list[int], str]:
    """Ranks that could have started it when every rank shows only collateral errors, best first,
    and the reason they stand out. The strongest signs win: a rank whose log file is missing, a rank
    the launcher saw exit on its own (not by SIGTERM; "aborted" when the timeouts' watchdog explains its
    death, `explained`: it printed no timeout, so it was stuck, not waiting), a rank that printed no error,
    the rank behind."""
    expected = expected_ranks(ctx)
    cascades = [e for e in events if e.role == "cascade"]
    reporting = {e.rank for e in (cascades or events) if e.rank is not None}
    # Ranks whose cascade lines were past the hit cap (not kept as evidence) reported too.
    roles = {"cascade"} if cascades else {"cascade", "initiating", "teardown"}
    for s in ctx.scans:
        for key, ranks in s.seen_ranks.items():
            cause = key.partition("#")[0]
            if cause in ctx.library.cause_ids and ctx.library.cause(cause).role in roles:
                reporting |= ranks
    per_rank_files = {r for s in ctx.scans if (r := rank_from_path(s.path)) is not None}
    records = [r for s in ctx.scans for r in s.summaries]
    if per_rank_files:
        no_file = sorted(expected - per_rank_files)
        if no_file:
            return no_file, "missing"
    # A rank that exited on its own (not by the launcher's SIGTERM) and printed no timeout of its own.
    timed_out = {e.rank for e in cascades if e.rank is not None}
    # (also a launcher line no fingerprint matched: a logging handler wrapped or reflowed it)
    launcher_lines = [n.line for n in notable.every(ctx.scans) if launcher_rank(n.line.text) is not None]
    own_exit = sorted(({r.rank for r in records if r.exitcode not in (None, -15, 0)} | failed_ranks(events)
                       | failed_in(launcher_lines)) - timed_out)
    if len(own_exit) > 1:
        # Several exited on their own: the one the launcher observed first ("Root Cause (first observed
        # failure)") leads among them.
        first_seen = {r.rank for r in records if r.root_cause and r.rank in own_exit}
        if len(first_seen) == 1:
            return sorted(first_seen), "exited"
    if own_exit and set(own_exit) <= explained:
        return own_exit, "aborted"
    if own_exit:
        return own_exit, "exited"
    outside = terminated_from_outside(ctx, records, events)
    if outside is not None:
        return [outside], "terminated"
    lines = [ln for e in cascades for ln in e.evidence[:4]]
    # monitored_barrier: rank 0 names the rank that did not arrive ("Rank 2 failed to pass
    # monitoredBarrier"); the other ranks only point at rank 0's log ("check rank 0 logs for faulty rank").
    named = sorted({r for ln in lines if "failed to pass" in ln.text and (r := faulty_rank(ln.text)) is not None}
                   or {r for ln in lines if (r := faulty_rank(ln.text)) is not None})
    if named:
        return named, "named"
    # One rank timed out in another collective than the rest at the same point: it took another path.
    differ = collectives_that_differ(cascades)
    if differ and (odd := odd_one(differ[0][1])) is not None:
        return [odd], "odd-collective"
    if 0 not in timed_out and any(
            e.traceback is not None and any(w in f for f in e.traceback.frames
                                            for w in ctx.library.cause(e.cause).main_first_frames)
            for e in cascades):
        return [0], "main-first"
    behind = behind_in_collectives(cascades)
    if behind is not None:
        return [behind], "behind"
    # The flight recorder's dump lines say whose watchdog fired first: where the timeout began, when
    # nothing above says more.
    first_out = sorted({r for e in cascades for ln in e.evidence[:4]
                        if (r := first_timeout_rank(ln.text, ln.rank if ln.rank is not None else e.rank)) is not None})
    if len(first_out) == 1:
        return first_out, "first-timeout"
    # (silent beside the ranks that reported: with no rank reporting, nobody's silence stands out)
    silent = sorted(expected - reporting) if reporting else []
    if len(silent) == 1 and len(reporting) < 3 and silent[0] != 0 and silent[0] not in expected_ranks(ctx, False):
        # A rank no line names, only a gap below the highest one named: ranks 0 and 2 timing out in a
        # posted excerpt of an 8-GPU job say nothing of rank 1, which the excerpt may simply leave out.
        # The gap is read as a silent rank only when most ranks report (three or more).
        silent = []
    steps = {r: p.step for r, p in progress.items() if r is not None and p.step is not None}
    if len(silent) > 1 and steps:
        lowest = min(steps.get(r, 1 << 60) for r in silent)
        narrowed = [r for r in silent if steps.get(r, 1 << 60) == lowest]
        if len(narrowed) == 1:
            silent = narrowed
    if len(silent) != 1 and cascades and 0 not in reporting and (0 in silent or not silent):
        # Nothing here says which rank it was, and rank 0 is not among the ranks that reported waiting
        # (or no line names its rank at all): rank 0 is the one
        # that works alone (checkpoints, evaluation, preprocessing, logging), and in real logs the
        # likeliest rank the others waited for. Named as a lead, not as a finding.
        # (said apart: a log in which no line names its rank at all)
        return [0], "likeliest" if any(e.rank is not None for e in events) else "likeliest-unranked"
    return silent, "silent"


def terminated_from_outside(ctx: Context, records: list[SummaryRecord], events: list[Event]) -> int | None:
    """The rank the launcher saw die first of a SIGTERM it did not send: its summary's root cause is
    signal 15 while the agent itself got no death signal and signalled only other pids ("Sending process
    N closing signal SIGTERM" comes after, for the survivors). Something outside the launcher stopped that
    one worker (a person's kill, a memory watchdog such as earlyoom, a job runner): its own failure, not
    the teardown's echo."""
    roots = [r for r in records if r.root_cause and r.exitcode == -15 and r.pid is not None]
    if len(roots) != 1:
        return None
    texts = [ln.text for e in events for ln in e.evidence] + [n.line.text for n in notable.every(ctx.scans)]
    if any(_AGENT_SIGNALLED.search(t) for t in texts):
        return None
    sent = {int(m.group(1)) for t in texts for m in _SENT.finditer(t)}
    return roots[0].rank if sent and roots[0].pid not in sent else None


_SENT = re.compile(r"Sending process (\d{1,10}) closing signal")
_AGENT_SIGNALLED = re.compile(r"death signal, shutting down workers")


_SEQ = re.compile(r"\bSeqNum=(\d{1,18}(?!\d))|last completed NCCL work: (\d{1,18}(?!\d))")


def behind_in_collectives(cascades: list[Event]) -> int | None:
    """The one rank whose collective sequence number is behind the others' in their NCCL watchdog
    reports: it stopped issuing collectives first, the others timed out waiting for it."""
    seq: dict[int, int] = {}
    for e in cascades:
        if e.rank is None:
            continue
        for ln in e.evidence[:4]:
            m = _SEQ.search(ln.text)
            if m:
                n = int(m.group(1) or m.group(2))
                seq[e.rank] = min(n, seq.get(e.rank, n))
    if len(seq) < 3:
        return None
    low = min(seq.values())
    lows = [r for r, n in seq.items() if n == low]
    return lows[0] if len(lows) == 1 and low < max(seq.values()) else None


_DS_KILL = re.compile(r"sigkill_handler\] Killing subprocess (\d{1,9})")


def deepspeed_pids(ctx: Context) -> dict[int, int]:
    """pid -> local rank from the DeepSpeed launcher's "[launch.py:319:sigkill_handler] Killing subprocess
    410126" lines: its handler walks the processes in the order it started them, local rank 0 first (one
    node's launcher, so only where no line names a host). A kernel record that killed one of those pids
    then names its rank."""
    for s in ctx.scans:
        lines = sorted({m.line for m in s.matches if "Killing subprocess" in m.line.text}, key=lambda ln: ln.number)
        if any(ln.host is not None for ln in lines):
            continue
        order: list[int] = []
        for ln in lines:
            m = _DS_KILL.search(ln.text)
            if m and int(m[1]) not in order:
                order.append(int(m[1]))
        if len(order) > 1:
            return {pid: i for i, pid in enumerate(order)}
    return {}


_PG = re.compile(r"\[PG (?:ID )?(\d{1,9})\b")
# WorkNCCL's operation, with its sequence number (torch >= 1.10) and its size (>= 2.2) when printed
_WORK = re.compile(r"WorkNCCL\((?:SeqNum=(\d{1,18}), )?OpType=(\w{1,40})(?:, NumelIn=(\d{1,18}))?")
Ops = dict[tuple[str, str], dict[int, Line]]  # (operation, size) -> rank -> its timeout line


def collectives_that_differ(events: Sequence[Event]) -> list[tuple[int, Ops]]:
    """The timeouts ranks reported at one sequence number of one process group (-1: none printed, each
    rank's first), where they were not in the same collective; lowest sequence number first."""
    # (process group, sequence number) -> ops: sequence numbers count per process group ("[PG 1 Rank 6]",
    # "[PG ID 0 PG GUID 0(default_pg) Rank 2]"), across the inputs: one file per rank is one run's logs.
    ops: dict[tuple[str, int], Ops] = defaultdict(lambda: defaultdict(dict))
    for pg, rank, seq, op, size, ln in _timeouts(events):
        ops[(pg, seq)][(op, size)].setdefault(rank, ln)
    return [(seq, by_op) for (_, seq), by_op in sorted(ops.items(), key=lambda kv: kv[0][1]) if len(by_op) >= 2]


def _timeouts(events: Sequence[Event]) -> Iterator[tuple[str, int, int, str, str, Line]]:
    """Each collective timeout the ranks' watchdog lines name: (process group, rank, sequence number or -1
    when not printed, operation, size or "", the line)."""
    for e in events:
        if e.role != "cascade" or e.rank is None:
            continue
        for ln in e.evidence[:4]:
            if m := _WORK.search(ln.text):
                pg = _PG.search(ln.text)
                yield pg[1] if pg else "", e.rank, int(m[1]) if m[1] else -1, m[2], m[3] or "", ln


def _family(op: str) -> str:
    """An operation's kind, whatever API issued it: "_ALLGATHER_BASE" and "ALLGATHER" are one."""
    return op.strip("_").removesuffix("_BASE").removesuffix("_COALESCED")


def streams_that_diverged(events: Sequence[Event]) -> Ops | None:
    """The first timeout of each rank of one process group, when they are at different sequence numbers
    in different kinds of collective (an ALLREDUCE as one rank's 215121st, a BROADCAST as the other's
    215122nd): a rank that is merely behind has nothing pending to time out, so ranks that each time out
    in a collective of their own were calling different ones. None when it is not so."""
    first: dict[str, dict[int, tuple[int, str, Line]]] = defaultdict(dict)
    for pg, rank, seq, op, _, ln in _timeouts(events):
        seen = first[pg].get(rank)
        if seq >= 0 and (seen is None or seq < seen[0]):
            first[pg][rank] = (seq, op, ln)
    for by_rank in first.values():
        if len(by_rank) < 2 or len({seq for seq, _, _ in by_rank.values()}) < 2:
            continue
        if len({_family(op) for _, op, _ in by_rank.values()}) < 2:
            continue
        ops: Ops = defaultdict(dict)
        for rank, (seq, op, ln) in by_rank.items():
            ops[(op, str(seq))][rank] = ln
        return ops
    return None


def odd_one(by_op: Ops) -> int | None:
    """The one rank whose collective the fewest share, when it is alone in it."""
    groups = sorted(by_op.values(), key=len)
    odd = groups[0] if len(groups[0]) < len(groups[1]) else {}
    return next(iter(odd)) if len(odd) == 1 else None
