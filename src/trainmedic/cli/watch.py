"""`trainmedic watch FILE|DIR... [--follow]`: diagnose log files, or follow them as they grow."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from trainmedic.cli.env import Env
from trainmedic.cli.options import (
    add_format_options,
    add_library_option,
    chosen_format,
    colored,
    notify_url_ok,
    open_library,
)
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Diagnose log files or directories of rank logs. With --follow, keep reading as they grow (new files "
        "in a directory, rotation and truncation handled) and print a diagnosis as soon as a failure shows; "
        "Ctrl-C ends the watch with the final diagnosis."
    )
    p.add_argument("paths", nargs="+", metavar="FILE|DIR", help="log files or directories of logs")
    p.add_argument("--follow", "-f", action="store_true", help="keep following the files as they grow")
    p.add_argument("--interval", type=float, default=0.25, metavar="S", help="seconds between polls (default 0.25)")
    p.add_argument("--hang-timeout", type=float, default=None, metavar="S",
                   help="report a hang when the logs stop growing for S seconds (default: off)")
    p.add_argument("--startup-timeout", type=float, default=None, metavar="S",
                   help="before the first progress line, allow S seconds of silence (default: 5 x --hang-timeout)")
    p.add_argument("--pid", type=int, default=None,
                   help="the job's top process on this host: on a hang, its process tree's stacks are taken")
    p.add_argument("--exit-on-failure", action="store_true",
                   help="stop following (exit 1) as soon as a failure or a hang is found")
    p.add_argument("--metrics-port", type=int, default=None, metavar="P",
                   help="serve Prometheus metrics on 127.0.0.1:P (0 picks a free port)")
    p.add_argument("--notify", default=None, metavar="URL",
                   help="post the final diagnosis of a failure or hang to this webhook (Slack incoming webhook "
                        "or generic JSON), once, secrets redacted")
    p.add_argument("--notify-format", choices=("auto", "slack", "json"), default="auto",
                   help="the webhook's payload (default: slack for hooks.slack.com, else json)")
    p.add_argument("--report", type=Path, default=None, metavar="FILE",
                   help="write the final diagnosis as trainmedic.diagnosis/v1 JSON to FILE")
    add_format_options(p, json_help="print diagnoses as JSON (one object per line when following)")
    add_library_option(p)


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.logs.sources import InputError

    fmt = chosen_format(args)
    if args.notify is not None and not notify_url_ok(args.notify, env):
        return ExitCode.USAGE
    library = open_library(args.library, env)
    if library is None:
        return ExitCode.USAGE
    times = (args.interval, args.hang_timeout, args.startup_timeout)
    if any(t is not None and not (math.isfinite(t) and t > 0) for t in times):
        env.error("--interval, --hang-timeout and --startup-timeout must be positive numbers of seconds")
        return ExitCode.USAGE
    for raw in args.paths:
        if not Path(raw).exists():
            env.error(f"{raw}: no such file or directory")
            return ExitCode.USAGE
    if not args.follow:
        from trainmedic.api import Diagnoser
        from trainmedic.report import FORMATS

        try:
            diagnosis = Diagnoser(library).diagnose(args.paths)
        except InputError as exc:
            env.error(str(exc))
            return ExitCode.USAGE
        FORMATS[fmt](diagnosis, env.stdout, colored(fmt, env.stdout_isatty))
        env.stdout.flush()
        if args.report is not None:
            from trainmedic.report.jsonout import write_file

            write_file(diagnosis, args.report)
        if args.notify is not None and diagnosis.verdict != "healthy":
            from trainmedic.live import notify

            sent = notify.post(diagnosis, args.notify, args.notify_format)
            if not sent.ok:
                env.error(f"--notify: not delivered after {sent.attempts} attempt(s): {sent.detail}")
        return ExitCode.HEALTHY if diagnosis.verdict == "healthy" else ExitCode.FOUND

    from trainmedic.live.watcher import Watcher, WatchOptions

    opts = WatchOptions(paths=list(args.paths), library=library, interval=args.interval,
                        hang_timeout=args.hang_timeout,
                        startup_timeout=args.startup_timeout, pid=args.pid, exit_on_failure=args.exit_on_failure,
                        metrics_port=args.metrics_port, report=args.report, fmt=fmt, notify=args.notify,
                        notify_format=args.notify_format)
    return Watcher(opts, env).run()
