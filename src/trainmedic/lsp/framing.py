"""A guard in front of the language server's input: message sizes it can hold, headers it can read.

pygls reads `Content-Length: N` and then N bytes at once, so a client (or a corrupted stream) that
announces 99,999,999,999,999 bytes made it raise MemoryError and die. This reader hands pygls the
same stream, except that a message over the cap is read and thrown away in pieces and replaced by a
notification that does nothing: the server stays up and in step with the client.
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from typing import BinaryIO

log = logging.getLogger("trainmedic.lsp")

MAX_MESSAGE = 256 << 20  # a document of this size is far past what the editor path diagnoses anyway
MAX_HEADER = 8 << 10  # one header line
_LENGTH = re.compile(rb"^Content-Length: *(\d{1,20})\r?\n$", re.IGNORECASE)
_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9-]{0,60}: [^\r\n]{0,4000}\r?\n$")
# A notification every server accepts and that changes nothing: cancel a request that does not exist.
DROPPED = b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "trainmedic-dropped-message"}}'


class GuardedInput:
    """`readline()` and `read(n)` as pygls uses them, with oversized messages dropped."""

    def __init__(self, raw: BinaryIO, cap: int = MAX_MESSAGE) -> None:
        self.raw = raw
        self.cap = cap
        self._lines: deque[bytes] = deque()
        self._body: bytes | None = None

    def readline(self) -> bytes:
        if self._lines:
            return self._lines.popleft()
        headers: list[bytes] = []
        while True:
            line = self.raw.readline(MAX_HEADER)
            if not line:
                break
            if not headers and line.strip() and not _HEADER.match(line):
                # Out of step: a wrong Content-Length left the end of a body here (or took the start
                # of this message). Skip to the next message's first header instead of going deaf.
                at = line.find(b"Content-Length:")
                if at < 0:
                    log.warning("skipped %d bytes that are not a message header", len(line))
                    continue
                line = line[at:]
            headers.append(line)
            if not line.strip():
                break
        size = next((int(m.group(1)) for h in headers if (m := _LENGTH.match(h))), None)
        if size is not None and size > self.cap:
            log.warning("dropped a message of %d bytes (over the %d-byte cap)", size, self.cap)
            left = size
            while left > 0:
                chunk = self.raw.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
            headers = [b"Content-Length: %d\r\n" % len(DROPPED) if _LENGTH.match(h) else h for h in headers]
            self._body = DROPPED
        self._lines.extend(headers)
        return self._lines.popleft() if self._lines else b""

    def read(self, n: int = -1) -> bytes:
        if self._body is not None:
            body, self._body = self._body, None
            return body
        return self.raw.read(n)


def invalid_params_protocol() -> type:
    """pygls's protocol, answering what it used to leave unanswered: a request whose params do not
    fit its method gets -32602 (it got no response at all, so the client waited for good)."""
    from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
    from pygls.protocol import LanguageServerProtocol

    class Protocol(LanguageServerProtocol):
        def structure_message(self, data: dict[str, object]) -> object:
            try:
                return super().structure_message(data)
            except (JsonRpcInvalidParams, JsonRpcInternalError):
                if not (isinstance(data, dict) and "id" in data and "method" in data):
                    raise
                error = JsonRpcInvalidParams(f"invalid params for {str(data['method'])[:100]}")
                self._send_response(data["id"], error=error.to_response_error())  # type: ignore[arg-type]  # the id as the client sent it
                return super().structure_message(json.loads(DROPPED))

    return Protocol
