"""Scenario files that cannot be read (a folder in a file's place, bytes that are not UTF-8): exit 2, one line."""

from __future__ import annotations

import pytest
from breakkit import crash, run, scenario

NOT_UTF8 = b"CRASH_THRESHOLD=3\n\xff\xfe\x9f garbage\n"


def _dir_instead(name):
    def make(folder):
        (folder / name).unlink(missing_ok=True)
        (folder / name).mkdir()
    return make


def _bytes(name, data):
    def make(folder):
        (folder / name).write_bytes(data)
    return make


CASES = {
    "events.jsonl is a folder": _dir_instead("events.jsonl"),
    "fleet.json is a folder": _dir_instead("fleet.json"),
    "settings.env is a folder": _dir_instead("settings.env"),
    "settings.env not UTF-8": _bytes("settings.env", NOT_UTF8),
    "healthy_hosts.csv is a folder": _dir_instead("healthy_hosts.csv"),
    "healthy_hosts.csv not UTF-8": _bytes("healthy_hosts.csv",
                                          b"time,target_group,healthy_host_count\n2025-08-21T12:00:00Z,caf\xe9,1\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unreadable_file_exits_2_with_one_line(tmp_path, capsys, case):
    folder = scenario(tmp_path, events=[crash(1)])
    CASES[case](folder)
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("ecs-guardrail: "), err
