"""`trainmedic lsp`: the language server for training logs, over stdin/stdout (any LSP editor)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import BinaryIO

from trainmedic.cli.env import Env
from trainmedic.cli.options import add_library_option
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true",
                   help="talk over stdin/stdout (the default; accepted because some clients pass it)")
    p.add_argument("--site-url", metavar="DIR_OR_URL",
                   help="a locally built encyclopedia (`trainmedic site`) that 'open the page' actions link to; "
                        "without it they show `trainmedic explain` text (clients may also set trainmedic.siteUrl)")
    p.add_argument("--debounce-ms", type=int, default=300, metavar="MS",
                   help="wait this long after an edit before diagnosing again (default: 300)")
    p.add_argument("--disk-threshold-mb", type=float, default=8.0, metavar="MB",
                   help="read unmodified documents at least this big from disk instead of the editor's copy "
                        "(default: 8)")
    add_library_option(p, "a library folder to diagnose with (default: the bundled one); for library authors",
                       metavar="DIR")
    p.add_argument("--log-file", metavar="PATH", help="write the server's own log here (default: stderr)")
    p.add_argument("-v", "--verbose", action="store_true", help="log requests and timings")


def run(args: argparse.Namespace, env: Env) -> int:
    try:
        from trainmedic.lsp.server import EditorSettings, serve
    except ImportError as exc:
        env.error(f"the language server needs pygls ({exc.name} is missing): pip install 'trainmedic[lsp]'")
        return ExitCode.USAGE
    if args.debounce_ms < 0 or args.disk_threshold_mb < 0:
        env.error("--debounce-ms and --disk-threshold-mb must not be negative")
        return ExitCode.USAGE
    if args.library is not None and not args.library.is_dir():
        env.error(f"--library {args.library}: not a folder")
        return ExitCode.USAGE
    out: BinaryIO | None = getattr(env.stdout, "buffer", None)
    if out is None:
        env.error("the language server talks over a binary stdout; run it as `trainmedic lsp` from an editor")
        return ExitCode.USAGE
    handler: logging.Handler = (
        logging.FileHandler(args.log_file, encoding="utf-8") if args.log_file else logging.StreamHandler(env.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    settings = EditorSettings(
        site_url=args.site_url,
        debounce_s=args.debounce_ms / 1000,
        disk_threshold=int(args.disk_threshold_mb * (1 << 20)),
        library_dir=args.library,
    )
    # stdout carries the protocol: anything else printed there would corrupt it.
    saved = sys.stdout
    if env.stdout is sys.stdout:
        sys.stdout = sys.stderr
    try:
        serve(settings, env.stdin, out)
    finally:
        sys.stdout = saved
        root.removeHandler(handler)
    return ExitCode.HEALTHY
