"""A command started as a process group of its own, and signals sent to that group.

A session of its own means a signal reaches the whole job (the command and the workers it forks)
through the group, and the command cannot grab the caller's terminal.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def start_group(argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start `argv` in a new session (its pid is its group's id), stdout and stderr piped.

    Raises what Popen raises (FileNotFoundError, OSError) for the caller to word.
    """
    return subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                            start_new_session=True)


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` to every process of the group; a group that is gone (or not ours) is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def signal_process(pid: int, sig: int) -> None:
    """Send `sig` to one process; one that is gone (or not ours) is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
