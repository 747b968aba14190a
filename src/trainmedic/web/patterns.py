"""The launcher prefixes, as JavaScript regex sources for the page's log reducer (static/reducer.js).

The reducer groups lines by the prefix that says which rank printed them (to follow one rank's
traceback through interleaved output, and to keep each rank's last line) and, when asked, replaces
host names in host prefixes. Which prefixes exist is defined once, in `trainmedic.logs.attribution`;
this module writes those same patterns in a form JavaScript's RegExp reads alike, and /api/library
hands them to the page next to the keyword prefilter, so the browser never keeps a copy of its own.
"""

from __future__ import annotations

import re

from trainmedic.logs import attribution

# Constructs that Python's re reads and JavaScript's RegExp reads differently (or not at all).
_PYTHON_ONLY = re.compile(r"\(\?P|\(\?[aiLmsux-]+[:)]|\(\?#|\\[AZ]")


def js_source(rx: re.Pattern[str]) -> str:
    """The pattern's source for `new RegExp(source)`; ValueError for one JavaScript would read otherwise."""
    if rx.flags & ~re.UNICODE or _PYTHON_ONLY.search(rx.pattern):
        raise ValueError(f"not portable to JavaScript: {rx.pattern!r} (flags {rx.flags:#x})")
    return rx.pattern


def line_prefixes() -> dict[str, str]:
    """What the reducer needs to know about launcher prefixes (JavaScript regex sources):

    - `line`: at the start of a line, a host prefix and then a rank prefix, each optional: the text
      that tells which process printed the line (what `split_prefix` strips first);
    - `host`: a host prefix alone; its first group is the host name (as `split_prefix` reads it);
    - `not_host`: names that look like hosts but are rank labels (`rank3: `);
    - `rank_in_text`: a rank named inside the message when no prefix says it.
    """
    host = js_source(attribution._HOST_PREFIX)
    ranks = "|".join(js_source(rx) for rx in attribution._RANK_PREFIXES)
    return {
        "line": f"^(?:{host})?(?:{ranks})?",
        "host": f"^(?:{host})",
        "not_host": f"^(?:{js_source(attribution._NOT_HOSTS)})$",
        "rank_in_text": js_source(attribution._RANK_IN_TEXT),
    }
