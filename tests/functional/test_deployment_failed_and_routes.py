"""Issue 35 items 3 and 4 on both engines (the fast in-memory engine and moto): a failed deployment
sends one alert per deployment (redelivered, repeated and concurrent events included), in alert-only
clusters too, saying whether ECS rolls back and to which deployment, with ECS's reason made inert in
Slack; ``ALERT_ROUTES`` sends each cluster's alerts to its named channel and every ``--alerts-out``
line names its ``route``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.fuzz.breakkit import crash, scenario

ACCOUNT, REGION = "111122223333", "eu-west-1"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:oncall"
SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:dev-alerts-AbCdEf"
HOSTILE = "ECS deployment circuit breaker: <!channel> <@U123> see <https://evil.example|the fix> & run"


def deployment(name: str, did: str, minute: int, *, cluster: str = "development", service: str = "api",
               reason: str | None = None, envelope: str | None = None) -> dict[str, Any]:
    """An ``ECS Deployment State Change`` at 12:MM (the documentation samples' shape, no clusterArn)."""
    t = f"2025-08-21T12:{minute:02d}:00Z"
    return {"version": "0", "id": envelope or f"dep-{name[19:25]}-{did[-4:]}-{minute}",
            "detail-type": "ECS Deployment State Change", "source": "aws.ecs", "account": ACCOUNT, "time": t,
            "region": REGION, "resources": [f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{cluster}/{service}"],
            "detail": {"eventType": "ERROR" if name.endswith("FAILED") else "INFO", "eventName": name,
                       "deploymentId": did, "updatedAt": t,
                       "reason": reason or f"ECS deployment {did} {name.rsplit('_', 1)[-1].lower()}."}}


def fleet(rollback: bool = True, clusters: tuple[str, ...] = ("development",)) -> dict[str, Any]:
    return {"account": ACCOUNT, "region": REGION, "clusters": [
        {"name": c, "services": [{"name": "api", "desiredCount": 2, "targetGroups": [], "tags": {},
                                  "deploymentCircuitBreaker": {"enable": True, "rollback": rollback}},
                                 {"name": "web", "desiredCount": 2}]} for c in clusters]}


def slack(alerts: list[dict[str, Any]], kind: str = "deployment_failed") -> list[dict[str, Any]]:
    return [a for a in alerts if a["channel"] == "slack" and a["kind"] == kind]


@pytest.mark.parametrize("engine", ["fast", "moto"])
def test_one_alert_per_failed_deployment_redelivered_and_repeated(tmp_path: Path, engine: str) -> None:
    failed = deployment("SERVICE_DEPLOYMENT_FAILED", "ecs-svc/2222", 11, reason=HOSTILE)
    events = [deployment("SERVICE_DEPLOYMENT_COMPLETED", "ecs-svc/1111", 1),
              deployment("SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/2222", 5),
              failed, failed,  # EventBridge's redelivery: the same envelope
              {**failed, "id": "another-envelope"},  # ECS (or a retry) sending it again: another envelope id
              deployment("SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/1111", 12,
                         reason="ECS deployment circuit breaker: rolling back to deploymentId ecs-svc/1111."),
              deployment("SERVICE_DEPLOYMENT_COMPLETED", "ecs-svc/1111", 15)]
    # production is alert-only: the alert goes out there too (alerting is all this does)
    folder = scenario(tmp_path, fleet=fleet(clusters=("development", "production")),
                      events=events + [{**e, "id": e["id"] + "-p", "resources": [
                          e["resources"][0].replace("/development/", "/production/")]} for e in events],
                      settings=b"ALERT_ONLY_CLUSTERS=production\n")
    result = replay(load_scenario(folder), engine=engine)
    alerts = slack(result.alerts)
    assert sorted(a["text"].split("\n")[0] for a in alerts) == ["DEPLOYMENT FAILED: development/api",
                                                                "DEPLOYMENT FAILED: production/api"]
    assert len([a for a in result.alerts if a["kind"] == "deployment_failed" and a["channel"] == "sns"]) == 2
    assert result.decisions == []  # no loop crossed the threshold: the alert is news on its own
    text = alerts[0]["text"]
    assert "ECS rolls back to deployment ecs-svc/1111" in text and "Deployment: ecs-svc/2222" in text
    # ECS's reason pings nobody and hides no link, in the text and in every block
    blob = json.dumps(alerts[0]["blocks"]) + text
    assert "<!channel>" not in blob and "<@U123>" not in blob and "<https://evil" not in blob
    assert "&lt;!channel&gt;" in text and "&lt;https://evil.example|the fix&gt;" in text and "&amp; run" in text
    assert all(a["route"] == "default" for a in result.alerts)


@pytest.mark.parametrize("engine", ["fast", "moto"])
def test_no_rollback_says_so_and_a_loop_still_decides(tmp_path: Path, engine: str) -> None:
    events = [crash(n, minute=n) for n in range(1, 6)]
    events += [deployment("SERVICE_DEPLOYMENT_FAILED", "ecs-svc/3333", 9)]
    folder = scenario(tmp_path, fleet=fleet(rollback=False), events=events, settings=b"ALERT_ONLY_CLUSTERS=none\n")
    result = replay(load_scenario(folder), engine=engine)
    (alert,) = slack(result.alerts)
    assert "ECS does not roll back" in alert["text"] and "Rolls back: no" in alert["text"]
    assert len(result.decisions) == 1  # the loop's own decision is unchanged


ROUTED = (f"ALERT_ONLY_CLUSTERS=none\nALERT_ROUTES=prod-*=oncall,dev-*=dev-alerts\n"
          f"ALERT_CHANNEL_TOPIC_ARNS={TOPIC}\nALERT_CHANNEL_SECRET_ARNS={SECRET}\n").encode()


@pytest.mark.parametrize("engine", ["fast", "moto"])
def test_routes_send_each_cluster_to_its_channel_and_every_line_names_it(tmp_path: Path, engine: str) -> None:
    clusters = ("prod-eu", "dev-1", "staging")
    events = [{**deployment("SERVICE_DEPLOYMENT_FAILED", f"ecs-svc/{n}000", 3 + n, cluster=c),
               "id": f"routed-{n}"} for n, c in enumerate(clusters)]
    folder = scenario(tmp_path, fleet=fleet(clusters=clusters), events=events, settings=ROUTED)
    result = replay(load_scenario(folder), engine=engine)
    routes = {(a["text"].split(": ", 1)[1].split("\n")[0], a["route"]) for a in slack(result.alerts)}
    assert routes == {("prod-eu/api", "oncall"), ("dev-1/api", "dev-alerts"), ("staging/api", "default")}
    assert all("route" in a for a in result.alerts)
    # a channel with a topic publishes (simulated on the embedded topic); one with only a secret previews Slack
    assert {a["route"] for a in result.alerts if a["channel"] == "sns"} == {"oncall", "default"}
    assert result.summary["alerts_sent"] == 2


def test_alerts_out_lines_name_their_route(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ecs_guardrail import cli

    folder = scenario(tmp_path / "s", fleet=fleet(clusters=("prod-eu",)),
                      events=[deployment("SERVICE_DEPLOYMENT_FAILED", "ecs-svc/1", 3, cluster="prod-eu")],
                      settings=ROUTED)
    out = tmp_path / "alerts.jsonl"
    assert cli.main(["replay", str(folder), "--alerts-out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines and {x["route"] for x in lines} == {"oncall"}
    capsys.readouterr()


@pytest.mark.parametrize(("routes", "said"), [
    ("prod-*", "is not GLOB=NAME"),
    ("prod-*=", "is not GLOB=NAME"),
    ("=oncall", "is not GLOB=NAME"),
    ("prod *=oncall", "is not GLOB=NAME"),
    ("prod-*=oncall,,dev-*=dev-alerts", "'' is not GLOB=NAME"),
    ("prod-*=oncall;dev-*=dev-alerts", "is not GLOB=NAME"),
    ("# routes", "is not GLOB=NAME"),
    ("prod-*=pager", "names channel 'pager', which is not configured"),
])
def test_a_malformed_route_is_an_error_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str], routes: str,
                                                said: str) -> None:
    from ecs_guardrail import cli

    folder = scenario(tmp_path, fleet=fleet(), events=[], settings=(
        f"ALERT_ROUTES={routes}\nALERT_CHANNEL_TOPIC_ARNS={TOPIC}\nALERT_CHANNEL_SECRET_ARNS={SECRET}\n").encode())
    code = cli.main(["replay", str(folder)])
    err = capsys.readouterr().err
    assert code != 0 and "ALERT_ROUTES" in err and said in err, err
    assert "Traceback" not in err
