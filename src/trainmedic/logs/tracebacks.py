"""Assemble a Python traceback from the lines after its marker, skipping other ranks' lines.

Handles chained exceptions ("The above exception was the direct cause ...", "During handling ...")
and the "Original Traceback" that DataLoader workers embed in the re-raised message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from trainmedic.logs.attribution import split_prefix
from trainmedic.model import Traceback
from trainmedic.scan.database import IPYTHON_HEADER, TQDM_BAR
from trainmedic.util import linear

MAX_OWN_LINES = 800
MAX_MESSAGE_LINES = 5  # lines an exception's own message may run on for ("Last error:\nDuplicate GPU ...")
# A line that starts a new record (a log line, another traceback) ends an exception's message.
# (The C++ runtime's "terminate called ..." after a Python exception is the process aborting, not more message;
# nor is the shell's report that the process then crashed, SHELL_CRASH.)
# The shell's report of a foreground process that died of a crash signal ("Segmentation fault (core dumped)"),
# printed once it is gone: below a traceback, the process crashed as it exited from that exception. (Not
# "Killed": a kill comes from outside, and what the process printed just before may be its echo.)
SHELL_CRASH = re.compile(r"(?:Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)"
                         r"(?: \(core dumped\))?[ \t]*$")
_RECORD = re.compile(r"\[|\d{4}-\d\d-\d\d|[IWEF]\d{4} |Traceback|During handling|The above exception|[A-Z][A-Z]+[: ]"
                     r"|terminate called|" + SHELL_CRASH.pattern)
# A progress bar's redraw ("100%|████| 49/49 [00:08<00:00, ...]") is the run going on, never the rest of
# an exception's message. On RE2, as the scanner reads the same pattern: Python's re backtracks through a
# line of digits once per start (minutes for one 200 KB line after a traceback).
_PROGRESS_BAR = linear.compile_text(TQDM_BAR)
CHAIN = ("The above exception was the direct cause", "During handling of the above exception")
# What a DataLoader worker's re-raised exception carries below its message: the worker's own traceback.
CARRIED = "Original Traceback"
# multiprocessing's header for a child that raised ("Process Process-19:", "Process SpawnProcess-1:",
# "Process ForkPoolWorker-3:"): another process's line, interleaved with this traceback, never its exception.
CHILD_HEADER = re.compile(r"Process [\w-]+:$")
# What a person adds to a paste, never a program's line: a markdown fence (its closing one right after a
# traceback cut short would read as the exception), or an elision of frames left out ("...", "[...]").
FILLER = re.compile(r"(?:`{3,}|~{3,})[\w+-]{0,20}"
                    r"|\.{3,}|\u2026|\[(?:\.{3}|\u2026)\]|<(?:\.{3}|\u2026)>|\((?:\.{3}|\u2026)\)")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").replace("\x00", "").rstrip("\r\n")


# Lines above a traceback's header searched for the "Exception in thread ..." header it belongs to: two
# threads dying at once print both headers, perhaps a line of the main thread, then both tracebacks.
THREAD_HEADERS_ABOVE = 4


def assemble_traceback(lines: Iterable[bytes], path: str, first_line: int, rank: int | None, *,
                       headless: bool = False) -> Traceback | None:
    """`lines` starts with the marker line (with its first frame line when `headless`: the header was
    not pasted); returns None if no exception line was found, unless the traceback was interrupted (a
    "^C" echo before the marker) or cut: then its frames say where it waited."""
    frames: list[str] = []
    exceptions: list[str] = []
    state = "frames"
    own = 0
    last = first_line
    prefixed = None  # whether this traceback's lines carry a rank prefix
    interrupted = False
    message_lines = 0
    bare_frame = False  # the last line was a frame line printed without indentation, its source not yet seen
    foreign = 0  # lines in a row, among the frames, that no exception class starts
    twin_source = False  # after the exception, an indented "raise ..." line: a twin traceback's tail may follow
    said_rank: int | None = None  # the rank an unprefixed traceback's exception names as its own
    carets = False  # a caret line under a frame: Python printed these frames for an exception
    for idx, raw in enumerate(lines):
        text = _text(raw)
        att = split_prefix(text)
        if idx == 0:
            prefixed = att.rank is not None
            interrupted = att.rest.lstrip().startswith("^C")
            if not headless:
                collapsed = _collapsed(att.rest)
                if collapsed is not None:
                    frames_, final = collapsed
                    return Traceback(path, first_line, first_line, rank, frames_, final,
                                     interrupted or final[0].startswith("KeyboardInterrupt"))
                continue
        line_rank = att.rank
        if prefixed and line_rank != rank:
            continue  # another rank's line, or an unprefixed print, interleaved
        if not prefixed and line_rank is not None and line_rank != rank:
            if not (att.said and rank is None and state == "frames" and _EXCEPTION_START.match(att.rest.lstrip())):
                continue
            # A rank an exception's own words name ("RuntimeError: NCCL communicator was aborted on rank 0. ...
            # [Rank 0] Watchdog caught ..."), not a prefix: an unprefixed traceback's exception, and its rank.
            said_rank = line_rank
        own += 1
        if own > MAX_OWN_LINES:
            break
        body = att.rest if prefixed or line_rank is not None or att.host is not None or att.carried else text
        stripped = body.strip()
        if state == "frames":
            if not stripped or FILLER.fullmatch(stripped):
                continue
            if _MARKERS.fullmatch(stripped):
                last = first_line + idx  # Python 3.11's caret line under a frame's code: no frame
                carets = True
                continue
            if body.startswith(INDENT) or stripped.startswith(("^", "~")):
                frames.append(stripped)
                last = first_line + idx
                bare_frame = False
                foreign = 0
                continue
            if bare_frame and not _EXCEPTION_LINE.match(stripped):
                # A stack printer that indents nothing ("trainer.train()" under its unindented
                # 'File "...", line N, in <module>'): the frame's source line, not an exception.
                frames.append(stripped)
                last = first_line + idx
                bare_frame = False
                continue
            if stripped.startswith("Traceback (most recent call last):"):
                # A second header before any exception line: this traceback was cut there, and the
                # next one is read from its own marker (reading on would make a flood of markers
                # cost markers x lines).
                break
            if stripped.startswith(CARRIED):
                last = first_line + idx
                continue
            if CHILD_HEADER.match(stripped):
                continue
            if _GLUED_FRAME.search(stripped) and not _EXCEPTION_START.match(stripped):
                # Two processes writing one stream at once glue a frame onto another line ("main(args)
                # File "train.py", line 167, in main"): still a frame, not the exception.
                frames.append(stripped)
                last = first_line + idx
                bare_frame = stripped.startswith('File "')
                continue
            if _RAISING.match(stripped) and not _EXCEPTION_CLASS.match(stripped):
                # A raising frame's source line that lost its indentation where two processes wrote one stream
                # ('raise RuntimeError("Distributed package doesn't have NCCL " "built in")' at the line's start):
                # still this traceback's frame, and a sign that an exception was on its way.
                frames.append(stripped)
                last = first_line + idx
                foreign = 0
                continue
            if headless and _RECORD.match(stripped) and not _EXCEPTION_LINE.match(stripped):
                # Frames quoted without Python's header, then a line no exception starts with (a log
                # record: "W0907 12:16:49 ... failed while ..."): a location someone printed, which
                # raised nothing here.
                break
            if not _EXCEPTION_CLASS.match(stripped):
                # No exception class starts the line (a worker's print, a logger's "wandb: ...", a
                # warning's path, "terminate called ..."): another process's line interleaved, when frames
                # follow it; two such lines in a row, the traceback was cut before its exception and the
                # log goes on with something else.
                foreign += 1
                if foreign >= 2:
                    break
                continue
            foreign = 0
            exceptions.append(stripped)
            last = first_line + idx
            state = "after"
        elif state == "after":
            if twin_source:
                twin_source = False
                if stripped == exceptions[-1]:
                    # A twin thread's traceback interleaved with this one ends the same way: its last
                    # source line and the same exception line, after this one's. Both are this traceback's.
                    last = first_line + idx
                    continue
                break
            if body.startswith(" ") and stripped.startswith("raise "):
                twin_source = True
                continue
            if stripped.startswith('File "') and _WRAPS_REMOTE.match(exceptions[-1]):
                # Ray's wrapper ("RayTaskError(ValueError): ray::train() (pid=...)") goes on with the remote
                # task's frames and its own exception line: one traceback, ending in what the task raised.
                state = "frames"
                frames.append(stripped)
                last = first_line + idx
                continue
            if stripped.startswith(CARRIED):
                state = "frames"
                last = first_line + idx
            elif stripped.startswith(CHAIN):
                state = "chain"
                last = first_line + idx
            elif not stripped:
                continue
            elif FILLER.fullmatch(stripped):
                break
            elif body.startswith("\t") or (message_lines < MAX_MESSAGE_LINES and not _RECORD.match(stripped)
                                            and not body.startswith(" ") and not _PROGRESS_BAR.search(stripped)):
                # The exception's message runs on (NCCL's "Last error:" detail, a wrapped assertion).
                exceptions[-1] = f"{exceptions[-1]} {stripped}"[:4000]
                message_lines += 1
                last = first_line + idx
            else:
                break
        else:  # chain: expect the next traceback
            if not stripped:
                continue
            if stripped.startswith("Traceback (most recent call last):"):
                state = "frames"
                last = first_line + idx
            else:
                break
    # No exception line: the log ended inside the traceback (cut off, or the process was killed while
    # printing it), or Ctrl-C interrupted it. Its frames still say where the process was.
    cut = state == "frames" and not exceptions and own < MAX_OWN_LINES and len(frames) >= 2
    if not exceptions and not ((interrupted or cut) and frames):
        return None
    interrupted = interrupted or any(e.startswith("KeyboardInterrupt") or _AGENT_SIGINT.search(e) is not None
                                     for e in exceptions[-1:])
    # Neither Python's header nor an exception: frames a stack printer wrote (traceback.print_stack,
    # pystack, a periodic stack logger) of a process that was alive, not an error it raised.
    # Unless the frames show an exception on its way: Python marks a raising frame's code with carets
    # (3.11+, never in print_stack) and a process is never sampled standing on a raise (see _on_raise).
    sample = headless and not exceptions and not carets and not _on_raise(frames)
    if sample and sum(f.startswith('File "') for f in frames) < 2:
        return None  # one frame is a location ("Found from: File ..."), not a stack
    if rank is None and exceptions:
        rank = said_rank
    return Traceback(path, first_line, last, rank, tuple(frames[-60:]), tuple(exceptions), interrupted,
                     truncated=not exceptions, dump=sample)


_FRAME_START = r'File "[^"\n]{1,1000}", line \d{1,9}, in '  # a frame's line up to its function's name
_COLLAPSED_HEADER = "Traceback (most recent call last):"
# In a collapsed paste the exception follows the last frame's source on the same line: the first name of an
# exception class that a colon or the line's end follows ("raise StopIteration StopIteration").
_COLLAPSED_FRAME = linear.Lazy(_FRAME_START)  # (RE2: the whole line is searched)
_COLLAPSED_EXCEPTION = linear.Lazy(r"(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Z]\w{0,100}"
                                   r"(?:Error|Exception|Exit|Interrupt|Iteration|Failure)(?:: |:?[ \t]*$)")


def _collapsed(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The frames and exception of a traceback pasted on one line (an issue body that lost its line
    breaks: 'Traceback (most recent call last): File "train.py", line 178, in <module> train() ...
    raise StopIteration StopIteration'); None when the header's line is only the header, or no exception
    class ends it (read on, line by line, as before)."""
    at = text.find(_COLLAPSED_HEADER)
    rest = text[at + len(_COLLAPSED_HEADER):][:20000] if at >= 0 else ""
    if 'File "' not in rest:  # (the usual header, alone on its line: its patterns are not even compiled)
        return None
    starts = list(_COLLAPSED_FRAME.finditer(rest))
    if not starts:
        return None
    _, _, source = rest[starts[-1].end():].partition(" ")  # (past the last frame's function)
    found = _COLLAPSED_EXCEPTION.search(source)
    if found is None:
        return None
    ends = [m.start() for m in starts[1:]] + [len(rest) - len(source) + found.start()]
    frames = tuple(rest[m.start():end].strip() for m, end in zip(starts, ends, strict=True))
    return frames, (source[found.start():].strip(),)


