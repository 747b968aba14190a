"""`trainmedic diagnose PATH...`: the main job."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from trainmedic.catalog import Library
from trainmedic.cli.env import Env
from trainmedic.cli.options import add_format_options, add_library_option, chosen_format, colored, open_library
from trainmedic.model import ExitCode, Fact

PROGRESS_THRESHOLD = 50 << 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log files (plain, gz, zst, bz2, xz), directories of rank logs, or '-' for stdin")
    add_format_options(p, json_help="print trainmedic.diagnosis/v1 JSON (same as --format json)")
    add_library_option(p)
    p.add_argument("--scanner", choices=("hyperscan", "python"), default=None,
                   help="matcher back-end (default: hyperscan when installed)")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    p.add_argument("--baseline", metavar="GOOD", action="append", default=[],
                   help="a good run of the same job (its logs, or a file from `trainmedic baseline save`): "
                        "lines it never printed are ranked as the failure's evidence")
    facts = p.add_argument_group("machine facts (confirm or refute causes)")
    facts.add_argument("--probe", action="store_true", help="probe this host (run it on the failing host)")
    facts.add_argument("--facts", type=Path, metavar="DOCTOR_JSON", action="append", default=[],
                       help="facts saved by `trainmedic doctor --json` on the failing host")
    facts.add_argument("--dmesg", type=Path, metavar="FILE", action="append", default=[],
                       help="a saved kernel log (dmesg, journalctl -k, kern.log) from the failing host")


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.api import Diagnoser
    from trainmedic.logs.sources import InputError, expand
    from trainmedic.report import FORMATS

    fmt = chosen_format(args)
    library = open_library(args.library, env)
    if library is None:
        return ExitCode.USAGE
    try:
        facts = _facts(args, library)
    except (OSError, ValueError) as exc:
        env.error(str(exc))
        return ExitCode.USAGE
    baseline = None
    if args.baseline:
        from trainmedic.cli.baseline import load

        try:
            baseline = load(args.baseline, env)
        except (InputError, ValueError, OSError) as exc:
            env.error(str(exc))
            return ExitCode.USAGE
    try:
        sources = expand(args.paths)
        total = sum(s.size or 0 for s in sources)
        show = (not args.no_progress) and env.stderr_isatty and total > PROGRESS_THRESHOLD
        bar_ctx: AbstractContextManager[Callable[[int], None] | None] = (
            _progress(env, total) if show else nullcontext(None)
        )
        with bar_ctx as advance:
            diagnosis = Diagnoser(library, backend=args.scanner, baseline=baseline).diagnose(
                sources, stdin=env.stdin, on_bytes=advance, facts=facts)
    except InputError as exc:
        env.error(str(exc))
        return ExitCode.USAGE
    env.pending_exit = ExitCode.HEALTHY if diagnosis.verdict == "healthy" else ExitCode.FOUND
    FORMATS[fmt](diagnosis, env.stdout, colored(fmt, env.stdout_isatty))
    env.stdout.flush()
    return env.pending_exit


def _facts(args: argparse.Namespace, library: Library) -> list[Fact]:
    """Facts from --probe, --facts and --dmesg; a bad file raises with a one-line message."""
    if not (args.probe or args.facts or args.dmesg):
        return []
    from trainmedic.probes.facts import (
        collect_facts,
        facts_from_doctor_json,
        kernel_facts,
        kernel_records_from_file,
    )

    out: list[Fact] = []
    if args.probe:
        out.extend(collect_facts())
    for path in args.facts:
        if not path.is_file():
            raise ValueError(f"{path}: no such file (expected `trainmedic doctor --json` output)")
        out.extend(facts_from_doctor_json(path))
    for path in args.dmesg:
        try:
            records = kernel_records_from_file(path, library=library)
        except OSError as exc:
            raise ValueError(f"{path}: cannot read kernel log: {exc.strerror or exc}") from None
        out.extend(kernel_facts(records, str(path)))
    return out


class _progress:
    """A rich progress bar on stderr, counting bytes read (compressed inputs count what they decode to)."""

    def __init__(self, env: Env, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self._bar = Progress("reading logs", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                             console=Console(file=env.stderr, force_terminal=env.stderr_isatty), transient=True)
        self._total = total

    def __enter__(self) -> Callable[[int], None]:
        self._bar.__enter__()
        task = self._bar.add_task("read", total=self._total)

        def advance(n: int) -> None:
            self._bar.advance(task, n)

        return advance

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(None, None, None)
