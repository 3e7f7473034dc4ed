"""``ecs-guardrail audit`` end to end: a bundled scenario built in moto, read through the adapter's calls."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail import cli
from ecs_guardrail.adapters.audit_facts import AuditFacts
from ecs_guardrail.core.audit import CHECKS
from ecs_guardrail.replay.embedded import CallCounter
from ecs_guardrail.replay.fleet import build_fleet

ROOT = Path(__file__).resolve().parents[2]
OUTAGE = ROOT / "events" / "scenarios" / "aggregate-health-outage"


def _run(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = cli.main(["audit", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out.splitlines(), err


@pytest.fixture(scope="module")
def outage_json():
    """The bundled outage's audit as JSON Lines (built once: a moto fleet costs seconds)."""
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["audit", "--scenario", str(OUTAGE), "--format", "json"])
    return code, [json.loads(line) for line in buf.getvalue().splitlines()]


def test_the_outage_wiring_is_found(outage_json):
    code, lines = outage_json
    findings, summary = lines[:-1], lines[-1]
    assert code == 1 and summary["type"] == "summary" and summary["exit_status"] == 1
    assert all(f["type"] == "finding" and f["check"] in CHECKS for f in findings)
    by_check: dict[str, set] = {}
    for f in findings:
        by_check.setdefault(f["check"], set()).add(f["service"])
    services = {"catalog", "search-api", "basket", "checkout", "accounts", "pricing"}
    assert by_check["production_not_alert_only"] == {None}
    assert by_check["shared_fate"] == {None}
    for check in ("aggregate_health_path", "fast_ejection", "no_grace_period", "container_check_duplicates_lb"):
        assert by_check[check] == services, check
    assert by_check["single_task"] == {"pricing"} and by_check["no_circuit_breaker"] == {"pricing"}
    assert by_check["autoscaling_min_above_zero"] == services - {"pricing"}
    # the seed's third remedy: no routing floor, so the ALB removes every target before it fails open
    assert by_check["no_unhealthy_routing_floor"] == services - {"pricing"}
    shared = next(f for f in findings if f["check"] == "shared_fate")
    assert shared["evidence"]["count"] == 6 and shared["evidence"]["bound"] == 1
    fast = next(f for f in findings if f["check"] == "fast_ejection")
    assert fast["evidence"]["target_groups"][0]["ejection_seconds"] == 20
    assert summary["clusters"] == ["production"] and summary["services"] == 6
    assert summary["by_severity"]["high"] == 2 and summary["fail_on"] == "high"
    floor = next(f for f in findings if f["check"] == "no_unhealthy_routing_floor")
    assert floor["evidence"]["recommended_percentage"] == 50


def test_fail_on_and_set(capsys):
    code, out, _ = _run(capsys, "--scenario", str(OUTAGE), "--format", "json", "--fail-on", "medium",
                        "--set", "ALERT_ONLY_CLUSTERS=production", "--set", "AUDIT_AGGREGATE_PATHS=/ping")
    checks = {json.loads(line)["check"] for line in out[:-1]}
    assert "production_not_alert_only" not in checks and "shared_fate" not in checks
    assert "aggregate_health_path" not in checks and "fast_ejection" in checks
    assert code == 1  # medium findings remain
    code, out, _ = _run(capsys, "--scenario", str(OUTAGE), "--fail-on", "never")
    assert code == 0 and any("cluster production" in line for line in out)
    assert any("shared_fate" in line for line in out)


def test_markdown(capsys):
    code, out, _ = _run(capsys, "--scenario", str(OUTAGE), "--format", "markdown", "--fail-on", "never")
    text = "\n".join(out)
    assert code == 0 and "## Cluster `production`" in text and "`shared_fate`" in text
    assert "| catalog | 3 | /actuator/health 2 x 10 s = 20 s | 3 x 30 s = 90 s | 0 s |" in text