# What indents a frame's lines: spaces and tabs, and the no-break and ideographic spaces a paste through a
# web page or a CJK input method turns them into ("　File \"train.py\", line 3, in main").
INDENT = (" ", "\t", "\u00a0", "\u3000")
_MARKERS = re.compile(r"[\^~]{1,1000}")
_RAISING = re.compile(r"raise\b")  # a frame's source line that raises: 'raise self._return_value', a bare 'raise'
_ASSERTING = re.compile(r"assert\b")  # a frame's source line that checks: 'assert len(x) == n'; a failure raises there
# a frame's source line that calls a re-raiser: torch's ExceptionWrapper ('data.reraise()', the DataLoader handing
# on a worker's exception), six's and future's 'six.reraise(tp, value, tb)': the call exists to raise
_RERAISING = re.compile(r"(?:[A-Za-z_][\w.]{0,200}\.)?reraise\(")
# (also a frame whose function's name a paste's markdown took for an HTML tag and dropped, the line then
# ending in "in": 'File "train.py", line 171, in <module>' posted on GitHub outside a code block)
_GLUED_FRAME = re.compile(_FRAME_START.rstrip() + "(?: |$)")
_EXCEPTION_START = re.compile(r"[A-Za-z_][\w.]{0,200}: ")  # "RuntimeError: ... File "code.py", line 3, in f"
# torchrun's agent on Ctrl-C: its handler raises SignalException for SIGINT (2), as Python raises KeyboardInterrupt
_AGENT_SIGINT = re.compile(r"\bSignalException: Process \d{1,10} got signal: 2[ \t]*$")
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]{0,200}(?::|$)")  # "KeyError: 'x'", "KeyboardInterrupt"
# What an exception line starts with: a class name (capitalised, or dotted with its module: "socket.timeout",
# "_queue.Empty"), possibly in a paste's markdown bold or code marks.
# Ray names the exception a remote task raised in its wrapper's: "ray.exceptions.RayTaskError(ValueError): ray::...".
_EXCEPTION_CLASS = re.compile(r"(?:\*\*|`)?(?:[A-Z_]\w{0,200}|[A-Za-z_]\w{0,100}(?:\.\w{1,100}){1,10})"
                              r"(?:\([A-Za-z_][\w.]{0,100}\))?(?::|\*\*|`|$)")


