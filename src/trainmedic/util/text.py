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
