"""Compile every pattern once; scan large blocks; report (line, pattern) hits that a per-line search confirms.

Both back-ends report the end offsets of candidate matches in a block; every candidate is then
confirmed with Python's `re` on its own line. Fingerprints cannot match a newline (the library
schema refuses such patterns), so a per-line search and a block search find the same lines, and
the two back-ends give identical results by construction.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from trainmedic.catalog import Library
from trainmedic.logs.attribution import LINE_PREFIX
from trainmedic.model import Cause, Fingerprint
from trainmedic.util import linear

Kind = Literal["fingerprint", "traceback", "summary", "memory-table", "world", "progress", "done", "context",
               "checkpoint",
               "fatal", "error", "warning",  # tail-only severity (model.Notable)
               "launch", "setup", "checkpoint-load", "evaluation", "checkpoint-save", "shutdown", "restart",  # phases
               "prompt"]


@dataclass(frozen=True)
class Pattern:
    """A regex the scanner looks for; `key` says what a hit means to the reader."""

    key: str
    regex: str
    kind: Kind
    ignore_case: bool = False


# The characters themselves, not `\u` escapes (hyperscan reads a pattern's UTF-8 bytes and knows no such escape).
NBSP, IDEOGRAPHIC_SPACE = "\u00a0", "\u3000"

# The words before a process's own rank number (the "own-rank" pattern; the reader reads the number after them).
OWN_RANK = r"(?:GLOBAL_RANK: |Global Rank: |Process Group destroyed on rank |RANK and WORLD_SIZE in environ: )"

# IPython's traceback header, its first word the exception's class (logs/tracebacks reads the class from it).
IPYTHON_HEADER = r"([A-Za-z_][\w.]{0,200}?) *Traceback \(most recent call last\)[ \t\r]*"
# Structure the reader needs besides the fingerprints. Same newline-safe rules as the library.
STRUCTURE: tuple[Pattern, ...] = (
    Pattern("traceback", r"Traceback \(most recent call last\):", "traceback"),
    # IPython's (a notebook's output): "RuntimeError                 Traceback (most recent call last)", no colon
    Pattern("ipython-traceback", IPYTHON_HEADER + "$", "traceback"),
    # A traceback pasted without its header (an issue thread's excerpt, a log cut by rotation): its
    # first frame line starts it. The reader takes only a frame with no frame or header above it.
    # torch >= 2.2's launcher prefixes every line of it ("[rank24]: File ..."), as mpirun --tag-output does.
    # Behind a carrier's prefix (a quote, a collector's timestamp) and Ray's, as split_prefix strips them.
    # (Its indent may be the no-break or ideographic spaces a paste turns spaces into: logs/tracebacks.INDENT.)
    Pattern("headless-traceback",
            rf'^{LINE_PREFIX}(?:[ \t]|{NBSP}|{IDEOGRAPHIC_SPACE})*File "[^"\n]+", line \d+, in ',
            "traceback"),
    # py-spy's dump of a process's main thread ("Thread 0x7FA6E7C01740 (idle): \"MainThread\""): its
    # frames say where a stuck run waited, read as a traceback's are.
    Pattern("stack-dump", r'Thread 0x[0-9A-Fa-f]+ \((?:idle|active)[^)\n]*\): "MainThread"', "traceback"),
    # faulthandler's dump (dump_traceback_later, a registered signal): every thread, innermost frame
    # first, the main thread last.
    Pattern("faulthandler-dump", r"(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):", "traceback"),
    # gdb's backtrace (`bt`, `thread apply all bt`, `gdb -p <pid> -batch -ex bt`): its innermost frame,
    # "#0  0x00007f118e20430d in nanosleep () at ...", or "#0  __lll_lock_wait () at ..." with no address.
    Pattern("gdb-dump", rf"^{LINE_PREFIX}[ \t]*#0  ?(?:0x[0-9a-fA-F]{{1,16}} in )?[^\n(]{{1,300}} \(", "traceback"),
    Pattern("summary-record", r"rank +: \d+ \(local_rank: \d+\)", "summary"),
    # torch.cuda.memory_summary()'s title row: its rows below say what was allocated and what reserved.
    Pattern("memory-table", r"PyTorch CUDA memory summary, device ID \d+", "memory-table"),
    # Not NCCL's "nranks": its INFO chatter repeats it on every communicator and would flood the matcher.
    # Lightning names it as each process joins ("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/3") and
    # once all have ("All distributed processes registered. Starting with 3 processes").
    Pattern("world-size", r"world_size[=: ]+\d+|WORLD_SIZE[=: ]+\d+|num_processes[=: ]+\d+|MEMBER: \d+/\d+|"
            r"Starting with \d+ processes", "world"),
    # A process saying which rank it is, in its own output: Lightning ("Initializing distributed: GLOBAL_RANK:
    # 0, MEMBER: 1/2"), torch 1.x's c10d teardown ("Process Group destroyed on rank 0"), the Swin Transformer
    # family's start-up print ("RANK and WORLD_SIZE in environ: 0/1"), scripts' "Global Rank: 0".
    Pattern("own-rank", OWN_RANK + r"\d+", "world"),
)

# A tqdm bar: "37/100 [00:12<00:21, ...]", or with no total (an iterable without len) "120it [00:08, 14.2it/s]".
# (YOLOv5's and YOLOv9's own bar format, "{l_bar}{bar:10}| {n_fmt}/{total_fmt} {elapsed}", ends "| 0/402 00:20".)
# (Ultralytics' own TQDM, which replaced tqdm in 8.3: "{desc}: {percent}% {bar} {n}/{total} {rate} {elapsed}",
# its bar twelve of ━ ─ ╸: "640: 52% ━━━━━━────── 33/64 1.3s/it 51.5s<40.1s".)
# One definition: the scanner's progress sign, and the traceback reader's test for a bar glued to a line.
GLYPH_BAR = r"% (?:━|─|╸){1,60} "  # Ultralytics' percentage and bar; its count follows (the reader reads it)
TQDM_BAR = (r"\d+/\d+ \[\d[\d:]*<|\d+it \[\d[\d:]*[,<]|\| ?\d+/\d+ \d{1,3}:\d\d(?::\d\d)?(?:\s|$)|"
            + GLYPH_BAR + r"\d+/\d+ ")

# The words before a step or epoch count (the reader reads the number after them): "step 12", "iter=3",
# a JSON or dict record's quoted key ('"step": 4000', "'epoch': 1"). (A word of its own for the epoch: a
# config's "min_Epoch: 20" or "num_epoch = 300" is no epoch reached.)
STEP_WORDS = r"(?:global_step|[Ss]tep|[Ii]ter(?:ation)?)[\"']?[ =:]+"
EPOCH_WORDS = r"\b[Ee]poch[\"']?[ =:]+"
YOLO_ROW = r"(?:^|[ \t])(\d{1,6})/\d{1,6} {2,16}\d{1,4}(?:\.\d{1,3})?G {2,16}\d"

# Signs of progress and of a finished run; scanned only over the tail of each input.
PROGRESS: tuple[Pattern, ...] = (
    Pattern("tqdm", TQDM_BAR, "progress"),
    Pattern("step", STEP_WORDS + r"\d+", "progress"),
    Pattern("hf-log", r"\{'loss': ", "progress"),
    # A line that reports the training loss is a step done, whatever else it prints ("1336 Loss : 1.4608").
    # (timm pads the figure to its width, NaN included: "Loss:       nan (   nan)")
    # (So does a term of the loss by its own name: a GAN's "D_loss: nan, ..., G_loss: 0.41", "lm_loss=2.1".)
    # (A script's own print may put only spaces between name and figure, "Train loss 0.347656", as
    # nanoGPT's "loss 3.9883," does: a figure with a decimal point then, never prose's "loss 2 times".)
    Pattern("loss-line", r"(?:^|[^\w.'])(?:[A-Za-z][A-Za-z0-9]{0,11}_)?[Ll]oss(?: ?[:=] {0,12}(?:\d|nan\b|NaN\b)"
            r"| {1,12}\d{1,40}\.\d)", "progress"),
    Pattern("epoch", EPOCH_WORDS + r"\d+", "progress"),
    # The epoch row of Ultralytics' trainers and the YOLO repositories built on them (YOLOv5 to v11, v7, v9):
    # "     12/199     19.4G     0.172  ...", epoch/epochs then the GPU memory; its bar may be cut at the
    # console's width ("1600: 100%|█|"), the row still says that epoch ran.
    Pattern("yolo-epoch-row", YOLO_ROW, "progress"),
    # MMCV/MMEngine: "Epoch [1][200/62598]", "Epoch(train) [1][200/1000]", "Iter(train) [200/1000]";
    # pytorch/examples' ProgressMeter: "Epoch: [0][ 10/5005]".
    Pattern("mm-epoch-iter", r"(?:[Ee]poch|Iter)(?:\((?:train|val)\))?:? {0,4}\[\d+(?:/\d+)?\](?:\[ *\d+/\d+\])?",
            "progress"),
    # (Title case as banners print it: nerfstudio's "Training Finished", after its last step.)
    Pattern("train-done", r"(?:[Tt]raining (?:[Cc]ompleted?|[Ff]inished)|'train_runtime'|"
            r"[Ff]inished [Tt]raining|`Trainer\.fit` stopped|max_epochs=\d+. reached|"
            r"[Tt]raining done|[Tt]raining (?:of \w+ )?is (?:done|finished|complete)|[Ss]aving final|"
            r"WorkerState\.SUCCEEDED|worker group successfully finished|"
            # Ultralytics' trainer (YOLOv5, YOLOv8 and after) as its last epoch ends:
            # "25 epochs completed in 0.409 hours."
            r"\b\d+ epochs completed in \d+\.\d+ hours|"
            # fairseq's train.py after its last epoch ("done training in 3417.2 seconds"); detectron2's
            # IterationTimer (and the trainers built on it) as training ends, a str(timedelta): "Overall training
            # speed: 89997 iterations in 9:45:04 (0.3898 s / it)", "Total training time: 9:47:01 (0:01:57 on hooks)"
            # (it prints them from a `finally` too: an exception then follows, and the run is no success)
            r"done training in \d+(?:\.\d+)? seconds|Overall training speed: \d+ iterations in |"
            r"Total training time: (?:\d+ days?, )?\d+:\d\d:\d\d|"
            # ESPnet's trainer, after its last epoch or an early stop: "The training was finished at 35 epochs ",
            # "... The training was stopped at 21epoch"
            r"The training (?:was )?(?:finished|stopped) at \d+ ?epoch|"
            # transformers' Trainer.log_metrics("train", ...) as the example scripts call it once train() returned
            r"\*\*\*\*\* train metrics \*\*\*\*\*|"
            # wandb.finish() reports the script's exit: "(success)" for 0, "(failed 1)" otherwise
            r"Waiting for W&B process to finish\.\.\. \(success\)|"
            # IBM LSF's job report on a job whose command exited 0; Ray Train's controller at the end of a run
            r"\bSuccessfully completed\.[ \t]*\r?$|\[State Transition\] [A-Z_]+ -> FINISHED\.|"
            # MLPerf's logger (mllog) closing a run that reached its target: ':::MLLOG {... "key": "run_stop", ...
            # "metadata": {..., "status": "success"}}' ("aborted" otherwise)
            r'"key": "run_stop"[^\n]{0,300}"status": "success")', "done"),
    # A shell's prompt alone on a line, nothing typed after it: a pasted terminal session where the program
    # had returned to the shell (bash's "user@host:~/dir$", with a conda env's "(env) " before it; Red Hat's
    # "[user@host dir]$"; PowerShell's "PS C:\dir>" and cmd's "C:\dir>")
    Pattern("shell-prompt", r"^(?:\([\w.-]{1,60}\) ?)?(?:PS [A-Za-z]:\\[^>\n]{0,300}>|[A-Za-z]:\\[^>\n]{0,300}>|"
            r"[\w.-]{1,64}@[\w.-]{1,64}:[^$#\n]{0,300}[$#]|\[[\w.-]{1,64}@[\w.-]{1,64} [^\]\n]{0,200}\][$#])[ \t]*\r?$",
            "prompt"),
    # A script's own last word: a line that is only "done", "finished", "complete" (after any prefix).
    Pattern("bare-done", r"(?:^|\]:? ?|\d: )(?:[Dd]one|DONE|[Ff]inished|FINISHED|[Cc]ompleted?)[.!]?[ \t]*\r?$",
            "done"),
)

# A warning level on a line outranks the failure words of `tail_only` causes ("[W ...] failed to bind",
# "UserWarning: ... cannot ..."): such a line is not notable. NCCL's "NCCL WARN" is its error level.
# What the job was doing, in the words launchers and frameworks print (torch.distributed, HF Trainer
# and Accelerate, Lightning, DeepSpeed, MMEngine); scanned only over the tail. More specific first:
# HF's "Loading checkpoint shards" loads a model, not a training checkpoint.
# The process group formed, in the words of each layer that says so: Lightning's rank 0 counting every
# process, gloo's rank connected to peers (with how many it expected), NCCL's communicator initialised,
# torch's store barrier completed. A launch marker; reason/engine.py reads a rendezvous failure above one
# as a retried connection (gloo's groups: connected, expected).
REGISTERED = "All distributed processes registered"
GROUP_FORMED = (REGISTERED + r"|\[Gloo\] Rank \d+ is connected to (\d+) peer ranks"
                r"(?:\. Expected number of connected peer ranks is : (\d+))?|NCCL INFO [^\n]{0,300}Init COMPLETE|"
                r"Completed store-based barrier for key")
# torch.utils.cpp_extension's steps as it builds and loads a just-in-time extension (the same words since torch
# 1.x: printed to stderr, logged since 2.1), Megatron's fused kernels, and DeepSpeed's line once an op loaded:
# setup markers that reason/engine.py reads for a log that ends inside a build.
EXTENSION_STEP = (r"as PyTorch extensions root|Emitting ninja build file|Building extension module \w|"
                  r"Allowing ninja to set a default number of workers|Loading extension module \w|"
                  r"compiling and loading fused kernels|Time to load \w+ op: ")
PHASES: tuple[Pattern, ...] = (
    # torch elastic's agent (torchelastic 0.2 to torch 2.15, and launchers built on it: NeMo's ft_launcher) with
    # restarts left: "[default] Worker group FAILED. 3/3 attempts left; will restart worker group"; also when
    # nodes join ("Detected 1 new nodes from group_rank=0; will restart worker group")
    Pattern("phase-restart", r"will restart worker group", "restart"),
    Pattern("phase-setup", r"Loading checkpoint shards|[Ll]oading (?:the )?(?:pretrained |base )?(?:model|weights|"
            r"dataset|tokenizer)\b|[Bb]uilding (?:the )?(?:model|dataset|dataloader)|"
            r"Generating (?:train|validation) split|Downloading (?:shards|data|model)|" + EXTENSION_STEP, "setup"),
    Pattern("phase-launch", r"init_process_group|[Rr]endezvous|Initializing distributed|initializing ddp|"
            r"Waiting in store based barrier|Added key: store_based_barrier_key|Distributed environment: |"
            r"Starting elastic_operator|" + GROUP_FORMED, "launch"),
    Pattern("phase-checkpoint-load", r"[Rr]esum(?:e|ing) (?:training )?from|[Ll]oading (?:the )?(?:latest )?checkpoint|"
            r"load_checkpoint|[Rr]estor(?:e|ing) (?:from )?checkpoint", "checkpoint-load"),
    Pattern("phase-evaluation", r"Running Evaluation|\*\*\*\*\* Running (?:Prediction|Evaluation)|[Ee]valuating\b|"
            r"Validation DataLoader|Validation sanity check|[Rr]unning validation|Start(?:ing)? evaluation|"
            r"Testing DataLoader", "evaluation"),
    Pattern("phase-checkpoint-save", r"[Ss]aving (?:model )?checkpoint|Saving model checkpoint to|save_checkpoint|"
            r"[Cc]heckpoint saved|Saving (?:the )?(?:model|state|weights) to|Saving current state", "checkpoint-save"),
    Pattern("phase-shutdown", r"destroy_process_group|[Ss]hutting down (?:workers|the process group)", "shutdown"),
)

# A line that states its own error level starts a record of its own, even right after a warning.
ERROR_LEVEL = r"(?:\[|\b)[EF]\d{3,4} \d\d:\d\d:\d\d|\bERROR\b|\bCRITICAL\b|NCCL WARN|\[E "
# Python prints a warning as "file:line: Category: message" and then the source line that issued it, most
# often the library's own call ("  warnings.warn(\"Detected call of ..."). The echo marks the lines just
# above it as that warning's message, its header cut from the paste or not (the reader's tail).
WARNING_CALL_ECHO = Pattern("warning-call-echo", rf"^{LINE_PREFIX}[ \t]+warnings\.warn(?:_explicit)?\(", "warning")

WARNING_LEVEL: tuple[Pattern, ...] = (
    Pattern("warning-glog", r"(?:\[|\b)W\d{3,4} \d\d:\d\d:\d\d\.\d|\[W [^\]\n]{1,80}:\d+\]", "warning"),
    Pattern("warning-words", r"(?:Warning|WARNING|WARN|warning)\b", "warning"),  # UserWarning too
    # A line that dismisses itself ("Unsloth: Not an error, but ...", "... can be safely ignored"): a notice,
    # whatever words of failure it quotes
    Pattern("self-dismissed", r"\b(?:[Nn]ot an error|(?:can|may|should) (?:safely )?be (?:safely )?ignored|"
            r"safe to ignore|[Yy]ou can (?:safely )?ignore|[Pp]lease ignore)\b", "warning"),
    # TensorFlow's import noise in PyTorch jobs (transformers imports an installed TensorFlow): its CUDA
    # plugins registered twice, logged at glog's E level ("E0000 ... cuda_dnn.cc:8310] Unable to register
    # cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered")
    Pattern("tf-plugin-registered-twice", r"Attempting to register factory for plugin \w+ when one has already been "
            r"registered|computation placer already registered", "warning"),
    # torch's C++ warnings (TORCH_WARN, TORCH_WARN_ONCE) reach Python as a UserWarning whose message ends
    # "(Triggered internally at ../aten/src/ATen/...cpp:919.)": "Plan failed with a cudnnException: ...
    # CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at ...)" is cuDNN falling back to another plan, not an
    # error (TORCH_CHECK's errors end "Exception raised from ... at ...", never so)
    Pattern("torch-warn-suffix", r"\(Triggered internally at ", "warning"),
    # NCCL's INFO level ("NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol."): below a warning
    Pattern("info-nccl", r"NCCL INFO\b", "warning"),
    # A log record at INFO level (logging's "- INFO -" and "INFO:root:", DeepSpeed's and HF's "[INFO]"/"[INFO|",
    # loguru's "| INFO |", glog's "I1016 15:16:26.801", a timestamp then "INFO "): its own level says it
    # reports, as an epoch's "the following errors occurred" summary of skipped samples does
    Pattern("info-record", r"- INFO -|\[INFO[\]|]|\| INFO +\||(?:^|\] |\d )INFO[: ]|(?:^|\[)I\d{4} \d\d:\d\d:\d\d\.\d",
            "warning"),
    # A metric named an error, with its reading: "Rotation Error (deg): 62.79", "Mean Absolute Error: 0.0123",
    # "val error=0.25" (a figure with a decimal point: no exit status or errno, "Error 1")
    Pattern("metric-named-error", r"\b[Ee]rror(?: \([^)\n]{1,20}\))? ?[:=] {0,3}-?\d{1,12}\.\d", "warning"),
    # torch's TORCH_LOGS artifacts ("[0/1] [__recompiles] Recompiling function forward ... triggered by the
    # following guard failure(s)", "[__graph_breaks]"): debug output the user asked for, whatever it says
    Pattern("info-torch-logs", r"\[__[a-z_]{2,40}\] ", "warning"),
    # wandb's daemon threads of a run (wandb_run.py: the stop check, the network status, the internal
    # messages) dying as the process exits: the tracker's own threads, whose death ends nothing training
    # waits on (reason/events.py reads their tracebacks the same way)
    Pattern("tracker-thread-died", r"Exception in thread (?:IntMsgThr|ChkStopThr|NetStatThr)\b", "warning"),
    # FFmpeg's own log lines, under its av_log prefix "[h264 @ 0x55d0c8a1b2c0] mmco: unref short failure":
    # a video reader's decoder (decord, torchvision.io, PyAV, OpenCV) complaining about one stream, which it
    # conceals or skips; the reader's exception, when one ends the run, is the failure
    Pattern("ffmpeg-av-log", r"\[[\w ,.-]{1,40} @ 0x[0-9a-f]{4,16}\] ", "warning"),
    WARNING_CALL_ECHO,
)


class Scanner(Protocol):
    backend: str

    def candidates(self, block: bytes) -> list[tuple[int, int]]:
        """(end offset, pattern index) of every candidate match, in any order."""
        ...

    def candidates_bounded(self, block: bytes) -> tuple[list[tuple[int, int]], bool]:
        """The candidates with the `bounded` kinds' on every line, and True; or, where a block holds
        more than `bound` of those, the candidates with them reported once, and False."""
        ...


@dataclass(frozen=True)
class PatternSet:
    patterns: tuple[Pattern, ...]

    def compiled(self) -> list[Any]:
        """RE2 programs (util/linear.py): linear in the block whatever it holds."""
        return [linear.compile_bytes(p.regex, ignore_case=p.ignore_case) for p in self.patterns]

    def programs(self) -> Programs:
        """The same programs, each compiled when first used (see Programs)."""
        return Programs(self.patterns)


class Programs:
    """RE2 programs compiled on first use. A scan confirms only the patterns its input nominates, and
    every process of a parallel scan builds its own reader: compiling all ~700 up front cost each of
    them about 40 ms, more than the scan of a small log."""

    def __init__(self, patterns: tuple[Pattern, ...]) -> None:
        self._patterns = patterns
        self._programs: list[Any] = [None] * len(patterns)

    def __getitem__(self, pid: int) -> Any:
        program = self._programs[pid]
        if program is None:
            p = self._patterns[pid]
            program = self._programs[pid] = linear.compile_bytes(p.regex, ignore_case=p.ignore_case)
        return program

    def __len__(self) -> int:
        return len(self._patterns)

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self._patterns)))


def _kind(cause: Cause, fp: Fingerprint) -> Kind:
    """A `tail_only` cause's words are read over each input's tail, as notable lines: fatal from weight
    0.5 up, else error."""
    if not cause.tail_only:
        return "fingerprint"
    return "fatal" if fp.weight >= 0.5 else "error"


def library_patterns(library: Library) -> list[Pattern]:
    """Every fingerprint, and the literal context marks causes read (`needs_context`, `inside_marks`):
    whether an input mentions a DataLoader worker anywhere decides what a fork error inside it means."""
    marks = sorted({m for c in library.causes() for m in (*c.needs_context, *c.otherwise_context, *c.inside_marks)})
    return [
        *(Pattern(f"{cause.full_id}#{fp.id}", fp.regex, _kind(cause, fp), fp.ignore_case)
          for cause, fp in library.fingerprints()),
        *(Pattern(f"context:{m}", re.escape(m), "context") for m in marks),
    ]


def _database(patterns: PatternSet, once: frozenset[str]) -> Any:
    """The compiled database, from the on-disk cache when an earlier run compiled the same one."""
    import hyperscan

    from trainmedic import cache

    expressions = [p.regex.encode() for p in patterns.patterns]
    flags = [
        # MULTILINE: a `$` means end of line in a block, as it does in a per-line search.
        hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_CASELESS if p.ignore_case else 0)
        | (hyperscan.HS_FLAG_SINGLEMATCH if p.kind in once else 0)
        for p in patterns.patterns
    ]
    version = str(getattr(hyperscan, "__version__", "")).encode()
    key = cache.digest([version, *expressions, repr(flags).encode()])
    blob = cache.read("hyperscan", key)
    if blob is not None:
        try:
            return hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
        except Exception:  # a stale cache entry: compile again
            pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=expressions, ids=list(range(len(expressions))),
               elements=len(expressions), flags=flags)
    cache.write("hyperscan", key, hyperscan.dumpb(db))
    return db


FLOOD_BLOCKS = 64  # after a block flooded with bounded hits, the blocks scanned with them once


def _hits(db: Any, scratch: Any, block: bytes) -> list[tuple[int, int]]:
    """(end offset, pattern index) of every match `db` reports in `block`."""
    hits: list[tuple[int, int]] = []
    append = hits.append

    def on_match(pid: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
        append((end, pid))

    db.scan(_terminated(block), match_event_handler=on_match, scratch=scratch)
    return hits


def _terminated(block: bytes) -> bytes:
    """The block with its last line ended. Hyperscan can miss a word boundary at the end of the data after an
    earlier match of the same pattern ("FAILED: x.cuda.o" twice, the second unterminated: only the first is
    reported); no pattern spans a newline, so the added one changes no match's end."""
    return block if not block or block.endswith(b"\n") else bytes(block) + b"\n"


