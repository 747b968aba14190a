"""Stream one input through the scanner and collect what the reasoner needs, in bounded memory.

Per block: the scanner finds candidate lines, each is confirmed and attributed (rank, host, time);
tracebacks and torchrun failure summaries are assembled from the lines that follow a marker
(reading into the next block when needed). Only the tail of each input is read line by line, for
each rank's last progress.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import BinaryIO

from trainmedic.logs import checkpoints, newlines
from trainmedic.logs.attribution import (
    LINE_PREFIX,
    Attribution,
    glued_rank,
    host_from_path,
    parse_time,
    rank_from_path,
    split_prefix,
)
from trainmedic.logs.blocks import BLOCK, MAX_LINE, BlockSplitter, needs_cleaning, strip_ansi
from trainmedic.logs.sources import InputError, Source, looks_binary
from trainmedic.logs.tracebacks import (
    CARRIED,
    CHAIN,
    CHILD_HEADER,
    MAX_DUMP_FRAMES,
    THREAD_HEADERS_ABOVE,
    assemble_gdb_dump,
    assemble_ipython_traceback,
    assemble_stack_dump,
    assemble_traceback,
    under_exception,
)
from trainmedic.model import (
    Checkpoint,
    Line,
    Marker,
    Match,
    MemoryTable,
    Notable,
    RankProgress,
    ScanResult,
    SummaryRecord,
    Traceback,
)
from trainmedic.scan.database import (
    EPOCH_WORDS,
    ERROR_LEVEL,
    GLYPH_BAR,
    OWN_RANK,
    PHASES,
    PROGRESS,
    STEP_WORDS,
    WARNING_CALL_ECHO,
    WARNING_LEVEL,
    YOLO_ROW,
    Pattern,
    PatternSet,
    Scanner,
    build_scanner,
)
from trainmedic.util import linear
from trainmedic.util.text import to_bytes

LOOKAHEAD = 1 << 20  # how far into the next block a traceback or summary may run
TAIL = 256 << 10  # bytes at the end of each input read line by line for progress
MEMO_LINES = 1024  # distinct repeated lines a reader remembers (under 0.5 MB: each at most MEMO_LINE_BYTES)
MEMO_LINE_BYTES = 400
MAX_HITS_PER_PATTERN = 400  # a failure repeated a million times needs only its first and last lines
HEAD_SAMPLE = 4 * 1024  # bytes at the start of each sampling region whose line prefixes reveal ranks
SAMPLE_EVERY = 4 << 20  # sampling regions, fixed in file offsets
BEHIND = 64 * 1024  # how far back a summary record may look for its host and time
WARNING_SPAN = 3  # lines after a warning that still belong to its message
MEMORY_TABLE_ROWS = 30  # lines of a memory summary read below its title (its reserved row is about the 16th)
MAX_MEMORY_TABLES = 16  # per input: of a run that prints one every step, the last ones
RISES_KEPT = 16  # per rank, the last lines where its step rose (model.RankProgress.rises)
PROGRESS_LINES = 256  # progress lines of the tail read per rank (the last ones)
_DONE_PIDS = frozenset(i for i, p in enumerate(PROGRESS) if p.kind == "done")
# A script's bare last word ("Done!"): the run's end only if no training progress comes after it (a
# dataset's preparation says it too)
_BARE_DONE = frozenset(i for i, p in enumerate(PROGRESS) if p.key == "bare-done")
MAX_CHECKPOINTS = 200  # the latest checkpoint lines kept per input (a resume point is among the last)
CHECKPOINTS_PER_BLOCK = 16  # of a block's checkpoint lines, the last ones are read
SAVES_WINDOW = 64 << 10  # the first window of a block's end searched for them
# A block's checkpoint lines reported one by one up to this many (more: a run that logs a save every few
# lines, whose block is scanned again with them reported once, and its end searched for the last ones)
SAVES_BOUND = 1024
TAIL_LINES_KEEP = 4000  # tail lines kept when asked (a baseline compares them)
MARKERS_KEEP = 64  # phase markers kept from one input's tail: its last ones
NOTABLE_KEEP = 256  # error-worded lines kept from one input's tail: its first ones, then its last ones

_STEP = re.compile(STEP_WORDS + r"(\d{1,18}(?!\d))")  # (scan.database: the words)
_TQDM = re.compile(r"(\d{1,18}(?!\d))/(\d{1,18}(?!\d)) \[")
# (YOLOv5's bar format: the count after the bar's pipe, then only the elapsed time, "| 0/402 00:20")
_TQDM_ELAPSED = re.compile(r"\| ?(\d{1,18})/(\d{1,18}) \d{1,3}:\d\d")
_TQDM_GLYPHS = re.compile(GLYPH_BAR + r"(\d{1,18})/(\d{1,18}) ")  # Ultralytics' own bar (scan.database)
# A bar with no total (an iterable without len): "loss: 0.53: : 120it [00:08, 14.2it/s]", in the bar's own unit
# when the script names one (tqdm's "{n}{unit} [{elapsed}, {rate}]": "Epoch 1: : 0batch [00:16, ?batch/s]",
# whose count, not the epoch before it, is the step)
_TQDM_COUNT = re.compile(r"(?<![\w.])(\d{1,18})[A-Za-z]{1,16} \[\d[\d:]*[,<]")
_EPOCH = re.compile(EPOCH_WORDS + r"(\d{1,18}(?!\d))")
_YOLO_ROW = re.compile(YOLO_ROW)  # (scan.database: the epoch row; its group is the epoch)
# The iteration within the epoch: MMEngine's "[200/62598]", pytorch/examples' "[2700/60000 (4%)]", timm's
# padded "[ 300/5004 (  6%)]"
_BRACKETED = re.compile(r"\[ {0,8}(\d{1,18}(?!\d))/\d+(?: \( {0,2}\d{1,3}%\))?\]")
# MMCV's and MMEngine's epoch runners: the epoch, then the iteration within it ("Epoch [1/70][10/2860]",
# "Epoch(train) [3][200/1251]"); the first bracket is the epoch, never the step
_MM_EPOCH = re.compile(r"[Ee]poch(?:\((?:train|val)\))? {0,4}\[ {0,8}(\d{1,18})(?:/\d{1,18})?\]\[ {0,8}(\d{1,18})/\d")
_WORLD = re.compile(r"(?:(?:world_size|WORLD_SIZE|num_processes)[=: ]+|MEMBER: \d{1,9}/|Starting with )"
                    r"(\d{1,18}(?!\d))")
_OWN_RANK = re.compile(OWN_RANK + r"(\d{1,9}(?!\d))")  # (scan.database: the words)
_KV = re.compile(r"(?<!\w)(\w+) *: (.*)")  # (a key starts a word: no retry inside a long one)
_OWN_LEVEL = linear.compile_bytes(ERROR_LEVEL)
# NCCL WARN lines that are notices, not errors: its proxy's "[Service thread]" notes as a process tears its
# communicators down ("Unknown command N from localRank -1": the run is over), and its probe for InfiniBand's
# user-space library on a host without one ("misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]"),
# after which NCCL goes on over sockets ("NCCL INFO NET/Socket : Using ...")
_NCCL_NOTICES = (b"[Service thread]", b"NCCL WARN Failed to open libibverbs")
# A line that starts a record of its own, never the rest of a warning's message: an exception's line
# ("RuntimeError: ...") or argparse's "prog.py: error: ...".
_OWN_RECORD = re.compile(rb"[\w.-]{1,100}: error: |[A-Za-z_][\w.]{0,100}(?:Error|Exception)(?::|$)")
_WARN_ECHO = re.compile(WARNING_CALL_ECHO.regex.encode())  # (scan.database: what the echo means)
# Metric lines: time spent waiting for data against step time (MMEngine/MMCV/detectron2 "time: 2.01,
# data_time: 1.65"; pytorch/examples' AverageMeter "Time  0.512 ( 0.520)  Data  0.412 ( 0.415)"), and the loss.
_NUM = r"(\d{1,12}(?:\.\d{1,12})?)"
_DATA_TIME = re.compile(r"\bdata_time[:=] ?" + _NUM)
_STEP_TIME = re.compile(r"(?<![\w.])time[:=] ?" + _NUM)
_METERS = re.compile(r"\bTime +" + _NUM + r" \( *" + _NUM + r"\)[ \t]+Data +" + _NUM + r" \( *" + _NUM + r"\)")
AVERAGED = 100  # iterations behind an AverageMeter's running average before it stands for the run
_METERS_AT = re.compile(r"\[ *(\d{1,9})/\d{1,9}\]")  # ProgressMeter pads the batch index: "[  0/5005]"
# "loss: 0.41", "loss=0.41", "Loss : 0.0482", nanoGPT's "loss 3.9883,", AverageMeter's "Loss 6.93 (6.84)",
# detectron2's "total_loss: 2.113", "train_loss=0.41", a tensor printed as is ("loss: tensor(0.41, ...").
# Not "val_loss" nor "loss_cls": an evaluation's figure or one term of the sum is not the training loss.
# (timm pads the figure to its width: "Loss:       nan (   nan)"; so do pytorch/examples' word language
# model and the scripts built on it, with no colon: "| loss   nan | ppl      nan".)
# (A script's own print may name the sum in the plural: "iteration : 7, losses : nan".)
_LOSS_NAME = (r"(?<![\w.'])'?(?:(?:total|train|training)[_ /])?(?:[Ll]oss(?:es)?|LOSS(?:ES)?)'?"
              r"(?: ?[:=] {0,12}| {1,12})(?:tensor\()?")
# (Megatron-LM prints it in capital exponent form: "lm loss: 1.768794E+01".)
_LOSS = re.compile(_LOSS_NAME + _NUM[:-1] + r"(?:[eE][+-]?\d{1,3})?)")
# The same places holding NaN or Inf ("loss=nan", "Loss nan (nan)", "'loss': 'inf'", "loss = NaN",
# "loss: tensor(nan, device='cuda:0')"), or a gradient norm holding NaN ("'grad_norm': nan", "grad norm: nan").
# An infinite gradient norm alone is a step the fp16 loss scaler skipped, not this.
# A term of the loss holding NaN or Inf ("D_loss: nan", "G_loss: nan", "lm_loss=inf") makes the sum so
# too: a GAN's two losses, a model's named loss. (An evaluation's, "val_loss: nan", says nothing of training.)
# A sentence's full stop may end the figure ("Training Loss: nan."), a file's extension may not ("nan.png").
_LOSS_TERM_NONFINITE = (r"(?<![\w.'])'?(?!(?:eval|val|valid|validation|test)_)[A-Za-z][A-Za-z0-9]{0,20}_loss'?"
                        r"(?: ?[:=] {0,12}| {1,12})'?-?(?:nan|NaN|NAN|inf|Inf|INF)")
# A term of the loss back to a finite figure ("D_loss: 0.693"): the run computes again, though the term is
# not the training loss whose minimum and jumps are followed.
_LOSS_TERM_FINITE = re.compile(r"(?<![\w.'])'?[A-Za-z][A-Za-z0-9]{0,20}_loss'?(?: ?[:=] {0,12}| {1,12})'?\d")
_LOSS_NONFINITE = re.compile(r"(?:" + _LOSS_NAME + r"'?-?(?:nan|NaN|NAN|inf|Inf|INF)|" + _LOSS_TERM_NONFINITE
                             + r"|(?<![\w.'])'?grad[_ ]norm'?(?: ?[:=] ?| )'?(?:nan|NaN|NAN))(?!\w|\.\w)")
# An evaluation's loss written in words before the name ("Val   Loss: nan", "Test Loss: 3.0366", "dev loss 2.1"):
# a figure of the held-out data, printed with the model it evaluates (the best one, often reloaded from an
# earlier checkpoint), not the loss training follows.
_EVAL_BEFORE = re.compile(r"(?i)\b(?:eval|evaluation|val|valid|validation|test|dev)[ \t]+'?$")
# A GAN player's loss ("[D loss: 0.69] [G loss: 1.2]", "Discriminator Loss: 0.34 Generator Loss: 10.6"): the
# two play a game, each loss rises whenever the other player gains, so a jump in one is no divergence.
_ADVERSARIAL_BEFORE = re.compile(r"(?i)\b(?:d|g|disc|gen|discriminator|generator|critic|adv|adversarial)[ \t]+'?$")


# A record an evaluation tags as its own before its figures ("[val] epoch 10 | loss: 0.0783", timm's "Test: [ 0/196]
# ... Loss: 0.8", MMEngine's "Epoch(val) [1][100/500]"): every loss after the tag is of held-out data.
_EVAL_TAG = re.compile(r"(?i)(?:[\[(](?:eval|evaluation|val|valid|validation|test|testing)[\])]|"
                       r"(?<![\w-])(?:eval|evaluation|val|valid|validation|test|testing):[ \t])")


def _training_loss(rx: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of a loss pattern in `text` that no evaluation's name or tag comes before."""
    m = next((m for m in rx.finditer(text) if not _EVAL_BEFORE.search(text, max(0, m.start() - 24), m.start())),
             None)
    return None if m is None or _EVAL_TAG.search(text, 0, m.start()) else m


