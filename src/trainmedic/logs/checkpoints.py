"""Checkpoint saves and loads, in the words the frameworks print them, with their step and path.

Each wording is one scanner pattern (kind "checkpoint"), read over the whole input like the
structure patterns: checkpoint lines are few, and a resume point needs the early ones too. A save is
`completed` when the framework said so (DeepSpeed's "is ready now", Megatron-LM's "successfully
saved") or, later, when the run went on past it (reason/action.py decides that from what follows).
"""

from __future__ import annotations

import re

from trainmedic.model import Checkpoint, Line
from trainmedic.scan.database import Pattern

# key -> (kind, scanner regex, parse regex, group of the path, group of the step or 0). The scanner's regex
# is literal-led and ends at a fixed text, so hyperscan reports each line once (an open-ended path at the
# end would report every character of it); the parse regex, run on the lines it nominates, reads the path
# and the step. Without a step group, the step is read from the path.
_WORDINGS: dict[str, tuple[str, str, str, int, int]] = {
    # HF Trainer (log_level info): "Saving model checkpoint to out/checkpoint-500"
    "hf-save": ("save", r"Saving model checkpoint to ", r"Saving model checkpoint to ([^ \t\n]+)", 1, 0),
    # HF Trainer resuming: "Loading model from out/checkpoint-500."
    "hf-load": ("load", r"Loading model from ", r"Loading model from ([^ \t\n]+)", 1, 0),
    # Lightning ModelCheckpoint(verbose=True): "... saving model to '/ckpt/epoch=0-step=100.ckpt' as top 1"
    "lightning-save": ("save", r"saving model to '", r"saving model to '([^'\n]+)'", 1, 0),
    "lightning-load": ("load", r"Restoring states from the checkpoint path at ",
                       r"Restoring states from the checkpoint path at ([^ \t\n]+)", 1, 0),
    # DeepSpeed: "Saving model checkpoint: /ckpt/global_step500/mp_rank_00_model_states.pt", then
    # "[Torch] Checkpoint global_step500 is ready now!" once every file is written.
    "deepspeed-save": ("save", r"Saving model checkpoint: ", r"Saving model checkpoint: ([^ \t\n]+)", 1, 0),
    "deepspeed-done": ("done", r"Checkpoint [^ \t\n]{1,300} is ready now!", r"Checkpoint ([^ \t\n]+) is ready now!",
                       1, 0),
    # Megatron-LM: "saving checkpoint at iteration     500 to /ckpt", "successfully saved checkpoint at
    # iteration     500 to /ckpt" (older: "from iteration")
    "megatron-save": ("save", r"saving checkpoint at iteration +\d{1,12} to ",
                      r"saving checkpoint at iteration +(\d{1,12}) to ([^ \t\n]+)", 2, 1),
    "megatron-done": ("done", r"successfully saved checkpoint (?:at|from) iteration +\d{1,12} to ",
                      r"successfully saved checkpoint (?:at|from) iteration +(\d{1,12}) to ([^ \t\n]+)", 2, 1),
    # "loading checkpoint from /ckpt at iteration 500", "successfully loaded checkpoint from /ckpt [ t 0, p 0 ]
    # at iteration 500"
    "megatron-load": ("load",
                      r"(?:loading|loaded) checkpoint from [^ \t\n]{1,1000} (?:\[[^\]\n]{0,40}\] )?at iteration ",
                      r"(?:loading|loaded) checkpoint from ([^ \t\n]+) (?:\[[^\]\n]{0,40}\] )?at iteration (\d{1,12})",
                      1, 2),
    # A training script's own wrapper around torch.save: "Saved checkpoint to ckpt/step_1200.pt",
    # "Checkpoint saved: ckpt/epoch_3.pth", "saving checkpoint to ...". Not "at" (Megatron-LM's "saving
    # checkpoint at iteration" is its own wording above), not "in" ("Checkpoint saved in 4.8s" is a duration).
    "script-save": ("save", r"(?:[Ss]av(?:ed|ing) (?:a |the )?checkpoint|[Cc]heckpoint saved)(?: to|:) ",
                    r"(?:[Ss]av(?:ed|ing) (?:a |the )?checkpoint|[Cc]heckpoint saved)(?: to|:) '?([^ \t\n',]+)", 1, 0),
}

PATTERNS: tuple[Pattern, ...] = tuple(
    Pattern(f"checkpoint:{key}", scan, "checkpoint") for key, (_, scan, _, _, _) in _WORDINGS.items()
)
_COMPILED = {f"checkpoint:{key}": (kind, re.compile(rx), path_group, step_group)
             for key, (kind, _, rx, path_group, step_group) in _WORDINGS.items()}
# A step in a checkpoint's path: checkpoint-500, global_step500, step=500, step_500, iter_0000500
_PATH_STEP = re.compile(r"(?:checkpoint-|global_step|step[=_-]?|iter_)(\d{1,12})(?!\d)")


def step_of(path: str) -> int | None:
    found = _PATH_STEP.findall(path)
    return int(found[-1]) if found else None


def parse(key: str, text: str, line: Line) -> Checkpoint | None:
    """The checkpoint a matched line names, or None when the line does not hold the wording after all."""
    kind, rx, path_group, step_group = _COMPILED[key]
    m = rx.search(text)
    if m is None:
        return None
    path = m.group(path_group).strip("'\"").rstrip(".")
    step = int(m.group(step_group)) if step_group else step_of(path)
    return Checkpoint(kind, path, step, line, completed=True if kind == "done" else None)
