"""A storm with throttled table writes (issue 32, "Bad input and faults"): nothing lost, nothing decided twice.

The storm of ``bench/storm.py`` in the small (60 services of one cluster crash-loop at once, six
crashes each, the services shuffled within each minute), through the real watchdog handler on the
fast engine (the in-memory table and AWS). Every 7th table write raises what a throttled DynamoDB
write raises after the SDK's retries (``ProvisionedThroughputExceededException``), wherever it falls:
between a summary's filing and its fleet-minute count, inside a claim, an action's record, a recovery.
Lambda's asynchronous retries are modelled deterministically on the event clock (a failed invocation
is delivered again 1 and then 3 minutes later; after the third failure it goes to the on-failure
destination), and the destination's events are redriven at the end, as an operator would. Compared
with the same storm without faults:

- nothing is lost: every event is finally processed, and every stop is counted exactly once (each
  service's summary holds the same stopped tasks, the fleet minutes the same counts);
- nothing is decided twice: one decision record per service, at most one scale-down per service, and
  the same decisions (services and actions) as without faults.
"""

from __future__ import annotations

import heapq
import random
import tempfile
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import ecsgen
from botocore.exceptions import ClientError
from tests.conftest import ManualClock

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime, logger, metrics, metrics_enabled
from ecs_guardrail.replay.embedded import InMemoryAws
from ecs_guardrail.replay.scenario import TABLE, load_scenario
from ecs_guardrail.settings import load_settings

CLUSTER = "storm"
SERVICES = [f"svc{i:03d}" for i in range(60)]
#: a quiet cluster beside the storm where one service crash-loops alone: a scale-down, not a hold
CALM, LOOPING = "calm", ("api", "web", "worker", "cron", "edge")
CRASHES = 6
#: every Nth table write is throttled (deterministic: the same writes fail on every run)
EVERY = 7
#: Lambda's asynchronous retries of a failed invocation: delays after the failure (Lambda Developer
#: Guide, "Asynchronous invocation": two retries, about one and two minutes apart)
RETRY_DELAYS = (timedelta(minutes=1), timedelta(minutes=2))
CONTEXT = LambdaContextStub(remaining_ms=60_000, invoked_function_arn=f"arn:aws:lambda:{ecsgen.REGION}:"
                                                                     f"{ecsgen.ACCOUNT}:function:ecs-guardrail")
WRITES = ("put", "transact_put", "add_to_set", "delete_from_set")


class ThrottledTable:
    """``table`` whose every ``every``-th write raises a throttled write's ``ClientError`` (while ``on``)."""

    def __init__(self, table: MemoryTable, every: int) -> None:
        self._table, self.every, self.on = table, every, True
        self.writes = self.throttled = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._table, name)
        if name not in WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            if self.on and self.writes % self.every == 0:
                self.throttled += 1
                op = {"put": "PutItem", "transact_put": "TransactWriteItems"}.get(name, "UpdateItem")
                raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                             "Message": "injected: the table's write capacity is exceeded"},
                                   "ResponseMetadata": {"HTTPStatusCode": 400}}, op)
            return attr(*args, **kwargs)
        return write


def _events() -> list[dict[str, Any]]:
    rnd = random.Random(32)
    out, n = [], 0
    for minute in range(CRASHES):
        order = SERVICES[:]
        rnd.shuffle(order)
        for i, svc in enumerate(order):
            n += 1
            t = ecsgen.T0 + timedelta(minutes=minute, seconds=i * 60 / len(order))
            out.append(ecsgen.task_event(CLUSTER, svc, f"{n:032x}", "crash_exit", t))
        n += 1
        out.append(ecsgen.task_event(CALM, "api", f"{n:032x}", "crash_exit",
                                     ecsgen.T0 + timedelta(minutes=minute, seconds=30)))
    return out


def _event_time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["time"].replace("Z", "+00:00"))


