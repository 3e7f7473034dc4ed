"""Fault injection around the watchdog: an embedded fleet, client wrappers that fail on cue, a Slack stand-in.

The wrapped clients are real moto-backed boto3 clients; :class:`Faulty` raises the queued errors on the
named operations first, then delegates (an AWS error is a botocore ``ClientError`` as the SDK raises it).
"""

from __future__ import annotations

import contextlib
import http.server
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import ecsgen
from botocore.exceptions import ClientError
from tests.conftest import ManualClock

from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.summary import Episode
from ecs_guardrail.handlers.runtime import Clients, Runtime, build_runtime
from ecs_guardrail.replay.embedded import EmbeddedAws
from ecs_guardrail.replay.scenario import TABLE, load_scenario
from ecs_guardrail.settings import load_settings

__all__ = ["ManualClock", "Faulty", "Fleet", "SlackStandIn", "client_error", "embedded_fleet"]

DEV = [f"svc{i}" for i in range(6)]


def client_error(code: str, operation: str, status: int = 400) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"injected {code}"},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, operation)


class Faulty:
    """Delegates to ``client``; ``fail(op, exc, times)`` makes the next ``times`` calls of ``op`` raise."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._faults: dict[str, list[BaseException]] = {}
        self.calls: Counter[str] = Counter()
        self.ok_calls: Counter[str] = Counter()

    def fail(self, op: str, exc: BaseException, times: int = 1) -> Faulty:
        self._faults.setdefault(op, []).extend([exc] * times)
        return self

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name == "get_paginator":
            return self._paginator
        if not callable(attr) or name.startswith("_") or name == "meta":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            queue = self._faults.get(name)
            if queue:
                raise queue.pop(0)
            out = attr(*args, **kwargs)
            self.ok_calls[name] += 1
            return out

        return call


    def _paginator(self, op: str) -> Any:
        """A paginator whose ``paginate`` fails first when ``op`` has queued faults."""
        real = self._client.get_paginator(op)
        outer = self

        class Paginator:
            def paginate(self, **kwargs: Any) -> Any:
                outer.calls[op] += 1
                queue = outer._faults.get(op)
                if queue:
                    raise queue.pop(0)
                return real.paginate(**kwargs)

        return Paginator()


class Fleet:
    """A dev cluster (6 services, desired 2, ``svc5`` opted out) and an alert-only ``production``."""

    def __init__(self, aws: EmbeddedAws, env: dict[str, str]) -> None:
        self.aws = aws
        self.env = env
        self.ddb = Faulty(aws.client("dynamodb"))
        self.ecs = Faulty(aws.client("ecs"))
        self.sns = Faulty(aws.client("sns"))
        self.secrets = Faulty(aws.client("secretsmanager"))
        self.n = 0

    def runtime(self, *, sns: bool = True, slack_secret: str | None = None, **env: str) -> Runtime:
        """A watchdog runtime (its own caches) whose DynamoDB, ECS, SNS and Secrets Manager clients are the
        fault-injecting ones; other clients (Application Auto Scaling...) are plain moto clients."""
        settings = load_settings({**self.env, **env})
        wrapped = {"dynamodb": self.ddb, "ecs": self.ecs, "sns": self.sns, "secretsmanager": self.secrets}
        clients = Clients(lambda service: wrapped.get(service) or self.aws.client(service))
        rt = build_runtime(settings, clients, watchdog=True, table=DynamoTable(self.ddb, TABLE))
        if sns:
            rt.sns = SnsTopic(self.sns, self.aws.topic_arn)
        if slack_secret:
            rt.webhook = WebhookUrl(self.secrets, slack_secret)
        return rt

    def crash(self, service: str, minute: int, cluster: str = "development") -> dict[str, Any]:
        """The STOPPED event of one more crashed task of ``service`` at T0 + ``minute``."""
        self.n += 1
        return ecsgen.task_event(cluster, service, f"{self.n:032x}", "crash_exit",
                                 ecsgen.T0 + timedelta(minutes=minute))

    def desired(self, service: str, cluster: str = "development") -> int:
        return self.aws.desired_counts()[f"{cluster}/{service}"]

    def decision_items(self, service: str, cluster: str = "development") -> list[dict[str, Any]]:
        table = DynamoTable(self.aws.client("dynamodb"), TABLE)
        return list(table.query(f"SVC#{cluster}#{service}", prefix="DEC#"))

    def episode(self, service: str, cluster: str = "development") -> Episode | None:
        state = WatchdogState(DynamoTable(self.aws.client("dynamodb"), TABLE))
        return state.load(cluster, service, fresh=True).episode


@contextlib.contextmanager
def embedded_fleet(**env: str) -> Iterator[Fleet]:
    fleet_obj = ecsgen.fleet({
        "development": [(s, 2, ecsgen.OPT_OUT if s == "svc5" else {}) for s in DEV],
        "production": [("orders", 3, {}), ("payments", 3, {})],
    })
    with tempfile.TemporaryDirectory() as tmp:
        folder = ecsgen.write_scenario(Path(tmp), fleet_obj, [], {})
        with EmbeddedAws(load_scenario(folder)) as aws:
            base = {"HISTORY_TABLE": TABLE, "ALERT_ONLY_CLUSTERS": "production", "CRASH_THRESHOLD": "3",
                    "CRASH_WINDOW_MINUTES": "30", "MAX_ACTION_FRACTION": "0.2", "MIN_ACTIONS_ALLOWED": "1",
                    "FLEET_SIGNAL_MIN_FAILURES": "2", **env}
            yield Fleet(aws, base)


class SlackStandIn:
    """A Slack incoming webhook on 127.0.0.1: answers from a script of ``(status, headers, delay_s)``.

    Requests beyond the script get 200. Each handler sleeps at most ``delay_s`` (bounded), so no thread
    outlives the test by more than that.
    """

    def __init__(self, script: list[tuple[int, dict[str, str], float]]) -> None:
        self.script = list(script)
        self.requests: list[float] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append(time.monotonic())
                status, headers, delay = outer.script.pop(0) if outer.script else (200, {}, 0.0)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    body = b"ok" if status == 200 else b"error"
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T000/B000/XXXX"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> SlackStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