# py-spy's frame lines: "    get (queue.py:170)", "    __next__ (torch/utils/data/dataloader.py:631)"
_PY_SPY_FRAME = re.compile(r"^[ \t]+([A-Za-z_<][\w.<>]*) \(([^()\n]+):(\d+)\)[ \t]*$")
MAX_DUMP_FRAMES = 200


# faulthandler's: '  File "/usr/lib/python3.8/queue.py", line 170 in get'
_FH_FRAME = re.compile(r'^[ \t]+File "([^"\n]+)", line (\d+) in ([A-Za-z_<][\w.<>]*)[ \t]*$')
_FH_THREAD = re.compile(r"(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):")


# gdb's frame lines: "#3  0x00007f114aed81ef in horovod::common::horovod_shutdown () at /tmp/x/operations.cc:1981",
# "#0  __lll_lock_wait () at ../sysdeps/nptl/lowlevellock.c:52", "#7  0x00007f... in ?? () from /lib/libc.so.6"
_GDB_FRAME = re.compile(r"^[ \t]*#\d{1,5} +(?:0x[0-9a-fA-F]{1,16} in )?([^\s(][^\n(]{0,300}?) \(.{0,2000}?\)"
                        r"(?: at ([^\s:]{1,500}):(\d{1,9})| from (\S{1,500}))?[ \t\r]*$")