def _storm(throttle: bool) -> dict[str, Any]:
    """Deliver the storm (and Lambda's retries) in delivery-time order; returns what the table and the
    fleet hold afterwards, and the delivery counts."""
    fleet = ecsgen.fleet({CLUSTER: [(s, 2, {}) for s in SERVICES], CALM: [(s, 2, {}) for s in LOOPING]})
    with tempfile.TemporaryDirectory() as tmp:
        aws = InMemoryAws(load_scenario(ecsgen.write_scenario(Path(tmp), fleet, [], {})))
        aws.__enter__()
        aws.__exit__(None, None, None)
    memory = MemoryTable(TABLE, ecsgen.REGION)
    table = ThrottledTable(memory, EVERY)
    table.on = throttle
    clock = ManualClock()
    settings = load_settings({"HISTORY_TABLE": TABLE, "ALERT_ONLY_CLUSTERS": "none",
                              "ALERT_TOPIC_ARN": aws.topic_arn})

    scale_downs: Counter[str] = Counter()

    def client(service: str) -> Any:
        c = aws.memory.client(service)
        if service == "ecs":
            real = c.update_service

            def update_service(**kw: Any) -> Any:
                out = real(**kw)
                if kw.get("desiredCount") == 0:
                    scale_downs[f"{kw['cluster'].rsplit('/', 1)[-1]}/{kw['service'].rsplit('/', 1)[-1]}"] += 1
                return out
            c.update_service = update_service
        return c

    def deliver(event: dict[str, Any], at: datetime) -> None:
        clock.now = at.timestamp()
        rt = build_runtime(settings, Clients(client), watchdog=True, table=table,
                           home=(ecsgen.ACCOUNT, ecsgen.REGION))
        rt.clock = clock
        watchdog.invoke(event, rt, CONTEXT, delivered_at=at)

    events = _events()
    # (delivery time, order, event, attempt): Lambda's queue for this function, on the event clock
    queue = [(_event_time(e), n, e, 1) for n, e in enumerate(events)]
    heapq.heapify(queue)
    seq, failed, attempts, errors = len(events), [], Counter[int](), Counter[str]()
    while queue:
        at, _, event, attempt = heapq.heappop(queue)
        attempts[attempt] += 1
        try:
            deliver(event, at)
        except Exception as exc:  # noqa: BLE001 - Lambda retries whatever the handler raised
            errors[type(exc).__name__ if not isinstance(exc, ClientError) else exc.response["Error"]["Code"]] += 1
            if attempt > len(RETRY_DELAYS):
                failed.append(event)  # the on-failure destination keeps it
            else:
                seq += 1
                heapq.heappush(queue, (at + RETRY_DELAYS[attempt - 1], seq, event, attempt + 1))
    kept = len(failed)
    table.on = False  # the operator redrives the on-failure destination once the storm is over
    redrive_at = ecsgen.T0 + timedelta(minutes=CRASHES + 10)
    for event in failed:
        deliver(event, redrive_at)

    state = HistoryStore.on(memory, 90, cache={}).state
    summaries = {s: sorted(f.task_arn for f in state.load(CLUSTER, s, fresh=True).crashes) for s in SERVICES}
    decisions = {f"{c}/{s}": [(i["action"], i["reason"]) for i in memory.query(f"SVC#{c}#{s}", prefix="DEC#")]
                 for c, names in ((CLUSTER, SERVICES), (CALM, LOOPING)) for s in names}
    minutes = {(i["pk"], i["sk"]): {k: v for k, v in i.items() if k not in ("expires_at",)}
               for i in memory.scan() if str(i["pk"]).startswith("FM#")}
    desired = {f"{c}/{name}": int(svc["desiredCount"]) for c in (CLUSTER, CALM)
               for name, svc in aws.memory.ecs_clusters[c]["services"].items()}
    return {"summaries": summaries, "decisions": decisions, "scale_downs": scale_downs, "minutes": minutes,
            "desired": desired,
            "throttled": table.throttled, "attempts": attempts, "kept": kept, "errors": errors,
            "alerts": list(aws.memory.topics.get(aws.topic_arn, []))}


def test_a_storm_with_throttled_table_writes_loses_nothing_and_decides_nothing_twice() -> None:
    level = logger.log_level
    logger.setLevel("CRITICAL")
    try:
        with metrics_enabled(False):
            clean, faulty = _storm(throttle=False), _storm(throttle=True)
    finally:
        logger.setLevel(level)
        metrics.clear_metrics()
    assert clean["throttled"] == 0 and clean["attempts"][2] == 0 and clean["kept"] == 0
    # the faults happened, and were retried (some past Lambda's retries, into the destination)
    assert faulty["throttled"] > 100, faulty["throttled"]
    assert faulty["attempts"][2] > 0 and faulty["errors"]["ProvisionedThroughputExceededException"] > 100
    # nothing lost: every stop counted once, in its service's summary and in the fleet minutes
    assert faulty["summaries"] == clean["summaries"]
    assert all(clean["summaries"].values())
    assert faulty["minutes"] == clean["minutes"]
    # nothing decided twice: one record per service, the same decisions, at most one scale-down each
    assert all(len(d) == 1 for k, d in clean["decisions"].items() if k.startswith(CLUSTER)), clean["decisions"]
    assert clean["decisions"][f"{CALM}/api"] == [("scale_to_zero", "crash_loop")]
    assert faulty["decisions"] == clean["decisions"]
    assert faulty["desired"] == clean["desired"] and faulty["desired"][f"{CALM}/api"] == 0
    assert faulty["scale_downs"] == clean["scale_downs"] == Counter({f"{CALM}/api": 1})
    print(f"storm: {faulty['throttled']} table writes throttled, deliveries by attempt {dict(faulty['attempts'])}, "
          f"{faulty['kept']} kept by the on-failure destination and redriven; errors {dict(faulty['errors'])}; "
          "decisions "
          f"{Counter(a for d in faulty['decisions'].values() for a, _ in d)}")
    # every decision alerted (at least once: a repeat after a throttled write carries the same decision)
    assert len(faulty["alerts"]) >= len(clean["alerts"]) > 0
