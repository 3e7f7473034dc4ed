"""Every AWS call each function makes is allowed by that function's role, in both templates (issue 29
item 2), judged by an IAM policy evaluator (iam_eval.py), not by comparing strings.

The calls: every bundled (events/scenarios) and shared (../shared/scenarios) scenario replayed with
``RECOVERY=manual`` and ``RECOVERY=probe``, and the explorer's situations (tests/explore) in two orders
and with each fault at a few calls. Each call is recorded with the function it ran in (the recorder,
the watchdog and its sweep, the availability sampler), its parameters, and the declared unit
(``ecs_guardrail.iam.permissions``) that made it; :func:`iam_calls.requests_of` turns it into what IAM
authorises (action, resource ARN, condition keys).

Then: each call comes from a declared unit of its own function that declares it; each request is
allowed by the function's role in template.yaml and in terraform/, deployed with the scenario's own
account, region and ``ALERT_ONLY_CLUSTERS``; and removing any one action from any Allow statement of
either template makes some recorded call fail (each mutant is a test case).
"""

from __future__ import annotations

import fnmatch
import functools
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import iac
import pytest
from iam_calls import Call, Recorder, RecordingClient, RecordingTable, Request, kind_of, requests_of
from iam_eval import Deployment, Statement, cfn_policy, decide, tf_policy, without
from parity import CENTRAL_TOPIC_ARN, CHANNEL_SECRET_ARN, CHANNEL_TOPIC_ARN, SLACK_ARN, cfn_statements, tf_statements

from ecs_guardrail import iam

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT / "bench", ROOT / "tests" / "explore"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

SHARED = ROOT.parent / "shared" / "scenarios"


def _once_each(folders: list[Path]) -> list[Path]:
    """``folders`` without byte-identical copies (a shared scenario that is a bundled one's copy: the same
    input makes the same calls, in the same deployment)."""
    seen: set[tuple[tuple[str, bytes], ...]] = set()
    out = []
    for folder in folders:
        key = tuple((p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file())
        if key not in seen:
            seen.add(key)
            out.append(folder)
    return out


SCENARIOS = _once_each(sorted(p for p in (ROOT / "events" / "scenarios").iterdir() if (p / "events.jsonl").is_file())
                       + (sorted(p for p in SHARED.iterdir() if (p / "events.jsonl").is_file())
                          if SHARED.is_dir() else []))
#: what the Lambda platform does with the role (not the code): logs, X-Ray, the on-failure destination
PLATFORM_ACTIONS = frozenset({"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords",
                              "xray:PutTraceSegments", "sqs:SendMessage"})


@dataclass
class Collected:
    calls: list[Call]
    deployments: dict[str, Deployment]  # Call.where -> the deployment its role is evaluated for
    skipped: list[str]
    _requests: dict[str, dict[Deployment, set[Request]]] = field(default_factory=dict)

    def requests(self, function: str) -> dict[Deployment, set[Request]]:
        """The distinct requests of ``function``'s recorded calls, per deployment (built once per function:
        every role test and each of its mutants reads the same ones)."""
        if function not in self._requests:
            out: dict[Deployment, set[Request]] = defaultdict(set)
            for c in self.calls:
                if c.function in RUNS_CODE_OF.get(function, (function,)):
                    out[self.deployments[c.where]].update(requests_of(c))
            self._requests[function] = out
        return self._requests[function]


#: the functions whose recorded calls a function's role must allow: the sweep function (the crash path's
#: own lane, issue 32) runs the watchdog's code and hands whatever is not the schedule to watchdog.invoke,
#: and the watchdog still runs a sweep it is given (a schedule from before the lane), so each can make
#: every call the other's code makes
RUNS_CODE_OF = {"sweep": ("sweep", "watchdog"), "watchdog": ("watchdog", "sweep")}


def _alert_only(value: tuple[str, ...]) -> str:
    return ",".join(value)


@pytest.fixture(scope="session")
def collected() -> Collected:
    rec = Recorder()
    deployments: dict[str, Deployment] = {}
    skipped: list[str] = []
    _replays(rec, deployments, skipped)
    _explorer(rec, deployments)
    _lambda_handlers(rec, deployments)
    return Collected(rec.calls, deployments, skipped)


def _entry_points(rec: Recorder) -> Iterator[Any]:
    from ecs_guardrail.handlers import record, sweep, watchdog
    from ecs_guardrail.replay.restarts import ReplayRestarts
    from ecs_guardrail.replay.sampling import ReplaySampler

    yield mock.patch.object(record, "record_event", rec.as_function("recorder", record.record_event))
    yield mock.patch.object(watchdog, "invoke", rec.as_function("watchdog", watchdog.invoke))
    yield mock.patch.object(sweep, "run_sweep", rec.as_function("sweep", sweep.run_sweep))
    yield mock.patch.object(ReplaySampler, "tick", rec.as_function("availability", ReplaySampler.tick))
    yield mock.patch.object(ReplayRestarts, "tick", rec.as_function("availability", ReplayRestarts.tick))


def _replays(rec: Recorder, deployments: dict[str, Deployment], skipped: list[str]) -> None:
    import contextlib

    from ecs_guardrail.core.errors import ScenarioError
    from ecs_guardrail.replay import engine
    from ecs_guardrail.replay.embedded import InMemoryAws
    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import TABLE, TOPIC, load_scenario

    real_client, real_table = InMemoryAws.client, engine.make_table

    def client(self: InMemoryAws, service: str) -> Any:
        return RecordingClient(real_client(self, service), rec)

    def make_table(*args: Any, **kwargs: Any) -> Any:
        return RecordingTable(real_table(*args, **kwargs), rec)

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(InMemoryAws, "client", client))
        stack.enter_context(mock.patch.object(engine, "make_table", make_table))
        for patch in _entry_points(rec):
            stack.enter_context(patch)
        for folder in SCENARIOS:
            for recovery in ("manual", "probe"):
                where = f"{folder.parent.parent.name}/{folder.name} RECOVERY={recovery}"
                try:
                    scenario = load_scenario(folder, {"RECOVERY": recovery})
                    rec.home, rec.where = (scenario.account, scenario.region), where
                    deployments[where] = Deployment(scenario.account, scenario.region,
                                                    _alert_only(scenario.settings.ALERT_ONLY_CLUSTERS), TABLE, TOPIC)
                    replay(scenario)
                except ScenarioError as exc:  # e.g. a span the probe's minute sweep cannot cover
                    skipped.append(f"{where}: {exc}")


