"""Helpers for the ``test_break_*`` regression tests: tiny scenario folders and a CLI runner."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ecs_guardrail import cli

ROOT = Path(__file__).resolve().parents[2]
_ECS = ROOT / "events" / "ecs"
SAMPLE = json.loads((_ECS / "task-fargate-stopped-taskfailedtostart-cannotpullcontainer.derived.json").read_text())
IMPAIRED = json.loads((_ECS / "service-action-task-start-impaired.json").read_text())

FLEET = {"account": "111122223333", "region": "eu-west-1",
         "clusters": [{"name": "development", "services": [{"name": "api", "desiredCount": 2}]}]}


def crash(n: int, service: str = "api", minute: int = 0) -> dict[str, Any]:
    """A STOPPED TaskFailedToStart event of task ``n`` of ``development/service`` at 12:MM."""
    e = json.loads(json.dumps(SAMPLE).replace("ap-northeast-2", "eu-west-1")
                   .replace("example-web_cluster-dev", "development"))
    arn = f"arn:aws:ecs:eu-west-1:111122223333:task/development/{n:032x}"
    e["id"] = f"00000000-0000-0000-0000-{n:012x}"
    e["resources"] = [arn]
    e["detail"]["taskArn"] = arn
    e["detail"]["group"] = f"service:{service}"
    e["time"] = f"2025-08-21T12:{minute % 60:02d}:00Z"
    return e


def impaired(service: str = "api") -> dict[str, Any]:
    e = copy.deepcopy(IMPAIRED)
    e["detail"]["clusterArn"] = "arn:aws:ecs:eu-west-1:111122223333:cluster/development"
    e["resources"] = [f"arn:aws:ecs:eu-west-1:111122223333:service/development/{service}"]
    return e


def scenario(tmp: Path, *, fleet: Any = None, events: bytes | list[Any] = b"", settings: bytes | None = None,
             healthy_hosts: bytes | None = None) -> Path:
    """Write a scenario folder under ``tmp``; ``events`` as raw bytes or a list of objects (JSON Lines)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "fleet.json").write_text(json.dumps(FLEET if fleet is None else fleet))
    if isinstance(events, list):
        events = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    (tmp / "events.jsonl").write_bytes(events)
    if settings is not None:
        (tmp / "settings.env").write_bytes(settings)
    if healthy_hosts is not None:
        (tmp / "healthy_hosts.csv").write_bytes(healthy_hosts)
    return tmp


def run(capsys: Any, *argv: str) -> tuple[int, list[str], list[str]]:
    """``ecs-guardrail ARGV``: exit status, stdout lines, stderr lines (never a traceback)."""
    try:
        code = cli.main(list(argv))
    finally:
        # replay points the Powertools handler at sys.stderr, which capsys closes after the test; not
        # setStream: it flushes the old stream, closed already when lambdas() built the handler on its
        # /dev/null stdout (the two files in one process failed 70 tests, by order alone)
        for h in logging.getLogger("ecs-guardrail").handlers:
            if isinstance(h, logging.StreamHandler):
                h.stream = sys.__stderr__
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out.splitlines(), err.splitlines()


def summary(out: list[str]) -> dict[str, Any]:
    last = json.loads(out[-1])
    assert last["type"] == "summary"
    return last


@contextlib.contextmanager
def lambdas(tmp: Path, settings: dict[str, str] | None = None) -> Iterator[Callable[[Any], tuple[Any, Any]]]:
    """The recorder and watchdog Lambda handlers on the embedded AWS of a one-service fleet.

    Yields ``deliver(event) -> (recorder outcome, watchdog outcome or None)``, routed like the bus.
    """
    from ecs_guardrail.handlers import record, watchdog
    from ecs_guardrail.handlers.runtime import LambdaContextStub
    from ecs_guardrail.replay.embedded import EmbeddedAws, scoped_environ
    from ecs_guardrail.replay.scenario import TABLE, load_scenario
    from ecs_guardrail.routing import targets

    env = {"ALERT_ONLY_CLUSTERS": "nothing-matches", **(settings or {})}
    sc = load_scenario(scenario(tmp), env)
    ctx = LambdaContextStub()
    with EmbeddedAws(sc) as aws, scoped_environ({**env, "HISTORY_TABLE": TABLE, "ALERT_TOPIC_ARN": aws.topic_arn}), \
            open(os.devnull, "w") as sink:

        def deliver(event: Any) -> tuple[Any, Any]:
            with contextlib.redirect_stdout(sink):
                routes = targets(event)
                rec = record.handler(event, ctx)
                wd = watchdog.handler(event, ctx) if "watchdog" in routes else None
            return rec, wd

        yield deliver
