"""Secrets out of what is kept: tokens, keys and passwords that log lines carry near the evidence.

The web page removes them in the browser before a reduced log leaves it; a log uploaded whole, a
script's request, or text pasted raw reach the server with them. Everything the server stores or
returns passes through `redact_json` first, with the same rules as the page (static/reducer.js).
"""

from __future__ import annotations

import re
from typing import Any

_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(rx, flags), repl) for rx, flags, repl in (
    (r"\bhf_[A-Za-z0-9]{20,}", 0, "hf_<redacted>"),
    (r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}", 0, "<redacted-github-token>"),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,}", 0, "<redacted-github-token>"),
    (r"\bglpat-[A-Za-z0-9_-]{20,}", 0, "<redacted-gitlab-token>"),
    (r"\bsk-[A-Za-z0-9_-]{20,}", 0, "sk-<redacted>"),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0, "<redacted-slack-token>"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0, "<redacted-aws-key>"),
    (r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----", 0, "<redacted-private-key>"),
    (r"\b(Bearer[ \t]+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE, r"\1<redacted>"),
    # user:password@ in a URL
    (r"\b([a-z][a-z0-9+.-]{0,20}://[^\s:/@]{0,200}:)[^\s@/]{1,200}@", re.IGNORECASE, r"\1<redacted>@"),
    # KEY=value settings; a value an earlier rule already replaced (hf_<redacted>) is left as it is
    (r"\b([A-Za-z0-9_]{0,60}(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)[\"']?[ \t]*[=:][ \t]*)([\"']?)"
     r"(?![A-Za-z0-9_]*<)[^\s\"',;]{6,}", re.IGNORECASE, r"\1\2<redacted>"),
))


def redact(text: str) -> str:
    """`text` with every secret the rules know replaced by a placeholder."""
    if len(text) > 1 << 20:  # never held whole: the report's strings are short; cut anything else
        text = text[: 1 << 20]
    for rx, repl in _RULES:
        text = rx.sub(repl, text)
    return text


def redact_json(value: Any) -> Any:
    """The same JSON value with every string redacted (keys are the schema's own and stay)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_json(v) for v in value)
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    return value