_GDB_NAME = re.compile(r"(?:[\w~]+::)*([A-Za-z_~][\w]*)")


# A wrapper that names the remote task's exception and prints the task's traceback under it.
_WRAPS_REMOTE = re.compile(r"(?:[A-Za-z_]\w{0,100}\.){0,10}RayTaskError\([\w.]{1,100}\): ")
# An exception line that frames may follow rather than end: "ray.exceptions.RayTaskError(RuntimeError): ray::...";
# or an error a library printed before printing the stack itself (FSDP's _assert_state: "ERROR: expected to be in
# states [...]" then traceback.print_stack(), then it raises)
_ERROR_ABOVE = re.compile(r"(?:[A-Za-z_]\w{0,100}\.){0,10}[A-Za-z_]\w{0,100}(?:Error|Exception)"
                          r"(?:\([\w.]{1,100}\))?: \S|ERROR: \S")


def _on_raise(frames: Sequence[str]) -> bool:
    """The innermost frame stands on a raise statement ('raise self._return_value', a bare 'raise'), an
    assert or a re-raiser's call ('data.reraise()'): an exception was leaving it when it was printed; a
    process is never sampled, or seen waiting, there (a stack printer's innermost frame is the line that
    called it)."""
    return bool(frames) and any(p.match(frames[-1]) is not None for p in (_RAISING, _ASSERTING, _RERAISING))


