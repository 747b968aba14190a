"""A draft library entry from a failure no signature knew: the library grows from what it missed.

The fingerprint is written from the line's template, not its literal text: numbers, addresses,
paths and quoted values become bounded patterns, the timestamp, log level and rank prefix in front
are dropped, and only the message's distinctive head is kept. The draft comes with its fixture (the
line itself as the match, a line of the same run that must not match as the near miss), so
`trainmedic library check` holds it to the same rules as every bundled entry; what only a person
can write (the mechanism, the fix) is left as TODO.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

from trainmedic.model import Diagnosis
from trainmedic.schema import newline_problem
from trainmedic.util import linear

# What goes in front of a message and says nothing about it: rank prefixes, times, levels, loggers.
_PREFIX = re.compile(
    r"^(?:\[[A-Za-z]*\d*\]:? ?)*"  # [rank3]: [default0]:
    r"(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s*)?"  # 2026-11-30 10:00:00,123
    r"(?:\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\n]{1,200}\] )?"  # glog/c10 header
    r"(?:\[?(?:INFO|WARNING|WARN|ERROR|CRITICAL|DEBUG|FATAL)\]?:?\s*(?:-\s*)?)?"
)
_VARIABLE = re.compile(
    r"(?P<path>(?:/[\w.+-]+){2,}/?)"
    r"|(?P<hex>0x[0-9a-fA-F]+)"
    r"|(?P<quoted>'[^'\n]{0,200}'|\"[^\"\n]{0,200}\")"
    r"|(?P<number>\d+(?:\.\d+)?)"
)
_PATTERNS = {"path": r"[^ \n]+", "hex": r"0x[0-9a-fA-F]+", "number": r"\d+(?:\.\d+)?"}
_META = set(".^$*+?()[]{}|\\")
HEAD = 120  # characters of message kept: its distinctive start, not every detail


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _META else ch for ch in text)


MAX_TEXT = 2000  # of a line: a saved diagnosis may hold anything, and these regexes see only this much


def message_of(text: str) -> str:
    """The line without what goes in front of every message (rank prefix, time, level)."""
    return _PREFIX.sub("", text[:MAX_TEXT].strip(), count=1).strip()


def fingerprint(text: str) -> str:
    """A fingerprint for the line's message: its literal words, its variable parts as patterns."""
    message = message_of(text)
    out: list[str] = []
    pos = 0
    for m in _VARIABLE.finditer(message):
        if m.start() >= HEAD:
            break
        out.append(_escape(message[pos:m.start()]))
        kind = m.lastgroup or "number"
        if kind == "quoted":
            quote = m.group()[0]
            out.append(f"{quote}[^{quote}\\n]*{quote}")
        else:
            out.append(_PATTERNS[kind])
        pos = m.end()
    if pos < HEAD:
        out.append(_escape(message[pos:HEAD].rstrip()))
    return "".join(out).strip()


def slug(text: str, fallback: str = "drafted-failure") -> str:
    """A kebab-case id from the message: its exception's name, unless that is a builtin one
    (RuntimeError says nothing), else its first words."""
    message = message_of(text)
    name = re.match(r"(?:[\w]+\.)*([A-Za-z_]\w*):\s*(.*)", message)
    if name and not hasattr(builtins, name.group(1)):
        source = re.sub(r"(?:Error|Exception)$", "", name.group(1))
    else:
        source = name.group(2) if name else message
    words = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", source)
    out = "-".join(w.lower() for w in words[:5])
    return out if re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", out or "") else fallback


@dataclass(frozen=True)
class Draft:
    entry: str
    cause: str
    category: str
    yaml: str
    log: str
    regex: str


class DraftError(ValueError):
    """The diagnosis gives nothing to draft from (no evidence line, or no line that must not match)."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def draft(d: Diagnosis, category: str = "general", source: str = "") -> Draft:
    """A draft entry for the diagnosis's failure: its first evidence line (or the first line no good
    run printed) as the fingerprint, a line of the same run that it does not match as the near miss."""
    lines = [n.line.text for n in d.novel] + [e.text for e in (d.primary.evidence if d.primary else ())]
    lines = [t for t in lines if message_of(t)]
    if not lines:
        raise DraftError("the diagnosis quotes no line to draft a fingerprint from")
    text = lines[0]
    regex = fingerprint(text)
    problem = newline_problem(regex) or linear.problem(regex)
    if problem or not linear.compile_text(regex).search(text):
        raise DraftError(f"no usable fingerprint could be written from {text[:120]!r}: {problem or 'no match'}")
    rx = linear.compile_text(regex)
    near = [t for t in [*(p.text for p in d.progress), *lines[1:]] if t.strip() and not rx.search(t)]
    if not near:
        raise DraftError("no line of the run is a near miss (every quoted line matches the fingerprint)")
    entry = slug(text)
    cause = "drafted"
    where = source or (f"{d.primary.evidence[0].path}:{d.primary.evidence[0].line}"
                       if d.primary and d.primary.evidence else "a diagnosis")
    header = (f"# Drafted by `trainmedic library draft` from {where}. Replace every TODO, then run\n"
              f"# `trainmedic library check --library <this library>`.\n")
    yaml = header + skeleton(entry, cause, category, title=_quote("TODO: " + message_of(text)[:80]),
                             summary=f"TODO: what fails, in two or three sentences. First seen as: "
                                     f"{message_of(text)[:200]!r}",
                             symptom=_quote(message_of(text)[:200]), regex=_quote(regex), weight=0.8,
                             tags=f"{category}, drafted")
    log = (f"# Lines for {entry}, drafted from {where}: the line itself must match, a line of the same run\n"
           f"# must not.\n#! match: {entry}/{cause}\n{text}\n#! no-match: {entry}/{cause}\n{near[0]}\n")
    return Draft(entry, cause, category, yaml, log, regex)


def skeleton(entry: str, cause: str, category: str, *, title: str, summary: str, symptom: str, regex: str,
             weight: float, tags: str) -> str:
    """An entry's YAML with every section the schema asks for; what is not given is TODO.
    (scripts/new_entry.py scaffolds from it too.)"""
    return f"""\
id: {entry}
title: {title}
category: {category}
summary: >
  {summary}
tags: [{tags}]
affects:
  - "TODO: which frameworks, versions and setups see it"
symptoms:
  - symptom: {symptom}
    why: "TODO: why it appears"
action:  # TODO: whose problem, whether a plain restart can succeed, which checkpoint is safe
  owner: unknown
  restart: false
  resume: last
causes:
  - id: {cause}
    title: "TODO: the cause in a few words"
    role: initiating
    mechanism: >
      TODO: the mechanism, from the framework's source: what happens, in which process, and why
      the message says what it says.
    fingerprints:
      - id: {cause}-message
        regex: {regex}
        weight: {weight}
    fix:
      - "TODO: the exact fix"
    verify:
      - "TODO: the command that shows it is fixed"
    prevention:
      - "TODO: how to keep it from coming back"
confirm:
  - "TODO: how to confirm it is this cause"
scale: >
  TODO: how it changes from 1 to 1000 GPUs.
code:
  pytorch: |
    # TODO: the fix in plain PyTorch
references:
  - "https://TODO.example/reference"  # the issue, the docs or the source that explains it
"""
