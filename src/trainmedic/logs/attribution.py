"""Which rank, host and time a line belongs to, from the prefixes and file names people really get."""

from __future__ import annotations

import calendar
import re
import time as _time
from dataclasses import dataclass
from pathlib import PurePath

# Prefixes, tried in order at the start of a line; each may be followed by another (host, then rank).
_RANK_PREFIXES = (
    re.compile(r"\[(?:rank|default)(\d{1,6})\]:[ ]?"),  # torchrun tee / torch>=2.2 traceback prefix
    re.compile(r"\[1,(\d{1,6})\]<(?:stdout|stderr)>:[ ]?"),  # mpirun --tag-output
    # SageMaker's MPI launcher tags the rank and the host: "[1,mpirank:3,algo-1]<stderr>:"
    re.compile(r"\[1,mpirank:(\d{1,6}),[^\]\n]{1,40}\]<(?:stdout|stderr)>:[ ]?"),
    re.compile(r"\[rank: (\d{1,6})\] "),  # Lightning rank_prefixed_message
    re.compile(r"\[RANK (\d{1,6})\] "),  # project loggers (SimpleTuner, ...); never a torch message's own "[Rank N]"
    re.compile(r"(?:[Rr]ank|RANK) ?(\d{1,6}): "),  # a script's own print(f"Rank {rank}: ...")
    re.compile(r" {0,5}(\d{1,5}): "),  # srun -l (right-aligned)
)
# pdsh's (the DeepSpeed launcher's on many nodes) and clush's: "worker-1: ", "node1: ", and a hostfile's
# addresses or the launching node itself as pdsh names them: "10.0.0.2: ", "localhost: "
HOST_PREFIX = r"((?:[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)|(?:[a-z]+\d+)|(?:\d{1,3}(?:\.\d{1,3}){3})|localhost): "
_HOST_PREFIX = re.compile(HOST_PREFIX)
# Ray's prefix on a remote actor's output (verl, OpenRLHF, Ray Train): "(WorkerDict pid=123, ip=10.0.0.1) ";
# a torchrun-style rank prefix may follow it.
# A task's output has no name before the pid: "(pid=4242) ", "(pid=4242, ip=10.0.0.1) ".
RAY_PREFIX = r"\((?:[A-Za-z_][\w.:-]{0,80} )?pid=\d{1,9}(?:, ip=([\d.]{7,15}))?\) "
_RAY_PREFIX = re.compile(RAY_PREFIX)
# What carries a log to the reader and puts before every line, the same on each: a markdown quote ("> "
# when a reply quotes a log), the timestamp of a log collector (kubectl logs --timestamps, docker logs
# -t, GitHub Actions, CloudWatch exports: RFC 3339 with its zone), the journal's (journalctl's
# "May 05 21:53:01 node1 python3[4242]: ", which names the host), kubectl's --prefix (the pod),
# docker compose's (the container), and a plain timestamp that a handler or moreutils' ts puts before every
# line ("[2024-05-05 21:53:01] ", "2024-05-05 21:53:01,022 - "; the line's time is still read from it).
# Stripped before the launcher's prefixes, so a traceback read through them is still a traceback.
CARRIER = (r"(?:>[ \t]?)+"
           r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)[ \t]"
           r"|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?(?: -)? "
           r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d ([\w.-]{1,64}) "
           r"[\w.@/-]{1,64}\[\d{1,9}\]: "
           # kubectl logs --prefix: "[pod/trainer-worker-0/pytorch] ", the pod is the host; docker compose
           # logs: "trainer-1  | ", the container
           r"|\[pod/([\w.-]{1,253})/[\w.-]{1,63}\] "
           r"|([a-z][\w.-]{0,62}-\d{1,3}) {1,40}\| ")
_CARRIER = re.compile(CARRIER)
# All of those a line may start with (a host's prefix too: pdsh's "worker-1: "), for the patterns that
# must find a line's first word behind them (a headless traceback's first frame, a metrics table's rows);
# split_prefix reads the same ones.
LINE_PREFIX = (rf"(?:{CARRIER})?(?:{RAY_PREFIX})?(?:{HOST_PREFIX})?"
               r"(?:\[(?:rank|default)\d+\]:|\[1,(?:mpirank:)?\d+(?:,[^\]\n]{1,40})?\]<std(?:out|err)>:"
               r"| {0,5}\d{1,5}: ){0,2}")  # (two: srun -l's or torchrun's tee's before torch's "[rankN]:")
