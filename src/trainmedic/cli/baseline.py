"""`trainmedic baseline save GOOD... -o job.baseline`: keep a good run's line templates, so the runs of
the same job that fail can be compared with it (`trainmedic diagnose BAD --baseline job.baseline`)."""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from trainmedic.cli.env import Env
from trainmedic.model import ExitCode

if TYPE_CHECKING:
    from trainmedic.reason.templates import Baseline


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    save = sub.add_parser("save", help="mine a good run's logs into a baseline file")
    save.add_argument("paths", nargs="+", metavar="PATH", help="the good run's logs (files, directories, '-')")
    save.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the baseline file to write")


def _saved(path: Path | None) -> bool:
    """A baseline file (`baseline save`'s output) rather than a log: it says so in its first bytes."""
    from trainmedic.reason.templates import SCHEMA

    if path is None or not path.is_file():
        return False
    with path.open("rb") as f:
        return SCHEMA.encode() in f.read(200)


def load(paths: list[str], env: Env) -> Baseline:
    """One baseline from good logs and/or saved baseline files, merged. Raises ValueError or InputError."""
    from trainmedic.logs.sources import expand
    from trainmedic.reason.templates import Baseline, head_and_tail, mine

    sources = expand(paths)
    parts = [Baseline.load(s.path) for s in sources if s.path is not None and _saved(s.path)]
    logs = [s for s in sources if not _saved(s.path)]
    if logs:
        with ExitStack() as stack:
            streams = [stack.enter_context(s.open(env.stdin)) for s in logs]
            parts.append(mine((s.name, head_and_tail(f, s.size, s.name)) for s, f in zip(logs, streams, strict=True)))
    templates: dict[str, int] = {}
    for b in parts:
        for t, n in b.templates.items():
            templates[t] = templates.get(t, 0) + n
    return Baseline(templates, tuple(n for b in parts for n in b.sources), sum(b.lines for b in parts))


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.logs.sources import InputError

    try:
        baseline = load(args.paths, env)
    except (InputError, ValueError, OSError) as exc:
        env.error(str(exc))
        return ExitCode.USAGE
    try:
        baseline.save(args.output)
    except OSError as exc:
        env.error(f"{args.output}: cannot write: {exc.strerror or exc}")
        return ExitCode.USAGE
    env.stdout.write(f"baseline: {len(baseline.templates)} templates from {baseline.lines} lines of "
                     f"{len(baseline.sources)} log(s) -> {args.output}\n")
    return ExitCode.HEALTHY
