"""Rewrite the README's picture of a diagnosis (between `<!-- demo:start -->` and `<!-- demo:end -->`)
with what `trainmedic diagnose examples/ddp-worker-killed/` prints at 80 columns today: run it after a
change of wording or of the calibration (tests/cli/test_readme.py says when)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from trainmedic.api import diagnose
    from trainmedic.report.text import lines

    os.chdir(ROOT)
    shown = "\n".join(t.plain for t in lines(diagnose("examples/ddp-worker-killed/"), 80))
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    head, _, rest = text.partition("<!-- demo:start -->")
    _, _, tail = rest.partition("<!-- demo:end -->")
    readme.write_text(f"{head}<!-- demo:start -->\n```text\n{shown}\n```\n<!-- demo:end -->{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
