"""`trainmedic isolate MODULE:FACTORY`: confirm a DataLoader cause on the user's own dataset.

Runs the factory's loader with 0, 1 and N workers in fresh subprocesses (and with the file_system
sharing strategy when descriptors are the suspect), prints what each run did and used, and concludes
with the same `<entry>/<cause>` id as `diagnose`. Exit 0 healthy, 1 failure found, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from trainmedic.cli.env import Env
from trainmedic.model import ExitCode

if TYPE_CHECKING:
    from trainmedic.torch.isolate.results import IsolateReport, IsolateRun


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "factory",
        metavar="MODULE:FACTORY",
        help="a function returning a Dataset or DataLoader: dotted module (from the current directory "
        "or sys.path) or a .py path, then ':' and the function name",
    )
    p.add_argument("--workers", type=int, default=4, metavar="N", help="the worker count to test (default 4)")
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="B",
        help="batch size (default: the DataLoader's own, or 1 for a Dataset)",
    )
    p.add_argument("--batches", type=int, default=10, metavar="K", help="batches per run (default 10)")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds each run has for its K batches once the loader exists; a run still going then "
        "is a hang (default 60)",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=None,
        metavar="S",
        help="seconds each run has to import torch and your module and call the factory "
        "(default: 120, or --timeout if larger)",
    )
    p.add_argument(
        "--nofile",
        type=int,
        default=None,
        metavar="N",
        help="set RLIMIT_NOFILE to N in the runs, to reproduce a job's open-files limit",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--library", type=Path, default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.catalog import LibraryError, load_library
    from trainmedic.torch.isolate import isolate
    from trainmedic.torch.isolate.results import IsolateError

    try:
        library = load_library(args.library) if args.library else load_library()
    except LibraryError as exc:
        env.error(f"library: {exc}")
        return ExitCode.USAGE
    show_progress = env.stderr_isatty and not args.json

    def progress(r: IsolateRun) -> None:
        if show_progress:
            env.stderr.write(f"  num_workers={r.num_workers} {r.sharing_strategy}: {_result(r)}\n")
            env.stderr.flush()

    try:
        report = isolate(
            args.factory,
            workers=args.workers,
            batch_size=args.batch_size,
            batches=args.batches,
            timeout=args.timeout,
            startup_timeout=args.startup_timeout,
            nofile=args.nofile,
            env=env.environ,
            progress=progress,
            library=library,
        )
    except IsolateError as exc:
        env.error(str(exc))
        return ExitCode.USAGE
    if args.json:
        json.dump(report.to_json(), env.stdout, indent=2)
        env.stdout.write("\n")
    else:
        render(report, env)
    env.stdout.flush()
    return ExitCode.HEALTHY if report.healthy else ExitCode.FOUND


def _result(r: IsolateRun) -> str:
    if r.ok:
        return "ok"
    if r.hang:
        return "HANG"
    return "STALLED" if r.stalled else "FAIL"


def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{size:.1f}G"


def render(report: IsolateReport, env: Env) -> None:
    """A table of the runs, the shm estimate, the conclusion and its fix."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(
        file=env.stdout,
        force_terminal=env.stdout_isatty,
        no_color=not env.stdout_isatty,
        width=None if env.stdout_isatty else 120,
        highlight=False,
    )
    table = Table(title=f"trainmedic isolate {escape(report.factory)}", title_justify="left")
    for name, justify in (
        ("workers", "right"),
        ("sharing", "left"),
        ("result", "left"),
        ("batches", "right"),
        ("time", "right"),
        ("RSS main/worker", "right"),
        ("fds max/limit", "right"),
        ("shm used", "right"),
    ):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]  # rich's Literal
    for r in report.runs:
        result = _result(r)
        style = "green" if r.ok else "red"
        worker = max(r.worker_rss) if r.worker_rss else None
        rss = _bytes(r.main_rss) + (f"/{_bytes(worker)}" if r.num_workers else "")
        fds = f"{r.max_fds if r.max_fds is not None else '-'}/{r.fd_limit if r.fd_limit is not None else '-'}"
        table.add_row(
            str(r.num_workers),
            r.sharing_strategy,
            f"[{style}]{result}[/{style}]",
            f"{r.batches}/{report.batches}",
            f"{r.elapsed:.1f}s",
            rss,
            fds,
            _bytes(r.shm_bytes),
        )
    console.print(table)
    for r in report.runs:
        if r.error:
            console.print(f"num_workers={r.num_workers} {r.sharing_strategy}: {escape(_short(r.error))}")
    console.print(
        f"batch: {_bytes(report.batch_bytes)} (batch_size {report.batch_size}); shm demand "
        f"{report.workers} workers × prefetch {report.prefetch_factor} × batch = {_bytes(report.shm_demand)}"
        f" vs /dev/shm {_bytes(report.shm_size)}"
    )
    failing = _first_failure(report)
    if failing is not None:
        console.print()
        console.print(f"[bold]num_workers={failing.num_workers} ({failing.sharing_strategy}):[/bold]")
        console.print(escape(_tail(failing.traceback or failing.stack or failing.output, 20)))
    c = report.conclusion
    console.print()
    if c.id is None:
        why = c.why.removeprefix("healthy: ")
        console.print(f"[bold green]healthy[/bold green]: {escape(why)}")
        return
    title = f" ({escape(c.title)})" if c.title else ""
    console.print(f"[bold red]{escape(c.id)}[/bold red]{title}")
    console.print(f"  why: {escape(c.why)}")
    if c.confidence is not None:
        console.print(f"  confidence: {c.confidence:.2f}")
    for step in c.fix:
        console.print(f"  fix: {escape(step)}")
    console.print(f"  explain: trainmedic explain {escape(c.id)}")


def _first_failure(report: IsolateReport) -> IsolateRun | None:
    """The run whose traceback is worth showing: num_workers=0 shows the dataset's own error."""
    return next((r for r in report.runs if not r.ok), None)


def _short(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[-1] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _tail(text: str, lines: int) -> str:
    kept = [line for line in text.rstrip().splitlines() if line.strip()]
    return "\n".join(kept[-lines:])
