"""`trainmedic serve`: the local web app (paste or drop logs, read the diagnosis, keep a history)."""

from __future__ import annotations

import argparse
import math

from trainmedic.cli.env import Env
from trainmedic.cli.options import add_library_option
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1, this machine only; the app has no login, "
                        "so think twice before 0.0.0.0)")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    p.add_argument("--db", metavar="URL", default=None,
                   help="history database: sqlite:///PATH or postgresql+psycopg://USER:PASS@HOST:PORT/DB "
                        "(default: sqlite under $XDG_DATA_HOME/trainmedic, i.e. ~/.local/share/trainmedic/history.db)")
    p.add_argument("--max-upload-mb", type=float, default=100.0, metavar="MB",
                   help="largest request accepted (default: 100); the page reduces big logs before sending")
    add_library_option(p)


def allowed_hosts(host: str, loopback: bool, loopback_names: tuple[str, ...]) -> tuple[str, ...] | None:
    """The Host headers a loopback server answers (against DNS rebinding), IPv6 literals included;
    None (any) when it was bound to a public address on purpose."""
    return (*loopback_names, host) if loopback else None


def run(args: argparse.Namespace, env: Env) -> int:
    try:
        from trainmedic.web.app import Settings, create_app
        from trainmedic.web.server import LOOPBACK_NAMES, bind, is_loopback, make_server, url_of
        from trainmedic.web.store import StoreError
    except ImportError as exc:
        env.error(f"the web app needs its extra packages ({exc.name or exc}): pip install 'trainmedic[web]'")
        return ExitCode.USAGE
    from trainmedic.catalog import LibraryError, load_library

    if not 0 <= args.port <= 65535:
        env.error(f"--port {args.port}: expected 0..65535")
        return ExitCode.USAGE
    if not math.isfinite(args.max_upload_mb) or args.max_upload_mb <= 0:
        env.error("--max-upload-mb must be positive")
        return ExitCode.USAGE
    loopback = is_loopback(args.host)
    try:
        library = load_library(args.library)
        settings = Settings(
            db_url=args.db,
            max_upload_bytes=int(args.max_upload_mb * (1 << 20)),
            allowed_hosts=allowed_hosts(args.host, loopback, LOOPBACK_NAMES),
            library=library,
            environ=env.environ,
        )
        app = create_app(settings)
    except LibraryError as exc:
        env.error(f"library: {exc}")
        return ExitCode.USAGE
    except StoreError as exc:
        env.error(str(exc))
        return ExitCode.USAGE
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        env.error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return ExitCode.USAGE
    url = url_of(sock)
    env.stdout.write(f"trainmedic: serving on {url}  (history: {app.state.store.display_url()})\n")
    if not loopback:
        env.stderr.write("trainmedic: warning: listening beyond this machine; anyone who can reach it can read "
                         "the history. Put it behind an authenticating proxy.\n")
    env.stdout.write("trainmedic: press Ctrl+C to stop\n")
    env.stdout.flush()
    server = make_server(app)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl+C it handled; stopping is the normal way out
        env.stdout.write("trainmedic: stopped\n")
        return ExitCode.INTERRUPTED
    finally:
        sock.close()
        app.state.store.dispose()
    return ExitCode.HEALTHY
