"""`trainmedic serve` through the real CLI: flags, one-line errors, and the running server."""

from __future__ import annotations

import http.client
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import run_cli
from tests.web.conftest import Served


def test_help_lists_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli("serve", "--help")
    assert r.code == 0
    out = r.out + capsys.readouterr().out  # argparse prints --help itself
    for flag in ("--host", "--port", "--db", "--max-upload-mb"):
        assert flag in out
    assert "127.0.0.1" in out


def test_busy_port_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = run_cli("serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'h.db'}")
    assert r.code == 2
    assert r.err.startswith("trainmedic: error: cannot listen on 127.0.0.1:")
    assert r.err.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (["--db", "mysql://u:p@h/db"], "unsupported database URL"),
    (["--port", "70000"], "expected 0..65535"),
    (["--max-upload-mb", "0"], "must be positive"),
])
def test_bad_flags_are_usage_errors(args: list[str], message: str) -> None:
    r = run_cli("serve", *args)
    assert r.code == 2
    assert message in r.err and r.err.count("\n") == 1


def test_the_core_does_not_import_the_web_stack() -> None:
    import subprocess

    code = ("import sys, trainmedic.api, trainmedic.cli.main, trainmedic.web; "
            "trainmedic.api.diagnose('step 1\\n'); "
            "bad = [m for m in ('fastapi', 'starlette', 'sqlalchemy', 'uvicorn', 'jinja2') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_server_binds_loopback_and_checks_the_host_header(served: Served) -> None:
    parts = urlsplit(served.url)
    assert parts.hostname == "127.0.0.1"
    with urllib.request.urlopen(served.url + "/", timeout=10) as r:
        assert r.status == 200
        assert "default-src 'none'" in r.headers["content-security-policy"]
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("GET", "/", headers={"Host": "rebound.attacker.example"})  # DNS rebinding
    resp: Any = conn.getresponse()
    assert resp.status == 400
    conn.close()
