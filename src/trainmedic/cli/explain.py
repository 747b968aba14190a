"""`trainmedic explain ID`: an encyclopedia entry or one cause, in the terminal."""

from __future__ import annotations

import argparse
import difflib

from trainmedic.catalog import load_library
from trainmedic.cli.env import Env
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="an entry (dataloader-worker-failure) or one cause (.../shm-exhausted)")


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.report.entry import render_entry

    lib = load_library()
    try:
        entry, cause = lib.resolve(args.id)
    except KeyError as exc:
        if "several entries" in str(exc):
            env.error(f"{exc.args[0]}; say which")
            return ExitCode.USAGE
        # A cause's own name counts as much as its full id: "shm-exhaust" is close to ".../shm-exhausted".
        by_name = {e.id: e.id for e in lib} | {c.full_id: c.full_id for c in lib.causes()}
        by_name |= {c.id: c.full_id for c in lib.causes() if c.id not in by_name}
        close = [by_name[n] for n in difflib.get_close_matches(args.id, list(by_name), n=3, cutoff=0.6)]
        hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else "; see `trainmedic library list`"
        env.error(f"unknown id {args.id!r}{hint}")
        return ExitCode.USAGE
    render_entry(entry, cause, env.stdout, env.stdout_isatty)
    return ExitCode.HEALTHY
