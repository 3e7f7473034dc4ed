"""Both replay engines give identical ``--json`` output on the scenarios (events/scenarios/ and, when the
shared acceptance folder sits beside the checkout, ../shared/scenarios/).

The moto side is the slowest item of the suite (seconds of CPU a scenario, 22 s for
``shared-cache-brownout``), so by default it runs on :data:`MOTO_SUBSET`, scenarios that between them reach
every part of the AWS port a replay uses; ``tests/contract`` holds both implementations of each port to
the same suite call by call, and ``tests/e2e/test_scenarios.py`` checks every scenario's fast replay.
``ECS_GUARDRAIL_ALL_ENGINES=1`` runs every scenario on both engines (before a release, or after a change to
``replay/memory_aws.py`` or the fleet build).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.cli import main
from tests.conftest import ROOT, SCENARIOS

SHARED = ROOT.parent / "shared" / "scenarios"

#: scenario name -> the part of the AWS port its moto replay reaches that the others' do not
MOTO_SUBSET = {
    "watchdog-made-zero": "the action: UpdateService and the scalable target's suspension; healthy hosts "
                          "through CloudWatch GetMetricData; minutes at zero by the watchdog",
    "loop-while-serving": "four hours of healthy-host samples through CloudWatch while the service serves",
    "dev-opt-out-impaired": "the opt-out tag (ListTagsForResource) and SERVICE_TASK_START_IMPAIRED",
    "dev-loop-redelivered": "at-least-once delivery: DynamoDB's conditional writes on redelivered events",
    "aggregate-health-outage": "circuit-breaker services and ELB health-check kills on target groups",
    "circuit-breaker-rollback": "deployments and their rollback (DescribeServices deployments)",
    "alerts-tour": "every alert kind published through SNS",
    "job-beside-loop": "standalone tasks beside a service (DescribeTaskDefinition)",
    "storm-over-one-still-loops": "the fleet test over a cluster (ListServices, DescribeServices in pages)",
    "held-at-zero-no-second-decision": "a held service's late loop: DescribeServices at 0, no second decision "
                                       "(issue 37: must pass on both engines)",
    "nlb-healthy-hosts-only": "a Network Load Balancer (loadbalancer/net/...) sampled from AWS/NetworkELB",
    "listed-deployment-finished-loop-scaled": "ListServiceDeployments answered from fleet.json's deployments",
    "job-summary-default-recovery": "the one-minute sweep of a RECOVERY=manual replay (a job window's summary)",
}
ALL_ENGINES = os.environ.get("ECS_GUARDRAIL_ALL_ENGINES", "") not in ("", "0")


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _folders() -> list[Path]:
    seen: set[str] = set()
    out = []
    for base in (SCENARIOS, SHARED):
        if not base.is_dir():
            continue
        for p in sorted(base.iterdir()):
            if (p / "fleet.json").exists() and _digest(p) not in seen:  # a copy is replayed once
                seen.add(_digest(p))
                out.append(p)
    return out


def _first_of_each_name() -> dict[str, Path]:
    """The first folder of each scenario name (events/scenarios/ before ../shared/scenarios/)."""
    out: dict[str, Path] = {}
    for p in _folders():
        out.setdefault(p.name, p)
    return out


def _same_but_settings(a: Path, b: Path) -> bool:
    """Every file of ``a`` and ``b`` but settings.env is the same, and so is the fast replay's output."""
    names = {p.name for p in a.iterdir() if p.is_file()} | {p.name for p in b.iterdir() if p.is_file()}
    if any(not (a / n).is_file() or not (b / n).is_file() or (a / n).read_bytes() != (b / n).read_bytes()
           for n in names - {"settings.env"}):
        return False
    return _fast_json(a) == _fast_json(b)


