"""Issue 8's four failures of the watchdog's state layer, as tests on moto with the real handlers:

a. a lost alert (the claim's transaction throttled once, then the event redelivered);
b. two concurrent invocations on one service (threads, each with its own runtime);
c. the largest item under a hot loop of one service (5,000 failures in memory, 500 on moto);
d. the slow-burn cap: services *held at zero* are bounded, a slot frees on restore or an operator's raise.

Plus the AWS calls a below-threshold crash costs the watchdog, warm and cold.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ecs_guardrail.adapters.decision_reads import read_fleet
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.adapters.store.table import Item
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.lifecycle import LEASE_MARGIN_S
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, Runtime, build_runtime
from ecs_guardrail.replay.embedded import create_history_table
from ecs_guardrail.settings import load_settings
from tests.conftest import ManualClock, load_event

REGION = "eu-west-1"
ACCOUNT = "123456789012"
TABLE = "wd-history"
T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
#: the largest item the watchdog may write under a hot loop (bytes of its JSON); DynamoDB's limit is 400 KB
ITEM_BOUND = 8_000
_MOTO_DDB_LOCK = threading.RLock()


def crash(n: int, t: datetime, service: str = "api", cluster: str = "dev") -> dict[str, Any]:
    """The STOPPED event of task ``n`` of ``cluster/service`` (essential container exited 137) at ``t``."""
    e = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    task = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{cluster}/{n:032x}"
    e["id"] = f"00000000-0000-0000-0000-{n:012d}"
    e["time"] = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    e["region"], e["account"] = REGION, ACCOUNT
    d = e["detail"]
    d.update(clusterArn=f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{cluster}", taskArn=task,
             group=f"service:{service}", lastStatus="STOPPED", version=5)
    for c in d["containers"]:
        c["taskArn"] = task
    return e


@dataclass
class Aws:
    """moto with the history table, ECS clusters and services, an SNS topic read back through SQS."""

    topic: str
    queue: str
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    hooks: list[Callable[[Any], None]] = field(default_factory=list)

    def client(self, service: str) -> Any:
        c = boto3.client(service, region_name=REGION)
        name = c.meta.service_model.service_name
        if name == "dynamodb":
            # one DynamoDB call at a time, as DynamoDB serialises writes per item: moto rolls a cancelled
            # transaction back by restoring a copy of the whole table, which would also erase another
            # thread's concurrent writes (a moto artefact, not DynamoDB's behaviour)
            call = c._make_api_call

            def serialised(*args: Any, **kwargs: Any) -> Any:
                with _MOTO_DDB_LOCK:
                    return call(*args, **kwargs)

            c._make_api_call = serialised

        def count(model: Any, **_: Any) -> None:
            self.calls[(name, model.name)] += 1

        c.meta.events.register("before-call.*.*", count)
        for hook in self.hooks:
            hook(c)
        return c

    def runtime(self, table: Any = None, **env: str) -> Runtime:
        """A watchdog runtime with its OWN clients and caches (one Lambda execution environment)."""
        settings = load_settings({"HISTORY_TABLE": TABLE, "ALERT_ONLY_CLUSTERS": "production",
                                  "CRASH_THRESHOLD": "3", "ALERT_TOPIC_ARN": self.topic, **env})
        clients = Clients(self.client)
        table = table if table is not None else DynamoTable(clients("dynamodb"), TABLE)
        return build_runtime(settings, clients, watchdog=True, table=table, home=(ACCOUNT, REGION))

    def alerts(self) -> list[dict[str, Any]]:
        sqs = boto3.client("sqs", region_name=REGION)
        out = []
        while msgs := sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10).get("Messages", []):
            for m in msgs:
                out.append(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=m["ReceiptHandle"])
        return out

    def desired(self, service: str, cluster: str = "dev") -> int:
        ecs = boto3.client("ecs", region_name=REGION)
        return ecs.describe_services(cluster=cluster, services=[service])["services"][0]["desiredCount"]

    def decisions(self, service: str, cluster: str = "dev") -> list[dict[str, Any]]:
        table = DynamoTable(boto3.client("dynamodb", region_name=REGION), TABLE)
        return list(table.query(f"SVC#{cluster}#{service}", prefix="DEC#"))


def make_aws(clusters: dict[str, list[str]], desired: int = 2) -> Aws:
    ddb = boto3.client("dynamodb", region_name=REGION)
    create_history_table(ddb, TABLE)
    ecs = boto3.client("ecs", region_name=REGION)
    ecs.register_task_definition(family="app", containerDefinitions=[{"name": "app", "image": "x", "memory": 128}])
    for cluster, services in clusters.items():
        ecs.create_cluster(clusterName=cluster)
        for s in services:
            ecs.create_service(cluster=cluster, serviceName=s, taskDefinition="app", desiredCount=desired)
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="alerts-readback")["QueueUrl"]
    qarn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=qarn)
    return Aws(topic, queue)


@pytest.fixture
def moto_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    with mock_aws(), contextlib.redirect_stdout(io.StringIO()):  # EMF metrics print to stdout
        yield


@pytest.fixture
def aws(moto_env: None) -> Aws:
    return make_aws({"dev": ["api", "web", "jobs", "mail", "auth"], "production": ["orders", "hot"]})


CTX = LambdaContextStub()


def deliver(raw: dict[str, Any], rt: Runtime, ctx: Any = CTX) -> dict[str, Any]:
    return watchdog.invoke(raw, rt, ctx)


# ---------------------------------------------------------------- a. the lost alert
def throttle_once(op: str) -> tuple[Callable[[Any], None], dict[str, int]]:
    """A client hook: the first ``op`` call of any hooked client raises a throttling ClientError."""
    state = {"left": 1, "raised": 0}

    def hook(client: Any) -> None:
        def fail(**_: Any) -> None:
            if state["left"]:
                state["left"] -= 1
                state["raised"] += 1
                raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
                                   "ResponseMetadata": {"HTTPStatusCode": 400}}, op)

        client.meta.events.register(f"before-call.{client.meta.service_model.service_name}.{op}", fail)

    return hook, state


def test_lost_alert_claim_throttled_once_then_redelivered(aws: Aws) -> None:
    hook, state = throttle_once("TransactWriteItems")
    aws.hooks.append(hook)
    rt = aws.runtime()
    events = [crash(i, T0 + timedelta(minutes=i)) for i in range(3)]
    for e in events[:2]:
        assert deliver(e, rt)["decisions"] == []
    with pytest.raises(ClientError) as info:
        deliver(events[2], rt)
    assert info.value.response["Error"]["Code"] == "ThrottlingException" and state["raised"] == 1
    # nothing half-written: no decision record, no episode, no action, no alert
    assert aws.decisions("api") == [] and aws.desired("api") == 2 and aws.alerts() == []
    assert rt.history.state.load("dev", "api", fresh=True).episode is None
    # Lambda's retry: the same event again
    out = deliver(events[2], rt)
    [d] = out["decisions"]
    assert (d["action"], d["reason"]) == ("scale_to_zero", "crash_loop")
    assert len(aws.decisions("api")) == 1
    assert len(aws.alerts()) == 1
    assert aws.calls[("ecs", "UpdateService")] == 1 and aws.desired("api") == 0
    # and again (at least once delivery): nothing more
    deliver(events[2], rt)
    assert len(aws.decisions("api")) == 1 and aws.alerts() == [] and aws.calls[("ecs", "UpdateService")] == 1


def test_lost_alert_redelivered_to_a_cold_runtime(aws: Aws) -> None:
    hook, _ = throttle_once("TransactWriteItems")
    aws.hooks.append(hook)
    events = [crash(i, T0 + timedelta(minutes=i)) for i in range(3)]
    for e in events[:2]:
        deliver(e, aws.runtime())
    with pytest.raises(ClientError):
        deliver(events[2], aws.runtime())
    out = deliver(events[2], aws.runtime())  # another execution environment gets the retry
    assert [d["action"] for d in out["decisions"]] == ["scale_to_zero"]
    assert len(aws.decisions("api")) == 1 and len(aws.alerts()) == 1 and aws.calls[("ecs", "UpdateService")] == 1


def test_alert_pending_after_a_killed_invocation_is_resumed_once(aws: Aws) -> None:
    """Claimed and recorded, then the Lambda dies before alerting: the next delivery after the lease
    sends the alert exactly once (issue 8: "a stale pending is resumed")."""
    rt = aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    events = [crash(i, T0 + timedelta(minutes=i)) for i in range(4)]
    for e in events[:2]:
        deliver(e, rt)
    real = rt.send

    def killed(alert: Any) -> Any:
        raise RuntimeError("Lambda killed mid-invocation")

    rt.send = killed  # type: ignore[method-assign]
    rt.clock = clock = ManualClock()
    short = LambdaContextStub(remaining_ms=5_000)  # lease: 5 s + LEASE_MARGIN_S, on the injected clock
    with pytest.raises(RuntimeError):
        deliver(events[2], rt, short)
    rt.send = real  # type: ignore[method-assign]
    assert len(aws.decisions("api")) == 1 and aws.alerts() == []
    ep = rt.history.state.load("dev", "api", fresh=True).episode
    assert ep is not None and ep.alert_status.value == "pending" and ep.lease_owner is not None
    # while the lease runs, another delivery waits (Lambda retries it later)
    with pytest.raises(watchdog.DecisionInProgressError):
        deliver(events[3], rt)
    clock.advance(5 + LEASE_MARGIN_S + 1)  # the lease expires
    out = deliver(events[3], rt)
    assert out["status"] == "resumed"
    assert len(aws.alerts()) == 1 and len(aws.decisions("api")) == 1
    deliver(events[3], rt)
    assert aws.alerts() == []


# ---------------------------------------------------------------- b. two concurrent invocations
def test_two_concurrent_invocations_act_and_alert_once(aws: Aws) -> None:
    barrier = threading.Barrier(2, timeout=600)  # a hang guard only: a loaded machine may take long
    waited: set[int] = set()
    lock = threading.Lock()

    def overlap(client: Any) -> None:
        def wait(**_: Any) -> None:
            me = threading.get_ident()
            with lock:
                first = me not in waited
                waited.add(me)
            if first and threading.current_thread() is not threading.main_thread():
                barrier.wait()  # both invocations have filed their crash and are deciding

        if client.meta.service_model.service_name == "ecs":
            client.meta.events.register("before-call.ecs.DescribeServices", wait)

    aws.hooks.append(overlap)
    rt_a, rt_b = aws.runtime(), aws.runtime()
    for i in range(2):
        deliver(crash(i, T0 + timedelta(minutes=i)), rt_a)
    outcomes: dict[str, Any] = {}

    def run(name: str, rt: Runtime, event: dict[str, Any]) -> None:
        try:
            outcomes[name] = deliver(event, rt)
        except Exception as exc:  # noqa: BLE001 - the loser may raise DecisionInProgressError
            outcomes[name] = exc

    threads = [threading.Thread(target=run, args=("a", rt_a, crash(2, T0 + timedelta(minutes=2)))),
               threading.Thread(target=run, args=("b", rt_b, crash(3, T0 + timedelta(minutes=3))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not barrier.broken, "the two invocations never overlapped"
    # the decided outcome first, whichever thread finished first (an exception must not sort level with it)
    results = sorted(outcomes.values(), key=lambda o: not (isinstance(o, dict) and o.get("status") == "decided"))
    assert isinstance(results[0], dict) and results[0]["status"] == "decided", outcomes
    loser = results[1]
    assert isinstance(loser, watchdog.DecisionInProgressError) or loser["status"] in (
        "lost_race", "in_episode", "in_progress", "resumed"), outcomes
    if isinstance(loser, dict):
        assert loser["decisions"] == []
    assert aws.calls[("ecs", "UpdateService")] == 1
    assert aws.desired("api") == 0
    assert len(aws.alerts()) == 1
    assert len(aws.decisions("api")) == 1


# ---------------------------------------------------------------- c. item size under a hot loop
def record_sizes(table: Any) -> list[int]:
    """Wrap ``table.put`` / ``transact_put`` to record the size of every item written (JSON bytes)."""
    sizes: list[int] = []
    put, transact = table.put, table.transact_put

    def size(item: dict[str, Any] | Item) -> int:  # a typed item (a summary's) as the dict of its attributes
        return len(json.dumps(dict(item.items()) if isinstance(item, Item) else item, separators=(",", ":")).encode())

    def put_sized(item: dict[str, Any] | Item, cond: Any = None) -> None:
        sizes.append(size(item))
        put(item, cond)

    def transact_sized(writes: list[tuple[dict[str, Any], Any]]) -> None:
        sizes.extend(size(i) for i, _ in writes)
        transact(writes)

    table.put, table.transact_put = put_sized, transact_sized
    return sizes


def hot_loop(aws: Aws, table: Any, n: int) -> tuple[list[int], Runtime, list[str]]:
    sizes = record_sizes(table)
    rt = aws.runtime(table)
    statuses = []
    for i in range(n):
        statuses.append(deliver(crash(i, T0 + timedelta(seconds=2 * i), "hot", "production"), rt)["status"])
    return sizes, rt, statuses


def _check_hot_loop(aws: Aws, sizes: list[int], rt: Runtime, statuses: list[str], n: int) -> None:
    counts = Counter(statuses)
    assert counts["decided"] == 1 and counts["counted"] == 2 and counts["in_episode"] == n - 3, counts
    s = rt.history.state.load("production", "hot", fresh=True)
    assert len(s.crashes) == rt.settings.policy().keep
    assert s.episode is not None and s.episode.last_failure == T0 + timedelta(seconds=2 * (n - 1))
    assert max(sizes) < ITEM_BOUND, max(sizes)
    # bounded by the horizon, not by the loop: the per-minute failure counts reach two windows behind the
    # newest failure (issue 18), so once the loop is longer than that the summary stops growing
    horizon = int(rt.settings.policy().horizon.total_seconds() // 2) + 60  # failures every 2 s
    if n > 2 * horizon:
        assert max(sizes[horizon:]) <= max(sizes[:horizon]), (max(sizes[horizon:]), max(sizes[:horizon]))
    assert aws.desired("hot", "production") == 2 and len(aws.alerts()) == 1


def test_item_size_under_a_hot_loop_of_5000_failures_in_memory(aws: Aws) -> None:
    table = MemoryTable(TABLE, REGION)
    sizes, rt, statuses = hot_loop(aws, table, 5_000)
    _check_hot_loop(aws, sizes, rt, statuses, 5_000)
    print(f"\nlargest item written, 5,000 failures (memory): {max(sizes)} bytes", file=sys.stderr)


def test_item_size_under_a_hot_loop_of_500_failures_on_moto(aws: Aws) -> None:
    table = DynamoTable(aws.client("dynamodb"), TABLE)
    sizes, rt, statuses = hot_loop(aws, table, 500)
    _check_hot_loop(aws, sizes, rt, statuses, 500)
    # the stored item agrees with what was measured
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=TABLE, Key={"pk": {"S": keys.summaries("production")}, "sk": {"S": "S#hot"}})["Item"]
    assert len(json.dumps(item)) < ITEM_BOUND
    print(f"\nlargest item written, 500 failures (moto): {max(sizes)} bytes", file=sys.stderr)


# ---------------------------------------------------------------- AWS calls per below-threshold crash
def test_calls_per_below_threshold_crash_warm_and_cold(aws: Aws) -> None:
    rt = aws.runtime(CRASH_THRESHOLD="1000")
    deliver(crash(0, T0), rt)  # the runtime's first event (reads the summary)
    warm, cold = [], []
    for i in range(1, 6):
        aws.calls.clear()
        deliver(crash(i, T0 + timedelta(minutes=i)), rt)
        warm.append(dict(aws.calls))
    for i in range(6, 11):
        fresh = aws.runtime(CRASH_THRESHOLD="1000")
        aws.calls.clear()
        deliver(crash(i, T0 + timedelta(minutes=i)), fresh)
        cold.append(dict(aws.calls))
    print(f"\nwatchdog AWS calls per below-threshold crash: warm {warm[-1]}, cold {cold[-1]}", file=sys.stderr)
    # one conditional PutItem of the summary, one UpdateItem of the service's member item in its fleet minute
    # and, the service's first failure of that minute (each crash here is), one of the minute's names
    # (core/fleet_minutes.py: a decision then reads who failed without reading one member)
    assert all(c == {("dynamodb", "PutItem"): 1, ("dynamodb", "UpdateItem"): 2} for c in warm), warm
    # a cold summary costs one more call: a GetItem, or a conditional PutItem presuming no summary whose
    # failure returns the stored one (ALL_OLD)
    assert all(sum(c.values()) <= 4 and c.get(("dynamodb", "UpdateItem")) == 2
               and set(c) <= {("dynamodb", "GetItem"), ("dynamodb", "PutItem"), ("dynamodb", "UpdateItem")}
               for c in cold), cold


# ---------------------------------------------------------------- d. the slow-burn cap
SIX = ["a", "b", "c", "d", "e", "f"]


@pytest.fixture
def qa(moto_env: None) -> Aws:
    return make_aws({"qa": SIX})


def loop(rt: Runtime, service: str, start: datetime, n0: int, crashes: int = 3) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(crashes):
        out = deliver(crash(n0 + i, start + timedelta(minutes=i), service, "qa"), rt)
    return out


def cap_env() -> dict[str, str]:
    return {"MAX_ACTION_FRACTION": "0.2", "MIN_ACTIONS_ALLOWED": "1", "ALERT_ONLY_CLUSTERS": "production"}


def test_slow_burn_cap_holds_a_second_service_until_an_operator_raises_the_first(qa: Aws) -> None:
    rt = qa.runtime(**cap_env())
    [d] = loop(rt, "a", T0, 0)["decisions"]
    assert (d["action"], d["reason"], d["bound"]) == ("scale_to_zero", "crash_loop", 1)
    assert qa.desired("a", "qa") == 0
    # 90 minutes later (three windows), B loops alone: A is still held at zero
    [d] = loop(rt, "b", T0 + timedelta(minutes=90), 100)["decisions"]
    assert (d["action"], d["reason"]) == ("hold", "blast_radius_cap")
    assert d["evidence"] == {"held_at_zero": ["a"]} and "(a; bound 1)" in d["message"]
    assert qa.desired("b", "qa") == 2
    # the operator raises A by hand; C loops: re-reading A frees its slot, and C is scaled
    boto3.client("ecs", region_name=REGION).update_service(cluster="qa", service="a", desiredCount=2)
    [d] = loop(rt, "c", T0 + timedelta(minutes=150), 200)["decisions"]
    assert (d["action"], d["reason"]) == ("scale_to_zero", "crash_loop")
    assert qa.desired("c", "qa") == 0 and qa.desired("a", "qa") == 2
    view = rt.history.state.cluster("qa")
    assert view.held() == ("c",)
    # then D: held, naming C only
    [d] = loop(rt, "d", T0 + timedelta(minutes=210), 300)["decisions"]
    assert (d["action"], d["reason"], d["evidence"]) == ("hold", "blast_radius_cap", {"held_at_zero": ["c"]})
    # never more than one service held at zero by the watchdog
    zero = [s for s in SIX if qa.desired(s, "qa") == 0]
    assert zero == ["c"]


def test_slow_burn_cap_restore_frees_the_slot(qa: Aws) -> None:
    rt = qa.runtime(**cap_env())
    loop(rt, "a", T0, 0)
    assert qa.desired("a", "qa") == 0
    history = HistoryStore.on(DynamoTable(boto3.client("dynamodb", region_name=REGION), TABLE))
    ecs = EcsService(boto3.client("ecs", region_name=REGION))
    out = restore(history, ecs, "qa", "a")
    assert out.changed and out.desired_count == 2 and qa.desired("a", "qa") == 2
    assert history.state.cluster("qa").held() == ()
    again = restore(history, ecs, "qa", "a")
    assert not again.changed
    [d] = loop(rt, "b", T0 + timedelta(minutes=90), 100)["decisions"]
    assert (d["action"], d["reason"]) == ("scale_to_zero", "crash_loop")
    assert qa.desired("b", "qa") == 0


def _loop_again_after_restore(qa: Aws, start: datetime) -> list[dict[str, Any]]:
    rt = qa.runtime(**cap_env())
    loop(rt, "a", start, 0)
    history = HistoryStore.on(DynamoTable(boto3.client("dynamodb", region_name=REGION), TABLE))
    restore(history, EcsService(boto3.client("ecs", region_name=REGION)), "qa", "a")
    return loop(rt, "a", start + timedelta(minutes=90), 100)["decisions"]


def test_restored_service_that_loops_again_is_a_new_episode(qa: Aws) -> None:
    # event times near the wall clock, as in production
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=60)
    [d] = _loop_again_after_restore(qa, start)
    assert (d["action"], d["reason"]) == ("scale_to_zero", "crash_loop")
    assert qa.desired("a", "qa") == 0 and len(qa.decisions("a", "qa")) == 2


def test_restored_service_that_loops_again_with_event_times_in_the_past(qa: Aws) -> None:
    # ARCHITECTURE.md rule 1: time is the events' own time, never the wall clock (replays, late delivery)
    [d] = _loop_again_after_restore(qa, T0)
    assert (d["action"], d["reason"]) == ("scale_to_zero", "crash_loop")


def test_events_replayed_from_the_archive_never_act(aws: Aws) -> None:
    """Issue 29 item 7: a replay without FilterArns reaches every rule; the watchdog's rule refuses an
    event with ``replay-name`` (routing.PATTERNS), and the code ignores one a hand-made rule lets through:
    a replayed crash loop of last week scales nothing and alerts nobody today."""
    from ecs_guardrail.routing import targets

    rt = aws.runtime()
    replayed = [crash(i, T0 + timedelta(minutes=i)) | {"replay-name": "fix-1"} for i in range(8)]
    assert targets(replayed[0]) == {"recorder"}
    outcomes = [deliver(e, rt) for e in replayed]
    assert {o["status"] for o in outcomes} == {"ignored"} and "fix-1" in outcomes[0]["why"]
    assert aws.decisions("api") == [] and aws.desired("api") == 2 and aws.alerts() == []
    # the same events, live, do scale the loop (the test can fail)
    for e in replayed:
        e.pop("replay-name")
    assert any(deliver(e, rt)["decisions"] for e in replayed) and aws.desired("api") == 0


# ---------------------------------------------------------------- e. the fleet minutes' overflow
def test_fleet_test_reads_an_overflowed_minute_from_the_services_summary(aws: Aws) -> None:
    """A service past MEMBERS_KEPT failures in one minute whose minute the window cuts: the fleet
    minutes cannot say which side of the cut its unkept failures fall on, so the decision asks that
    service's summary (its per-minute counts keep the minute's edge offsets)."""
    rt = aws.runtime(CRASH_THRESHOLD="1000")
    late = [crash(100 + i, T0 + timedelta(seconds=10 + i // 2), "web") for i in range(64)]
    early = [crash(1, T0, "web"), crash(2, T0 + timedelta(seconds=1), "web")]  # delivered last: not kept
    for raw in late + early:
        assert deliver(raw, rt)["status"] == "counted"
    at = T0 + timedelta(seconds=1)  # the window [09:30:01, 10:00:01] holds web's two early failures only
    state = rt.history.state
    raw = state.fleet("dev", at - timedelta(minutes=30), at, 2)
    assert "web" in raw.uncertain and "web" not in raw.failing
    view = read_fleet(state, rt.settings.policy(), "dev", "api", at, 5)
    assert view.failing == {"api", "web"}
    later = T0 + timedelta(minutes=1)  # a window that holds the whole minute: failing without the summary
    assert "web" in state.fleet("dev", later - timedelta(minutes=30), later, 2).failing


# ---------------------------------------------------------------- a corrupt stored summary
@pytest.mark.parametrize("corrupt", [{"as": "bogus"}, {"al": "weird"}, {"ac": 5}, {"dt": None}])
def test_one_unreadable_summary_stops_only_its_own_service(aws: Aws, corrupt: dict[str, Any]) -> None:
    """api scaled to 0 (its slot taken), then its stored episode corrupted (an unknown status, a missing
    field): web's loop in the same cluster is still decided (held: api's slot counts, fail safe), and api's
    own events fail naming the item; before, every decision in the cluster raised ValueError or KeyError."""
    from ecs_guardrail.adapters.store.watchdog_state import UnreadableSummaryError

    rt = aws.runtime()
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i), service="api"), rt)
    assert aws.desired("api") == 0
    ddb = boto3.client("dynamodb", region_name=REGION)
    key = {"pk": {"S": "WD#dev"}, "sk": {"S": "S#api"}}
    item = ddb.get_item(TableName=TABLE, Key=key)["Item"]
    doc = json.loads(item["doc"]["S"])
    doc["e"].update({k: v for k, v in corrupt.items() if v is not None})
    for k in (k for k, v in corrupt.items() if v is None):
        del doc["e"][k]
    item["doc"] = {"S": json.dumps(doc)}
    ddb.put_item(TableName=TABLE, Item=item)
    aws.alerts()
    web = aws.runtime()
    outs = [deliver(crash(10 + i, T0 + timedelta(minutes=10 + i), service="web"), web) for i in range(3)]
    assert [d["action"] for d in outs[-1]["decisions"]] == ["hold"] and aws.desired("web") == 2
    with pytest.raises(UnreadableSummaryError, match="S#api is unreadable"):
        deliver(crash(20, T0 + timedelta(minutes=20), service="api"), aws.runtime())
