"""RLIMIT_NOFILE and the descriptors already open.

With torch's default sharing strategy on Linux (`file_descriptor`) every tensor in flight between
a worker and the main process holds a descriptor, so a soft limit of 1024 runs out quickly:
"Too many open files" or "received 0 items of ancdata".
"""

from __future__ import annotations

import re
import resource
import sys
from collections.abc import Mapping

from trainmedic.probes.base import (
    UNLIMITED,
    Check,
    DataValue,
    ProbeContext,
    ProbeFact,
    format_limit,
    read_rlimit,
    stated,
    unknown,
    whole,
)

MIN_SOFT = 4096
BUSY_FRACTION = 0.8


def read_limits(ctx: ProbeContext) -> tuple[int, int] | None:
    """(soft, hard) RLIMIT_NOFILE, -1 for unlimited."""
    return read_rlimit(ctx, "Max open files", resource.RLIMIT_NOFILE)


def count_open(ctx: ProbeContext) -> int | None:
    try:
        n = sum(1 for _ in ctx.proc("self/fd").iterdir())
    except OSError:
        return None
    return n - 1 if ctx.proc_root == "/proc" else n  # listdir itself holds one while counting


def sharing_strategy(ctx: ProbeContext) -> tuple[str, bool]:
    """The torch sharing strategy if torch is already imported here, else torch's Linux default."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return str(torch.multiprocessing.get_sharing_strategy()), True
        except Exception:  # a half-imported torch must not break the probe
            pass
    return "file_descriptor", False


class NofileProbe:
    id = "nofile"
    time_limit = 5.0

    @staticmethod
    def facts(data: Mapping[str, DataValue]) -> tuple[ProbeFact, ...]:
        """The soft and hard RLIMIT_NOFILE (-1 in data is `unlimited`): what fd-exhaustion is judged by."""

        def limit(n: DataValue) -> int | str | None:
            return UNLIMITED if n == -1 else whole(n)

        return stated(("nofile.soft", limit(data.get("soft"))), ("nofile.hard", limit(data.get("hard"))))

    @staticmethod
    def data_from_value(value: str) -> dict[str, DataValue]:
        """`soft 1024, hard 4096, open 12` back into numbers (-1 for unlimited)."""
        out: dict[str, DataValue] = {}
        for key in ("soft", "hard"):
            if m := re.search(rf"\b{key} (\d+|{UNLIMITED})", value):
                out[key] = -1 if m.group(1) == UNLIMITED else int(m.group(1))
        return out

    def run(self, ctx: ProbeContext) -> Check:
        limits = read_limits(ctx)
        if limits is None:
            return unknown(self.id, f"cannot read {ctx.proc('self/limits')}")
        soft, hard = limits
        open_fds = count_open(ctx)
        strategy, known = sharing_strategy(ctx)
        value = f"soft {format_limit(soft)}, hard {format_limit(hard)}"
        if open_fds is not None:
            value += f", open {open_fds}"
        data = {"soft": soft, "hard": hard, "open": open_fds, "sharing_strategy": strategy}
        facts = self.facts(data)
        threshold = f"soft >= {MIN_SOFT} with the file_descriptor sharing strategy"
        assumed = "" if known else " (torch's Linux default)"
        raise_to = "65536" if hard < 0 or hard >= 65536 else str(hard)
        fix = (
            f"`ulimit -n {raise_to}` before starting (docker: `--ulimit nofile=65536:65536`; "
            "hosts: /etc/security/limits.conf), or "
            "`torch.multiprocessing.set_sharing_strategy('file_system')`"
        )
        if strategy == "file_descriptor" and 0 <= soft < MIN_SOFT:
            return Check(
                id=self.id,
                status="warn",
                value=value,
                threshold=threshold,
                why=(
                    f"with sharing strategy {strategy}{assumed} every tensor passed between DataLoader "
                    f"workers holds a descriptor; {soft} runs out with 'Too many open files'"
                ),
                fix=fix,
                data=data,
                facts=facts,
            )
        if open_fds is not None and soft > 0 and open_fds > BUSY_FRACTION * soft:
            return Check(
                id=self.id,
                status="warn",
                value=value,
                threshold=f"open < {int(BUSY_FRACTION * 100)}% of soft",
                why=f"{open_fds} of {soft} descriptors are already open in this process",
                fix=fix,
                data=data,
                facts=facts,
            )
        return Check(
            id=self.id,
            status="ok",
            value=value,
            threshold=threshold,
            why=f"sharing strategy {strategy}{assumed} holds one descriptor per tensor in flight",
            fix="",
            data=data,
            facts=facts,
        )