def _explorer(rec: Recorder, deployments: dict[str, Deployment]) -> None:
    import contextlib

    import ecsgen
    import situations
    import world
    from scheduler import FAULTS, Forced

    from ecs_guardrail.handlers.runtime import logger, metrics
    from ecs_guardrail.replay.scenario import TABLE, TOPIC

    real_client, real_fresh = world.World._client, situations.fresh_world

    def client(self: world.World, service: str) -> Any:
        return RecordingClient(real_client(self, service), rec)

    def fresh(sit: situations.Situation) -> world.World:
        w = real_fresh(sit)
        w.table = RecordingTable(w.table, rec)  # type: ignore[assignment]
        return w

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(world.World, "_client", client))
        stack.enter_context(mock.patch.object(situations, "fresh_world", fresh))
        level = logger.log_level
        logger.setLevel("CRITICAL")  # thousands of invocations (as tests/explore/conftest.py does)
        stack.callback(logger.setLevel, level)
        stack.callback(metrics.clear_metrics)
        for patch in _entry_points(rec):
            stack.enter_context(patch)
        for sit in situations.SITUATIONS + situations.THREE:
            where = f"explore/{sit.name}"
            env = {**world.ENV, **(sit.env or {})}
            deployments[where] = Deployment(ecsgen.ACCOUNT, ecsgen.REGION, env["ALERT_ONLY_CLUSTERS"], TABLE, TOPIC)
            rec.home, rec.where = (ecsgen.ACCOUNT, ecsgen.REGION), where
            _, trace = situations.run_schedule(sit, Forced([]))
            situations.run_schedule(sit, Forced(["b"]))
            for at in range(0, len(trace), 4):  # each fault at every fourth call: the retry paths' calls
                for kind in FAULTS:
                    def fault(task: str, op: str, step: int, at: int = at, kind: str = kind) -> str | None:
                        return kind if step == at else None

                    situations.run_schedule(sit, Forced([]), fault, label=f"{kind} at {at}")


