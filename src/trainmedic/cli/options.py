"""Options several commands share, defined once: the report format and the library to diagnose with."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainmedic.catalog import Library, LibraryError, load_library
from trainmedic.cli.env import Env
from trainmedic.report import DEFAULT_FORMAT, FORMATS


def add_format_options(p: argparse.ArgumentParser, *, json_help: str, format_help: str = "output format") -> None:
    """`--json` and `--format`; the formats are the report registry's (`trainmedic.report.FORMATS`)."""
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--format", choices=tuple(FORMATS), default=None, help=format_help)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="the full text report: every evidence line, fix step, alternative and collateral line")


def chosen_format(args: argparse.Namespace) -> str:
    """`--json` wins over `--format`; neither means the text report (`--verbose`: the full one)."""
    fmt = "json" if args.json else (args.format or DEFAULT_FORMAT)
    return "verbose" if fmt == DEFAULT_FORMAT and getattr(args, "verbose", False) else fmt


def colored(fmt: str, isatty: bool) -> bool:
    """Colour only for a terminal reading one of the text reports."""
    return isatty and fmt in ("text", "verbose")


def add_library_option(p: argparse.ArgumentParser, help_text: str = argparse.SUPPRESS,
                       metavar: str | None = None) -> None:
    """`--library DIR`: a library folder instead of the bundled one (hidden unless a command documents it)."""
    p.add_argument("--library", type=Path, default=None, metavar=metavar, help=help_text)


def open_library(folder: Path | None, env: Env) -> Library | None:
    """The library in `folder` (default: TRAINMEDIC_LIBRARY or the bundled one); None after one error line."""
    try:
        return load_library(folder)
    except LibraryError as exc:
        env.error(f"library: {exc}")
        return None


def notify_url_ok(url: str, env: Env) -> bool:
    """--notify takes an http(s) URL; anything else is a usage error, said before the job starts."""
    from trainmedic.live.notify import valid_url

    if valid_url(url):
        return True
    env.error(f"--notify {url!r}: not an http(s) URL")
    return False

