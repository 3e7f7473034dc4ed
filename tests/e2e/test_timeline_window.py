"""The incident timeline's window is the replay's accepted events (and samples), never a rejected stamp.

future-stamp-rejected has one event stamped 2199-01-01 that the recorder rejects (a wrong clock). Before,
``replay --timeline`` took its window from every line's ``time``: it read one Query per shard of every
cluster-hour up to 2199 (1.5 million hours: minutes of CPU) and printed "to 2199-01-01T00:00:00Z".
"""

from __future__ import annotations

import json

from tests.conftest import SCENARIOS, cli_in_process


def test_rejected_far_future_stamp_does_not_stretch_the_timeline():
    proc = cli_in_process("replay", str(SCENARIOS / "future-stamp-rejected"), "--json", "--timeline")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rejected: event stamped 2199-01-01" in proc.stderr
    timelines = [o for o in map(json.loads, proc.stdout.splitlines()) if o["type"] == "timeline"]
    assert timelines
    for t in timelines:
        text = json.dumps(t)
        assert "2199" not in text
        assert "2025-08-21T12:52:59" in text  # the last accepted event's time ends the window
