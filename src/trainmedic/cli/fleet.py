"""`trainmedic fleet scan DIR...` and `trainmedic fleet report`: diagnose thousands of jobs into the history
database, then say which failures dominate, what they cost and which hosts start them."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from trainmedic.cli.env import Env
from trainmedic.model import ExitCode

if TYPE_CHECKING:
    from trainmedic.fleet.store import FleetStore

_DB_HELP = ("database: sqlite:///PATH or postgresql+psycopg://USER:PASS@HOST:PORT/DB (default: serve's history, "
            "sqlite under $XDG_DATA_HOME/trainmedic)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    scan = sub.add_parser("scan", help="diagnose every job under the given folders (only jobs that changed)")
    scan.add_argument("paths", nargs="+", metavar="DIR|FILE", help="folders of jobs, Slurm outputs, log dirs")
    scan.add_argument("--db", metavar="URL", default=None, help=_DB_HELP)
    scan.add_argument("--jobs", type=int, default=None, metavar="N", help="local worker processes (default: cores)")
    scan.add_argument("--ray", metavar="ADDRESS", default=None,
                      help="run the diagnoses as Ray tasks: 'auto' joins a running cluster, 'local' starts one "
                           "here (needs trainmedic[fleet])")
    report = sub.add_parser("report", help="failures by cause, GPU hours lost, hosts above chance, unknown failures")
    report.add_argument("--db", metavar="URL", default=None, help=_DB_HELP)
    report.add_argument("--format", choices=("markdown", "json"), default="markdown")


def _store(url: str | None, env: Env) -> FleetStore | None:
    try:
        from trainmedic.fleet.store import FleetStore
        from trainmedic.web.store import StoreError, default_url
    except ImportError:
        env.error("fleet needs the database layer: pip install 'trainmedic[fleet]'")
        return None
    try:
        store = FleetStore(url or default_url())
        store.create()
    except StoreError as exc:
        env.error(str(exc))
        return None
    return store


def run(args: argparse.Namespace, env: Env) -> int:
    from pathlib import Path

    store = _store(args.db, env)
    if store is None:
        return ExitCode.USAGE
    from trainmedic.fleet.report import markdown, summarise

    try:
        if args.action == "report":
            summary = summarise(store.rows())
            env.stdout.write(json.dumps(summary, indent=2) + "\n" if args.format == "json" else markdown(summary))
            return ExitCode.HEALTHY
        from trainmedic.fleet.jobs import discover
        from trainmedic.fleet.scan import scan

        missing = [p for p in args.paths if not Path(p).exists()]
        if missing:
            env.error(f"{missing[0]}: no such file or directory")
            return ExitCode.USAGE
        if args.jobs is not None and args.jobs < 1:
            env.error("--jobs must be at least 1")
            return ExitCode.USAGE
        try:
            read, same = scan(discover(args.paths), store.signatures(), store.put, workers=args.jobs,
                              ray_address=args.ray)
        except RuntimeError as exc:
            env.error(str(exc))
            return ExitCode.USAGE
        env.stderr.write(f"trainmedic fleet: read {read} job(s), {same} unchanged (history: "
                         f"{store.display_url()})\n")
        return ExitCode.HEALTHY
    finally:
        store.dispose()