@pytest.mark.parametrize("argv, why", [
    (["--scenario", "no/such/folder"], "not a scenario folder"),
    (["--scenario", str(OUTAGE), "--set", "NO_SUCH=1"], "unknown setting"),
    (["--scenario", str(OUTAGE), "--set", "AUDIT_MIN_EJECTION_SECONDS=soon"], "invalid setting"),
    (["--cluster", "c", "--set", "NO_SUCH=1"], "unknown setting"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, why):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == [] and len(err.splitlines()) == 1 and why in err, err


def test_account_mode_reads_the_same_facts_and_names_an_unknown_cluster(capsys):
    fleet = json.loads((OUTAGE / "fleet.json").read_text())
    with mock_aws():
        build_fleet(lambda s: boto3.client(s, region_name="eu-west-1"), fleet, "123456789012", "eu-west-1")
        code, out, _ = _run(capsys, "--cluster", "production", "--region", "eu-west-1", "--format", "json",
                            "--set", "ALERT_ONLY_CLUSTERS=production")
        summary = json.loads(out[-1])
        assert code == 1 and summary["services"] == 6 and "production_not_alert_only" not in summary["by_check"]
        assert summary["by_check"]["shared_fate"] == 1
        code, out, err = _run(capsys, "--cluster", "production", "--cluster", "nope", "--region", "eu-west-1")
        assert code == 2 and out == [] and "'nope' not found" in err and len(err.splitlines()) == 1


def test_missing_region_is_one_line(capsys, monkeypatch):
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    code, out, err = _run(capsys, "--cluster", "production")
    assert code == cli.EXIT_AWS and out == [] and len(err.splitlines()) == 1 and "region" in err.lower()


def test_the_adapter_calls_only_its_declared_read_only_actions():
    fleet = json.loads((OUTAGE / "fleet.json").read_text())
    counter = CallCounter()
    with mock_aws():
        def client(service: str):
            return counter.attach(boto3.client(service, region_name="eu-west-1"))

        build_fleet(lambda s: boto3.client(s, region_name="eu-west-1"), fleet, "123456789012", "eu-west-1")
        facts = AuditFacts(client("ecs"), client("elbv2"), client("application-autoscaling")).cluster("production")
    prefix = {"ecs": "ecs", "elbv2": "elasticloadbalancing", "application-autoscaling": "application-autoscaling"}
    called = {f"{prefix[svc]}:{op}" for svc, op in counter.calls}
    from ecs_guardrail import iam
    from ecs_guardrail.adapters.ecs import describe_services

    declared = set().union(*iam.permissions_of(AuditFacts).values(), *iam.permissions_of(describe_services).values())
    assert called <= declared and all(":Describe" in a or ":List" in a for a in declared)
    assert counter.calls[("ecs", "DescribeTaskDefinition")] == 6  # once per task definition
    assert len(facts.services) == 6
    catalog = next(s for s in facts.services if s.name == "catalog")
    assert catalog.target_groups[0].path == "/actuator/health" and catalog.health_check_grace_period_seconds == 0
    assert catalog.container_health_check is not None and catalog.container_health_check.retries == 3
    assert catalog.scalable_min_capacity == 3 and catalog.circuit_breaker is True


def test_a_scenario_stays_embedded_whatever_the_shell_points_aws_at(capsys, monkeypatch):
    """``audit --scenario`` (and ``replay --engine moto``) build the fleet in moto: an operator's shell
    with a LocalStack endpoint or a profile of another machine must not send those calls anywhere
    (before, it exited 3 "AWS unreachable: Could not connect to the endpoint URL")."""
    import os

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ENDPOINT_URL_ECS", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile-here")
    code, out, err = _run(capsys, "--scenario", str(OUTAGE), "--format", "json")
    assert code == 1 and "unreachable" not in err, err
    assert json.loads(out[-1])["findings"] == 39  # ALERT_ONLY_CLUSTERS=none: no unmatched entry (issue 38)
    # and the shell gets its own back
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert os.environ["AWS_PROFILE"] == "no-such-profile-here"
    assert "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS" not in os.environ


def test_audit_warns_for_an_alert_only_entry_matching_only_without_case(capsys):
    """Issue 29 item 7: ``Production`` makes the cluster ``production`` alert-only to the code, not to the
    IAM deny (names as typed): text, markdown and JSON say so; the right case says nothing."""
    code, lines, _ = _run(capsys, "--scenario", str(OUTAGE), "--set", "ALERT_ONLY_CLUSTERS=Production")
    assert [w for w in lines if w.startswith("warning: ")] == [
        next(w for w in lines if "'Production' matches cluster 'production' only without case" in w)]
    _, md, _ = _run(capsys, "--scenario", str(OUTAGE), "--set", "ALERT_ONLY_CLUSTERS=Production",
                    "--format", "markdown")
    assert any(line.startswith("**Warning**: ") and "only without case" in line for line in md)
    _, js, _ = _run(capsys, "--scenario", str(OUTAGE), "--set", "ALERT_ONLY_CLUSTERS=Production", "--format",
                    "json")
    assert len(json.loads(js[-1])["warnings"]) == 1
    _, lines, _ = _run(capsys, "--scenario", str(OUTAGE), "--set", "ALERT_ONLY_CLUSTERS=production")
    assert not [w for w in lines if "only without case" in w]