class HyperscanScanner:
    backend = "hyperscan"

    def __init__(self, patterns: PatternSet, once: frozenset[str] = frozenset(),
                 bounded: frozenset[str] = frozenset(), bound: int = 0) -> None:
        import hyperscan

        self._patterns, self._once, self._bound_kinds = patterns, once, bounded
        self._bounded = [p.kind in bounded for p in patterns.patterns]
        self._bound = bound
        self.db = _database(patterns, once)
        self._scratch = hyperscan.Scratch(self.db)
        self._flooded: tuple[Any, Any] | None = None  # (database, scratch) with the bounded kinds once
        self._once_for = 0  # blocks left to scan with that database, after a flood

    def candidates(self, block: bytes) -> list[tuple[int, int]]:
        return _hits(self.db, self._scratch, block)

    def candidates_bounded(self, block: bytes) -> tuple[list[tuple[int, int]], bool]:
        import hyperscan

        if self._once_for > 0:
            self._once_for -= 1
            return self._hits_once(block), False
        hits: list[tuple[int, int]] = []
        append = hits.append
        bounded, left = self._bounded, self._bound

        def on_match(pid: int, _start: int, end: int, _flags: int, _ctx: object) -> bool:
            nonlocal left
            append((end, pid))
            if bounded[pid]:
                left -= 1
                return left < 0  # (stops the scan)
            return False

        try:
            self.db.scan(_terminated(block), match_event_handler=on_match, scratch=self._scratch)
            return hits, True
        except hyperscan.ScanTerminated:
            pass
        # A flood (a run that logs a save every few lines): the block again, the bounded kinds once, and so
        # the next FLOOD_BLOCKS blocks (a flood goes on: stopping each block's scan half-way costs half a scan).
        # Again from the block's start: hyperscan does not promise matches in the order of their offsets.
        self._once_for = FLOOD_BLOCKS
        return self._hits_once(block), False

    def _hits_once(self, block: bytes) -> list[tuple[int, int]]:
        import hyperscan

        if self._flooded is None:
            db = _database(self._patterns, self._once | self._bound_kinds)
            self._flooded = (db, hyperscan.Scratch(db))
        db, scratch = self._flooded
        return _hits(db, scratch, block)