class _UnfinishedDeployment:
    """moto's ECS, with one unfinished service deployment listed for ``dev/canary`` (moto lists none for
    a CODE_DEPLOY service: its ``deployments[]`` is empty), so the watchdog asks DescribeServiceDeployments."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def list_service_deployments(self, **kwargs: Any) -> dict[str, Any]:
        if kwargs.get("service") != "canary":
            return self._client.list_service_deployments(**kwargs)  # type: ignore[no-any-return]
        arn = self._client.describe_services(cluster=kwargs["cluster"], services=["canary"])["services"][0][
            "serviceArn"].replace(":service/", ":service-deployment/") + "/1234567890123456789"
        return {"serviceDeployments": [{"serviceDeploymentArn": arn, "status": "IN_PROGRESS"}]}


def _deployment_failed(account: str, region: str, cluster: str, service: str, at: Any) -> dict[str, Any]:
    """An ``ECS Deployment State Change`` SERVICE_DEPLOYMENT_FAILED (the documentation sample's shape)."""
    import ecsgen

    return {"version": "0", "id": f"00000000-0000-0000-0000-{len(cluster):012d}",
            "detail-type": "ECS Deployment State Change", "source": "aws.ecs", "account": account,
            "time": ecsgen.iso(at), "region": region,
            "resources": [f"arn:aws:ecs:{region}:{account}:service/{cluster}/{service}"],
            "detail": {"eventType": "ERROR", "eventName": "SERVICE_DEPLOYMENT_FAILED",
                       "deploymentId": "ecs-svc/9000000000000000001", "updatedAt": ecsgen.iso(at),
                       "reason": "ECS deployment circuit breaker: task failed to start."}}


def _lambda_handlers(rec: Recorder, deployments: dict[str, Deployment]) -> None:
    """The three Lambda handlers as Lambda calls them, on moto: what a replay does not reach. The
    watchdog reads the Slack webhook secret (its delivery then fails: port 9 on 127.0.0.1 is closed)
    and lists the account's clusters (the unmatched alert-only check); it reads the service deployments
    of a circuit-breaker service whose deployment moto never finishes (DescribeServiceDeployments); the
    sampler puts a restart observation on the bus; the scheduled sweep runs in the watchdog."""
    import contextlib
    import io
    import tempfile
    from datetime import timedelta

    import boto3
    import ecsgen

    from ecs_guardrail.adapters.cloudwatch import RESTART_NAMESPACE, ContainerRestarts
    from ecs_guardrail.handlers import availability, lane, record, runtime, watchdog
    from ecs_guardrail.replay.embedded import EmbeddedAws
    from ecs_guardrail.replay.scenario import TABLE, load_scenario

    where = "lambda/handlers-on-moto"
    fleet = ecsgen.fleet({"dev": [("api", 2, {}), ("web", 2, {}), ("jobs", 2, {})]})
    fleet["clusters"][0]["services"][1]["targetGroups"] = ["web-tg"]
    # issue 35: the api's essential container logs with awslogs, so its decision alert reads the crashed
    # task's last lines (logs:FilterLogEvents on /ecs/api: CrashLogGroupPattern's default)
    fleet["clusters"][0]["services"][0].update(taskDefinitionFamily="dev-api", logGroup="/ecs/api")
    # the sampler reads restart counts only where a task definition enables a restart policy, in a
    # cluster with Container Insights (a cluster with container_restarts.csv rows has it)
    fleet["clusters"][0]["services"][2]["containers"] = [
        {"name": "app", "essential": True, "restartPolicy": {"enabled": True}}]
    t0 = ecsgen.T0
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp, \
            contextlib.redirect_stdout(io.StringIO()):
        folder = ecsgen.write_scenario(Path(tmp), fleet, [], {})
        (folder / "container_restarts.csv").write_text(
            f"time,cluster,service,restart_count\n{ecsgen.iso(t0 - timedelta(minutes=30))},dev,jobs,0\n")
        scenario = load_scenario(folder)
        with EmbeddedAws(scenario) as aws:
            secret = aws.client("secretsmanager").create_secret(
                Name="ecs-guardrail/slack", SecretString="http://127.0.0.1:9/hook")["ARN"]
            ecs = aws.client("ecs")
            task_def = ecs.describe_services(cluster="dev", services=["api"])["services"][0]["taskDefinition"]
            # a service whose deployments CodeDeploy finishes: the watchdog reads where they stand
            ecs.create_service(cluster="dev", serviceName="canary", taskDefinition=task_def, desiredCount=2,
                               deploymentController={"type": "CODE_DEPLOY"})
            for minute, total in ((t0 - timedelta(minutes=1), 3), (t0, 5)):
                aws.client("cloudwatch").put_metric_data(Namespace=RESTART_NAMESPACE, MetricData=[{
                    "MetricName": "RestartCount", "Timestamp": minute, "Value": total, "Unit": "Count",
                    "Dimensions": ContainerRestarts.dimensions("dev", "jobs")}])
            # alert routes (issue 35 item 4): cluster team-b's alerts go to channel "oncall" (a topic and a
            # Slack secret of that name); dev's stay on the default channel
            channel_topic = aws.client("sns").create_topic(Name="oncall")["TopicArn"]
            channel_secret = aws.client("secretsmanager").create_secret(
                Name="oncall", SecretString="http://127.0.0.1:9/oncall")["ARN"]
            # org (issue 32 item 4): alerts to the organisation's topic (here a second topic of this account)
            central = aws.client("sns").create_topic(Name="org-alerts")["TopicArn"]
            env = {"HISTORY_TABLE": TABLE, "ALERT_TOPIC_ARN": aws.topic_arn, "SLACK_WEBHOOK_SECRET_ARN": secret,
                   "CENTRAL_ALERT_TOPIC_ARN": central, "ACCOUNT_NAME": "payments-prod",
                   "ALERT_ONLY_CLUSTERS": "production", "CRASH_THRESHOLD": "3", "RECOVERY": "probe",
                   "SAMPLE_LOOKBACK_MINUTES": "5", "ALERT_ROUTES": "team-*=oncall",
                   "ALERT_CHANNEL_TOPIC_ARNS": channel_topic, "ALERT_CHANNEL_SECRET_ARNS": channel_secret}
            for k, v in env.items():
                mp.setenv(k, v)
            deployments[where] = Deployment(scenario.account, scenario.region, "production", TABLE,
                                            aws.topic_arn.rsplit(":", 1)[-1], secret, (channel_topic,),
                                            (channel_secret,))
            rec.home, rec.where = (scenario.account, scenario.region), where
            runtime.set_client_factory(lambda service: RecordingClient(
                _UnfinishedDeployment(aws.client(service)) if service == "ecs" else aws.client(service), rec))
            ctx = runtime.LambdaContextStub(invoked_function_arn=f"arn:aws:lambda:{scenario.region}:"
                                                                 f"{scenario.account}:function:ecs-guardrail")
            try:
                with rec.acting_as("availability"):
                    # settled minute t0 + 4 ends a 5-minute span: the restart reader's turn (restarts_due)
                    availability.handler({"source": "aws.events", "detail-type": "Scheduled Event",
                                          "time": ecsgen.iso(t0 + timedelta(minutes=9))}, ctx)
                for n, service in enumerate(["api"] * 3 + ["canary"] * 3):
                    event = ecsgen.task_event("dev", service, f"{n + 1:032x}", "crash_exit",
                                              t0 + timedelta(minutes=n % 3))
                    with rec.acting_as("recorder"):
                        record.handler(event, ctx)
                    with rec.acting_as("watchdog"), contextlib.suppress(Exception):  # Slack is down
                        watchdog.handler(event, ctx)
                # a failed deployment of dev/api (default channel) and of team-b/api (routed to "oncall";
                # a cluster ECS does not know: DescribeServices answers ClusterNotFoundException)
                for cluster in ("dev", "team-b"):
                    failed = _deployment_failed(scenario.account, scenario.region, cluster, "api",
                                                t0 + timedelta(minutes=4))
                    with rec.acting_as("recorder"):
                        record.handler(failed, ctx)
                    with rec.acting_as("watchdog"), contextlib.suppress(Exception):  # Slack is down
                        watchdog.handler(failed, ctx)
                with rec.acting_as("sweep"), contextlib.suppress(Exception):  # the sweep's own lane
                    lane.handler({"source": "aws.events", "detail-type": "Scheduled Event",
                                  "time": ecsgen.iso(t0 + timedelta(minutes=30))}, ctx)
            finally:
                runtime.set_client_factory(None)
    assert boto3  # the moto clients above are boto3's


# ------------------------------------------------------------------------------------------ tests

def test_the_calls_cover_every_function_and_every_source(collected: Collected) -> None:
    functions = Counter(c.function for c in collected.calls)
    assert set(functions) == set(iam.FUNCTIONS), functions
    wheres = {c.where.split(" ")[0] for c in collected.calls}
    assert sum(w.startswith("explore/") for w in wheres) >= 10
    assert sum(not w.startswith(("explore/", "lambda/")) for w in wheres) == len(SCENARIOS)
    # the call of the bug this test exists for: a probe's pass restores through EcsService.restore
    # (the sweep runs the probes in its own lane, the sweep function: issue 32)
    assert any(c.operation == "UntagResource" and c.function == "sweep" for c in collected.calls)
    # issue 35: the crash's words, in a replay and in the deployed handler
    reads = {c.where.split(" ")[0] for c in collected.calls if c.operation == "FilterLogEvents"}
    assert "lambda/handlers-on-moto" in reads and any(w.endswith("/alerts-tour") for w in reads), reads


def test_the_routed_channel_and_the_failed_deployment_alert_are_exercised(collected: Collected) -> None:
    """Issue 35: the watchdog published to a routed channel's topic and read its Slack secret, and claimed a
    failed deployment's alert (a conditional PutItem): calls the role must allow in both templates."""
    reqs = {(r.action, r.resource) for c in collected.calls if c.where == "lambda/handlers-on-moto"
            and c.function == "watchdog" for r in requests_of(c)}
    assert any(a == "sns:Publish" and r.endswith(":oncall") for a, r in reqs), sorted(reqs)
    assert any(a == "secretsmanager:GetSecretValue" and ":secret:oncall-" in r for a, r in reqs)
    assert any(a == "sns:Publish" and not r.endswith(":oncall") for a, r in reqs)  # dev: the default channel
    assert any(c.operation == "PutItem" and "DEP#" in str(c.params) for c in collected.calls
               if c.where == "lambda/handlers-on-moto")


def _units_of(function: str) -> set[Any]:
    import importlib

    module = importlib.import_module(iam.FUNCTIONS[function].rsplit(".", 1)[0])
    codes = set()
    for unit in module.USES.values():
        codes |= {fn.__code__ for fn in iam.declared_functions(unit)}
    return codes


def test_every_call_comes_from_a_declared_unit_of_its_function(collected: Collected) -> None:
    """The declaration sits on the unit that makes the call: a call without one, or outside the
    function's ``USES``, or of an action (on a resource kind) its unit does not declare, is named."""
    units = {f: _units_of(f) for f in iam.FUNCTIONS}
    problems: set[str] = set()
    for c in collected.calls:
        if c.unit is None:
            problems.add(f"{c.function}: {c.service}.{c.operation} made by no declared unit ({c.where})")
            continue
        if c.unit.code not in units[c.function]:
            problems.add(f"{c.function}: {c.unit.qualname} is not in its USES ({c.service}.{c.operation})")
        for r in requests_of(c):
            if r.action not in c.unit.declared.get(kind_of(r), frozenset()):
                problems.add(f"{c.function}: {c.unit.qualname} calls {r.action} on {kind_of(r)} "
                             f"but declares {dict(c.unit.declared)}")
    assert not problems, "\n".join(sorted(problems))


def test_every_call_an_effect_performer_makes_is_declared_by_it(collected: Collected) -> None:
    """Issue 34 item 2: each effect of the episode machine has a small performer that declares the AWS
    actions it needs (``@performs``); every call made while one runs is among its declared actions, and
    the performers of the scale-down, the alert, the probe's steps and the restore at a pass all ran."""
    problems: set[str] = set()
    ran: set[str] = set()
    for c in collected.calls:
        for p in c.performers:
            ran.add(p.qualname.rsplit(":", 1)[-1].rsplit(".", 1)[-1])
            for r in requests_of(c):
                if r.action not in p.declared.get(kind_of(r), frozenset()):
                    problems.add(f"{c.function}: the performer {p.qualname} makes {r.action} on {kind_of(r)} "
                                 f"but declares {dict(p.declared)}")
    assert not problems, "\n".join(sorted(problems))
    assert {"_record_facts", "_scale_to_zero", "_send_alert", "_start_probe", "_stop_probe",
            "_restore_service", "perform_restore"} <= ran, sorted(ran)


@functools.cache
def _policy(template: str, function: str, d: Deployment, tf_workdir: Path | None) -> list[Statement]:
    if template == "cfn":
        return cfn_policy(function, d)
    assert tf_workdir is not None
    return tf_policy(function, d, tf_workdir)


@pytest.fixture(scope="session")
def tf_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    if iac.terraform_binary() is None:
        return None
    return iac.terraform_module_copy(tmp_path_factory.mktemp("tfiam"), "variables.tf", "alert_only.tf")


def _need_terraform(template: str, tf_workdir: Path | None) -> None:
    if template == "tf" and tf_workdir is None:
        pytest.skip("terraform is not on PATH: the Terraform alert-only locals are evaluated with "
                    "`terraform console` (template.yaml's side still runs)")


def _refused(template: str, function: str, collected: Collected, tf_workdir: Path | None,
             mutate: Any = None, actions: str | None = None) -> tuple[list[str], int, int]:
    """Requests of ``function`` its role does not allow (the home account's; another account's resource
    is refused by design: ``ServiceAccessDeniedError``), how many were evaluated, how many foreign.
    ``actions``: only the requests whose action this IAM action pattern matches (case-insensitive, ``*``
    wildcards), the only ones a mutant removing that action can refuse."""
    refused: list[str] = []
    evaluated = foreign = 0
    for d, requests in collected.requests(function).items():
        if actions is not None:
            requests = {r for r in requests if fnmatch.fnmatch(r.action.lower(), actions.lower())}
            if not requests:
                continue
        policy = _policy(template, function, d, tf_workdir)
        if mutate is not None:
            policy = mutate(policy)
        for r in sorted(requests, key=lambda r: (r.action, r.resource)):
            if r.account not in ("", d.account) or (r.resource != "*" and f":{d.region}:" not in r.resource):
                foreign += 1
                continue
            evaluated += 1
            verdict = decide(policy, r)
            if verdict != "allowed":
                refused.append(f"{verdict}: {r.action} on {r.resource} {r.context_dict() or ''}")
    return refused, evaluated, foreign


@pytest.mark.parametrize("function", sorted(iam.FUNCTIONS))
@pytest.mark.parametrize("template", ["cfn", "tf"])
def test_every_call_is_allowed_by_the_functions_role(template: str, function: str, collected: Collected,
                                                      tf_workdir: Path | None) -> None:
    _need_terraform(template, tf_workdir)
    refused, evaluated, foreign = _refused(template, function, collected, tf_workdir)
    calls = sum(1 for c in collected.calls if c.function == function)
    print(f"iam {template} {function}: {calls} calls, {evaluated} distinct requests allowed, {foreign} foreign")
    assert evaluated > 0
    assert not refused, "\n".join(refused)


def _grants() -> list[tuple[str, str, str, str]]:
    """(template, function, Sid, action) of every Allow statement's actions, the platform's excepted."""
    out = set()
    for function in iam.FUNCTIONS:
        for s in cfn_statements(function, SlackWebhookSecretArn=SLACK_ARN, AlertOnlyClusters="production",
                                AlertChannelTopicArns=CHANNEL_TOPIC_ARN, AlertChannelSecretArns=CHANNEL_SECRET_ARN,
                                CentralAlertTopicArn=CENTRAL_TOPIC_ARN):
            if s["Effect"] == "Allow":
                out |= {("cfn", function, s["Sid"], a) for a in iac.as_list(s["Action"]) if a not in PLATFORM_ACTIONS}
        for s in tf_statements(function):
            if s.get("effect", "Allow") == "Allow":
                out |= {("tf", function, s.get("sid", ""), a) for a in iac.as_list(s["actions"])
                        if a not in PLATFORM_ACTIONS}
    return sorted(out)


GRANTS = _grants()


@pytest.mark.parametrize(("template", "function", "sid", "action"), GRANTS,
                         ids=[f"{t}-{f}-{s}-{a}" for t, f, s, a in GRANTS])
def test_removing_any_one_granted_action_refuses_a_call(template: str, function: str, sid: str, action: str,
                                                        collected: Collected, tf_workdir: Path | None) -> None:
    """A mutant of the role: ``action`` removed from statement ``sid``. Some recorded call of the function
    must then be refused; a grant no call needs survives and fails here (grant less, or exercise it).

    Only the requests ``action`` matches are evaluated against the mutant: removing it cannot refuse any
    other (and ``test_every_call_is_allowed_by_the_functions_role`` holds them all allowed unmutated), so
    the refused call found here is one the removed grant allowed."""
    _need_terraform(template, tf_workdir)
    refused, _, _ = _refused(template, function, collected, tf_workdir,
                             mutate=lambda policy: without(policy, sid, action)
                             if any(s["Sid"] == sid for s in policy) else policy,  # a deployment without it: as is
                             actions=action)
    assert refused, f"{template} {function}: removing {action} from {sid} refuses no recorded call"
