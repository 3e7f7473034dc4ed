"""Round 9's hostile finds (the recorder's fast path, the replay's reading of events.jsonl, routing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.replay.scenario import check_events_file
from ecs_guardrail.routing import PATTERNS, compile_pattern, matches, targets


def test_events_after_64_kib_of_blank_lines_are_events_not_an_empty_file(tmp_path: Path) -> None:
    """An events.jsonl whose first 64 KiB are blank lines (a generator's padding, a file built by appending to
    a log full of empty lines) was refused "no events" before anything was read, though the replay reads blank
    lines as nothing and every event after them: the check only looked at the first 64 KiB."""
    path = tmp_path / "events.jsonl"
    event = '{"version": "0", "id": "e-1", "detail-type": "ECS Task State Change", "source": "aws.ecs"}\n'
    path.write_text("\n" * 70_000 + " " * 70_000 + "\r\n" + event, encoding="utf-8")
    check_events_file(path, has_samples=False)  # raised ScenarioError: no events
    path.write_text("\n" * 70_000 + "{\n" + event, encoding="utf-8")  # still named: a pretty-printed object
    try:
        check_events_file(path, has_samples=False)
    except Exception as exc:  # noqa: BLE001 - the message is what is checked
        assert "pretty-printed" in str(exc)
    else:
        raise AssertionError("a pretty-printed object after blank lines passed the check")


@pytest.mark.parametrize("value", [[None], [], ["x", None], ["x"], None, "x"])
def test_compiled_routing_answers_exists_on_a_list_as_matches_does(value: Any) -> None:
    """``"replay-name": [null]`` (a forged envelope: EventBridge writes a text there) reached the watchdog by
    :func:`routing.matches` (a list matches when one element does: ``null`` is absent) and not by the compiled
    :func:`routing.targets` the replay routes with (any list "existed"); ``{"exists": true}`` took ``[]`` too."""
    event = {"source": "aws.ecs", "detail-type": "ECS Task State Change", "detail": {"lastStatus": "STOPPED"},
             "replay-name": value}
    assert targets(event) == {name for name, p in PATTERNS.items() if matches(p, event)}
    present = {"source": ["aws.ecs"], "replay-name": [{"exists": True}]}
    assert compile_pattern(present)(event) is matches(present, event)
