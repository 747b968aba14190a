"""Scaffold a library entry: `python scripts/new_entry.py CATEGORY ENTRY CAUSE [--title T]`.

Writes `src/trainmedic/library/CATEGORY/ENTRY.yaml` with every section the schema asks for, and
`ENTRY.log` with one `#! match:` and one `#! no-match:` placeholder. Both placeholders are wrong on
purpose: `trainmedic library check` and the test-suite fail until real lines, copied from the
framework's own source or a real log, replace them (and the TODOs are written).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # runs from a checkout, installed or not

from trainmedic.draft import skeleton  # noqa: E402

LIBRARY = ROOT / "src" / "trainmedic" / "library"
KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

LOG = """\
# Lines for {entry}. `#! match: <entry>/<cause>` means the next line must match that
# cause; `#! no-match: <entry>/<cause>` means it must not (a near miss).
#! match: {entry}/{cause}
TODO: a line the framework really prints (copied from its source or a real log)
#! no-match: {entry}/{cause}
TODO-replace-with-the-message: a harmless line that looks like it (the near miss)
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("category")
    p.add_argument("entry")
    p.add_argument("cause")
    p.add_argument("--title", default=None)
    args = p.parse_args(argv)
    for name in (args.category, args.entry, args.cause):
        if not KEBAB.fullmatch(name):
            print(f"new_entry: {name!r} must be kebab-case (lower-case words joined by '-')", file=sys.stderr)
            return 2
    if any(LIBRARY.glob(f"*/{args.entry}.yaml")):
        print(f"new_entry: an entry {args.entry!r} exists already", file=sys.stderr)
        return 2
    folder = LIBRARY / args.category
    folder.mkdir(exist_ok=True)
    fields = {"entry": args.entry, "cause": args.cause, "category": args.category,
              "title": args.title or args.entry.replace("-", " ").capitalize()}
    yaml = skeleton(args.entry, args.cause, args.category, title=fields["title"],
                    summary="TODO: what fails, in two or three sentences a tired engineer understands.",
                    symptom='"TODO: the line people see"', regex='"TODO-replace-with-the-message"', weight=0.9,
                    tags=args.category)
    (folder / f"{args.entry}.yaml").write_text(yaml, encoding="utf-8")
    (folder / f"{args.entry}.log").write_text(LOG.format(**fields), encoding="utf-8")
    print(f"wrote {folder / args.entry}.yaml and .log: replace every TODO, then run `trainmedic library check`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