def _fast_json(folder: Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["replay", str(folder), "--json"]) == 0
    return out.getvalue()


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_fast_and_moto_engines_agree(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if folder.name not in MOTO_SUBSET and not ALL_ENGINES:
        pytest.skip("moto side on MOTO_SUBSET only (ECS_GUARDRAIL_ALL_ENGINES=1 runs it)")
    first = _first_of_each_name()[folder.name]
    if first != folder and not ALL_ENGINES and _same_but_settings(first, folder):
        # the shared copies of bundled subset scenarios differ in settings.env's ALERT_ONLY_CLUSTERS only,
        # naming no cluster of the fleet (the same replay output): the same part of the AWS port, run once
        pytest.skip("moto side once per MOTO_SUBSET scenario (ECS_GUARDRAIL_ALL_ENGINES=1 runs every copy)")
    outputs = {}
    for engine in ("fast", "moto"):
        assert main(["replay", str(folder), "--json", "--engine", engine]) == 0
        outputs[engine] = capsys.readouterr().out
    assert outputs["fast"] == outputs["moto"]
    assert outputs["fast"].splitlines()[-1].startswith('{"type": "summary"')


# ---- adversarial fleets (break-it pass 2): both engines must still print the same bytes --------------

def _adversarial(tmp_path: Path) -> Path:
    """Clusters whose names are substrings of each other (``prod`` in ``preprod``, ``ig`` in ``big``),
    the same service names in each, and a circuit-breaker service in a crash loop (its built deployment
    is COMPLETED, so it is judged like any other)."""
    from tests.fuzz.breakkit import crash, scenario

    def svcs(tg: str) -> list[dict[str, Any]]:
        return [{"name": "api", "desiredCount": 2, "targetGroups": [tg]},
                {"name": "cb", "desiredCount": 2, "deploymentCircuitBreaker": {"enable": True, "rollback": True}},
                {"name": "extra", "desiredCount": 1}]

    fleet = {"account": "111122223333", "region": "eu-west-1", "clusters": [
        {"name": "prod", "services": svcs("api-prod")[:2]},
        {"name": "preprod", "services": svcs("api-preprod")},
        {"name": "big", "services": svcs("api-big")},
        {"name": "ig", "services": svcs("api-ig")[:1]},
        {"name": "development", "services": [{"name": "api", "desiredCount": 2}]},
    ]}
    events = []
    for cluster in ("prod", "preprod", "big", "ig"):
        for n, service in enumerate(("api", "cb") if cluster != "ig" else ("api",)):
            for k in range(5):
                e = json.loads(json.dumps(crash(len(events) + 1, service, minute=k * 2 + n))
                               .replace("task/development/", f"task/{cluster}/")
                               .replace("cluster/development", f"cluster/{cluster}"))
                events.append(e)
    return scenario(tmp_path, fleet=fleet, events=events,
                    settings=b"ALERT_ONLY_CLUSTERS=nothing\nMAX_ACTION_FRACTION=1.0\nMIN_ACTIONS_ALLOWED=5\n")


def test_engines_agree_when_cluster_names_contain_each_other(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """moto's ListServices lists ``preprod``'s services under ``prod`` (a substring test on its keys); AWS
    and the fast engine list a cluster's own. And moto draws deployment IDs at random: two moto replays of
    one scenario differed. Every decision counts its own cluster's services and both engines agree."""
    folder = _adversarial(tmp_path)
    outputs = []
    for engine in ("fast", "moto", "moto"):
        assert main(["replay", str(folder), "--json", "--engine", engine]) == 0
        outputs.append(capsys.readouterr().out)
    decisions = [json.loads(line) for line in outputs[0].splitlines()[:-1]]
    counts = {(d["cluster"], d["service"]): d["services_in_cluster"] for d in decisions}
    assert counts[("prod", "api")] == 2 and counts[("ig", "api")] == 1 and counts[("big", "api")] == 3
    # the fleet is built settled (deployments COMPLETED): a circuit-breaker service is not mid-deployment
    assert {d["reason"] for d in decisions if d["service"] == "cb"} and \
        not any(d["reason"] == "deployment_in_progress" for d in decisions)
    assert outputs[1] == outputs[2], "moto replays of one scenario differ"
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("revision", ["0", "1.0"])
def test_engines_agree_on_a_job_whose_task_definition_revision_is_not_a_count(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], revision: str) -> None:
    """``nightly:0`` read as the newest revision on the fast engine (essential containers known: no alert),
    unknown on moto (alert); ``nightly:1.0`` was a moto traceback."""
    from tests.fuzz.breakkit import crash, scenario

    def job(n: int, rev: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
        e = crash(n, minute=n * 40)
        e["detail"].update(group="family:nightly", containers=containers,
                           taskDefinitionArn=f"arn:aws:ecs:eu-west-1:111122223333:task-definition/nightly:{rev}")
        return e

    events = [job(1, "2", [{"name": "app", "exitCode": 1}]),
              job(2, revision, [{"name": "app", "exitCode": 0}, {"name": "side.car", "exitCode": 1}])]
    folder = scenario(tmp_path, events=events, settings=b"ALERT_ONLY_CLUSTERS=nothing\n")
    outputs = []
    for engine in ("fast", "moto"):
        assert main(["replay", str(folder), "--json", "--engine", engine]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


def test_a_built_fleet_has_been_running_on_both_engines(tmp_path: Path) -> None:
    """SCENARIOS.md: the fleet is built "as the real API would hold it": a service that has been running
    has its tasks running and its deployment COMPLETED (CreateService alone leaves it IN_PROGRESS with no
    task, which made every circuit-breaker service deployment_in_progress for a whole replay)."""
    from ecs_guardrail.adapters.ecs import EcsService
    from ecs_guardrail.replay.engine import make_aws
    from ecs_guardrail.replay.scenario import load_scenario
    from tests.fuzz.breakkit import scenario

    fleet = {"account": "111122223333", "region": "eu-west-1", "clusters": [{"name": "development", "services": [
        {"name": "cb", "desiredCount": 3, "deploymentCircuitBreaker": {"enable": True, "rollback": True}},
        {"name": "idle", "desiredCount": 0}]}]}
    folder = scenario(tmp_path, fleet=fleet, events=[])
    seen = {}
    for engine in ("fast", "moto"):
        with make_aws(engine, load_scenario(folder)) as aws:
            ecs = EcsService(aws.client("ecs"))
            seen[engine] = [ecs.describe("development", name) for name in ("cb", "idle")]
    for facts in seen.values():
        cb, idle = facts
        assert (cb.desired_count, cb.running_count) == (3, 3) and (idle.desired_count, idle.running_count) == (0, 0)
        assert [d.rollout_state for d in cb.deployments] == ["COMPLETED"]
        assert cb.deployments[0].rollout_state_reason == f"ECS deployment {cb.deployments[0].id} completed."
    assert seen["fast"] == seen["moto"]


def test_the_moto_subset_names_scenarios_that_exist():
    names = {p.name for p in _folders()}
    assert set(MOTO_SUBSET) <= names | {n for n in MOTO_SUBSET if not SHARED.is_dir()}, set(MOTO_SUBSET) - names
    assert len(MOTO_SUBSET) < len(names) or ALL_ENGINES or not SHARED.is_dir()
