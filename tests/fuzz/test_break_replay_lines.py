"""events.jsonl lines that make the JSON decoder itself fail (not with JSONDecodeError) are rejected lines."""

from __future__ import annotations

import json

import pytest
from breakkit import crash, run, scenario, summary


@pytest.mark.parametrize("line", [
    b"[" * 100_000 + b"]" * 100_000,            # RecursionError in the decoder
    b'{"a":' * 5_000 + b"1" + b"}" * 5_000,     # RecursionError, objects
    b'{"a": 1' + b"0" * 5_000 + b"}",           # ValueError: int longer than sys.get_int_max_str_digits()
])
def test_undecodable_line_is_rejected_and_the_replay_goes_on(tmp_path, capsys, line):
    folder = scenario(tmp_path, events=line + b"\n" + json.dumps(crash(1)).encode() + b"\n")
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 0
    s = summary(out)
    assert s["events_read"] == 2 and s["events_rejected"] == 1
    assert len(err) == 1 and "events.jsonl:1: rejected: not JSON" in err[0]


@pytest.mark.parametrize("engine", ["fast", "moto"])
@pytest.mark.parametrize("containers", [5, 1.5, True])
def test_a_task_definition_line_with_containers_not_a_list_is_rejected_not_a_crash(tmp_path, capsys, engine,
                                                                                    containers):
    """The fleet build reads the task definitions the events name before the replay starts; a line that
    names one and has ``containers`` of the wrong type made that pre-read raise TypeError (a traceback,
    exit 1, on both engines) instead of the line being rejected when its turn comes."""
    bad = crash(1)
    bad["detail"]["containers"] = containers
    folder = scenario(tmp_path, events=[bad, crash(2)])
    code, out, err = run(capsys, "replay", str(folder), "--json", "--engine", engine)
    assert code == 0
    s = summary(out)
    assert s["events_read"] == 2 and s["events_rejected"] == 1
    assert any("events.jsonl:1: rejected" in line for line in err)
