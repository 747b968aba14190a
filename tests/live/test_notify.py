"""`--notify URL`: the final diagnosis reaches a webhook exactly once, with secrets redacted, against a
real local HTTP server that records what it got; failures to deliver are retried, then reported."""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli
from tests.live.conftest import live_group
from trainmedic.api import diagnose
from trainmedic.live import notify

TOKEN = "hf_" + "Q7x" * 12  # an HF access token printed into the log
KILLED = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed."


class _Hook:
    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses  # answered in turn; the last one repeats
        self.got: list[dict[str, Any]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.got.append({"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)})
                status = hook.statuses[min(len(hook.got), len(hook.statuses)) - 1]
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def hook() -> Iterator[_Hook]:
    h = _Hook([200])
    yield h
    h.server.shutdown()


@live_group
@pytest.mark.timeout(120)
def test_run_posts_the_final_diagnosis_once_redacted(hook: _Hook, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import sys\n"
                      "for i in range(3): print(f'step {i} loss 0.5', flush=True)\n"
                      f"print('HF_TOKEN={TOKEN}', flush=True)\n"
                      f"print({KILLED!r}, file=sys.stderr, flush=True)\n"
                      "sys.exit(1)\n")
    res = run_cli("run", "--notify", hook.url, "--", sys.executable, str(script))
    assert res.code == 1, res.err
    assert len(hook.got) == 1  # once, when final: not on every update of the live diagnosis
    sent = hook.got[0]
    assert sent["path"] == "/hook" and sent["type"] == "application/json"
    body = sent["body"]
    assert body["diagnosis"]["schema"] == "trainmedic.diagnosis/v1"
    assert body["diagnosis"]["primary"]["id"] == "dataloader-worker-failure/worker-oom"
    assert "Next: Fix the cause, then resume" in body["text"]
    assert TOKEN not in json.dumps(body)


def test_watch_posts_slack_shape_for_a_slack_url_and_nothing_for_a_healthy_run(hook: _Hook) -> None:
    failed = FIXTURES / "lab" / "ddp-worker-crash"
    res = run_cli("watch", str(failed), "--notify", hook.url, "--notify-format", "slack")
    assert res.code == 1, res.err
    assert len(hook.got) == 1 and set(hook.got[0]["body"]) == {"text"}
    assert "on rank 2" in hook.got[0]["body"]["text"]
    assert run_cli("watch", str(FIXTURES / "lab" / "ddp-healthy"), "--notify", hook.url).code == 0
    assert len(hook.got) == 1
    assert notify.shape_for("https://hooks.slack.com/services/T0/B0/x") == "slack"
    assert notify.shape_for("https://alerts.example.org/trainmedic") == "json"


def test_a_failing_webhook_is_retried_with_backoff_then_reported() -> None:
    d = diagnose([FIXTURES / "lab" / "ddp-worker-crash"])
    flaky = _Hook([503, 502, 200])
    waits: list[float] = []
    try:
        sent = notify.post(d, flaky.url, sleep=waits.append)
        assert sent.ok and sent.attempts == 3 and waits == [1.0, 2.0]
        assert len(flaky.got) == 3
    finally:
        flaky.server.shutdown()
    gone = _Hook([404])
    try:
        sent = notify.post(d, gone.url, sleep=waits.append)
        assert not sent.ok and sent.attempts == 1 and sent.detail == "HTTP 404"  # a 4xx will not pass on retry
    finally:
        gone.server.shutdown()


def test_an_unreachable_webhook_never_changes_the_answer(hook: _Hook) -> None:
    def refuse(_req: urllib.request.Request, _timeout: float) -> int:
        raise urllib.error.URLError("connection refused")

    d = diagnose([FIXTURES / "lab" / "ddp-worker-crash"])
    waits: list[float] = []
    sent = notify.post(d, hook.url, send=refuse, sleep=waits.append)
    assert not sent.ok and sent.attempts == 4 and waits == [1.0, 2.0, 4.0]
    res = run_cli("watch", str(FIXTURES / "lab" / "ddp-worker-crash"), "--notify", "ftp://example.org/x")
    assert res.code == 2 and "not an http(s) URL" in res.err and "Traceback" not in res.err
