"""Post the final diagnosis to a chat or a webhook, once, opt-in (`run --notify URL`, `watch --notify URL`).

Two shapes: a Slack incoming webhook (`{"text": ...}`, chosen for hooks.slack.com or `--notify-format
slack`) and a generic JSON webhook (the trainmedic.diagnosis/v1 object under "diagnosis", with a
one-line "text"). Secrets are redacted from everything sent (tokens, keys, passwords in URLs). A
failed post is retried with backoff, within a bounded time; it is reported on stderr and never changes
the exit code: the training's outcome is the command's answer, not the chat's.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from trainmedic.model import Diagnosis
from trainmedic.report.common import action_line
from trainmedic.util.redact import redact, redact_json

TIMEOUT = 5.0  # seconds per attempt
BACKOFF = (1.0, 2.0, 4.0)  # waits between attempts: four tries, about 27 s at most in all


@dataclass(frozen=True)
class Delivery:
    ok: bool
    attempts: int
    detail: str  # the status, or why it failed


def shape_for(url: str, fmt: str = "auto") -> str:
    if fmt != "auto":
        return fmt
    host = (urlsplit(url).hostname or "").lower()
    return "slack" if host == "hooks.slack.com" or host.endswith(".slack.com") else "json"


def summary(d: Diagnosis) -> str:
    """One paragraph a person reads in a chat."""
    p = d.primary
    if p is None:
        return f"trainmedic: {d.verdict} run, no failure found ({len(d.inputs)} input(s))."
    where = f" on rank {p.rank}" if p.rank is not None else ""
    where += f" ({p.host})" if p.host else ""
    lines = [f"trainmedic: the run {'hung' if d.verdict == 'hang' else 'failed'}{where}: {p.title} "
             f"({p.id}, {p.confidence:.0%} sure)."]
    if p.evidence:
        e = p.evidence[0]
        lines.append(f"{e.path}:{e.line}: {e.text[:300]}")
    if d.action is not None:
        lines.append(f"Next: {action_line(d)}.")
    if p.fix:
        lines.append(f"Fix: {p.fix[0]}")
    return redact("\n".join(lines))


def payload(d: Diagnosis, shape: str) -> dict[str, Any]:
    if shape == "slack":
        return {"text": summary(d)}
    return {"text": summary(d), "diagnosis": redact_json(d.to_json())}


Sender = Callable[[urllib.request.Request, float], int]


def _send(req: urllib.request.Request, timeout: float) -> int:
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # the user's own http(s) URL (valid_url)
        return int(resp.status)


def post(d: Diagnosis, url: str, fmt: str = "auto", *, send: Sender = _send,
         sleep: Callable[[float], None] = time.sleep) -> Delivery:
    """POST the diagnosis; retry on a network error or a 5xx/429, not on another 4xx (it will not pass)."""
    body = json.dumps(payload(d, shape_for(url, fmt)), ensure_ascii=False).encode()
    detail = ""
    for attempt in range(1, len(BACKOFF) + 2):
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "trainmedic"})
        try:
            status = send(req, TIMEOUT)
            return Delivery(True, attempt, f"HTTP {status}")
        except urllib.error.HTTPError as exc:
            detail = f"HTTP {exc.code}"
            if exc.code < 500 and exc.code != 429:
                return Delivery(False, attempt, detail)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            detail = str(getattr(exc, "reason", exc))
        if attempt <= len(BACKOFF):
            sleep(BACKOFF[attempt - 1])
    return Delivery(False, len(BACKOFF) + 1, detail)


def valid_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)
