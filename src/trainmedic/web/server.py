"""Run the app on uvicorn from a socket we bound ourselves.

Binding first means a busy port is one clear error line (not uvicorn's log and exit), port 0
gives a free port whose URL we can print, and tests start the very same server in a thread.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; raises OSError (e.g. address in use) for the caller to report."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def make_server(app: Any, log_level: str = "warning") -> Any:
    import uvicorn

    # No lifespan: the app needs no start-up hooks, and without it Ctrl+C leaves no cancelled task to log.
    config = uvicorn.Config(app, log_level=log_level, access_log=False, server_header=False, lifespan="off",
                            timeout_graceful_shutdown=3)
    return uvicorn.Server(config)


class Background:
    """The server in a daemon thread (tests, notebooks); `stop()` shuts it down cleanly."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = bind(host, port)
        self.url = url_of(self.sock)
        self.server = make_server(app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def start(self) -> Background:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
