"""The README's alert examples ("Alerts: what the on-call engineer receives") are what
``replay SCENARIO --alerts-out`` writes, as the README says they are: the Slack text of each
``**Kind** (`TIME`):`` block, the recovery's Chatbot JSON and the scale-down's Slack buttons.

They had drifted (no ``decision id``/``alert id`` line, another Chatbot ``id``, a job reason the alert
no longer prints). ``python -m tests.e2e.test_readme_alerts`` rewrites them from the replays."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from ecs_guardrail import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCENARIOS = ROOT / "events" / "scenarios"
# the README's order: scale-down, alert-only and recovery from alerts-tour, the hold from aggregate-health-outage,
# the failed deployment from blue-green-bake-failing-green (issue 35 item 3)
SOURCES = ("alerts-tour", "aggregate-health-outage", "blue-green-bake-failing-green")
_BLOCK = re.compile(r"(\*\*[^*\n]+\*\*[^\n]*\(`(?P<time>[0-9T:Z-]+)`\):\n\n```text\n)(?P<body>.*?)(\n```)", re.S)
_CHATBOT = re.compile(r"(The same recovery as SNS publishes it \(`SNS_FORMAT=chatbot`\):\n\n```json\n)"
                      r"(?P<body>.*?)(\n```)", re.S)
_BUTTONS = re.compile(r"(The scale-down's Slack buttons[^\n]*\n\n```json\n)(?P<body>.*?)(\n```)", re.S)


def _alerts() -> list[dict]:
    out: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in SOURCES:
            path = Path(tmp) / f"{name}.jsonl"
            assert cli.main(["replay", str(SCENARIOS / name), "--alerts-out", str(path), "--json"]) == 0
            out += [json.loads(line) for line in path.read_text().splitlines()]
    return out


def _expected(alerts: list[dict]) -> dict[str, object]:
    slack = {a["time"]: a for a in alerts if a["channel"] == "slack"}
    recovery = next(a for a in alerts if a["channel"] == "sns" and a["kind"] == "recovery")
    scale = next(a for a in alerts if a["channel"] == "slack" and a["kind"] == "scale_down")
    buttons = next(b for b in scale["blocks"] if b["type"] == "actions")
    return {"slack": {t: a["text"] for t, a in slack.items()},
            "chatbot": json.dumps(json.loads(recovery["message"]), indent=2),
            "buttons": json.dumps(buttons, indent=2, sort_keys=True)}


def _rewrite(text: str, want: dict[str, object]) -> str:
    slack = want["slack"]
    assert isinstance(slack, dict)
    text = _BLOCK.sub(lambda m: m.group(1) + slack[m.group("time")] + m.group(4), text)
    text = _CHATBOT.sub(lambda m: m.group(1) + str(want["chatbot"]) + m.group(3), text)
    return _BUTTONS.sub(lambda m: m.group(1) + str(want["buttons"]) + m.group(3), text)


def test_the_readme_alert_examples_are_what_replay_writes(capsys):
    text = README.read_text()
    want = _expected(_alerts())
    capsys.readouterr()
    blocks = list(_BLOCK.finditer(text))
    assert len(blocks) == 7, [b.group("time") for b in blocks]  # the failed deployment (issue 35) is the 7th
    for block in blocks:
        assert block.group("body") == want["slack"][block.group("time")], block.group("time")  # type: ignore[index]
    assert _CHATBOT.search(text).group("body") == want["chatbot"]  # type: ignore[union-attr]
    assert _BUTTONS.search(text).group("body") == want["buttons"]  # type: ignore[union-attr]


if __name__ == "__main__":
    README.write_text(_rewrite(README.read_text(), _expected(_alerts())))
    sys.exit(0)