def raising(tb: Traceback) -> bool:
    """The traceback's stack stands on a raise, an assert or a re-raiser's call (see _on_raise)."""
    return _on_raise(tb.frames)


def under_exception(tb: Traceback, above: bytes | None) -> Traceback:
    """Frames with no header and no exception of their own, right under an exception line, are that
    exception's stack printed after it (Ray prints a remote task's traceback under "RayTaskError(X): ..."),
    not a live process's sample: the exception is theirs."""
    if tb.exceptions or above is None:
        return tb
    line = split_prefix(_text(above)).rest.strip()
    if not _ERROR_ABOVE.match(line):
        return tb
    return replace(tb, first_line=tb.first_line - 1, exceptions=(line[:4000],), truncated=False, dump=False)


def assemble_gdb_dump(lines: Iterable[bytes], path: str, first_line: int, rank: int | None) -> Traceback | None:
    """One thread's gdb backtrace (frame #0 first, innermost first as gdb prints it), turned into Python's
    order and wording (`File "file", line N, in function`, a C++ name by its last part) so the traceback
    rules read where the process waited. Someone attached a debugger to a live process: a stack dump."""
    frames: list[str] = []
    last = first_line
    for idx, raw in enumerate(lines):
        text = split_prefix(_text(raw)).rest
        m = _GDB_FRAME.match(text)
        if m is None or len(frames) >= MAX_DUMP_FRAMES:
            break
        name = _GDB_NAME.match(m.group(1))
        function = name.group(1) if name else "??"
        where = m.group(2) or m.group(4) or "??"
        frames.append(f'File "{where}", line {m.group(3) or 0}, in {function}')
        last = first_line + idx
    if len(frames) < 2:
        return None  # one frame is where a crash stopped, or a line that only looks like one
    return Traceback(path, first_line, last, rank, tuple(reversed(frames)), (), interrupted=True, truncated=True,
                     dump=True)


def assemble_stack_dump(lines: Iterable[bytes], path: str, first_line: int, rank: int | None, *,
                        faulthandler: bool = False) -> Traceback | None:
    """A dump of one thread (py-spy's, or faulthandler's), its frames innermost first as both print
    them, turned into Python's order and wording (`File "path", line N, in f`) so the traceback rules
    read where it waited. None when no frame follows the header, or, for faulthandler, when another
    thread follows: faulthandler lists the main thread last."""
    frames: list[str] = []
    last = first_line
    after: str | None = None
    for idx, raw in enumerate(lines):
        if idx == 0:
            continue
        text = split_prefix(_text(raw)).rest
        if faulthandler:
            m = _FH_FRAME.match(text)
            frame = f'File "{m.group(1)}", line {m.group(2)}, in {m.group(3)}' if m else None
        else:
            m = _PY_SPY_FRAME.match(text)
            frame = f'File "{m.group(2)}", line {m.group(3)}, in {m.group(1)}' if m else None
        if frame is None or len(frames) >= MAX_DUMP_FRAMES:
            if text.strip() or after is not None:
                after = text
                break
            after = ""  # one blank line may separate two threads' dumps
            continue
        frames.append(frame)
        last = first_line + idx
    if not frames or (faulthandler and after is not None and _FH_THREAD.search(after)):
        return None
    return Traceback(path, first_line, last, rank, tuple(reversed(frames)), (), interrupted=True, dump=True)


