"""The history item's ``raw`` text is bounded in UTF-8 bytes, not characters (round 8: the text is UTF-8 as
it is, so 300,000 characters could be 1.2 MB, past DynamoDB's 400 KB item limit)."""

from __future__ import annotations

import json

from ecs_guardrail.handlers.record import RAW_MAX_BYTES, stored_raw


def test_a_small_event_is_kept_whole() -> None:
    raw = {"detail": {"stoppedReason": "Essential container in task exited: ÿ 日本"}, "id": "x"}
    text = stored_raw(raw)
    assert json.loads(text) == raw
    assert "日本" in text  # as it is, not \\u escapes


def test_a_long_line_of_wide_characters_is_cut_within_the_byte_bound_and_never_inside_a_character() -> None:
    raw = {"detail": {"stoppedReason": "日" * 200_000}}  # 600,000 bytes of UTF-8, 200,000-odd characters
    text = stored_raw(raw)
    data = text.encode("utf-8")
    assert len(data) <= RAW_MAX_BYTES
    assert len(data) > RAW_MAX_BYTES - 4  # cut at the bound, less at most one partial character
    assert text.startswith('{"detail":{"stoppedReason":"日日')


def test_a_long_ascii_line_keeps_its_first_bytes() -> None:
    raw = {"detail": {"stoppedReason": "a" * 400_000}}
    text = stored_raw(raw)
    assert len(text.encode("utf-8")) == RAW_MAX_BYTES
    assert text.endswith("a")