# A bar whose label names a setup step (HF's shard loader, datasets' map and download bars, the Hub's fetch): it
# counts items of loading, not steps of training, and says nothing about training going on.
_SETUP_BAR = re.compile(rb"(?:Loading checkpoint shards|Downloading|Fetching \d+ files|Map(?: \(num_proc=\d+\))?|"
                        rb"Filter|Generating \w{1,40} split|Running tokenizer|Tokeniz\w{0,20}|Resolving data files|"
                        rb"Extracting data files|Loading safetensors checkpoint shards)[^|\n]{0,40}: {0,2}\d{1,3}%")
# Lines a tool prints about the run, whose step words are not training's: W&B's own messages (a run's metrics
# go to its files, not here), and the lines Slurm's step daemon and srun print themselves.
_TOOLS_OWN = ("wandb: ", "slurmstepd", "srun: ")
# A checkpoint line as found: (fingerprint key, visible bytes, line number, file's rank, file's host).
_Save = tuple[str, bytes, int, int | None, str | None]


@dataclass
class Found:
    """What a scan in progress has found so far; `freeze()` makes the ScanResult the reasoner reads."""

    source: Source
    bytes: int = 0
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    matches: list[Match] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    memory_tables: list[MemoryTable] = field(default_factory=list)
    world_sizes: set[int] = field(default_factory=set)
    stated_ranks: set[int] = field(default_factory=set)  # ranks unprefixed lines say they are
    progress: dict[int | None, RankProgress] = field(default_factory=dict)
    tqdm_incomplete: dict[int | None, bool] = field(default_factory=dict)
    done: bool = False
    done_line: int = 0
    prompt_line: int = 0
    last_line_rank: dict[int | None, int] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    contexts: set[str] = field(default_factory=set)
    cut_lines: int = 0
    seen_ranks: dict[str, set[int]] = field(default_factory=dict)  # fingerprint key -> ranks, kept or not
    notable: list[Notable] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    tail_lines: list[Line] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)  # read already (the merge of a parallel scan)
    # Checkpoint lines as found, read when frozen: of a run that saves every few steps, only the last
    # ones are ever kept.
    saves: deque[_Save] = field(
        default_factory=lambda: deque(maxlen=2 * MAX_CHECKPOINTS))

    def freeze(self) -> ScanResult:
        return ScanResult(
            path=self.source.name, bytes=self.bytes, lines=self.lines, ranks=frozenset(self.ranks),
            matches=tuple(self.matches), tracebacks=tuple(self.tracebacks), summaries=tuple(self.summaries),
            world_sizes=frozenset(self.world_sizes), stated_ranks=frozenset(self.stated_ranks),
            progress=dict(self.progress),
            tqdm_incomplete=dict(self.tqdm_incomplete), done=self.done, done_line=self.done_line,
            prompt_line=self.prompt_line,
            last_line_rank=dict(self.last_line_rank),
            dropped=dict(self.dropped), contexts=frozenset(self.contexts), cut_lines=self.cut_lines,
            seen_ranks={k: frozenset(v) for k, v in self.seen_ranks.items()},
            notable=tuple(self.notable),
            markers=tuple(self.markers),
            tail_lines=tuple(self.tail_lines),
            checkpoints=self._checkpoints(),
            memory_tables=tuple(self.memory_tables),
        )

    def _checkpoints(self) -> tuple[Checkpoint, ...]:
        """The checkpoints the kept lines name, read now (a snapshot of a live stream reads them again)."""
        path = self.source.name
        found = list(self.checkpoints)
        for key, vis, lineno, file_rank, file_host in self.saves:
            at, att = _attributed(vis, path, lineno, file_rank, file_host)
            parsed = checkpoints.parse(key, att.rest, at)
            if parsed is not None:
                found.append(parsed)
        return tuple(found)


class _Window:
    """The current block with what came just before and what comes next, joined only when needed."""

    def __init__(self, behind: bytes, block: bytes, ahead: deque[bytes]) -> None:
        self.behind = behind
        self.block = block
        self._ahead = ahead
        self._buf: bytes | None = None

    def buf(self, pos_in_block: int) -> tuple[bytes, int]:
        if self._buf is None:
            after = b"".join(self._ahead)[:LOOKAHEAD]
            self._buf = self.behind + self.block + after
        return self._buf, len(self.behind) + pos_in_block


