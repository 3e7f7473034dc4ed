"""One line of ``events.jsonl`` as text: UTF-8, a byte order mark ignored, bad bytes replaced.

A scenario file edited on Windows or exported from a spreadsheet may carry a UTF-8 byte order mark
(Excel's "CSV UTF-8" and Notepad write one) or a field in Latin-1 (``0xe9`` for "é"). Either dropped
the whole event before; an event is kept instead, its undecodable bytes replaced with U+FFFD, and
the caller says so (SCENARIOS.md, "events.jsonl").
"""

from __future__ import annotations

__all__ = ["BOM", "decode_line"]

BOM = "\ufeff"


def decode_line(line: bytes) -> tuple[str, bool]:
    """``(text, replaced)``: ``line`` decoded as UTF-8 without a leading byte order mark; ``replaced``
    is True when bytes that are not UTF-8 were replaced with U+FFFD (the event is kept)."""
    try:
        text, replaced = line.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = line.decode("utf-8", errors="replace"), True
    return text.removeprefix(BOM), replaced
