"""How trainmedic writes small things for people: ranks, byte sizes, code blocks, decoded log lines."""

from __future__ import annotations


def rank_label(rank: int | None, none: str = "no rank") -> str:
    """`rank 3`, or `none` for a line no rank printed (each face words that case its own way)."""
    return f"rank {rank}" if rank is not None else none


def rank_suffix(rank: int | None) -> str:
    """` (rank 3)` to follow an id, or nothing when the rank is unknown."""
    return f" ({rank_label(rank)})" if rank is not None else ""


def human_bytes(n: int | None, units: tuple[str, ...] = ("B", "KB", "MB", "GB"), sep: str = " ",
                unknown: str = "?") -> str:
    """1023 B, 1.5 KB, 2.0 GB: binary multiples, one decimal past bytes, the last unit for anything larger;
    `unknown` when the size is. A table wants it terse: `units=("B", "K", "M", "G"), sep=""` gives 1.5K."""
    if n is None:
        return unknown
    size = float(n)
    for i, unit in enumerate(units):
        if size < 1024 or i == len(units) - 1:
            return f"{size:.0f}{sep}{unit}" if i == 0 else f"{size:.1f}{sep}{unit}"
        size /= 1024
    return f"{n}{sep}{units[0]}"  # pragma: no cover - the loop always returns


# What a size's unit is worth, as PyTorch prints sizes: binary prefixes, and before 2.0 the same binary
# multiples under decimal names ("1062 MB" in memory_summary()).
_BYTES_PER_UNIT = {"B": 1, "bytes": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40, "PB": 2**50,
                   "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


def to_bytes(number: str, unit: str) -> float:
    """The inverse of human_bytes for a figure a log printed ("2.93", "GiB")."""
    return float(number) * _BYTES_PER_UNIT[unit]


def code_fence(text: str, language: str = "") -> str:
    """A markdown code block around `text`, its fence longer than any run of backticks inside."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text}\n{fence}"


def decode_line(raw: bytes) -> str:
    """One log line as text, the way the reader decodes it: UTF-8 with replacements, NULs dropped,
    the line ending removed."""
    return raw.decode("utf-8", errors="replace").replace("\x00", "").rstrip("\r\n")


# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F, where U+009B is a one-character CSI):
# a file name or a log line carrying them must not move the cursor, retitle or recolour a terminal.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))}


def printable(text: str) -> str:
    """`text` with every control character shown as `\\xNN` instead of acting on the terminal."""
    return text.translate(_CONTROLS)


_MARKDOWN = {ord(c): f"\\{c}" for c in "\\`*_[]|#"} | {ord("<"): "&lt;", ord(">"): "&gt;", ord("&"): "&amp;"}


def md_inline(text: str) -> str:
    """Text from a log or a file name, safe inside markdown prose: no markup, no HTML, no controls."""
    return printable(text).translate(_MARKDOWN)


def rank_ranges(ranks: list[int] | tuple[int, ...] | set[int], limit: int = 20) -> str:
    """`0-3, 7, 9, 10, 400-1023`: runs of three or more consecutive ranks folded, at most `limit`
    pieces, then `… (N ranks)`."""
    ordered = sorted(set(ranks))
    pieces: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            pieces.append(f"{ordered[i]}-{ordered[j]}")
        else:
            pieces.extend(str(r) for r in ordered[i:j + 1])
        i = j + 1
    if len(pieces) > limit:
        return ", ".join(pieces[:limit]) + f", … ({len(ordered)} ranks)"
    return ", ".join(pieces)