def _decode(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text.rstrip("\r\n")


def _segment_start(raw: bytes, end_in_line: int) -> int:
    """Where the carriage-return segment holding a match that ends at `end_in_line` starts."""
    return raw.rfind(b"\r", 0, max(end_in_line - 1, 0)) + 1


def _visible(raw: bytes, end_in_line: int) -> bytes:
    """The carriage-return segment of a tqdm-style line that holds the match."""
    if b"\r" not in raw:
        return raw
    start = _segment_start(raw, end_in_line)
    stop = raw.find(b"\r", end_in_line)
    return raw[start : stop if stop >= 0 else len(raw)]


def _attributed(vis: bytes, path: str, lineno: int, file_rank: int | None,
                file_host: str | None) -> tuple[Line, Attribution]:
    """A matched line as evidence: its rank and host from its own prefix, else from the file's name."""
    text = _decode(vis)
    att = split_prefix(text)
    rank = att.rank if att.rank is not None else file_rank
    return Line(path, lineno, att.rest.strip() or text, rank, att.host or file_host, parse_time(text)), att


def _glued(line: Line, raw: bytes, vis: bytes, end_in_line: int) -> Line:
    """The line as evidence of the rank whose glued prefix holds the match (attribution.glued_rank)."""
    seg_start = _segment_start(raw, end_in_line) if len(vis) < len(raw) else 0
    glued = glued_rank(vis, end_in_line - seg_start)
    return line if glued is None else replace(line, rank=glued)


# A row of torch.cuda.memory_summary(): "| Allocated memory      |    1062 MB |    4877 MB | ..." (torch 1.4+;
# units "B", "KB"/"MB"/"GB" before 2.0, "KiB"/"MiB"/"GiB" from 2.0). The first figure is the current usage.
_TABLE_ROW = re.compile(r"\|\s{0,8}(Allocated memory|GPU reserved memory)\s{0,40}\|\s{0,20}"
                        r"(\d{1,12}) ?([KMGTP]i?B|B)\b")


def _memory_table(lines: Iterable[bytes], path: str, lineno: int) -> MemoryTable | None:
    """The current allocated and reserved figures of the table below its title row."""
    found: dict[str, float] = {}
    for raw in lines:
        m = _TABLE_ROW.search(split_prefix(_decode(raw[:400])).rest)
        if m and m[1] not in found:
            found[m[1]] = to_bytes(m[2], m[3])
            if len(found) == 2:
                return MemoryTable(path, lineno, found["Allocated memory"], found["GPU reserved memory"])
    return None


# The outermost frame of code that catches an exception, prints its traceback and goes on:
# multiprocessing's finalizers, run at a worker's exit or between a DataLoader's epochs
# (multiprocessing/util.py _run_finalizers: `except Exception: traceback.print_exc()`).
_CATCHING_RUNNER = ('multiprocessing/util.py", line', "in _run_finalizers")


def _caught_by_runner(tb: Traceback) -> bool:
    """The traceback was printed by a runner that caught it: Python went on, as after "Exception ignored in"."""
    return bool(tb.frames) and all(part in tb.frames[0] for part in _CATCHING_RUNNER)


# torch 0.4-1.0 re-raised a DataLoader worker's exception with the worker's traceback as its message:
# "RuntimeError: Traceback (most recent call last):" then the worker's frames and exception.
_RERAISED = re.compile(r"[A-Za-z_][\w.]{0,80}: Traceback \(most recent call last\):")
_INTERRUPT_ABOVE = 12  # lines above a traceback's header searched for the "^C" echo that started it
# What Python prints between a Ctrl-C and a traceback it caused: multiprocessing's "Process Process-44:"
# header of each worker (tracebacks.CHILD_HEADER), and the other workers' tracebacks interleaved with it.
_INTERRUPT_NOISE = re.compile(r"Traceback \(most recent call last\):$|File \""
                              r"|[A-Za-z_][\w.]{0,80}$")  # (a bare exception name: "KeyboardInterrupt")


def _after_interrupt(above: list[bytes]) -> bool:
    """A Ctrl-C echo ("^C^CProcess Process-44:") above a traceback, with only traceback lines between:
    the traceback is the interrupt's, whatever it was cut at."""
    for raw in above:  # nearest first
        text = split_prefix(_decode(raw)).rest
        if text.lstrip().startswith("^C"):
            return True
        line = text.strip()
        if not (text.startswith((" ", "\t")) or CHILD_HEADER.match(line) or _INTERRUPT_NOISE.match(line)):
            return False
    return False


# A log record at WARNING level, the line a logger prints its exc_info traceback under: logging's
# "WARNING:xformers:..." and "... - WARNING - ...", rich's "WARNING  A matching Triton is not available",
# loguru's "| WARNING  |". The traceback is the warning's: the program caught the exception and went on.
_WARNING_RECORD = re.compile(r"^(?:WARNING|WARN)(?::[\w.]{1,80}:| {1,8}\S)| - WARNING - |\| WARNING +\| ")
# gdb stopping at a crash ("Thread 1 \"python\" received signal SIGSEGV, Segmentation fault.") or opening the core
# of one ("Program terminated with signal SIGABRT, Aborted."): the backtrace below is the crash's, not a stall's
_GDB_SIGNAL = re.compile(rb"(?:received|terminated with) signal SIG[A-Z]{2,6}\b")
# A progress bar with no newline of its own, and the traceback that ended it printed right after:
# "100%|█████████▉| 1135/1136 [25:31<00:01,  1.11s/it]Traceback (most recent call last):"
_AFTER_BAR = re.compile(r"\d{1,18}/\d{1,18} \[[^\]]{0,80}\][ \t]*Traceback \(most recent call last\):")


def _continued(line: Line, block: bytes, start: int) -> Line:
    """An unprefixed line under a prefixed exception header whose message starts on the next line
    ("[rank0]: deepspeed...ZeRORuntimeException:" then "The checkpoint being loaded used ..."): the
    message is that rank's (the prefixer marked only the message's first line)."""
    above = block[block.rfind(b"\n", 0, start - 1) + 1 : start - 1]
    if b"]" not in above[:40]:
        return line
    att = split_prefix(_decode(above[:2000]))
    if att.rank is None or not att.rest.rstrip().endswith(":") or " " in att.rest.strip():
        return line
    return replace(line, rank=att.rank, host=line.host or att.host)


def _lines_from(buf: bytes, pos: int, limit: int) -> Iterator[bytes]:
    """Lines of `buf` starting at `pos`, at most `limit` of them."""
    n = 0
    while pos < len(buf) and n < limit:
        nl = buf.find(b"\n", pos)
        stop = nl if nl >= 0 else len(buf)
        yield buf[pos:stop]
        pos = stop + 1
        n += 1


def _thread_header_above(above: list[bytes]) -> bool:
    """Two threads that die at once print interleaved: "Exception in thread Thread-1:", "Exception in thread
    Thread-3:", a line of the main thread, then both "Traceback" headers. A thread header a few lines up,
    with no frame or exception line of another traceback between, is this traceback's."""
    for raw in above[:THREAD_HEADERS_ABOVE]:  # nearest first
        text = split_prefix(_decode(raw)).rest.strip()
        if _THREAD_HEADER.search(text):
            return True
        if text.startswith("File \"") or _CLASS_LINE.match(text):
            return False
    return False


_CLASS_LINE = re.compile(r"[A-Za-z_][\w.]{0,120}(?:Error|Exception|Interrupt|Exit)\b")
# threading's excepthook: "Exception in thread Thread-5 (plot_images):" at the start of its line (the rest of a
# bar may follow it), or at its end after a progress bar that the main thread left without its newline
# ("640:  Exception in thread Thread-5 (plot_images):")
_THREAD_HEADER = re.compile(r"^Exception in thread |\sException in thread [^\n]{1,200}:[ \t\r]*$")


def _lines_before(buf: bytes, pos: int, limit: int) -> list[bytes]:
    out: list[bytes] = []
    end = pos - 1
    while end > 0 and len(out) < limit:
        start = buf.rfind(b"\n", 0, end) + 1
        out.append(buf[start:end])
        end = start - 1
    return out


_SPAWN_HEADER = re.compile(rb"-- Process (\d{1,6}) terminated with the following error")


def _spawned_process(above: list[bytes]) -> int | None:
    """mp.spawn re-raises a child's traceback under "-- Process N terminated with the following error:":
    that traceback is process N's (its rank, for the usual one process per rank)."""
    for raw in above:
        if m := _SPAWN_HEADER.search(raw[:200]):
            return int(m.group(1))
    return None


def _starts_headless(tracebacks: list[Traceback], path: str, lineno: int, above: list[bytes]) -> bool:
    """A frame line starts a traceback of its own only outside every traceback read so far and with
    no frame or header in the three lines above (a code line and a caret line sit between frames)."""
    if any(tb.path == path and tb.first_line <= lineno <= tb.last_line for tb in tracebacks[-4:]):
        return False
    for raw in above:
        prev = split_prefix(_decode(raw)).rest
        if "Traceback" in prev or prev.lstrip().startswith('File "'):
            return False
    return True


def _head_rank(head: bytes) -> int | None:
    """The rank a line's launcher prefix (or its message) names, from its first 200 bytes."""
    return split_prefix(_decode(head)).rank


class Reader:
    """Holds the compiled databases; scans any number of inputs."""

    def __init__(self, patterns: list[Pattern], backend: str | None = None, block_size: int = BLOCK,
                 keep_tail: bool = False) -> None:
        self.given = list(patterns)  # as handed over: a worker process builds the same reader from them
        self.keep_tail = keep_tail  # keep each input's tail lines (a baseline compares them)
        # Severity words (tail_only causes) are read over each input's tail, not the whole input.
        severity = tuple(p for p in patterns if p.kind in ("fatal", "error")) + WARNING_LEVEL
        patterns = [p for p in patterns if p.kind not in ("fatal", "error", "warning")]
        self.patterns = patterns
        self.block_size = block_size
        self.backend = backend
        # A context word is reported once per block. Checkpoint lines are reported each, up to SAVES_BOUND
        # in a block; past that, once, and the block's last ones are found by a scan of its end (_last_saves).
        self.scanner: Scanner = build_scanner(patterns, backend, once=frozenset(("context",)),
                                              bounded=frozenset(("checkpoint",)), bound=SAVES_BOUND)
        self.saves = [pid for pid, p in enumerate(patterns) if p.kind == "checkpoint"]
        self.saves_scanner: Scanner | None = (build_scanner([patterns[pid] for pid in self.saves], backend)
                                              if self.saves else None)
        # Hyperscan nominates a line; RE2 confirms it, in time linear in the line whatever it holds.
        self.compiled = PatternSet(tuple(patterns)).programs()
        self.progress_scanner: Scanner = build_scanner(PROGRESS, backend)
        self.progress_compiled = PatternSet(PROGRESS).programs()
        self.severity = severity
        self.phase_scanner: Scanner = build_scanner(PHASES, backend)
        self.phase_compiled = PatternSet(PHASES).programs()
        self.severity_scanner: Scanner = build_scanner(severity, backend)
        self.severity_compiled = PatternSet(severity).programs()
        # A verbose run repeats the same line (one warning per step, per rank) many thousand times: its
        # confirmation and, past the evidence cap, its reporter are worked out once (bounded LRU memos).
        self._confirm = functools.lru_cache(maxsize=MEMO_LINES)(self._search)
        self._reporter = functools.lru_cache(maxsize=MEMO_LINES)(_head_rank)

    def _search(self, pid: int, raw: bytes) -> bool:
        return self.compiled[pid].search(raw) is not None

    # ------------------------------------------------------------ one input

    def scan(self, source: Source, stdin: BinaryIO | None = None,
             on_bytes: Callable[[int], None] | None = None) -> ScanResult:
        """One sequential pass (trainmedic.logs.parallel.scan_file cuts big plain files into ranges)."""
        result = Found(source)
        file_rank = rank_from_path(source.name)
        file_host = host_from_path(source.name)
        if file_rank is not None:
            result.ranks.add(file_rank)
        stream = source.open(stdin)
        try:
            self._scan_stream(stream, result, file_rank, file_host, on_bytes)
        except (OSError, EOFError) as exc:
            # Truncated or corrupt compressed data surfaces here, after the good part was read.
            raise InputError(f"{source.name}: cannot read: {exc}") from exc
        finally:
            stream.close()
        return result.freeze()

    def _scan_stream(
        self, stream: BinaryIO, result: Found, file_rank: int | None, file_host: str | None,
        on_bytes: Callable[[int], None] | None = None,
    ) -> None:
        state = ScanState(self, result, file_rank, file_host)
        while True:
            chunk = stream.read(self.block_size)
            if not chunk:
                break
            state.feed(chunk)
            if on_bytes is not None:
                on_bytes(len(chunk))
        state.finish()

    def read_tail(self, source: Source, tail: bytes, first_line: int, ranks: Iterable[int]) -> ScanResult:
        """The tail's reading alone, as the end of a scan that found `ranks` does it (ScanState.finish):
        progress per rank, the last line of each, notable lines, phase markers. Only those fields are set."""
        result = Found(source, ranks=set(ranks))
        self._scan_tail(tail, first_line, result, rank_from_path(source.name))
        return result.freeze()

    def state(self, source: Source) -> ScanState:
        """A push-based scan of one live stream: feed() bytes as they come, snapshot() at any time. What a
        running program prints is read as printed: no paste shapes (a web page's markdown, wrapping)."""
        return ScanState(self, Found(source), rank_from_path(source.name), host_from_path(source.name),
                         pasted=False)

    def _sample_ranks(self, block: bytes, offset: int, result: Found) -> None:
        """Ranks present, from the lines that start in the first bytes of each SAMPLE_EVERY region.

        The regions are fixed in absolute file offsets, so the sample does not depend on block size.
        """
        end = offset + len(block)
        k = offset // SAMPLE_EVERY
        while k * SAMPLE_EVERY < end:
            lo = max(k * SAMPLE_EVERY - offset, 0)
            hi = min(k * SAMPLE_EVERY + HEAD_SAMPLE - offset, len(block))
            k += 1
            if lo >= hi:
                continue
            if lo == 0:
                pos = 0  # blocks always start at a line start
            else:
                nl = block.find(b"\n", lo - 1)
                if nl < 0:
                    continue
                pos = nl + 1
            while pos < hi:
                nl = block.find(b"\n", pos)
                att = split_prefix(_decode(block[pos : min(pos + 200, nl if nl >= 0 else len(block))]))
                if att.rank is not None:
                    result.ranks.add(att.rank)
                if nl < 0:
                    break
                pos = nl + 1

    def _scan_block(
        self,
        window: _Window,
        offset: int,
        line_base: int,
        result: Found,
        file_rank: int | None,
        file_host: str | None,
        hits: Counter[int],
    ) -> tuple[int, int]:
        """Scan one block; returns (position, newlines before it) of the last line start it counted to,
        so the caller counts only the rest of the block (every byte's newline is counted once)."""
        block = window.block
        path = result.source.name
        self._sample_ranks(block, offset, result)
        cands, every_save = self.scanner.candidates_bounded(block)
        if not cands:
            return 0, 0
        cands.sort()
        seen: set[tuple[int, int]] = set()
        cursor, cursor_line = 0, line_base + 1
        summary_spans: list[tuple[int, int, SummaryRecord]] = []
        pending: list[Match] = []
        saved = False
        saves: dict[int, tuple[int, int]] = {}  # line start -> (end, pattern) of the checkpoint lines
        for end, pid in cands:
            kind = self.patterns[pid].kind
            if kind == "context":  # a literal seen anywhere: no line, no confirmation
                result.contexts.add(self.patterns[pid].key.partition(":")[2])
                continue
            start = block.rfind(b"\n", 0, max(end - 1, 0)) + 1
            if kind == "checkpoint":  # read after the loop: of a run that saves often, only the last ones
                saved = True
                if every_save:  # (in order: a line's last hit wins)
                    saves[start] = (end, pid)
                continue
            if (pid, start) in seen:
                continue
            seen.add((pid, start))
            stop = block.find(b"\n", max(end - 1, start))
            raw = block[start : stop if stop >= 0 else len(block)]
            # (a range's block is a bytearray: its lines are remembered as bytes)
            if not (self._confirm(pid, bytes(raw)) if len(raw) <= MEMO_LINE_BYTES else self._search(pid, raw)):
                continue
            cursor_line += newlines.count(block, cursor, start)
            cursor = start
            lineno = cursor_line
            pattern = self.patterns[pid]
            if pattern.kind == "traceback":
                att = split_prefix(_decode(raw))
                buf, at = window.buf(start)
                headless = pattern.key == "headless-traceback"
                if pattern.key in ("stack-dump", "faulthandler-dump", "gdb-dump"):
                    gdb = pattern.key == "gdb-dump"
                    # (the backtrace of a crash is no stall: gdb said the process received or died of a
                    # signal a few lines above; the native-crash fingerprints read that line)
                    if gdb and any(_GDB_SIGNAL.search(b) for b in _lines_before(buf, at, 6)):
                        continue
                    tb_rank = att.rank if att.rank is not None else file_rank
                    dump = (assemble_gdb_dump(_lines_from(buf, at, MAX_DUMP_FRAMES + 1), path, lineno, tb_rank)
                            if gdb else
                            assemble_stack_dump(_lines_from(buf, at, MAX_DUMP_FRAMES + 3), path, lineno, tb_rank,
                                                faulthandler=pattern.key == "faulthandler-dump"))
                    if dump is not None and len(result.tracebacks) < 2000:
                        result.tracebacks.append(dump)
                    continue
                if pattern.key == "ipython-traceback":
                    tb_rank = att.rank if att.rank is not None else file_rank
                    ipy = assemble_ipython_traceback(_lines_from(buf, at, 6000), path, lineno, tb_rank)
                    if ipy is not None and len(result.tracebacks) < 2000:
                        result.tracebacks.append(ipy)
                    continue
                if headless:
                    if not _starts_headless(result.tracebacks, path, lineno, _lines_before(buf, at, 3)):
                        continue
                elif att.rest.lstrip().startswith(CARRIED):
                    # A DataLoader worker's traceback, carried in the re-raised message: read as part of
                    # the traceback around it, or on its own when the excerpt starts at the message.
                    if any(t.path == path and t.first_line < lineno <= t.last_line for t in result.tracebacks[-4:]):
                        continue
                elif not att.rest.lstrip().removeprefix("^C").startswith("Traceback") and not _RERAISED.match(
                        att.rest.lstrip()) and not _AFTER_BAR.search(att.rest):
                    continue  # embedded in torchrun's summary; the summary parser reads it
                if len(result.tracebacks) < 2000:
                    tb_rank = att.rank if att.rank is not None else file_rank
                    tb = assemble_traceback(_lines_from(buf, at, 6000), path, lineno, tb_rank, headless=headless)
                    if tb is not None:
                        above = _lines_before(buf, at, _INTERRUPT_ABOVE)  # nearest first
                        if headless:
                            tb = under_exception(tb, above[0] if above else None)
                        if tb_rank is None:
                            tb = replace(tb, process=_spawned_process(above[:2]))
                        # "Exception ignored in: ..." (a destructor, an atexit hook): Python printed it
                        # and went on; the exception did not end the run.
                        said = split_prefix(_decode(above[0])).rest.lstrip() if above else ""
                        if not tb.interrupted and _after_interrupt(above):
                            tb = replace(tb, interrupted=True)
                        if (said.startswith("Exception ignored") or "Exception ignored in: " in said
                                or _caught_by_runner(tb)):
                            tb = replace(tb, ignored=True)
                        elif _THREAD_HEADER.search(said) or _thread_header_above(above):
                            tb = replace(tb, thread=True)
                        elif _WARNING_RECORD.search(said):
                            tb = replace(tb, logged=True)
                        result.tracebacks.append(tb)
                continue
            if pattern.kind == "summary":
                buf, at = window.buf(start)
                rec = self._summary_record(buf, at, raw, path, lineno, file_host)
                if rec is not None:
                    result.summaries.append(rec)
                    # The record's own lines: "[i]:", time, host above; exitcode, error_file, traceback below.
                    summary_spans.append((lineno - 3, lineno + 3, rec))
                continue
            if pattern.kind == "memory-table":
                buf, at = window.buf(start)
                table = _memory_table(_lines_from(buf, at, MEMORY_TABLE_ROWS), path, lineno)
                if table is not None:
                    result.memory_tables.append(table)
                    if len(result.memory_tables) > 2 * MAX_MEMORY_TABLES:
                        del result.memory_tables[:-MAX_MEMORY_TABLES]
                continue
            if pattern.kind == "world":
                text = _decode(raw)
                m = _WORLD.search(text)
                if m and 1 <= int(m.group(1)) <= 1_000_000:
                    result.world_sizes.add(int(m.group(1)))
                if (own := _OWN_RANK.search(text)) is not None and split_prefix(text[:200]).rank is None:
                    result.stated_ranks.add(int(own.group(1)))
                continue
            hits[pid] += 1
            if hits[pid] > MAX_HITS_PER_PATTERN:
                # Not kept as evidence, but who reported it still counts: at 1,000 ranks the one
                # that printed nothing is found only if every other rank is known to have reported.
                reporter = self._reporter(bytes(raw[:200]))
                reporter = reporter if reporter is not None else file_rank
                if reporter is not None:
                    result.ranks.add(reporter)
                    result.seen_ranks.setdefault(pattern.key, set()).add(reporter)
                continue
            vis = _visible(raw, end - start)
            line, _ = _attributed(vis, path, lineno, file_rank, file_host)
            if b"]:" in vis[1:]:
                line = _glued(line, raw, vis, end - start)
            if line.rank is None and start:
                line = _continued(line, block, start)
            if line.rank is not None:
                result.ranks.add(line.rank)
                result.seen_ranks.setdefault(pattern.key, set()).add(line.rank)
            cause = pattern.key.partition("#")[0]
            pending.append(Match(pattern.key, cause, line))
        if summary_spans:
            pending = [_in_summary(m, summary_spans) for m in pending]
        result.matches.extend(pending)
        if saved and (saves := saves if every_save else self._last_saves(block)):
            at, at_line = self._checkpoints(block, saves, cursor, cursor_line, result, file_rank, file_host)
            if at > cursor:  # counted that far: the caller counts the rest of the block from there
                cursor, cursor_line = at, at_line
        return cursor, cursor_line - line_base - 1

    def _last_saves(self, block: bytes) -> dict[int, tuple[int, int]]:
        """Line start -> (end, pattern) of the block's checkpoint hits on its last CHECKPOINTS_PER_BLOCK
        checkpoint lines and after: windows scanned backwards from its end, each four times the last, until
        they hold that many lines or the whole block. A run that saves every few steps costs the scan of
        its blocks' ends; one that saves rarely, one extra pass of the checkpoint wordings over the blocks
        that hold a save."""
        by_start: dict[int, tuple[int, int]] = {}
        if self.saves_scanner is None:  # (a reader given no checkpoint wordings)
            return by_start
        hi, width = len(block), SAVES_WINDOW
        while hi > 0 and len(by_start) < CHECKPOINTS_PER_BLOCK:
            lo = block.rfind(b"\n", 0, hi - width) + 1 if hi > width else 0
            # (in order within a window, and no line spans two: a line's last hit wins, as in one pass)
            for end, i in self.saves_scanner.candidates(block[lo:hi]):
                by_start[block.rfind(b"\n", 0, max(lo + end - 1, 0)) + 1] = (lo + end, self.saves[i])
            hi, width = lo, width * 4
        return by_start

    def _checkpoints(self, block: bytes, by_start: dict[int, tuple[int, int]], cursor: int, cursor_line: int,
                     result: Found, file_rank: int | None, file_host: str | None) -> tuple[int, int]:
        """The block's last checkpoint lines (`by_start`: line start -> (end, pattern)), numbered from the
        cursor (the line start whose number is known) in one pass over the bytes between them; returns the
        last line start counted to, and its number."""
        starts = sorted(by_start)[-CHECKPOINTS_PER_BLOCK:]
        first = starts[0]
        line = (cursor_line + newlines.count(block, cursor, first) if first >= cursor
                else cursor_line - newlines.count(block, first, cursor))
        prev = first
        saves = result.saves
        for start in starts:
            line += newlines.count(block, prev, start)
            prev = start
            end, pid = by_start[start]
            stop = block.find(b"\n", max(end - 1, start))
            raw = block[start : stop if stop >= 0 else len(block)]
            saves.append((self.patterns[pid].key, _visible(raw, end - start), line, file_rank, file_host))
        return prev, line

    def _summary_record(
        self, buf: bytes, start: int, raw: bytes, path: str, lineno: int, file_host: str | None
    ) -> SummaryRecord | None:
        m = re.search(r"rank +: (\d{1,18}(?!\d)) \(local_rank: (\d{1,18}(?!\d))\)", _decode(raw))
        if not m:
            return None
        fields: dict[str, str] = {}
        before = [_decode(b) for b in _lines_before(buf, start, 5)]
        after = [_decode(b) for b in _lines_from(buf, start, 6)][1:]
        for text in [*before, *after]:
            kv = _KV.search(split_prefix(text).rest.strip())
            if kv and kv.group(1) in ("host", "time", "exitcode", "error_file", "traceback"):
                fields.setdefault(kv.group(1), kv.group(2).strip())
        root = any("Root Cause" in t for t in before)
        exitcode = pid = None
        em = re.match(r"(-?\d{1,18}(?!\d))(?: \(pid: (\d{1,18}(?!\d))\))?", fields.get("exitcode", ""))
        if em:
            exitcode = int(em.group(1))
            pid = int(em.group(2)) if em.group(2) else None
        return SummaryRecord(
            rank=int(m.group(1)),
            local_rank=int(m.group(2)),
            host=fields.get("host") or file_host,
            exitcode=exitcode,
            pid=pid,
            traceback=fields.get("traceback", ""),
            root_cause=root,
            path=path,
            line=lineno,
            time=parse_time(fields["time"]) if "time" in fields else None,
        )

    # ------------------------------------------------------------ tail: progress per rank

    def _scan_tail(self, tail: bytes, first_line: int, result: Found, file_rank: int | None) -> None:
        if not tail:
            return
        path = result.source.name
        # Which rank printed the last line of the input, per rank: a rank that stops early is a suspect.
        lines = _TailLines(tail, first_line)
        kept: list[Line] = []
        for start, raw in lines.each():
            if not raw.strip():
                continue
            att = lines.head(start)
            rank = att.rank if att.rank is not None else file_rank
            if rank is not None:
                result.ranks.add(rank)
            result.last_line_rank[rank] = lines.number(start)
            if self.keep_tail:
                kept.append(Line(path, lines.number(start), _decode(_visible(raw, len(raw))[:2000]), rank, att.host))
        result.tail_lines = kept[-TAIL_LINES_KEEP:]
        # Each line once, whatever number of progress patterns nominate it (a line with both "epoch"
        # and "step" must not add its metric figures twice).
        by_line = lines.nominated(self.progress_scanner)
        starts = sorted(by_line)
        # A verbose run prints progress on every line: its last lines per rank say where it stopped and
        # how its metrics went, so only the last PROGRESS_LINES per rank are read (a bounded cost per input).
        recent = set(starts[-PROGRESS_LINES * max(1, len(result.ranks)):])
        bare_done = False
        for start in starts:
            if start not in recent:
                done = [pid for _, pid in by_line[start] if pid in _DONE_PIDS]
                if done:
                    raw = lines.raw(start)
                    hits = [pid for pid in done if self.progress_compiled[pid].search(_visible(raw, len(raw)))]
                    if hits:
                        result.done, result.done_line = True, lines.number(start)
                        bare_done = all(pid in _BARE_DONE for pid in hits)
                continue
            raw = lines.raw(start)
            kinds = []
            vis = b""
            for end, pid in sorted(by_line[start], key=lambda c: c[1]):
                seg = _visible(raw, end - start)
                if self.progress_compiled[pid].search(seg):
                    kinds.append(PROGRESS[pid].kind)
                    vis = vis or seg
            if not kinds:
                continue
            if "done" in kinds:
                result.done, result.done_line = True, lines.number(start)
                bare_done = all(pid in _BARE_DONE for _, pid in by_line[start] if pid in _DONE_PIDS)
            if "prompt" in kinds:
                result.prompt_line = lines.number(start)
            if "progress" not in kinds:
                continue
            att = lines.prefix(start, vis)
            if att.rest.startswith(_TOOLS_OWN):
                # W&B's run history and summary, printed as the process exits ("wandb: train/global_step 260"),
                # report steps that were, not training going on; Slurm's lines name its job steps ("slurmstepd:
                # error: Detected 3 oom-kill event(s) in step 220424.batch cgroup", "srun: error: ... step
                # 1234.0"): a kill report, never progress after which the run went on
                continue
            rank = att.rank if att.rank is not None else file_rank
            step = None
            tq = _TQDM.search(att.rest) or _TQDM_ELAPSED.search(att.rest) or _TQDM_GLYPHS.search(att.rest)
            if tq and (int(tq.group(2)) <= 1 or _SETUP_BAR.search(vis)):
                # A bar of one item ("Writing model shards: 1/1 [...]") is one operation's, not the
                # training loop's, nor is a setup step's (_SETUP_BAR): it says nothing about training going on.
                continue
            mm = _MM_EPOCH.search(att.rest)  # (the epoch runner's step below, its epoch for every line)
            if tq:
                step = int(tq.group(1))
                result.tqdm_incomplete[rank] = int(tq.group(1)) < int(tq.group(2))
            else:
                sm = (_STEP.search(att.rest) or _BRACKETED.search(att.rest) or _TQDM_COUNT.search(att.rest)
                      or _EPOCH.search(att.rest)) if mm is None else None
                step = int(mm[2]) if mm else int(sm.group(1)) if sm else None
                result.tqdm_incomplete.pop(rank, None)
            prev = result.progress.get(rank)
            number = lines.number(start)
            if prev is None or prev.line <= number:
                em = mm or _EPOCH.search(att.rest) or _YOLO_ROW.search(att.rest)
                now = RankProgress(rank, step, path, number, att.rest.strip()[:300], epoch=int(em[1]) if em else None,
                                   time=parse_time(_decode(vis[:200])))
                result.progress[rank] = _metrics(prev, now, att.rest[:2000])
        if bare_done and any(p.path == path and p.line > result.done_line for p in result.progress.values()):
            result.done, result.done_line = False, 0
        _nonfinite_table(lines, result, file_rank)
        self._notable(lines, result, file_rank)
        self._markers(lines, result, file_rank)

    def _markers(self, lines: _TailLines, result: Found, file_rank: int | None) -> None:
        """The tail's lines that say what the job was doing (model.Marker), the last MARKERS_KEEP."""
        found: list[Marker] = []
        for start in sorted(lines.nominated(self.phase_scanner)):
            raw = lines.raw(start)
            vis = _visible(raw, len(raw))[:2000]
            # the most specific phase (PHASES order) that the line really shows
            confirmed = next((i for i, rx in enumerate(self.phase_compiled) if rx.search(vis)), None)
            if confirmed is None:
                continue
            found.append(Marker(lines.line(start, vis, result.source.name, file_rank), PHASES[confirmed].kind))
        result.markers = found[-MARKERS_KEEP:]

    def _notable(self, lines: _TailLines, result: Found, file_rank: int | None) -> None:
        """The tail's lines that read as failures by their own words (model.Notable)."""
        warned_at = -WARNING_SPAN - 1
        warned_end = -1  # where the last warning (or info) record's own line ends in the tail
        found: list[Notable] = []
        own_level: list[bool] = []  # per found line: fatal, or in its own error record (no warning's words)
        by_line = lines.nominated(self.severity_scanner)
        for start in sorted(by_line):
            raw = lines.raw(start)
            vis = _visible(raw, len(raw))[:2000]
            hit = {self.severity[pid].kind for _, pid in by_line[start] if self.severity_compiled[pid].search(vis)}
            number = lines.number(start)
            if any(c in vis for c in _CHAIN_BYTES):
                # (Python's line between two chained tracebacks: their exception lines say what failed.)
                continue
            if "fatal" in hit:
                severity, own = 3, True
            # NCCL's WARN is its error level, except its notices (_NCCL_NOTICES)
            elif "error" in hit and ("warning" not in hit or (b"NCCL WARN" in vis
                                                              and not any(n in vis for n in _NCCL_NOTICES))):
                # A warning's message goes on for a line or two ("Failure to do this will ..."), or for
                # as many indented lines as it has (a record's list: "    [Tensor contains nans.] - 167").
                # (a record's own start and a message's indentation are read behind the line's prefix too;
                # argparse's "prog.py: " is no host's)
                own = bool(_OWN_LEVEL.search(vis) or _OWN_RECORD.match(vis)
                           or _OWN_RECORD.match(lines.head(start).rest.encode()))
                if not own and (
                        number - warned_at <= WARNING_SPAN or _indented_body(
                        lines, warned_end, start, number - warned_at)):
                    continue
                severity = 2
            else:
                if "warning" in hit:
                    warned_at, warned_end = number, start + len(raw)
                    if _WARN_ECHO.match(vis):
                        # (found is in line order: only its last entries can be that close above)
                        i = len(found)
                        while i and found[i - 1].line.number >= number - WARNING_SPAN:
                            i -= 1
                            if not own_level[i]:
                                del found[i], own_level[i]
                    elif (found and not own_level[-1] and number - found[-1].line.number <= 2
                          and len(found[-1].line.text) >= 20 and found[-1].line.text[-60:].encode() in vis):
                        # The same record printed twice, bare and then by a handler that shows its level
                        # ("HTTP Error 502 thrown while requesting HEAD ..." and "WARNING:...:HTTP Error
                        # 502 ..."): it is that warning.
                        del found[-1], own_level[-1]
                continue
            line = lines.line(start, vis, result.source.name, file_rank)
            if b"]:" in vis[1:]:  # the error may be another rank's, glued after this line's own output
                line = _glued(line, raw, vis, min(end for end, _ in by_line[start]) - start)
            found.append(Notable(line, severity))
            own_level.append(own)
        half = NOTABLE_KEEP // 2
        result.notable = found if len(found) <= NOTABLE_KEEP else found[:half] + found[-half:]


INDENTED_BODY = 30  # lines of an indented message body that still belong to the record above them


def _indented_body(lines: _TailLines, record_end: int, start: int, distance: int) -> bool:
    """Whether every line from the record's next line through the one at `start` is indented behind its
    prefix: the record's message goes on (bounded: at most INDENTED_BODY lines are looked at)."""
    if record_end < 0 or distance > INDENTED_BODY:
        return False
    pos = record_end + 1
    while pos <= start:
        rest = lines.head(pos).rest
        if rest.strip() and rest[:1] not in (" ", "\t"):
            return False
        pos = lines.end(pos) + 1
    return True


_CHAIN_BYTES = tuple(c.encode() for c in CHAIN)


class _TailLines:
    """An input's tail, indexed once: where each line starts and ends, its number and its prefix,
    shared by the passes that read it (last lines per rank, progress, notable lines, phase markers)."""

    def __init__(self, tail: bytes, first_line: int) -> None:
        self.tail = tail
        self._lines: dict[int, tuple[int, int]] = {}  # start -> (stop, number)
        self._heads: dict[int, Attribution] = {}
        pos, number = 0, first_line
        while pos < len(tail):
            nl = tail.find(b"\n", pos)
            stop = nl if nl >= 0 else len(tail)
            self._lines[pos] = (stop, number)
            pos, number = stop + 1, number + 1

    def each(self) -> Iterator[tuple[int, bytes]]:
        for start in self._lines:
            yield start, self.raw(start)

    def raw(self, start: int) -> bytes:
        return self.tail[start : self._lines[start][0]]

    def number(self, start: int) -> int:
        return self._lines[start][1]

    def end(self, start: int) -> int:
        """Where the line that starts at `start` ends (its newline, or the tail's end)."""
        return self._lines[start][0]

    def head(self, start: int) -> Attribution:
        """The prefix read from the line's first 200 bytes, once per line."""
        att = self._heads.get(start)
        if att is None:
            att = self._heads[start] = split_prefix(_decode(self.raw(start)[:200]))
        return att

    def prefix(self, start: int, seg: bytes) -> Attribution:
        """The prefix of `seg`, the line or one carriage-return segment of it: the line's own head when
        `seg` is the whole line and short enough for the head to have read all of it."""
        if len(seg) == self._lines[start][0] - start and len(seg) <= 200:
            return self.head(start)
        return split_prefix(_decode(seg))

    def nominated(self, scanner: Scanner) -> dict[int, list[tuple[int, int]]]:
        """Line start -> the (end, pattern) candidates the scanner found on that line."""
        by_line: dict[int, list[tuple[int, int]]] = {}
        for end, pid in scanner.candidates(self.tail):
            by_line.setdefault(self.tail.rfind(b"\n", 0, max(end - 1, 0)) + 1, []).append((end, pid))
        return by_line

    def line(self, start: int, vis: bytes, path: str, file_rank: int | None) -> Line:
        text = _decode(vis)
        att = self.prefix(start, vis)
        return Line(path, self.number(start), text[:1000], att.rank if att.rank is not None else file_rank,
                    att.host, parse_time(text))


VANISHED_FROM = 0.01  # a loss at least this large, then exactly 0: not a small loss printed rounded to 0.0000


def _metrics(prev: RankProgress | None, now: RankProgress, text: str) -> RankProgress:
    """Carry a rank's running metric figures over to its newest progress line, adding this line's.
    (Built in one go: this runs for every progress line of every input's tail.)"""
    data_time, step_time, timed = (prev.data_time, prev.step_time, prev.timed) if prev else (0.0, 0.0, 0)
    loss_min, loss_last, losses, spike = (prev.loss_min, prev.loss_last, prev.losses, prev.spike) if prev else (
        None, None, 0, None)
    loss_max = prev.loss_max if prev else None
    loss_first = prev.loss_first if prev else None
    finite_line = prev.finite_line if prev else None
    first_meters = prev.first_meters if prev else None
    meters = _METERS.search(text)
    bracket = _METERS_AT.search(text) if meters is not None else None
    done = int(bracket[1]) if bracket is not None else None  # iterations before this one in the epoch
    if meters is not None and done == 0:
        first_meters = (float(meters[1]), float(meters[3]))
    if meters is not None and done is not None and done >= AVERAGED:
        # The running averages cover every iteration of the epoch so far: they say more than the
        # instantaneous figures of the few lines printed (the start-up's iteration 0 left out).
        skip_step, skip_data = first_meters or (0.0, 0.0)
        step_time = max(float(meters[2]) * (done + 1) - skip_step, 0.0)
        data_time = max(float(meters[4]) * (done + 1) - skip_data, 0.0)
        timed = done
    elif meters is not None:
        step_time, data_time, timed = step_time + float(meters[1]), data_time + float(meters[3]), timed + 1
    else:
        data = _DATA_TIME.search(text)
        step = _STEP_TIME.search(text) if data is not None else None
        if data is not None and step is not None:
            if (timed == 0 and first_meters is None and now.step is not None and now.step <= AVERAGED
                    and (now.epoch is None or now.epoch <= 1)):
                # The run's first record (its first epoch, within its first AVERAGED steps) holds the start-up in
                # its times (workers forked, the first batches loaded while nothing else could run: MMCV's "time:
                # 0.597, data_time: 0.514" over its first 50 iterations), as AverageMeter's iteration 0 does: left
                # out, the later records say how the run goes. (A paste that starts mid-run has none to leave out.)
                first_meters = (float(step[1]), float(data[1]))
            else:
                step_time, data_time, timed = step_time + float(step[1]), data_time + float(data[1]), timed + 1
    nonfinite = prev.nonfinite if prev else None
    vanished = prev.vanished if prev else None
    loss_m = _training_loss(_LOSS, text)
    if _training_loss(_LOSS_NONFINITE, text) is not None:
        # the first of the trailing run of non-finite lines, and how many lines the run has
        nonfinite = (nonfinite[0], nonfinite[1], nonfinite[2] + 1) if nonfinite else (now.line, now.text, 1)
    elif loss_m is not None:
        nonfinite = None
        loss = float(loss_m[1])
        if loss != 0.0:
            vanished = None
        elif vanished is not None:
            vanished = (vanished[0], vanished[1], vanished[2] + 1)
        elif loss_last is not None and loss_last >= VANISHED_FROM:
            vanished = (now.line, now.text, 1)  # straight from a real loss to exactly 0 (not rounded down)
        # (A jump that leaves the loss below its first figure is noise near convergence: per-batch losses of a
        # classifier that fits, 0.003 then 0.15, are fifty times apart and no worse than where training began.)
        adversarial = _ADVERSARIAL_BEFORE.search(text, max(0, loss_m.start() - 24), loss_m.start()) is not None
        if (loss_min is not None and losses >= 3 and loss_min > 0 and loss_first is not None and loss > loss_first
                and not adversarial):
            ratio = loss / loss_min
            if spike is None or ratio > spike[2]:
                spike = (now.line, now.text, ratio)
        loss_min = loss if loss_min is None else min(loss_min, loss)
        loss_max = loss if loss_max is None else max(loss_max, loss)
        loss_first = loss if loss_first is None else loss_first
        # (a loss of exactly 0 is no finite loss after a NaN: HF's Trainer prints a NaN step's loss as 0)
        loss_last, losses, finite_line = loss, losses + 1, now.line if loss != 0.0 else finite_line
    elif nonfinite is not None and _training_loss(_LOSS_TERM_FINITE, text) is not None:
        nonfinite, finite_line = None, now.line
    rises = prev.rises if prev else ()
    if prev is not None and _rose(prev, now):
        rises = (*rises[-(RISES_KEPT - 1):], now.line)
    known = now.step if now.step is not None else (prev.known_step if prev else None)
    return RankProgress(now.rank, now.step, now.path, now.line, now.text, data_time, step_time, timed,
                        loss_min, loss_last, losses, spike, first_meters, nonfinite, rises, now.epoch, now.time,
                        vanished, known, loss_max, loss_first, finite_line)


# A row of a metrics table, one figure per line as scripts print their dict of losses ("train/real     : nan",
# "loss_G = inf"); an evaluation's own rows (eval/, val, test) say nothing about training.
_METRIC_ROW = re.compile(b"^" + LINE_PREFIX.encode()
                         + rb"[ \t]*(?!(?:eval|val|valid|validation|test)(?:[/_.-]|\b))"
                         rb"([A-Za-z_][\w/.-]{0,60}) *[:=] *"
                         rb"-?(?:nan|inf)\b[ \t]*\r?$", re.M | re.I)
METRIC_ROWS = 2  # non-finite training rows of one table before it says what a NaN loss line does


def _nonfinite_table(lines: _TailLines, result: Found, file_rank: int | None) -> None:
    """A metrics table printed after a rank's last progress line with two or more training rows that
    read NaN or Inf: the run's loss terms went non-finite, as a loss line reading NaN says."""
    rows = [m.start() for m in _METRIC_ROW.finditer(lines.tail)]  # (MULTILINE `^`: each at a line start)
    if len(rows) < METRIC_ROWS:
        return
    for rank, p in list(result.progress.items()):
        after = [s for s in rows if lines.number(s) > p.line
                 and (lines.head(s).rank if lines.head(s).rank is not None else file_rank) == rank]
        if p.nonfinite is None and len(after) >= METRIC_ROWS:
            first = after[0]
            text = _decode(lines.raw(first)).strip()[:300]
            result.progress[rank] = replace(p, nonfinite=(lines.number(first), text, len(after)))


def _rose(prev: RankProgress, now: RankProgress) -> bool:
    """A later epoch, or a later step of the same epoch (a bar that restarts at 0 each epoch) than the last
    step the rank showed (a loss dict printed between two states of a bar shows none)."""
    if prev.epoch is not None and now.epoch is not None and now.epoch != prev.epoch:
        return now.epoch > prev.epoch
    before = prev.step if prev.step is not None else prev.known_step
    return before is not None and now.step is not None and now.step > before


# A web page's typography in place of what the program printed: no-break space, curly single and double quotes.
_TYPOGRAPHY = {b"\xc2\xa0": b" ", b"\xe2\x80\x98": b"'", b"\xe2\x80\x99": b"'", b"\xe2\x80\x9c": b'"',
               b"\xe2\x80\x9d": b'"'}
_TYPOGRAPHY_RX = re.compile(b"|".join(re.escape(k) for k in _TYPOGRAPHY))


_LOWER = re.compile(rb"[a-z]")
# Markdown around a paste as a whole: inline code or bold opened before its first character and closed
# after its last ("`RuntimeError: ...`", "**Killed**"), which the program never printed. Closed only where
# it opened: torch's own messages end in a backtick ("... when `use_orig_params=False`").
_EDGE_OPEN = re.compile(rb"(?:`{1,3}|\*\*)(?=[^\s`*])")
_EDGE_CLOSE = re.compile(rb"(?<=[^\s`*])(?:`{1,3}|\*\*)(?=[ \t]*\r?\n?[ \t\r\n]*\Z)")
# Markdown a paste put around one line: "**KeyError: '2'**", "`Killed`", or a fence glued to the last line
# ("No module named 'apex'```"). The program printed none of it, and a fingerprint that ends its line
# ("Segmentation fault$", "No module named 'x'$") must still see the line's end.
# (RE2: the mark is rare but the scan for it runs over every byte of a paste's blocks, at RE2's speed,
# not the backtracking engine's, which tries each position in turn)
_MARK_END = linear.compile_bytes(r"(`{1,3}|\*\*)[ \t]*\r?$")
# A paste is what a web page's comment or form holds (GitHub's take 65,536 characters): markdown around
# lines is looked for in the first bytes only. Past them the input is a program's own file, which has none,
# and looking would cost every block of a big log a pass.
PASTE_BYTES = 1 << 20
WRAP_WIDTHS = (80, 250)  # the columns a terminal or a mail client plausibly hard-wraps a paste at


def unmark(block: bytes) -> bytes:
    """The block without the markdown a paste put around its lines. A line wrapped whole in bold or inline
    code loses both marks; a mark that ends a line and closes nothing the line opened (an odd one: a fence
    glued to the last line, the close of a bold opened lines above) is dropped. A line's own balanced
    code stays as printed: torch's messages end in one ("... when `use_orig_params=False`"). Only lines
    ending in a mark cost Python, and a fence alone on its line stays for the reader's fence rules."""
    out: list[bytes] = []
    done = 0
    for m in _MARK_END.finditer(block):
        start = block.rfind(b"\n", 0, m.start()) + 1
        line, mark = block[start : m.start()], m.group(1)
        body = line.lstrip(b" \t")
        if not body.strip(b" \t`*"):
            continue
        if body.startswith(mark) and not body.startswith(mark + mark[:1]):
            lead = start + len(line) - len(body)
            out += (block[done:lead], block[lead + len(mark) : m.start()])
        elif (line.count(b"`") + len(mark) if mark.startswith(b"`") else line.count(b"**") + 1) % 2:
            # (of two backticks, the first closes the line's own code: "... uniform `requires_grad``")
            out.append(block[done : m.start() + (mark == b"``")])
        else:
            continue
        done = m.end(1)
    if not out:
        return block
    out.append(block[done:])
    return b"".join(out)


DOUBLED = 3  # lines of content, each followed by an empty one, before a paste counts as double-spaced


def double_spaced(head: bytes) -> bool:
    """Whether the paste has an empty line after each of its lines, as some web pages' copies give it: no
    two lines of content in a row, and at least DOUBLED of them. Each pair of line ends is then one (an
    empty line the program printed came as three), so a traceback's header and its frames are adjacent
    again, as the program printed them."""
    lines = head.replace(b"\r\n", b"\n").split(b"\n")[:-1]  # (the last may be cut)
    content = 0
    previous = False
    for line in lines:
        filled = bool(line.strip())
        if filled and previous:
            return False
        previous = filled
        content += filled
    return content >= DOUBLED


def wrap_width(head: bytes) -> int:
    """The column the paste was hard-wrapped at, 0 when it was not. A terminal's copy (or a mail client)
    breaks every long line into pieces of exactly its width, so the head's longest lines all share one
    length and each continues on the next line, mid-text. Lines of one record format share a length
    too (a metrics dict per step, one warning per rank, a table's rules), but the line after each is
    the next record, starting as they all do."""
    lines = [ln.rstrip(b"\r") for ln in head.split(b"\n")[:-1]]
    if len(lines) < 3:
        return 0
    width = max(len(ln) for ln in lines)
    if not WRAP_WIDTHS[0] <= width <= WRAP_WIDTHS[1]:
        return 0
    # (each distinct piece once: a long warning printed five times is wrapped five times alike)
    pairs = {(ln, after) for ln, after in pairwise(lines) if len(ln) == width and after.strip()}
    if len(pairs) < 2 or len({after[:4] for _, after in pairs}) < len(pairs) / 2 + 1:
        return 0
    # A wrap falls anywhere, so somewhere it splits a word ("... for 600 second" / "s without ..."); a line
    # after a whole record starts one of its own (a timestamp, a capital, a frame's indentation).
    return width if any(_LOWER.match(ln[-1:]) and _LOWER.match(after[:1]) for ln, after in pairs) else 0


def common_indent(head: bytes) -> int:
    """The spaces every complete, non-blank line of the head starts with (2 to 16; 0 for fewer than
    two such lines, or none in common): the indentation of a paste as a whole."""
    lines = [ln for ln in head.split(b"\n")[:-1] if ln.strip()]
    if len(lines) < 2:
        return 0
    indent = min(len(ln) - len(ln.lstrip(b" ")) for ln in lines)
    return indent if 2 <= indent <= 16 else 0


class ScanState:
    """The scan of one input in progress. Batch reading and live streams share it, so a live run
    is diagnosed exactly as its log file would be, without re-reading anything."""

    SNIFF = 65536

    def __init__(self, reader: Reader, result: Found, file_rank: int | None, file_host: str | None, *,
                 pasted: bool = True) -> None:
        self.reader = reader
        self.result = result
        self.file_rank = file_rank
        self.file_host = file_host
        if file_rank is not None:
            result.ranks.add(file_rank)
        self._splitter = BlockSplitter(MAX_LINE)
        self._head: bytes | None = b""  # bytes held until the binary check; None once checked
        self._queue: deque[bytes] = deque()
        self._queued = 0
        self._behind = b""
        self._line_base = 0
        self._offset = 0
        self._tail = b""
        self._hits: Counter[int] = Counter()
        self._finished = False
        self._limit: int | None = None  # scan only this many bytes; what follows is look-ahead
        # What a paste carries that the program never printed, as the head shows it: an indentation of the
        # whole (a markdown code block, a quoted mail), a web page's typography (no-break spaces, curly
        # quotes: a module's name in U+2018 and U+2019, copied from a forum's prose). Never in a range scan, whose other
        # ranges cannot see the head.
        self._paste_allowed = pasted
        self._dedent: re.Pattern[bytes] | None = None
        self._typography = False
        self._unwrap: re.Pattern[bytes] | None = None
        self._undouble = False  # every line of the paste followed by an empty one (a web page's copy)
        self._open = b""  # the markdown that opens the paste, dropped from its first block (and closes it)
        self._drop_open = False
        self._queued_total = 0  # bytes queued since the start: the paste's markdown is looked for early on

    def start_at(self, offset: int, behind: bytes) -> None:
        """Scan a range of a file that starts at `offset` (a line start), `behind` being the bytes before it.

        Line numbers then count from the range start; trainmedic.logs.parallel shifts them.
        """
        self._offset = offset
        self._behind = behind[-BEHIND:]
        self._head = None  # the binary check belongs to the range holding the file's first bytes

    def limit(self) -> None:
        """Everything fed so far is the range; what is fed next is only look-ahead for tracebacks."""
        self._release_head()
        self._limit = self._offset + self._queued + self._splitter.pending

    def feed(self, data: bytes) -> None:
        if self._head is not None:
            self._head += data
            if len(self._head) < self.SNIFF:
                return
            data, self._head = self._head, None
            self._sniff(data)
        self._add(data)
        self._step(force=False)

    def feed_block(self, block: bytearray) -> None:
        """Whole lines the caller read itself (a file range read into a fresh buffer): queued without
        the splitter's copy. Only valid while the splitter holds no partial line."""
        if self._head is not None:
            if self._head:
                self._release_head()
            else:
                self._head = None
                self._sniff(bytes(block[: self.SNIFF]))
        if self._splitter.pending:
            self._add(bytes(block))
        else:
            # bytearray offers every bytes method the scan uses, so the block is queued as read.
            crlf = self._splitter.line_ends(block)
            ready: bytes = strip_ansi(block, crlf) if needs_cleaning(block, crlf) else block  # type: ignore[assignment]
            self._enqueue(ready)
        self._step(force=False)

    def _sniff(self, head: bytes) -> None:
        if looks_binary(head[: self.SNIFF]):
            raise InputError(f"{self.result.source.name}: looks like a binary file, not a log")
        indent = common_indent(head[: self.SNIFF]) if self._paste_allowed else 0
        self._dedent = re.compile(rb"^ {1,%d}" % indent, re.M) if indent else None
        self._typography = self._paste_allowed and any(c in head[: self.SNIFF] for c in _TYPOGRAPHY)
        opened = _EDGE_OPEN.match(head) if self._paste_allowed else None
        self._open = opened.group(0) if opened else b""
        self._drop_open = bool(self._open)
        if self._paste_allowed:
            # (measured on the head as the blocks will read: no markdown around it, plain typography, no
            # common indentation)
            width = wrap_width(self._plain(head[len(self._open): self.SNIFF]))
            # Each piece of exactly that width is joined to the line after it, as the program printed it.
            self._unwrap = re.compile(rb"^([^\r\n]{%d})\r?\n" % width, re.M) if width else None
            self._undouble = double_spaced(head[len(self._open): self.SNIFF])

    def _plain(self, block: bytes) -> bytes:
        """The bytes without a web page's typography, the paste's common indentation and the markdown
        around its lines."""
        if self._typography:
            block = _TYPOGRAPHY_RX.sub(lambda m: _TYPOGRAPHY[m[0]], block)
        if self._paste_allowed and self._queued_total < PASTE_BYTES and (b"`" in block or b"**" in block):
            block = unmark(block)
        return self._dedent.sub(b"", block) if self._dedent is not None else block

    def _enqueue(self, block: bytes) -> None:
        if self._drop_open:
            block, self._drop_open = block[len(self._open):], False
        block = self._plain(block)
        self._queued_total += len(block)
        if self._undouble:
            block = block.replace(b"\n\n", b"\n")
        if self._unwrap is not None:
            block = self._unwrap.sub(rb"\1", block)
        self._queue.append(block)
        self._queued += len(block)

    def _add(self, data: bytes) -> None:
        # Cut what arrives into blocks of at most the reader's block size, as a file read would.
        size = self.reader.block_size
        for i in range(0, len(data), size):
            block = self._splitter.add(data[i : i + size])
            if block:
                self._enqueue(block)

    def _release_head(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            self._sniff(head)
            self._add(head)

    def _step(self, force: bool) -> None:
        # Keep at least LOOKAHEAD bytes queued after the current block, whatever the block size,
        # so a traceback or summary that runs past a block boundary reads the same.
        while self._queue and (force or (len(self._queue) >= 2 and self._queued - len(self._queue[0]) >= LOOKAHEAD)):
            if self._limit is not None and self._offset >= self._limit:
                return  # the rest is look-ahead for the range's last tracebacks
            current = self._queue.popleft()
            self._queued -= len(current)
            window = _Window(self._behind, current, self._queue)
            counted_to, counted = self.reader._scan_block(window, self._offset, self._line_base, self.result,
                                                           self.file_rank, self.file_host, self._hits)
            self.result.bytes += len(current)
            self._offset += len(current)
            self._line_base += counted + newlines.count(current, counted_to)
            self._tail = (self._tail + current)[-TAIL:] if len(current) < TAIL else current[-TAIL:]
            self._behind = current[-BEHIND:] if len(current) >= BEHIND else (self._behind + current)[-BEHIND:]

    def flush(self) -> None:
        """Scan every complete line received so far (a live stream went quiet: nothing more is coming soon)."""
        self._release_head()
        self._step(force=True)

    def finish(self, tail: bool = True) -> ScanResult:
        """Scan what is left; `tail=False` for a range that does not end the file (no tail, no EOF line)."""
        if self._finished:
            return self.result.freeze()
        self._drain(tail)
        if tail:
            self._close(self.result)
        else:
            self.result.lines = self._line_base
            self._record_dropped(self.result)
        return self.result.freeze()

    def finish_tail_apart(self) -> tuple[ScanResult, bytes, int]:
        """Scan what is left of the input's last range, all but the tail's reading: the result, the tail
        and its first line's number. A parallel scan reads the tail in another process meanwhile
        (Reader.read_tail); `finish()` is this and the tail's reading in one."""
        assert not self._finished
        self._drain(True)
        tail, first = self._ended(self.result)
        self._record_dropped(self.result)
        return self.result.freeze(), tail, first

    def _drain(self, tail: bool) -> None:
        self._release_head()
        last = self._splitter.finish()
        if last:
            self._enqueue(last)
        if self._open and tail and self._queue:
            # (the markdown that closes the paste, after its last character)
            end = self._queue[-1]
            closed = _EDGE_CLOSE.search(end, max(0, len(end) - 512))
            if closed is not None and closed.group(0) == self._open:
                self._queue[-1] = end[: closed.start()] + end[closed.end():]
                self._queued -= closed.end() - closed.start()
        self._step(force=True)
        self._finished = True
        self.result.cut_lines = self._splitter.cut

    def _record_dropped(self, result: Found) -> None:
        for key, n in self._hits.items():
            if n > MAX_HITS_PER_PATTERN:
                result.dropped[self.reader.patterns[key].key] = n - MAX_HITS_PER_PATTERN

    def _close(self, result: Found) -> None:
        tail, first = self._ended(result)
        self.reader._scan_tail(tail, first, result, self.file_rank)
        self._record_dropped(result)

    def _ended(self, result: Found) -> tuple[bytes, int]:
        """The input's line count (into `result`), and its tail from a line start with that line's number."""
        tail = self._tail
        result.lines = self._line_base + (0 if tail.endswith(b"\n") or not tail else 1)
        first = result.lines - (tail.count(b"\n") + (0 if tail.endswith(b"\n") else 1)) + 1
        if result.bytes > len(tail):  # the tail starts mid-line: drop the partial line
            cut = tail.find(b"\n") + 1
            tail, first = tail[cut:], first + 1
        return tail, first

    def snapshot(self) -> ScanResult:
        """What a diagnosis of everything scanned so far needs, leaving the running scan untouched."""
        if self._finished:
            return self.result.freeze()
        r = self.result
        snap = Found(r.source, r.bytes, 0, set(r.ranks), list(r.matches), list(r.tracebacks),
                     list(r.summaries), list(r.memory_tables), set(r.world_sizes), set(r.stated_ranks),
                     contexts=set(r.contexts),
                     seen_ranks={k: set(v) for k, v in r.seen_ranks.items()})
        self._close(snap)
        return snap.freeze()


def _in_summary(m: Match, spans: list[tuple[int, int, SummaryRecord]]) -> Match:
    if m.line.rank is not None:
        return m
    for lo, hi, rec in spans:
        if lo <= m.line.number <= hi:
            line = Line(m.line.path, m.line.number, m.line.text, rec.rank, rec.host or m.line.host, m.line.time)
            return Match(m.fingerprint, m.cause, line)
    return m
