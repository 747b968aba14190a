"""An encyclopedia entry, or one cause of it, as markdown: rendered in a terminal, printed as is
elsewhere (a file, a pipe, a ticket).

A cause reads as ruff's rule pages do: what it is and why it happens, an example of what the log
shows, the fix, how to verify it and the facts that decide it; the fingerprints (regexes and
weights) come last, for library authors.
"""

from __future__ import annotations

from typing import TextIO

from trainmedic.fixtures import fixture_lines
from trainmedic.model import Cause, Entry

CODE_TITLES = {"pytorch": "PyTorch", "hf_trainer": "HF Trainer", "deepspeed": "DeepSpeed", "lightning": "Lightning"}
EXAMPLES = 2  # fixture lines shown as a cause's example log


def _fence(lines: list[str], lang: str = "") -> str:
    body = "\n".join(lines)
    ticks = "````" if "```" in body else "```"
    return f"{ticks}{lang}\n{body}\n{ticks}\n"


def _examples(entry: Entry, cause: Cause) -> list[str]:
    """Lines the library's own fixtures say this cause matches: what the log shows."""
    return [f.text for f in fixture_lines(entry) if f.kind == "match" and f.cause == cause.full_id][:EXAMPLES]


def cause_markdown(entry: Entry, cause: Cause) -> str:
    out = [f"# {cause.title}\n", f"`{cause.full_id}` · {entry.title} · {cause.role}\n",
           "## What it is\n", f"{cause.mechanism.strip()}\n"]
    examples = _examples(entry, cause)
    if examples:
        out += ["## What the log shows\n", _fence(examples)]
    out += ["## Fix\n", "".join(f"{i}. {step}\n" for i, step in enumerate(cause.fix, 1))]
    if cause.verify:
        out += ["## Verify\n", _fence(list(cause.verify), "sh")]
    if cause.missing:
        out += ["## Facts that decide it\n", "".join(f"- {m.fact}: `{m.command}`\n" for m in cause.missing)]
    if cause.competes:
        out += ["## Can be mistaken for\n", "".join(f"- `{c}`\n" for c in cause.competes)]
    if cause.prevention:
        out += ["## Prevention\n", "".join(f"- {p}\n" for p in cause.prevention)]
    read_from = [
        *(["a loss (or gradient norm) that turns NaN or Inf and stays so"] if cause.loss_nonfinite else []),
        *(["a loss that falls straight to exactly 0 and stays there"] if cause.loss_vanished else []),
        *([f"a loss {cause.loss_jump} times its earlier minimum, still there at the end"] if cause.loss_jump else []),
        *([f"steps that spend {cause.data_wait_share:.0%} of their time or more waiting for data"]
          if cause.data_wait_share else []),
        *(["a stop from outside (the scheduler's time limit, a cancel) after the log said training finished"]
          if cause.after_finish else []),
        *(["a store-based barrier that counts more workers than the world size (`worker_count` > `world_size`)"]
          if cause.store_overfull else []),
    ]
    out += ["## For library authors: fingerprints\n",
            *([f"Read without a line of its own, from: {'; '.join(read_from)}.\n"] if read_from else []),
            "".join(f"- `{f.id}` (weight {f.weight}{', ambiguous' if f.ambiguous else ''}"
                    f"{', warning' if f.warning else ''}{', precursor' if f.precursor else ''}): `{f.regex}`\n"
                    for f in cause.fingerprints)]
    return "\n".join(out)


def entry_markdown(entry: Entry) -> str:
    out = [f"# {entry.title}\n", f"`{entry.id}` · {entry.category}\n", f"{entry.summary.strip()}\n",
           "## Causes\n", "".join(f"- **{c.title}** (`{c.full_id}`, {c.role}): "
                                  f"`trainmedic explain {c.full_id}`\n" for c in entry.causes),
           "## Symptoms\n", "".join(f"- `{s.symptom}`: {s.why}\n" for s in entry.symptoms),
           "## Confirm it\n", "".join(f"- [ ] {check}\n" for check in entry.confirm),
           "## Affects\n", "".join(f"- {a}\n" for a in entry.affects),
           "## From 1 to 1000 GPUs\n", f"{entry.scale.strip()}\n"]
    for key, code in entry.code:
        out += [f"## {CODE_TITLES.get(key, key)}\n", _fence([code.rstrip()], "python")]
    if entry.related:
        out += ["## Related\n", "".join(f"- `{r}`\n" for r in entry.related)]
    out += ["## References\n", "".join(f"- {r}\n" for r in entry.references)]
    return "\n".join(out)


def render_entry(entry: Entry, cause: Cause | None, out: TextIO, color: bool = False) -> None:
    """Rendered markdown in a terminal; the markdown itself anywhere else."""
    text = cause_markdown(entry, cause) if cause is not None else entry_markdown(entry)
    if not color:
        out.write(text)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console(file=out, force_terminal=True, highlight=False).print(Markdown(text, code_theme="ansi_dark"))