# (nor a script's name: argparse's "train.py: error: ...", a shell's "run.sh: line 3: ..."; nor the
# exception classes that C-extension modules name in lower case, a traceback's last line: "socket.gaierror:
# [Errno -2] Name or service not known", "socket.timeout: timed out", "cv2.error: OpenCV(4.5.5) ...",
# "zlib.error: Error -3 while decompressing data")
_NOT_HOSTS = re.compile(r"(?:rank|default)\d+|[\w.-]{1,200}\.(?:py|sh|bash|pl|rb|js|lua)"
                        r"|[\w.-]{1,200}\.(?:error|timeout|gaierror|herror)")
# (also Determined's prefix after its own fields: "[2022-10-12T...] [rank=0] RuntimeError: ...", and a
# logging header whose last field is the rank: OLMo's "CRITICAL [olmo.util:158, rank=0] Uncaught ...", and
# Lightning's rank_prefixed_message behind a logging header, as the lightning-hydra template's RankedLogger
# prints it: "[2024-02-24 12:15:22,750][pkg.utils][ERROR] - [rank: 0] ...")
_RANK_IN_TEXT = re.compile(r"\[Rank (\d{1,6})\]|\[(?:[^\]\n]{0,80}[ ,])?rank=(\d{1,6})\] "
                           r"|\] (?:- )?\[rank: (\d{1,6})\] ")
# A c10d message glued to the end of a progress bar that had no newline ("...66.12it/s][E
# ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught ..."): its own header still names the rank.
_GLUED_RANK = re.compile(r"\[[EWIF][^\]\n]{0,60}\.cpp:\d{1,6}\] \[Rank (\d{1,6})\]")
# Where a launcher or a message names the rank that failed, in the words of each launcher and version:
# torchrun's agent ("failed (exitcode: -9) local_rank: 1 (pid: 42)"), its summary ("rank: 3 (local_rank:
# 3)"), mp.spawn ("process 3 terminated with signal SIGKILL"), DDP and NCCL messages ("for rank 2",
# "[Rank 2]"), and prefixes that a timestamp pushed off the start of the line. Not the DeepSpeed
# launcher's "CMD exits with return code = 1" nor the legacy torch.distributed.launch's
# CalledProcessError: both print the command of the LAST worker they spawned (the spawn loop's `cmd`),
# whichever failed, so its --local_rank names no one; unless it is "--local_rank=0": the last one
# spawned was the first, the node ran one worker, and that one failed (rank 0 unless a host prefix
# says the node is one of several, which failed_in checks).
_LAUNCHER_RANK = re.compile(
    r"local_rank: (\d{1,6}) \((?:pid|process ID)"
    r"|\brank *: *(\d{1,6}) \(local_rank"
    r"|\bprocess (\d{1,6}) terminated with (?:signal|exit code)"
    # srun's task number is the rank: "task 5: Exited with exit code 1", "task 5: Killed", "task 5:
    # Segmentation fault" (never "tasks 0-4,6-7: Terminated", the step's teardown of the others)
    r"|\bsrun: error: [^:\n]{1,255}: task (\d{1,6}): (?:Exited with exit code|Killed|Segmentation fault|Aborted|"
    r"Bus error|Floating point exception|Illegal instruction|Out Of Memory)"
    r"|\bnoticed that process rank (\d{1,6}) with PID"  # Open MPI's mpirun, PRRTE's prterun
    r"|\bProcess name: \[\[\d{1,9},\d{1,9}\],(\d{1,6})\]"  # mpirun: "The first process to do so was:"
    r"|\brank (\d{1,6}) died from signal \d"  # HPE PALS mpiexec: "rank 0 died from signal 11 and dumped core"
    r"|[\"']--local_rank=(0)[\"'],[^\n]{0,4000}?\] exits with return code = -?[1-9]"
)
_MESSAGE_RANK = re.compile(
    r"\b(?:for|on) rank (\d{1,6})\b"  # DDP: "did not receive grad for rank 2"
    r"|\[(?:[Rr]ank ?|default)(\d{1,6})\]"  # NCCL's "[Rank 2]", a prefix pushed off the line start
    r"|(?:Error|Exception): \[(\d{1,6})\]: "  # DDP's parameter check: "RuntimeError: [2]: params[4] ..."
    # an exception whose message opens with the rank that raised it: Megatron's grad-norm check ("AssertionError:
    # Rank 11: found NaN in local grad norm ...", the global rank)
    r"|(?:Error|Exception): [Rr]ank (\d{1,6}): "
    r"|\[Proxy Service (\d{1,6})\] Failed"  # NCCL's proxy thread of that rank failed an operation
)

