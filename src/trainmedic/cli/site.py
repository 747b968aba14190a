"""`trainmedic site build OUT`: the static encyclopedia, generated from the library files."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from trainmedic.cli.env import Env
from trainmedic.cli.options import add_library_option, open_library
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    build = sub.add_parser("build", help="write the HTML site to a folder",
                           description="Write the HTML encyclopedia (one page per entry) to OUT.")
    build.add_argument("out", type=Path, metavar="OUT", help="folder to write the site into (created if missing)")
    build.add_argument(
        "--base-url", default="", metavar="URL",
        help="URL the site is served under, e.g. / or /docs/; by default every link is relative, "
             "so the folder works from disk and under any path",
    )
    add_library_option(build, "a library folder (default: the bundled one)", metavar="DIR")


def run(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.site.build import SiteError, build_site

    if importlib.util.find_spec("jinja2") is None:  # the optional extra: one clear line, not a traceback
        env.error("site build needs jinja2: pip install 'trainmedic[site]'")
        return ExitCode.USAGE
    lib = open_library(args.library, env)
    if lib is None:
        return ExitCode.FOUND
    if args.out.exists() and not args.out.is_dir():
        env.error(f"{args.out} exists and is not a folder; choose another OUT")
        return ExitCode.USAGE
    try:
        written = build_site(args.out, lib, base_url=args.base_url)
    except SiteError as exc:
        env.error(f"site: {exc}; run `trainmedic library check` for details")
        return ExitCode.FOUND
    except OSError as exc:
        env.error(f"cannot write the site to {args.out}: {exc.strerror or exc}")
        return ExitCode.USAGE
    pages = f"{len(lib)} entry page" + ("s" if len(lib) != 1 else "")
    env.stdout.write(f"site: wrote the index and {pages} ({len(written)} files) to {args.out}; "
                     f"open {args.out / 'index.html'}\n")
    return ExitCode.HEALTHY
