"""Lines a replay must reject with their reason and keep going (break-it findings): a nesting depth the
decoder takes and the encoder does not, and malformed ``Container Restarts`` observations (the watchdog's
alone: the recorder never sees ``source: ecs-guardrail``). Exit 0, the line named and counted, the good
events still decided."""

from __future__ import annotations

import json

import pytest
from breakkit import crash, run, scenario, summary

OBS = {"source": "ecs-guardrail", "detail-type": "Container Restarts", "time": "2025-08-21T12:30:00Z",
       "detail": {"minute": "2025-08-21T12:30:00Z", "restarts": 2, "restartCount": 2,
                  "clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/development", "serviceName": "api"}}


def _obs(**detail) -> bytes:
    return json.dumps({**OBS, "detail": {**OBS["detail"], **detail}}).encode()


def _deep(depth: int) -> bytes:
    event = crash(99)
    event["detail"]["x"] = "N"
    return json.dumps(event).replace('"N"', '{"a":' * depth + "1" + "}" * depth).encode()


BAD = {
    "nested 988 deep (decodes, cannot be re-encoded)": _deep(988),
    "restarts 10**9": _obs(restarts=10**9),
    "restartCount null": _obs(restartCount=None),
    "detail a list": json.dumps({**OBS, "detail": ["x"]}).encode(),
    "detail a string": json.dumps({**OBS, "detail": "abc"}).encode(),
    "minute at the calendar's end": _obs(minute="9999-12-31T23:59:00Z"),
    "restarts 0": _obs(restarts=0),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_line_is_rejected_named_and_counted_and_the_replay_goes_on(tmp_path, capsys, case):
    good = b"".join(json.dumps(crash(n, minute=n)).encode() + b"\n" for n in range(1, 6))
    folder = scenario(tmp_path, events=good + BAD[case] + b"\n", settings=b"ALERT_ONLY_CLUSTERS=none\n")
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 0, err
    s = summary(out)
    assert s["events_rejected"] == 1, s
    assert any("events.jsonl:6" in line for line in err), err
    assert [json.loads(x)["action"] for x in out if json.loads(x).get("type") == "decision"] == ["scale_to_zero"]


@pytest.mark.parametrize("line", [
    json.dumps({"source": "aws.ecs", "detail-type": "ECS Task State Change", "time": "1999-12-31T00:00:00Z"}).encode(),
    json.dumps({"source": "aws.ec2", "detail-type": "EC2 Instance State-change",
                "time": "2199-01-01T00:00:00Z"}).encode(),
    b"[" * 2000 + b"]" * 2000,
])
def test_a_rejected_line_moves_no_probe_clock(tmp_path, capsys, line):
    """RECOVERY=probe's sweep runs every minute of the events' span: it pre-read every line's time,
    rejected ones included, so one line stamped 1999 aborted the replay (exit 2, the line not named) and
    one nested 2,000 deep raised RecursionError. Only accepted lines move that clock now."""
    good = b"".join(json.dumps(crash(n, minute=n)).encode() + b"\n" for n in range(1, 6))
    folder = scenario(tmp_path, events=good + line + b"\n", settings=b"ALERT_ONLY_CLUSTERS=none\nRECOVERY=probe\n")
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 0, err
    assert summary(out)["events_rejected"] == 1