_FILE_RANK = (
    re.compile(r"(?:^|[^a-z])rank[_-]?(\d{1,6})(?:[^0-9]|$)", re.I),
    re.compile(r"attempt_\d+/(\d{1,6})/(?:stdout|stderr|error)\.(?:log|json)$"),  # torchrun --log-dir
    re.compile(r"(?:^|/)(?:stdout|stderr)[_-]?(\d{1,6})\.(?:log|txt|out)$"),
)
_FILE_HOST = re.compile(r"(?:^|/)((?:node|host|ip)[-_]?[\w-]*\d[\w-]*)(?:/|\.)", re.I)


@dataclass(frozen=True)
class Attribution:
    rank: int | None
    host: str | None
    rest: str  # the line without its launcher prefixes
    carried: bool = False  # a carrier's prefix (a quote, a collector's timestamp) or Ray's was stripped
    said: bool = False  # the rank is one the message names ("[Rank 0] Watchdog caught ..."), not a prefix's


def split_prefix(text: str) -> Attribution:
    """Strip launcher prefixes and say which rank/host printed the line."""
    rank: int | None = None
    host: str | None = None
    local = False
    carrier = _CARRIER.match(text)
    pos = carrier.end() if carrier else 0
    if carrier is not None and (carrier[1] or carrier[2] or carrier[3]):
        host = carrier[1] or carrier[2] or carrier[3]  # the journal's host field, kubectl's pod, compose's container
    ray = _RAY_PREFIX.match(text, pos)
    if ray:
        host, pos = ray[1] or host, ray.end()
    carried = carrier is not None or ray is not None
    # After a timestamp, a bare "12: " is the line's own words (a step, a count), never srun -l's prefix.
    stamped = carrier is not None and carrier[0].lstrip("[")[:1].isdigit()
    prefixes = _RANK_PREFIXES[:-1] if stamped else _RANK_PREFIXES
    for _ in range(3):  # at most host + rank + a repeated rank prefix
        m = _HOST_PREFIX.match(text, pos) if host is None and rank is None else None
        if m and not _NOT_HOSTS.fullmatch(m.group(1)):
            host = m.group(1)
            pos = m.end()
            continue
        for rx in prefixes:
            m = rx.match(text, pos)
            if m:
                # torchrun's tee prefix "[default0]:" counts local ranks, and srun -l's "0: " counts tasks
                # (one per node when each runs torchrun); a "[rank12]:" after either is global.
                if rank is None or (local and m.group(0).startswith("[rank")):
                    rank = int(m.group(1))
                    local = m.group(0).startswith("[default") or rx is _RANK_PREFIXES[-1]
                pos = m.end()
                break
        else:
            break
    rest = text[pos:]
    said = False
    if rank is None:
        m = _RANK_IN_TEXT.search(rest, 0, 120) or _GLUED_RANK.search(rest, 0, 1000)
        if m:
            rank, said = int(next(g for g in m.groups() if g is not None)), True
    return Attribution(rank, host, rest, carried, said)


def rank_in_text(text: str) -> int | None:
    """The rank a message or a launcher line names as the one that failed, if it names one."""
    named = launcher_rank(text)
    return named if named is not None else _first_group(_MESSAGE_RANK, text)


# The waiting ranks name the one they waited for: monitored_barrier ("... from rank 0. Please check
# rank 0 logs for faulty rank.", "Rank 3 failed to pass monitoredBarrier"), ProcessGroupNCCL's first
# collective ("[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d ...").
_FAULTY_RANK = re.compile(r"check rank (\d{1,6}) logs for faulty rank|\bRank (\d{1,6}) failed to pass monitoredBarrier"
                          r"|retrieving ncclUniqueId from \[(\d{1,6})\] via c10d"
                          r"|collective mismatch around rank (\d{1,6})"  # NCCL's init.cc hang warning
                          # TORCH_DISTRIBUTED_DEBUG=DETAIL's check (ProcessGroupWrapper, torch 1.10-2.0)
                          r"|\bRank (\d{1,6}) is running inconsistent collective"
                          # Horovod's stall inspector: the ranks that never submitted the tensor
                          r"|\[missing ranks: (\d{1,6})\b"
                          # Ascend HCCL's timeout: the rank whose notify never came ("... from remote rank [0]")
                          r"|Notify record from remote rank:? \[(\d{1,6})\]")


# Two ranks' output glued on one line (a progress bar with no newline, then another rank's prefixed
# message): "[default0]:Grouping texts: 8%|...| [default2]:[E ProcessGroupNCCL.cpp:475] [Rank 2] ...".
_GLUED_PREFIX = re.compile(rb"\[(?:rank|default)(\d{1,6})\]:")


