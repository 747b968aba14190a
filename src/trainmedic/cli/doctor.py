"""`trainmedic doctor`: probe this machine for the causes of DataLoader failures.

Exit 1 when any check fails, 0 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import socket
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from trainmedic.cli.env import Env
from trainmedic.model import ExitCode
from trainmedic.probes.base import Check, ProbeContext, parse_size
from trainmedic.probes.facts import doctor_json
from trainmedic.probes.runner import run_probes

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "unknown": "magenta"}


def _size(text: str) -> int:
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 bytes: {text!r}")
    return value


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as one JSON object")
    parser.add_argument("-v", "--verbose", action="store_true", help="why and fix of every check, not only the failing")
    parser.add_argument(
        "--workers",
        type=_int_at_least(0),
        metavar="N",
        help="DataLoader num_workers you plan to use",
    )
    parser.add_argument(
        "--batch-bytes",
        type=_size,
        metavar="B",
        help="bytes of one batch as a worker returns it (e.g. 64M, 2GiB)",
    )
    parser.add_argument(
        "--prefetch-factor",
        type=_int_at_least(1),
        metavar="P",
        help="DataLoader prefetch_factor (default 2)",
    )


def make_context(args: argparse.Namespace, env: Env) -> ProbeContext:
    return ProbeContext(
        environ=dict(env.environ),
        workers=args.workers,
        batch_bytes=args.batch_bytes,
        prefetch_factor=args.prefetch_factor,
    )


_MARK = {"ok": "✓", "warn": "!", "fail": "✗", "unknown": "?"}
_HINT = "add --workers N --batch-bytes B (one batch, e.g. 64M) to compare /dev/shm with your DataLoader's demand"


def render_checks(checks: list[Check], env: Env, host: str, *, verbose: bool = False,
                  demand_known: bool = True) -> None:
    """The human view, as `flutter doctor` prints it: one line per check with its mark, then why and
    the fix for what is wrong or unknown (every check with --verbose); the one hint that matters first."""
    width = None if env.stdout_isatty else int(env.environ.get("COLUMNS", "160") or 160)
    # Off a terminal nothing wraps: the lines are grepped and pasted.
    console = Console(file=env.stdout, force_terminal=env.stdout_isatty, soft_wrap=not env.stdout_isatty,
                      no_color=bool(env.environ.get("NO_COLOR")), width=width, highlight=False)
    console.print(Text(f"trainmedic doctor on {host}", style="bold"))
    if not demand_known:
        console.print(Text("hint: ", style="bold").append(_HINT))
    name_width = max((len(c.id) for c in checks), default=0) + 2
    for c in checks:
        line = Text("[").append(_MARK[c.status], style=_STYLE[c.status]).append("] ")
        line.append(c.id.ljust(name_width), style="bold" if c.status != "ok" else "")
        line.append(c.value)
        console.print(line, overflow="fold")
        if c.status == "ok" and not verbose:
            continue
        for label, text in (("threshold", c.threshold), ("why", c.why), ("fix", c.fix)):
            if text and (verbose or label != "threshold"):
                console.print(Padding(Text(f"{label}: ", style="dim").append(text), (0, 0, 0, 4), expand=False))
    counts = Counter(c.status for c in checks)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("fail", "warn", "ok", "unknown") if counts[s])
    console.print(summary)


def run(args: argparse.Namespace, env: Env) -> int:
    if args.batch_bytes is not None and args.workers is None:
        env.error("--batch-bytes needs --workers (demand = workers x prefetch factor x batch bytes)")
        return ExitCode.USAGE
    checks = run_probes(make_context(args, env))
    host = socket.gethostname()
    if args.json:
        env.stdout.write(json.dumps(doctor_json(checks, host), indent=2) + "\n")
    else:
        render_checks(checks, env, host, verbose=args.verbose, demand_known=args.workers is not None)
    env.stdout.flush()
    return ExitCode.FOUND if any(c.status == "fail" for c in checks) else ExitCode.HEALTHY