# IPython's (Jupyter's, Colab's) traceback: a header naming the class ("RuntimeError      Traceback (most recent
# call last)", no colon), frames in its own words and the exception line after a blank line:
#   IPython 8+: 'Cell In[6], line 28' / 'Input In [3], in <cell line: 1>()' and
#               'File /path/module.py:1518, in Module._call_impl(self, *args)'
#   IPython 7:  '<ipython-input-5-0f0b5a4c> in <module>' and '/path/trainer.py in train(self, trial)'
# each frame's source with its line numbers, the line that ran marked by an arrow ("---> 28 output = model(x)").
# (On RE2, as every line of such a traceback is tried against them: linear whatever a line holds. Compiled
# when the first such traceback comes: two of them are over a MiB each, in this process and each it forks.)
_IPY_HEADER = linear.Lazy(IPYTHON_HEADER)
_IPY_FILE = linear.Lazy(r"File (.{1,1000}?):(\d{1,9}), in ([^\s(]{1,200})")
_IPY_CELL = linear.Lazy(r"(?:Cell|Input) In ?\[(\d{0,9})\], (?:line (\d{1,9})|in ([^\s(]{1,200}))")
_IPY_OLD = linear.Lazy(r"(<ipython-input-[^>\s]{1,200}>|[^\s<>]{1,1000}\.py) in ([^\s(]{1,200})")
_IPY_ARROW = linear.Lazy(r"-{0,8}> ?\s{0,8}\d{1,9} ?(.*)")


def assemble_ipython_traceback(lines: Iterable[bytes], path: str, first_line: int,
                               rank: int | None) -> Traceback | None:
    """An IPython traceback, its frames turned into Python's wording (`File "path", line N, in function`, the
    source line that ran under it) so the traceback rules read it as they read Python's. The header names the
    exception's class; the exception line is the first that starts with it (or with it behind its module).
    Chained exceptions ("The above exception was the direct cause ...") carry on to the next header."""
    frames: list[str] = []
    exceptions: list[str] = []
    cls = ""
    last = first_line
    state = "frames"
    message_lines = 0
    for idx, raw in enumerate(lines):
        if idx >= MAX_OWN_LINES:
            break
        att = split_prefix(_text(raw))
        if att.rank is not None and rank is not None and att.rank != rank:
            continue
        stripped = att.rest.strip()
        header = _IPY_HEADER.fullmatch(stripped)
        if idx == 0:
            if header is None or (not header.group(1)[:1].isupper() and "." not in header.group(1)):
                return None
            cls = header.group(1).rsplit(".", 1)[-1]
            continue
        if state == "chain":
            if header is not None:
                cls, state = header.group(1).rsplit(".", 1)[-1], "frames"
                last = first_line + idx
            elif stripped and not stripped.strip("-"):
                continue  # the rule IPython draws above a header
            elif stripped:
                break
            continue
        if state == "after":
            if stripped.startswith(CHAIN):
                state = "chain"
                last = first_line + idx
            elif stripped.startswith(CARRIED):
                # A DataLoader worker's traceback, carried in the re-raised message ("Caught X in DataLoader
                # worker process 0."): Python's own wording, read on its own as the worker's.
                break
            elif stripped and message_lines < MAX_MESSAGE_LINES and not _RECORD.match(stripped):
                exceptions[-1] = f"{exceptions[-1]} {stripped}"[:4000]
                message_lines += 1
                last = first_line + idx
            elif stripped:
                break
            continue
        if not stripped:
            continue
        name = stripped.split(":", 1)[0]
        if name == cls or name.endswith("." + cls) or stripped == cls:
            exceptions.append(stripped)
            state, message_lines = "after", 0
            last = first_line + idx
            continue
        if m := _IPY_FILE.match(stripped):
            # (IPython 8 names a method by its qualified name, "Module._call_impl"; Python by its own name)
            frames.append(f'File "{m.group(1)}", line {m.group(2)}, in {m.group(3).rsplit(".", 1)[-1]}')
        elif m := _IPY_CELL.match(stripped):
            frames.append(f'File "Cell In[{m.group(1)}]", line {m.group(2) or 0}, in {m.group(3) or "<cell>"}')
        elif m := _IPY_OLD.match(stripped):
            frames.append(f'File "{m.group(1)}", line 0, in {m.group(2)}')
        elif stripped.startswith("-") and (m := _IPY_ARROW.fullmatch(stripped)):
            frames.append(m.group(1).strip()[:4000])  # the source line that ran, as Python quotes it under its frame
        elif not stripped[:1].isdigit() and not stripped.startswith("..."):
            continue  # a line of a frame's source IPython printed around the one that ran, cut or wrapped
        last = first_line + idx
    if not exceptions and len(frames) < 2:
        return None
    interrupted = cls == "KeyboardInterrupt"
    return Traceback(path, first_line, last, rank, tuple(frames[-60:]), tuple(exceptions), interrupted,
                     truncated=not exceptions)
