"""Markdown for pasting into a ticket or a chat."""

from __future__ import annotations

from typing import TextIO

from trainmedic.model import Diagnosis
from trainmedic.report.common import HEADLINES, action_line, collateral_by_rank, feedback, where, without_printed
from trainmedic.util.text import code_fence, md_inline, printable, rank_label


def render(d: Diagnosis, out: TextIO, _color: bool = False) -> None:
    w = out.write
    w(f"## trainmedic: {HEADLINES[d.verdict]}\n\n")
    p = d.primary
    if p is None:
        w("No initiating failure, collateral failure or stall was found in the inputs.\n")
    else:
        w(f"**{md_inline(p.title)}** (`{p.id}`), confidence {p.confidence:.0%}\n\n")
        w(f"- Where: {md_inline(where(p))}\n- Why: {md_inline(p.why)}\n")
        if d.phase is not None:
            w(f"- When: {md_inline(d.phase.summary)}\n")
        w("\n")
        if p.evidence:
            w("### Evidence\n\n")
            w(code_fence(printable("\n".join(f"{e.path}:{e.line} [{rank_label(e.rank)}] {e.text}"
                                              for e in p.evidence))))
            w("\n\n")
        if p.fix:
            w("### Fix\n\n" + "".join(f"{i}. {s}\n" for i, s in enumerate(p.fix, 1)) + "\n")
        if p.verify:
            w("### Verify\n\n" + code_fence("\n".join(p.verify)) + "\n\n")
        if p.missing:
            w("### Missing facts\n\n" + "".join(
                f"- {m.fact}: " + ("the Verify command\n" if m.command in p.verify else f"`{m.command}`\n")
                for m in p.missing) + "\n")
            back = feedback([m.topic for m in p.missing if m.topic], "cli")
            if back:
                w(back + "\n\n")
        if d.action is not None:
            a = d.action
            w(f"### Next: {md_inline(action_line(d))}\n\n{md_inline(a.reason)}\n\n")
            if a.checkpoint is not None:
                step = f", step {a.checkpoint.step}" if a.checkpoint.step is not None else ""
                w(f"- Checkpoint: `{md_inline(a.checkpoint.path)}`{step} "
                  f"({md_inline(a.checkpoint.line.path)}:{a.checkpoint.line.number})\n\n")
    used = [f for f in d.facts if f.effect]
    if used:
        w("### Machine facts used\n\n" + "".join(
            f"- `{f.id}` = {md_inline(f.value)} ({md_inline(f.source)}): {md_inline(f.effect)}\n" for f in used) + "\n")
    if d.novel:
        w("### New since the baseline\n\n" + "".join(
            f"- {md_inline(n.line.path)}:{n.line.number} {rank_label(n.line.rank)}: {md_inline(n.line.text[:300])}\n"
            for n in d.novel[:5]) + "\n")
    printed = {*p.verify, *(m.command for m in p.missing)} if p is not None else set()
    if d.alternatives:
        w("### Alternatives\n\n" + "".join(
            f"- `{a.id}` ({a.confidence:.0%}): {md_inline(without_printed(a.why, printed))}\n"
            for a in d.alternatives) + "\n")
    if d.collateral:
        w("### Collateral\n\n")
        for rank, items in collateral_by_rank(d):
            w(f"- {md_inline(rank)}: {md_inline(', '.join(items[:6]))}{' …' if len(items) > 6 else ''}\n")
        w("\n")
    if d.verdict == "hang" and d.progress:
        w("### Last progress per rank\n\n" + "".join(
            f"- {rank_label(pr.rank)}: step {pr.step} ({md_inline(pr.path)}:{pr.line})\n" for pr in d.progress) + "\n")
    for note in d.notes:
        w(f"> {md_inline(note)}\n")
    w("\n_Inputs: " + ", ".join(f"{md_inline(i.path)} ({i.lines} lines)" for i in d.inputs[:10])
      + (" …" if len(d.inputs) > 10 else "") + "_\n")
