"""The explorer's world: a small fleet on the in-memory AWS and table, the invocations, the invariants.

``dev`` has five services at desired count 2 (bound: 1 service held at zero); ``svc0`` and ``svc1``
have Application Auto Scaling scalable targets, ``svc1``'s with scale-in already suspended by its
owners (restore must give back exactly that). ``prod`` is alert-only and has ``orders`` (desired 3)
with a scalable target. Every world starts from one built snapshot (deep copies: no fleet build per
schedule). The only clock is :class:`ManualClock`.
"""

from __future__ import annotations

import copy
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import ecsgen
from scheduler import Scheduler, Switching, Task
from tests.conftest import ManualClock

from ecs_guardrail.adapters.autoscaling import ScalableTargets
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.lifecycle import LEASE_MARGIN_S
from ecs_guardrail.core.records import parse_time
from ecs_guardrail.core.summary import AlertStatus
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime
from ecs_guardrail.replay.embedded import InMemoryAws
from ecs_guardrail.replay.scenario import TABLE, load_scenario
from ecs_guardrail.settings import load_settings

T0 = ecsgen.T0
DEV = ("svc0", "svc1", "svc2", "svc3", "svc4")
SCALING = {"DynamicScalingInSuspended": False, "DynamicScalingOutSuspended": False, "ScheduledScalingSuspended": False}
#: svc1's owners had suspended scale-in themselves: restore must give back exactly this, not "all false"
SVC1_SCALING = {**SCALING, "DynamicScalingInSuspended": True}
ENV = {"HISTORY_TABLE": TABLE, "CRASH_THRESHOLD": "3", "CRASH_WINDOW_MINUTES": "30", "MAX_ACTION_FRACTION": "0.2",
       "MIN_ACTIONS_ALLOWED": "1", "FLEET_SIGNAL_MIN_FAILURES": "2", "ALERT_ONLY_CLUSTERS": "prod"}
#: a Lambda context with one minute left: its lease is 60 s + LEASE_MARGIN_S on the world's clock
CONTEXT = LambdaContextStub(remaining_ms=60_000, invoked_function_arn=f"arn:aws:lambda:{ecsgen.REGION}:"
                                                                     f"{ecsgen.ACCOUNT}:function:ecs-guardrail")
LEASE_S = 60 + LEASE_MARGIN_S + 1
#: Lambda's asynchronous retries of an invocation that failed (it then goes to the on-failure destination)
RETRIES = 2
_BASE: dict[str, Any] = {}


def _build_base() -> tuple[InMemoryAws, MemoryTable, dict[tuple[str, str], int]]:
    if not _BASE:
        fleet = ecsgen.fleet({"dev": [(s, 2, {}) for s in DEV], "prod": [("orders", 3, {})]})
        for c in fleet["clusters"]:
            for s in c["services"]:
                if s["name"] in ("svc0", "svc1", "orders"):
                    s["autoScaling"] = {"minCapacity": 1, "maxCapacity": 6}
        with tempfile.TemporaryDirectory() as tmp:
            folder = ecsgen.write_scenario(Path(tmp), fleet, [], {})
            aws = InMemoryAws(load_scenario(folder))
            aws.__enter__()
            aws.__exit__(None, None, None)  # the fleet is built; only the in-memory state is kept
        aas = aws.memory.client("application-autoscaling")
        aas.register_scalable_target(ServiceNamespace="ecs", ResourceId="service/dev/svc1",
                                     ScalableDimension="ecs:service:DesiredCount", SuspendedState=SVC1_SCALING)
        _BASE.update(aws=aws, table=MemoryTable(TABLE, ecsgen.REGION), desired=aws.desired_counts())
    return _BASE["aws"], _BASE["table"], _BASE["desired"]


def crash(cluster: str, service: str, n: int, minute: float) -> dict[str, Any]:
    """The STOPPED event of crash number ``n`` of ``service`` at T0 + ``minute``."""
    return ecsgen.task_event(cluster, service, f"{abs(hash((cluster, service, n))) % 16**32:032x}", "crash_exit",
                             T0 + timedelta(minutes=minute))


