"""The language server survives a message it cannot hold (issue 13): `Content-Length:
99999999999999` made pygls raise MemoryError and die; an oversized message is now dropped and the
server answers the next one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.lsp.client import SERVER


def _frame(payload: dict[str, object] | bytes) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_an_oversized_message_is_dropped_and_the_server_answers_the_next() -> None:
    big = b'{"jsonrpc": "2.0", "method": "x", "params": "' + b"a" * 5000 + b'"}'
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    shutdown = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
    stream = _frame(big) + _frame(init) + _frame(shutdown) + _frame({"jsonrpc": "2.0", "method": "exit"})
    env = {**os.environ, "TRAINMEDIC_LSP_MAX_MESSAGE": "1000"}
    result = subprocess.run(SERVER, input=stream, capture_output=True, timeout=60, env=env, check=False)
    assert b'"id": 1' in result.stdout or b'"id":1' in result.stdout, result.stderr[-2000:]
    assert b"MemoryError" not in result.stderr


def test_a_huge_announced_length_does_not_kill_the_server() -> None:
    stream = b"Content-Length: 99999999999999\r\n\r\n" + b"{}"
    result = subprocess.run([sys.executable, "-m", "trainmedic", "lsp"], input=stream, capture_output=True,
                            timeout=60, check=False)
    assert b"MemoryError" not in result.stderr and b"Traceback" not in result.stderr


def _replies(stdout: bytes) -> list[dict[str, object]]:
    out = []
    for part in stdout.split(b"Content-Length")[1:]:
        body = part[part.index(b"{"):]
        out.append(json.loads(body[: body.rindex(b"}") + 1]))
    return out


def test_malformed_requests_get_the_json_rpc_errors() -> None:
    """Invalid params got no response at all (the client waited for good); a body that is not JSON got
    a pop-up instead of the parse error."""
    msgs: list[dict[str, object] | bytes] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"foo": 1}},
        b'{"jsonrpc": "2.0", "id": 3, "method": ',
        {"jsonrpc": "2.0", "id": 4, "method": "workspace/executeCommand",
         "params": {"command": "trainmedic.diagnoseText", "arguments": [5]}},
        {"jsonrpc": "2.0", "id": 5, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    result = subprocess.run(SERVER, input=b"".join(_frame(m) for m in msgs), capture_output=True, timeout=60,
                            check=False)
    codes = {r.get("id"): (r.get("error") or {}).get("code") for r in _replies(result.stdout)  # type: ignore[union-attr]
             if "method" not in r}
    assert codes[2] == -32602 and codes[4] == -32602
    assert codes[None] == -32700
    assert codes[1] is None and codes[5] is None  # the good ones still answered


def test_a_wrong_content_length_does_not_leave_the_server_deaf() -> None:
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}).encode()
    short = b"Content-Length: %d\r\n\r\n" % (len(init) - 7) + init  # 7 bytes of the body spill over
    rest = [{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}},
            {"jsonrpc": "2.0", "id": 3, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}]
    stream = short + b"".join(_frame(m) for m in rest)
    result = subprocess.run(SERVER, input=stream, capture_output=True, timeout=60, check=False)
    ids = {r.get("id") for r in _replies(result.stdout) if "method" not in r}
    assert 3 in ids, result.stderr[-2000:]  # later requests are still answered
