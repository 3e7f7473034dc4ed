"""One line of ``events.jsonl`` as text: UTF-8, a byte order mark ignored, bad bytes replaced; then as JSON.

A scenario file edited on Windows or exported from a spreadsheet may carry a UTF-8 byte order mark
(Excel's "CSV UTF-8" and Notepad write one) or a field in Latin-1 (``0xe9`` for "é"). Either dropped
the whole event before; an event is kept instead, its undecodable bytes replaced with U+FFFD, and
the caller says so (SCENARIOS.md, "events.jsonl").
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

__all__ = ["BOM", "decode_line", "loads", "loads_utf8"]

BOM = "\ufeff"

_DECODER = msgspec.json.Decoder()


def decode_line(line: bytes) -> tuple[str, bool]:
    """``(text, replaced)``: ``line`` decoded as UTF-8 without a leading byte order mark; ``replaced``
    is True when bytes that are not UTF-8 were replaced with U+FFFD (the event is kept)."""
    try:
        text, replaced = line.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = line.decode("utf-8", errors="replace"), True
    return text.removeprefix(BOM), replaced


def loads(text: str) -> Any:
    """``json.loads(text)``: the same objects (dicts in the document's key order, the last of a repeated
    key, ints of any size, floats), decoded by msgspec's decoder (about 3 of 11 microseconds a
    fleet-day event cheaper; issue 33 item 2). Whatever msgspec refuses (``NaN``, ``1e400``, a lone
    surrogate escape, an integer past 64 bits, malformed text) is decoded again by :func:`json.loads`,
    so what it accepts, and its errors' words, are :func:`json.loads`'s.

    Raises:
        json.JSONDecodeError, RecursionError, ValueError: as :func:`json.loads`.
    """
    try:
        return _DECODER.decode(text)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return json.loads(text)


def loads_utf8(line: bytes) -> Any:
    """``loads(decode_line(line)[0])`` of a line that needs neither: UTF-8 without a byte order mark, JSON
    that msgspec takes, decoded from the bytes as they are (no text made first: about 1 of 9 microseconds
    a fleet-day event; issue 33 item 2). msgspec checks every string's UTF-8 and refuses a byte order mark
    (not JSON), so what it decodes is the same value the long way gives, with nothing replaced.

    Raises:
        ValueError (``msgspec.DecodeError``), RecursionError: anything else (bytes that are not UTF-8, a
            byte order mark, what :func:`loads` hands to :func:`json.loads`): the caller takes the long way
            (:func:`decode_line`, then :func:`loads`), which says what was replaced and why JSON refused it.
    """
    return _DECODER.decode(line)
