"""`trainmedic run [OPTIONS] -- CMD ...`: run a training command and diagnose it while it runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainmedic.cli.env import Env
from trainmedic.cli.options import (
    add_format_options,
    add_library_option,
    chosen_format,
    notify_url_ok,
    open_library,
)
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run a training command (python, torchrun, accelerate, deepspeed ...), pass its output through "
        "unchanged, and print a diagnosis on stderr as soon as a failure appears and when it exits. "
        "The exit status is the command's own (128+N when a signal N killed it)."
    )
    p.usage = "%(prog)s [options] -- CMD [ARG ...]"
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command to run")
    p.add_argument("--hang-timeout", type=float, default=None, metavar="S",
                   help="after S seconds without progress (no output, or progress lines that stop advancing), "
                        "dump every process's Python stack and report where the job hangs (default: off)")
    p.add_argument("--startup-timeout", type=float, default=None, metavar="S",
                   help="before the first progress line (imports, rendezvous, loading), allow S seconds of "
                        "silence (default: 5 x --hang-timeout)")
    p.add_argument("--on-hang", choices=("keep", "kill"), default="keep",
                   help="after reporting a hang, leave the job running (keep, the default) or stop it (kill)")
    p.add_argument("--metrics-port", type=int, default=None, metavar="P",
                   help="serve Prometheus metrics on 127.0.0.1:P (0 picks a free port, printed on stderr)")
    p.add_argument("--notify", default=None, metavar="URL",
                   help="post the final diagnosis of a failure or hang to this webhook (Slack incoming webhook "
                        "or generic JSON), once, secrets redacted")
    p.add_argument("--notify-format", choices=("auto", "slack", "json"), default="auto",
                   help="the webhook's payload (default: slack for hooks.slack.com, else json)")
    p.add_argument("--report", type=Path, default=None, metavar="FILE",
                   help="write the final diagnosis as trainmedic.diagnosis/v1 JSON to FILE")
    add_format_options(
        p, json_help="print each diagnosis as one JSON line on stderr instead of text (same as --format json)",
        format_help="diagnosis format")
    add_library_option(p)


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.live.job import Job, JobOptions

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        env.error("run: no command given; usage: trainmedic run [OPTIONS] -- CMD ...")
        return ExitCode.USAGE
    if any(t is not None and t <= 0 for t in (args.hang_timeout, args.startup_timeout)):
        env.error("--hang-timeout and --startup-timeout must be positive numbers of seconds")
        return ExitCode.USAGE
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        env.error("--metrics-port must be between 0 and 65535")
        return ExitCode.USAGE
    if args.notify is not None and not notify_url_ok(args.notify, env):
        return ExitCode.USAGE
    library = open_library(args.library, env)
    if library is None:
        return ExitCode.USAGE
    opts = JobOptions(argv=command, library=library, hang_timeout=args.hang_timeout,
                      startup_timeout=args.startup_timeout, on_hang=args.on_hang,
                      metrics_port=args.metrics_port, report=args.report, fmt=chosen_format(args),
                      notify=args.notify, notify_format=args.notify_format)
    return Job(opts, env).run()
