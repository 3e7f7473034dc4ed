"""The audit rules on typed facts: each check fires on a minimal fleet and stays silent on its fix."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from ecs_guardrail.core.audit import (
    CHECKS,
    AuditConfig,
    ClusterAuditFacts,
    ContainerHealthCheck,
    ServiceAuditFacts,
    TargetGroupHealthCheck,
    audit_cluster,
    command_paths,
    exit_status,
    stoppers,
    summary,
)
from ecs_guardrail.core.policy import PolicyConfig

CONFIG = AuditConfig(policy=PolicyConfig(alert_only_clusters=("production",)))

#: a service that no check fires on: readiness path, 3 x 10 s, a routing floor of 50 %, grace, circuit
#: breaker, 2 tasks
SAFE_TG = TargetGroupHealthCheck(name="web-tg", arn="arn:tg/web", protocol="HTTP", path="/actuator/health/readiness",
                                 interval_seconds=10, unhealthy_threshold_count=3, routing_floor_percentage=50)
SAFE = ServiceAuditFacts(cluster="staging", name="web", desired_count=2, health_check_grace_period_seconds=60,
                         circuit_breaker=True, circuit_breaker_rollback=True, target_groups=(SAFE_TG,),
                         container_health_check=ContainerHealthCheck(
                             "app", ("CMD-SHELL", "curl -f localhost:8080/actuator/health/liveness")),
                         essential_containers=("app",))


def _checks(*services: ServiceAuditFacts, cluster: str = "staging", config: AuditConfig = CONFIG) -> list[str]:
    return [f.check for f in audit_cluster(ClusterAuditFacts(cluster, services=services), config)]


def _tg(**changes) -> TargetGroupHealthCheck:
    return dataclasses.replace(SAFE_TG, **changes)


def _svc(**changes) -> ServiceAuditFacts:
    return dataclasses.replace(SAFE, **changes)


def test_the_safe_service_has_no_finding():
    assert _checks(SAFE) == []


@pytest.mark.parametrize("path", ["/actuator/health", "/health", "/status", "/", "/health/", "/actuator/health?x=1"])
def test_aggregate_health_path_fires(path):
    assert _checks(_svc(target_groups=(_tg(path=path),))) == ["aggregate_health_path"]


@pytest.mark.parametrize("path", ["/actuator/health/readiness", "/actuator/health/liveness", "/ready", "/healthz"])
def test_aggregate_health_path_silent_on_a_narrow_path(path):
    assert _checks(_svc(target_groups=(_tg(path=path),))) == []


def test_aggregate_health_path_ignores_tcp_checks_and_reads_the_setting():
    assert _checks(_svc(target_groups=(_tg(protocol="TCP", path=None),))) == []
    config = dataclasses.replace(CONFIG, aggregate_paths=("/ping",))
    assert _checks(_svc(target_groups=(_tg(path="/ping"),)), config=config) == ["aggregate_health_path"]
    assert _checks(_svc(target_groups=(_tg(path="/health"),)), config=config) == []


def _fleet(n: int, aggregate: int) -> list[ServiceAuditFacts]:
    return [_svc(name=f"s{i}", target_groups=(_tg(name=f"s{i}-tg", path="/health" if i < aggregate else "/ready"),))
            for i in range(n)]


def test_shared_fate_fires_above_the_bound():
    # 10 services: bound max(1, floor(0.2 x 10)) = 2; 3 with an aggregate path is one too many
    found = audit_cluster(ClusterAuditFacts("staging", services=tuple(_fleet(10, 3))), CONFIG)
    shared = [f for f in found if f.check == "shared_fate"]
    assert len(shared) == 1 and shared[0].service is None
    assert shared[0].evidence["bound"] == 2 and shared[0].evidence["count"] == 3
    assert shared[0].evidence["services"] == ["s0", "s1", "s2"]


def test_shared_fate_silent_within_the_bound():
    assert "shared_fate" not in _checks(*_fleet(10, 2))
    assert "shared_fate" not in _checks(*_fleet(4, 1))  # bound max(1, floor(0.8)) = 1


def test_shared_fate_follows_the_policy_settings():
    config = dataclasses.replace(CONFIG, policy=msgspec.structs.replace(CONFIG.policy, min_actions_allowed=3))
    assert "shared_fate" not in _checks(*_fleet(10, 3), config=config)


def test_fast_ejection_fires_under_30_seconds():
    assert _checks(_svc(target_groups=(_tg(unhealthy_threshold_count=2, interval_seconds=10),))) == ["fast_ejection"]


def test_fast_ejection_silent_at_30_seconds_and_follows_the_setting():
    assert _checks(_svc(target_groups=(_tg(unhealthy_threshold_count=3, interval_seconds=10),))) == []
    config = dataclasses.replace(CONFIG, min_ejection_seconds=60)
    assert _checks(_svc(), config=config) == ["fast_ejection"]


@pytest.mark.parametrize("grace", [0, None])
def test_no_grace_period_fires_behind_a_load_balancer(grace):
    assert _checks(_svc(health_check_grace_period_seconds=grace)) == ["no_grace_period"]


def test_no_grace_period_silent_with_a_grace_period_or_without_a_load_balancer():
    assert _checks(_svc(health_check_grace_period_seconds=30)) == []
    assert _checks(_svc(target_groups=(), health_check_grace_period_seconds=None)) == []


def test_container_check_duplicates_lb_fires_on_the_same_aggregate_path():
    svc = _svc(target_groups=(_tg(path="/actuator/health"),), container_health_check=ContainerHealthCheck(
        "app", ("CMD-SHELL", "curl -fs http://localhost:8080/actuator/health || exit 1")))
    assert _checks(svc) == ["aggregate_health_path", "container_check_duplicates_lb"]


def test_container_check_duplicates_lb_silent_on_a_liveness_path():
    svc = _svc(target_groups=(_tg(path="/actuator/health"),), container_health_check=ContainerHealthCheck(
        "app", ("CMD-SHELL", "curl -fs http://localhost:8080/actuator/health/liveness || exit 1")))
    assert _checks(svc) == ["aggregate_health_path"]


def test_command_paths():
    assert command_paths(["CMD-SHELL", "curl -f localhost:8080/health || exit 1"]) == {"/health"}
    assert command_paths(["CMD", "wget", "-qO-", "http://127.0.0.1:8080/"]) == {"/"}
    assert command_paths(["CMD-SHELL", "curl -f http://localhost:8080"]) == {"/"}
    assert command_paths(["CMD-SHELL", "pgrep java"]) == set()


@pytest.mark.parametrize("enabled", [False, None])
def test_no_circuit_breaker_fires(enabled):
    # and, with no alarm-based rollback either, no_automatic_rollback (issue 19)
    assert _checks(_svc(circuit_breaker=enabled)) == ["no_circuit_breaker", "no_automatic_rollback"]
    assert _checks(_svc(circuit_breaker=enabled, alarm_rollback=True)) == ["no_circuit_breaker"]
    assert _checks(_svc(circuit_breaker=enabled, scheduling_strategy="DAEMON")) == ["no_circuit_breaker"]


def test_no_automatic_rollback_fires():
    assert "no_automatic_rollback" in _checks(_svc(circuit_breaker=False))
    assert "no_automatic_rollback" not in _checks(_svc(circuit_breaker=True))


def test_restart_policy_unwatched_fires():
    test_restart_policy_unwatched_only_without_container_insights()


def test_restart_policy_unwatched_only_without_container_insights():
    svc = _svc(circuit_breaker=True, restart_policy_containers=("app",))
    bare = ClusterAuditFacts(name="staging", services=(svc,), container_insights=False)
    found = audit_cluster(bare, CONFIG)
    assert [f.check for f in found] == ["restart_policy_unwatched"] and found[0].evidence["containers"] == ["app"]
    for insights in (True, None):  # watched, or not known: no finding
        assert audit_cluster(ClusterAuditFacts(name="staging", services=(svc,), container_insights=insights),
                             CONFIG) == []


def test_no_circuit_breaker_silent_when_on_or_not_an_ecs_deployment():
    assert _checks(_svc(circuit_breaker=True)) == []
    assert _checks(_svc(circuit_breaker=None, deployment_controller="CODE_DEPLOY")) == []


def test_single_task_fires_behind_a_load_balancer():
    assert _checks(_svc(desired_count=1)) == ["single_task"]


def test_single_task_silent_with_two_tasks_without_a_load_balancer_or_daemon():
    assert _checks(_svc(desired_count=2)) == []
    assert _checks(_svc(desired_count=1, target_groups=(), health_check_grace_period_seconds=None)) == []
    assert _checks(_svc(desired_count=1, scheduling_strategy="DAEMON")) == []


@pytest.mark.parametrize("cluster", ["production", "prod-eu", "live", "shop-LIVE"])
def test_production_not_alert_only_fires(cluster):
    config = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=("staging",)))
    found = audit_cluster(ClusterAuditFacts(cluster, services=(_svc(cluster=cluster),)), config)
    assert [f.check for f in found] == ["production_not_alert_only"] and found[0].service is None


def test_production_not_alert_only_silent_when_alert_only_or_not_production():
    assert _checks(SAFE, cluster="production") == []  # CONFIG: ALERT_ONLY_CLUSTERS=production
    glob = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=("prod*",)))
    assert _checks(SAFE, cluster="prod-eu", config=glob) == []
    unset = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=()))  # every cluster alert-only
    assert _checks(SAFE, cluster="production", config=unset) == []
    other = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=("x",)))
    assert _checks(SAFE, cluster="staging", config=other) == []
    patterns = dataclasses.replace(other, production_patterns=("prd",))
    assert _checks(SAFE, cluster="production", config=patterns) == []
    assert _checks(SAFE, cluster="shop-prd", config=patterns) == ["production_not_alert_only"]


def test_production_matches_alert_only_clusters_by_arn():
    arn = "arn:aws:ecs:eu-west-1:111122223333:cluster/production"
    config = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=(arn,)))
    assert [f.check for f in audit_cluster(ClusterAuditFacts("production", arn, (SAFE,)), config)] == []


def test_autoscaling_min_above_zero_fires():
    found = audit_cluster(ClusterAuditFacts("staging", services=(
        _svc(scalable_min_capacity=2, scalable_max_capacity=6),)), CONFIG)
    assert [f.check for f in found] == ["autoscaling_min_above_zero"]
    assert found[0].evidence == {"min_capacity": 2, "max_capacity": 6, "resource_id": "service/staging/web"}


def test_autoscaling_min_above_zero_silent_at_zero_or_without_a_target():
    assert _checks(_svc(scalable_min_capacity=0, scalable_max_capacity=6)) == []
    assert _checks(_svc(scalable_min_capacity=None)) == []


def test_every_check_has_a_test_that_fires_it():
    names = {n for n in globals() if n.startswith("test_")}
    for check in CHECKS:
        assert f"test_{check}_fires" in names or f"test_{check}_fires_above_the_bound" in names \
            or any(n.startswith(f"test_{check}_fires") for n in names), check


# --- the JSON contract (README, "Audit"): other tools parse these -------------------------------------

def test_check_ids_and_severities_are_pinned():
    assert {c: s.value for c, s in CHECKS.items()} == {
        "aggregate_health_path": "medium",
        "shared_fate": "high",
        "fast_ejection": "medium",
        "no_grace_period": "medium",
        "container_check_duplicates_lb": "low",
        "no_circuit_breaker": "low",
        "single_task": "low",
        "production_not_alert_only": "high",
        "autoscaling_min_above_zero": "low",
        "alert_only_entry_unmatched": "medium",
        "no_automatic_rollback": "medium",
        "restart_policy_unwatched": "medium",
        "no_unhealthy_routing_floor": "medium",
        "opt_out_tag_mistyped": "medium",
    }


def test_finding_and_summary_fields_are_pinned():
    cluster = ClusterAuditFacts("production", services=(_svc(cluster="production", desired_count=1),))
    config = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=("staging",)))
    found = audit_cluster(cluster, config)
    lines = [f.to_dict() for f in found]
    for line in lines:
        assert list(line) == ["type", "check", "severity", "cluster", "service", "message", "evidence"]
        assert line["type"] == "finding" and isinstance(line["evidence"], dict) and line["message"]
    assert [(d["check"], d["severity"], d["service"]) for d in lines] == [
        ("production_not_alert_only", "high", None), ("single_task", "low", "web")]
    s = summary(found, [cluster], "high")
    assert set(s) >= {"type", "findings", "by_severity", "by_check", "clusters", "services", "fail_on", "exit_status"}
    assert s["type"] == "summary" and s["by_severity"] == {"high": 1, "medium": 0, "low": 1}
    assert s["clusters"] == ["production"] and s["services"] == 1 and s["exit_status"] == 1


def test_exit_status_follows_fail_on():
    cluster = ClusterAuditFacts("staging", services=(_svc(health_check_grace_period_seconds=0),))  # one medium
    found = audit_cluster(cluster, CONFIG)
    assert [exit_status(found, level) for level in ("high", "medium", "low", "never")] == [0, 1, 1, 0]
    assert exit_status([], "low") == 0
    with pytest.raises(ValueError):
        exit_status(found, "critical")


def test_stoppers_table_says_how_fast_and_who():
    svc = _svc(target_groups=(_tg(path="/health", unhealthy_threshold_count=2, interval_seconds=10),),
               container_health_check=ContainerHealthCheck("app", ("CMD", "true"), interval_seconds=30, retries=3),
               scalable_min_capacity=2, scalable_max_capacity=6)
    daemon = _svc(name="agent", scheduling_strategy="DAEMON", target_groups=(), container_health_check=None)
    optout = _svc(name="batch", tags={"ecs-guardrail:mode": "alert-only"})
    config = dataclasses.replace(CONFIG, policy=PolicyConfig(alert_only_clusters=("production",)))
    rows = {r.service: r for r in stoppers(ClusterAuditFacts("staging", services=(svc, daemon, optout)), config)}
    assert rows["web"].load_balancer == "/health 2 x 10 s = 20 s"
    assert rows["web"].container == "3 x 30 s = 90 s"
    assert rows["web"].watchdog == "scale to 0, 1 of 3 at once"
    assert rows["web"].autoscaling == "min 2, max 6" and rows["web"].grace == "60 s"
    assert rows["agent"].watchdog == "alert only (DAEMON)" and rows["agent"].tasks == "DAEMON"
    assert rows["batch"].watchdog == "alert only (tag ecs-guardrail:mode)"
    prod = stoppers(ClusterAuditFacts("production", services=(svc,)), config)
    assert prod[0].watchdog == "alert only (ALERT_ONLY_CLUSTERS)"


def test_alert_only_entry_unmatched_fires():
    """ARCHITECTURE.md ("Deployment"): an entry that matches no cluster is a finding in audit too."""
    from ecs_guardrail.core.audit import audit_fleet

    ARN = "arn:aws:ecs:eu-west-1:111122223333:cluster/production"  # noqa: N806
    clusters = [ClusterAuditFacts("production", ARN), ClusterAuditFacts("dev")]
    config = AuditConfig(policy=PolicyConfig(alert_only_clusters=("prodution", "prod*", ARN)))
    (finding,) = [f for f in audit_fleet(clusters, config) if f.check == "alert_only_entry_unmatched"]
    assert finding.cluster == "prodution" and finding.severity.value == "medium"
    assert finding.evidence == {"entry": "prodution", "kind": "name", "clusters_audited": ["production", "dev"]}
    for value in ((), ("none",), ("production", "dev")):
        none = AuditConfig(policy=PolicyConfig(alert_only_clusters=value))
        assert not [f for f in audit_fleet(clusters, none) if f.check == "alert_only_entry_unmatched"]
def test_no_unhealthy_routing_floor_fires_when_every_target_can_be_removed():
    assert _checks(_svc(target_groups=(_tg(routing_floor_percentage=None),))) == ["no_unhealthy_routing_floor"]
    finding = audit_cluster(ClusterAuditFacts("staging", services=(_svc(
        desired_count=4, target_groups=(_tg(routing_floor_percentage=None),)),)), CONFIG)[0]
    assert "minimum_healthy_targets.percentage=50" in finding.message and "all 4 tasks" in finding.message
    assert finding.evidence["target_groups"] == [{"target_group": "web-tg", "minimum_healthy_targets_percentage": "off",
                                                  "minimum_healthy_targets_count": 1}]


def test_no_unhealthy_routing_floor_silent_with_a_floor_one_task_or_a_daemon():
    assert _checks(_svc(target_groups=(_tg(routing_floor_percentage=None, routing_floor_count=2),))) == []
    assert _checks(_svc(target_groups=(_tg(routing_floor_percentage=25),))) == []
    assert "no_unhealthy_routing_floor" not in _checks(_svc(desired_count=1, target_groups=(
        _tg(routing_floor_percentage=None),)))
    assert _checks(_svc(scheduling_strategy="DAEMON", target_groups=(_tg(routing_floor_percentage=None),))) == []


def test_opt_out_tag_mistyped_fires():
    assert _checks(_svc(tags={"ecs-guardrail:mode": "alert_only"})) == ["opt_out_tag_mistyped"]
    assert _checks(_svc(tags={"ecs-guardrail:mode": "alert-only"})) == []
