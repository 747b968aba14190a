"""GitHub Actions workflow commands: the diagnosis as annotations on the log files of a job.

The initiating evidence is an `::error`, collateral failures `::notice`s, each on its file and line;
a healthy verdict with notes gives one `::notice`. Values are escaped as the runner requires
(`%`, CR and LF in messages; also `:` and `,` in properties), so a log line cannot forge a command.
"""

from __future__ import annotations

from typing import TextIO

from trainmedic.model import Diagnosis
from trainmedic.report.common import action_line, relative

MAX_NOTICES = 20  # the runner shows at most 10 annotations of each kind per step; more is noise


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, message: str, *, file: str | None = None, line: int | None = None,
             title: str | None = None) -> str:
    props = []
    if file:
        props.append(f"file={_prop(relative(file))}")
    if line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={_prop(title)}")
    return f"::{kind}{' ' + ','.join(props) if props else ''}::{_data(message)}\n"


def render(d: Diagnosis, out: TextIO, _color: bool = False) -> None:
    p = d.primary
    if p is None:
        notes = "; ".join(d.notes[:3])
        out.write(_command("notice", f"trainmedic: no failure found. {notes}".strip(), title="trainmedic"))
        return
    first = p.evidence[0] if p.evidence else None
    message = f"{p.title} ({p.id}, {p.confidence:.0%} sure). {p.why}".strip()
    if first is not None:
        message += f"\nEvidence: {first.text}"
    if d.action is not None:
        message += f"\nNext: {action_line(d)}. {d.action.reason}"
    message += f"\nFix: {p.fix[0]}" if p.fix else ""
    kind = "warning" if d.verdict == "healthy" else "error"
    out.write(_command(kind, message, file=first.path if first else None, line=first.line if first else None,
                       title=f"trainmedic: {p.title}"))
    for c in d.collateral[:MAX_NOTICES]:
        out.write(_command("notice", f"Collateral ({c.id}), explained by {c.explained_by}", file=c.path, line=c.line,
                           title="trainmedic: collateral"))