class PythonScanner:
    """The fallback: one C-level `finditer` per pattern over the whole block (never per line)."""

    backend = "python"

    def __init__(self, patterns: PatternSet, once: frozenset[str] = frozenset(),
                 bounded: frozenset[str] = frozenset(), bound: int = 0) -> None:
        self._compiled = patterns.compiled()
        self._once = [p.kind in once or p.kind in bounded for p in patterns.patterns]
        self._bounded = [p.kind in bounded for p in patterns.patterns]

    def candidates(self, block: bytes) -> list[tuple[int, int]]:
        hits: list[tuple[int, int]] = []
        for pid, rx in enumerate(self._compiled):
            if self._once[pid]:
                m = rx.search(block)
                if m is not None:
                    hits.append((m.end(), pid))
            else:
                hits.extend((m.end(), pid) for m in rx.finditer(block))
        return hits

    def candidates_bounded(self, block: bytes) -> tuple[list[tuple[int, int]], bool]:
        """The bounded kinds are always searched once here: a search per line of a flood would be slower."""
        hits = self.candidates(block)
        return hits, not any(self._bounded[pid] for _, pid in hits)


def hyperscan_available() -> bool:
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return False
    return True


def build_scanner(patterns: Iterable[Pattern], backend: str | None = None,
                  once: frozenset[str] = frozenset(), bounded: frozenset[str] = frozenset(),
                  bound: int = 0) -> Scanner:
    """`backend`: 'hyperscan', 'python' or None (hyperscan when importable; TRAINMEDIC_SCANNER overrides).

    Patterns of the kinds in `once` are reported at most once per block (the first match): where the
    reader needs only to know that a block holds one, a match on every line would cost a Python call
    each (a verbose run's context words). Those of the kinds in `bounded` are reported on every line
    by `candidates_bounded` up to `bound` in a block, and once past that (a run that saves every few
    lines): every hit costs a Python call, a flood one call per line."""
    pset = PatternSet(tuple(patterns))
    choice = backend or os.environ.get("TRAINMEDIC_SCANNER") or (
        "hyperscan" if hyperscan_available() else "python"
    )
    if choice == "hyperscan":
        return HyperscanScanner(pset, once, bounded, bound)
    if choice == "python":
        return PythonScanner(pset, once, bounded, bound)
    raise ValueError(f"unknown scanner backend {choice!r}; use 'hyperscan' or 'python'")