@dataclass
class World:
    """One schedule's state. ``updates``: successful UpdateService desiredCount 0 calls per service;
    ``changes``: capacity-changing calls per cluster (UpdateService, TagResource, RegisterScalableTarget)."""

    aws: InMemoryAws
    table: MemoryTable
    desired0: dict[str, int]
    clock: ManualClock = field(default_factory=ManualClock)
    sched: Scheduler | None = None
    updates: Counter[str] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)
    env: dict[str, str] = field(default_factory=lambda: dict(ENV))
    violations: list[str] = field(default_factory=list)
    max_at_zero: int = 0
    #: ECS reads and writes of desired counts in call order: (who, "describe" | "update", service, count)
    ecs_log: list[tuple[str, str, str, int]] = field(default_factory=list)
    #: services an operator set by hand in the schedule (``raise_``), and the count set
    operator: dict[str, int] = field(default_factory=dict)

    @classmethod
    def new(cls, **env: str) -> World:
        aws, table, desired = _build_base()
        w = cls(copy.deepcopy(aws), copy.deepcopy(table), dict(desired))
        w.env.update(env)
        return w

    # ------------------------------------------------------------ clients
    def _client(self, service: str) -> Any:
        client = self.aws.memory.client(service)
        world = self

        if service == "ecs":
            real_update, real_tag = client.update_service, client.tag_resource
            real_describe = client.describe_services

            def update_service(**kw: Any) -> Any:
                out = real_update(**kw)
                name = kw["service"].rsplit("/", 1)[-1]
                world.changes[kw["cluster"].rsplit("/", 1)[-1]] += 1
                if kw.get("desiredCount") == 0:
                    world.updates[name] += 1
                if kw.get("desiredCount") is not None:
                    world.ecs_log.append((world._who(), "update", name, int(kw["desiredCount"])))
                return out

            def describe_services(**kw: Any) -> Any:
                out = real_describe(**kw)
                for svc in out.get("services", []):
                    world.ecs_log.append((world._who(), "describe", str(svc.get("serviceName")),
                                          int(svc.get("desiredCount", -1))))
                return out

            client.describe_services = describe_services

            def tag_resource(**kw: Any) -> Any:
                world.changes[kw["resourceArn"].split("/")[-2]] += 1
                return real_tag(**kw)

            client.update_service, client.tag_resource = update_service, tag_resource
        if service == "application-autoscaling":
            real_register = client.register_scalable_target

            def register_scalable_target(**kw: Any) -> Any:
                world.changes[kw["ResourceId"].split("/")[1]] += 1
                return real_register(**kw)

            client.register_scalable_target = register_scalable_target
        return Switching(client, service, self.sched) if self.sched is not None else client

    def _who(self) -> str:
        task = getattr(self.sched._local, "task", None) if self.sched is not None else None
        return task.name if task is not None else "history"

    def _scaling(self) -> ScalableTargets:
        alert_only = load_settings(dict(self.env)).policy().alert_only
        return ScalableTargets(self._client("application-autoscaling"), alert_only=alert_only)

    def runtime(self) -> Any:
        """A watchdog runtime of its own (an execution environment), on the shared AWS and table."""
        settings = load_settings({**self.env, "ALERT_TOPIC_ARN": self.aws.topic_arn})
        table = Switching(self.table, "table", self.sched) if self.sched is not None else self.table
        rt = build_runtime(settings, Clients(self._client), watchdog=True, table=table,
                           home=(ecsgen.ACCOUNT, ecsgen.REGION))
        rt.clock = self.clock
        return rt

    # ------------------------------------------------------------ what an invocation does
    def deliver(self, event: dict[str, Any]) -> Any:
        """One watchdog invocation for ``event`` (as Lambda calls it), on a fresh runtime."""
        return lambda: watchdog.invoke(event, self.runtime(), CONTEXT)

    def restore(self, service: str, cluster: str = "dev") -> Any:
        """The operator's ``restore`` of ``service``."""
        def run() -> Any:
            rt = self.runtime()
            return restore(rt.history, EcsService(self._client("ecs")), cluster, service,
                           scaling=self._scaling(), clock=self.clock)
        return run

    def raise_(self, service: str, count: int, cluster: str = "dev") -> Any:
        """An operator's UpdateService desiredCount ``count`` on ``service`` (console or CLI)."""
        def run() -> Any:
            self.operator[service] = count
            return self._client("ecs").update_service(cluster=cluster, service=service, desiredCount=count)
        return run

    def sweep(self, minute: float) -> Any:
        """One scheduled sweep (``RECOVERY=probe``: due probes) at T0 + ``minute``, on a fresh runtime."""
        from ecs_guardrail.handlers.sweep import run_sweep

        return lambda: run_sweep(self.runtime(), T0 + timedelta(minutes=minute), CONTEXT)

    def settle_sweep(self, minute: float) -> None:
        """A sweep outside any schedule (the world's history)."""
        sched, self.sched = self.sched, None
        try:
            self.sweep(minute)()
        finally:
            self.sched = sched

    def settle(self, events: list[dict[str, Any]]) -> None:
        """Deliver ``events`` one after the other, outside any schedule (the world's history)."""
        sched, self.sched = self.sched, None
        try:
            for e in events:
                watchdog.invoke(e, self.runtime(), CONTEXT)
        finally:
            self.sched = sched

    # ------------------------------------------------------------ reading the world
    def desired(self, cluster: str = "dev") -> dict[str, int]:
        c = self.aws.memory.ecs_clusters[cluster]
        return {name: int(s["desiredCount"]) for name, s in c["services"].items()}

    def scaling(self, service: str, cluster: str = "dev") -> dict[str, bool] | None:
        t = self.aws.memory.scalable_targets.get(("ecs", f"service/{cluster}/{service}", "ecs:service:DesiredCount"))
        return dict(t["SuspendedState"]) if t else None

    def store(self) -> HistoryStore:
        return HistoryStore.on(self.table, 90, cache={})

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.aws.memory.topics.get(self.aws.topic_arn, []))

    def check_always(self) -> None:
        """What must hold at every switch point: services held at zero never exceed the bound."""
        desired = self.desired()
        at_zero = [s for s, n in desired.items() if n == 0]
        self.max_at_zero = max(self.max_at_zero, len(at_zero))
        if len(at_zero) > 1:
            self.violations.append(f"{len(at_zero)} services at 0 with bound 1: {at_zero}")
        # a probe (desired count 1) is still held: services below their count never exceed the bound
        below = [s for s, n in desired.items() if n < self.desired0[f"dev/{s}"]]
        if len(below) > 1:
            self.violations.append(f"{len(below)} services held (at 0 or probing) with bound 1: {below}")

    # ------------------------------------------------------------ after the schedule
    def retry(self, tasks: list[Task]) -> list[Task]:
        """Lambda's retries of each invocation that failed (after its lease, on the world's clock),
        sequentially; the redelivery of an event is the same event."""
        self.sched = None
        failed = [t for t in tasks if t.error is not None]
        for _ in range(RETRIES + 1):
            if not failed:
                break
            self.clock.advance(LEASE_S)
            again = []
            for t in failed:
                t.error = None
                try:
                    t.result = t.fn()
                except BaseException as exc:  # noqa: BLE001 - judged by check_after
                    t.error = exc
                    again.append(t)
            failed = again
        return failed

    def check_after(self, bound_services: tuple[str, ...] = DEV) -> list[str]:
        """The invariants after the schedule and Lambda's retries; returns the violations."""
        out = list(self.violations)
        store = self.store()
        desired = self.desired()
        at_zero = sorted(s for s, n in desired.items() if n == 0)
        if len(at_zero) > 1:
            out.append(f"held at zero {at_zero} exceeds the bound 1")
        view = store.state.cluster("dev")
        for s in at_zero:  # nobody at zero invisible to the cap
            if s not in view.held():
                out.append(f"{s} is at 0 but holds no slot: invisible to the cap")
        for s, n in self.updates.items():
            if n > 1:
                out.append(f"{s} scaled to 0 {n} times in one episode")
        if self.changes.get("prod"):
            out.append(f"{self.changes['prod']} capacity-changing call(s) on the alert-only cluster prod")
        alerts = self.alerts()
        text = "\n".join(f"{a.get('subject')}\n{a.get('message')}" for a in alerts)
        for cluster in ("dev", "prod"):
            for x in store.state.cluster(cluster).summaries:
                ep = x.episode
                if ep is None:
                    continue
                if ep.alert_status in (AlertStatus.PENDING, AlertStatus.FAILED):
                    out.append(f"{cluster}/{x.service}: decision at {ep.decision_time} never alerted "
                               f"(alert {ep.alert_status.value} after the retries)")
                elif ep.alert_status is AlertStatus.SENT and x.service not in text:
                    out.append(f"{cluster}/{x.service}: alert marked sent, none names it")
                if ep.lease_owner is not None:
                    out.append(f"{cluster}/{x.service}: lease of {ep.lease_owner} left behind")
        return out

    def check_operator(self) -> list[str]:
        """A probe never fights an operator (ARCHITECTURE.md, "Recovery"): a service an operator set keeps
        the operator's count, unless the watchdog's UpdateService that changed it followed a read made
        *before* the operator's call (the race the README names: ECS has no conditional update)."""
        out = []
        desired = self.desired()
        for service, count in self.operator.items():
            if desired[service] == count:
                continue
            ops = [i for i, (who, kind, svc, _) in enumerate(self.ecs_log)
                   if who == "operator" and kind == "update" and svc == service]
            if not ops:
                continue  # the operator's call never ran (a fault, no retry left)
            i_op = ops[-1]
            later = [(i, who) for i, (who, kind, svc, _) in enumerate(self.ecs_log)
                     if i > i_op and kind == "update" and svc == service and who != "operator"]
            if not later:
                out.append(f"{service}: desired count {desired[service]}, the operator set {count}, and no "
                           "watchdog call changed it after the operator's")
                continue
            j, who = later[0]
            reads = [i for i, (w, kind, svc, _) in enumerate(self.ecs_log)
                     if w == who and kind == "describe" and svc == service and i < j]
            if not reads or reads[-1] > i_op:
                out.append(f"{service}: {who} changed the operator's count {count} to {self.ecs_log[j][3]} "
                           f"after reading it (a probe fought an operator)")
        return out

    def check_restore(self) -> list[str]:
        """``restore`` of every service at zero gives back exactly the pre-decision desired count and
        scalable-target suspended state (a service an operator set is the operator's: not checked)."""
        out = []
        self.sched = None
        for s, n in sorted(self.desired().items()):
            if n != 0 or s in self.operator:
                continue
            restore(self.store(), EcsService(self._client("ecs")), "dev", s,
                    scaling=self._scaling(), clock=self.clock,
                    now=T0 + timedelta(hours=3))
        for s, n in sorted(self.desired().items()):
            if n != self.desired0[f"dev/{s}"] and s not in self.operator:
                out.append(f"after restore {s} has desired count {n}, was {self.desired0[f'dev/{s}']}")
        for s, want in (("svc0", SCALING), ("svc1", SVC1_SCALING)):
            if self.scaling(s) != want and s not in self.operator:
                out.append(f"after restore {s}'s scalable target is {self.scaling(s)}, was {want}")
        return out


def decision_times(world: World, cluster: str, service: str) -> list[datetime]:
    """Times of the recorded decisions of one service."""
    return [parse_time(i["time"]) for i in world.table.query(f"SVC#{cluster}#{service}", prefix="DEC#")]
