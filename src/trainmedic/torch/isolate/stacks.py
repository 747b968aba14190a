"""faulthandler's stack dumps in a run's output: where the dump starts, and the frame the run was stuck in.

A run that reaches its time limit dumps the Python stacks of its main process and workers just
before it is killed (see trainmedic.torch._isolate_child). The innermost frame of the user's own
code in that dump is where the loader waited: the evidence a hang is reported with.
"""

from __future__ import annotations

import re

_STACK_START = re.compile(r"^(?:Timeout \([0-9:.]+\)!|Current thread 0x|Thread 0x)", re.MULTILINE)
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)', re.MULTILINE)
# Frames of the interpreter, torch and the isolate child: not where the user's code is stuck.
_INTERNAL_FRAME = re.compile(
    r"/(?:site|dist)-packages/torch/|/lib/python3\.\d+/(?!(?:site|dist)-packages/)"
    r"|/trainmedic/torch/_isolate_child\.py$|^<"
)


def stack_dump(output: str) -> str:
    """The part of a run's output from the first faulthandler dump on ("" when it has none)."""
    m = _STACK_START.search(output)
    return output[m.start() :] if m else ""


def stuck_frame(stack: str) -> str:
    """The innermost frame of user code in faulthandler's dump: where the loader was stuck."""
    for m in _FRAME.finditer(stack):
        if not _INTERNAL_FRAME.search(m.group("path")):
            return f"{m.group('path')}:{m.group('line')} in {m.group('func')}"
    return ""