def glued_rank(vis: bytes, end: int) -> int | None:
    """The rank whose prefix, glued after the line's start, comes last before `end` (a match's end):
    the text there is that rank's, not the line's first."""
    found = None
    for m in _GLUED_PREFIX.finditer(vis, 1, max(1, min(end, len(vis)))):
        found = int(m[1])
    return found


# ProcessGroupNCCL's flight recorder (torch 2.3+, getNCCLWatchdogTimeoutErrorMsg): every rank says where
# the timeout that makes it dump was first detected: "... due to a collective timeout from  rank 2 and
# we will try our best ...", or "from this local rank" on that rank itself.
_DUMP_FROM = re.compile(r"dump signal due to a collective timeout from +(?:rank (\d{1,6})|(this local rank))")


def first_timeout_rank(text: str, own: int | None) -> int | None:
    """The rank whose watchdog timed out first, as a flight-recorder dump line says (`own`: the line's rank)."""
    m = _DUMP_FROM.search(text[:8000])
    if m is None:
        return None
    return int(m[1]) if m[1] is not None else own


def faulty_rank(text: str) -> int | None:
    """The rank other ranks' messages name as the one that failed to join them."""
    return _first_group(_FAULTY_RANK, text)


def launcher_rank(text: str) -> int | None:
    """The rank a launcher reports on (torchrun's agent and summary, mp.spawn, the DeepSpeed launcher)."""
    return _first_group(_LAUNCHER_RANK, text)


def _first_group(rx: re.Pattern[str], text: str) -> int | None:
    m = rx.search(text[:8000])
    return int(next(g for g in m.groups() if g is not None)) if m else None


def rank_from_path(path: str) -> int | None:
    p = path.replace("\\", "/")
    name = PurePath(p).name
    for rx in _FILE_RANK:
        m = rx.search(name) or rx.search(p)
        if m:
            return int(m.group(1))
    return None


def host_from_path(path: str) -> str | None:
    m = _FILE_HOST.search(path.replace("\\", "/"))
    return m.group(1) if m else None


# ---------------------------------------------------------------- timestamps

_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T _](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?")
# glog pads the month ("E0626"); c10's own logger (torch 2.x without glog) prints month*100 + day ("E626").
_GLOG = re.compile(r"[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})")
_CTIME = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) "
    r"(\d\d):(\d\d):(\d\d) (\d{4})"
)
_EPOCH = re.compile(r"(?<![\d.])(1[5-9]\d{8}(?:\.\d{1,6})?)(?![\d.])")
_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}


# Times a report can print in any timezone: 1970 to the end of 9998 (year 9999 with an offset, or
# year 1, would overflow datetime when shown).
_LATEST = 253_370_764_800.0


def parse_time(text: str, year: int | None = None) -> float | None:
    """Seconds since the epoch (UTC) from the first timestamp in the line's first 200 characters;
    None for none, or for one outside the years a report can show."""
    t = _parse_time(text, year)
    return t if t is not None and 0.0 <= t <= _LATEST else None


def _parse_time(text: str, year: int | None = None) -> float | None:
    head = text[:200]
    m = _ISO.search(head)
    if m:
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        try:
            t = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + frac
        except (ValueError, OverflowError):
            return None
        tz = m.group(8)
        if tz and tz != "Z":
            sign = 1 if tz[0] == "+" else -1
            hh, mm = int(tz[1:3]), int(tz[-2:])
            t -= sign * (hh * 3600 + mm * 60)
        return t
    m = _GLOG.search(head)
    if m:
        mo, d, h, mi, s = (int(g) for g in m.groups()[:5])
        if not (1 <= mo <= 12 and 1 <= d <= 31):
            return None
        y = year or _time.gmtime().tm_year  # glog lines carry no year
        t = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + float("0." + m.group(6))
        if year is None and t > _time.time() + 86_400.0:
            # A day of this year still to come: a log written before it is last year's (December's
            # lines read in January would otherwise come after every dated line of the same run).
            t = calendar.timegm((y - 1, mo, d, h, mi, s, 0, 0, 0)) + float("0." + m.group(6))
        return t
    m = _CTIME.search(head)
    if m:
        mo = _MONTHS[m.group(1)]
        d, h, mi, s, y = (int(g) for g in m.groups()[1:])
        return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))
    m = _EPOCH.search(head)
    if m:
        return float(m.group(1))
    return None
