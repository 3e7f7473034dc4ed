"""fleet.json values the embedded AWS cannot build: exit 2 with one line, never a traceback or "AWS refused"."""

from __future__ import annotations

import copy

import pytest
from breakkit import FLEET, crash, run, scenario


def _fleet(**changes):
    fleet = copy.deepcopy(FLEET)
    for key, value in changes.items():
        where, _, field = key.partition("__")
        target = {"fleet": fleet, "cluster": fleet["clusters"][0],
                  "service": fleet["clusters"][0]["services"][0]}[where]
        target[field] = value
    return fleet


def _dup_service():
    fleet = copy.deepcopy(FLEET)
    fleet["clusters"][0]["services"].append({"name": "api"})
    return fleet


def _dup_cluster():
    fleet = copy.deepcopy(FLEET)
    fleet["clusters"].append({"name": "development", "services": []})
    return fleet


def _shared_group(check_a, check_b, lb_type_b="application"):
    fleet = copy.deepcopy(FLEET)
    a = {"name": "a", "targetGroups": ["shared"]}
    b = {"name": "b", "targetGroups": ["shared"], "loadBalancerType": lb_type_b}
    if check_a:
        a["healthCheck"] = check_a
    if check_b:
        b["healthCheck"] = check_b
    fleet["clusters"][0]["services"] += [a, b]
    return fleet


BAD = {
    "region unknown": _fleet(fleet__region="mars-1"),          # moto: KeyError traceback
    "region not a string": _fleet(fleet__region=5),              # botocore: InvalidRegionError traceback
    "account not 12 digits": _fleet(fleet__account="abc"),       # exit 1, a Powertools log line, "invalid setting"
    "services null": _fleet(cluster__services=None),             # TypeError traceback
    "tag with an empty key": _fleet(service__tags={"": "v"}),    # ParamValidationError traceback
    "target group not a string": _fleet(service__targetGroups=[5]),  # TypeError traceback
    "target group name with a space": _fleet(service__targetGroups=["bad name"]),  # "AWS refused", exit 1
    "target group longer than 32": _fleet(service__targetGroups=["t" * 33]),  # silently cut to 32 (and collided)
    "cluster name with a slash": _fleet(cluster__name="a/b"),    # "AWS refused", exit 1
    "service name with a slash": _fleet(service__name="a/b"),    # "AWS refused", exit 1
    "service name with #": _fleet(service__name="a#b"),          # no event can ever name it
    "service name of 256": _fleet(service__name="s" * 256),
    "duplicate service": _dup_service(),
    "duplicate cluster": _dup_cluster(),
    # the optional service keys (SCENARIOS.md): each value the embedded AWS would refuse or build wrongly
    "schedulingStrategy unknown": _fleet(service__schedulingStrategy="BATCH"),
    "circuit breaker not an object": _fleet(service__deploymentCircuitBreaker=True),
    "circuit breaker without rollback": _fleet(service__deploymentCircuitBreaker={"enable": True}),
    "circuit breaker enable a string": _fleet(service__deploymentCircuitBreaker={"enable": "yes", "rollback": False}),
    "autoScaling min above max": _fleet(service__autoScaling={"minCapacity": 5, "maxCapacity": 2}),
    "autoScaling negative": _fleet(service__autoScaling={"minCapacity": -1, "maxCapacity": 2}),
    "autoScaling missing max": _fleet(service__autoScaling={"minCapacity": 1}),
    "loadBalancerType unknown": _fleet(service__loadBalancerType="gateway", service__targetGroups=["api-dev"]),
    "loadBalancerType without target groups": _fleet(service__loadBalancerType="network"),
    "healthCheck without target groups": _fleet(service__healthCheck={"path": "/health"}),
    "healthCheck path without slash": _fleet(service__healthCheck={"path": "health"}, service__targetGroups=["a"]),
    "healthCheck interval 1": _fleet(service__healthCheck={"intervalSeconds": 1}, service__targetGroups=["a"]),
    "healthCheck threshold 11": _fleet(service__healthCheck={"unhealthyThresholdCount": 11},
                                       service__targetGroups=["a"]),
    "healthCheck timeout not below interval": _fleet(service__healthCheck={"intervalSeconds": 5, "timeoutSeconds": 5},
                                                     service__targetGroups=["a"]),
    "healthCheck matcher words": _fleet(service__healthCheck={"matcher": "ok"}, service__targetGroups=["a"]),
    "healthCheck unknown key": _fleet(service__healthCheck={"pth": "/x"}, service__targetGroups=["a"]),
    "healthCheck a list": _fleet(service__healthCheck=["/x"], service__targetGroups=["a"]),
    "grace period negative": _fleet(service__healthCheckGracePeriodSeconds=-1),
    "grace period a string": _fleet(service__healthCheckGracePeriodSeconds="60"),
    "container check without command": _fleet(service__containerHealthCheck={"interval": 30}),
    "container check command a string": _fleet(service__containerHealthCheck={"command": "curl localhost"}),
    "container check command NONE": _fleet(service__containerHealthCheck={"command": ["NONE", "x"]}),
    "container check retries 0": _fleet(service__containerHealthCheck={"command": ["CMD", "true"], "retries": 0}),
    "containers empty": _fleet(service__containers=[]),
    "containers none essential": _fleet(service__containers=[{"name": "app", "essential": False}]),
    "containers duplicate name": _fleet(service__containers=[{"name": "app"}, {"name": "app"}]),
    "container name with a space": _fleet(service__containers=[{"name": "my app"}]),
    "container essential a string": _fleet(service__containers=[{"name": "app", "essential": "yes"}]),
    "target group shared with two health checks": _shared_group({"path": "/a"}, {"path": "/b"}),
    "target group shared by two load balancer types": _shared_group(None, None, "network"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_fleet_exits_2_with_one_line(tmp_path, capsys, name):
    code, out, err = run(capsys, "replay", str(scenario(tmp_path, fleet=BAD[name])), "--json")
    assert code == 2, err
    assert out == [] and len(err) == 1 and err[0].startswith("ecs-guardrail: fleet.json: "), err


def test_good_edge_values_still_replay(tmp_path, capsys):
    fleet = _fleet(fleet__account=111122223333, fleet__region="us-gov-west-1", service__name="s" * 255,
                   service__targetGroups=["t" * 32], service__tags={"k": 1})
    # one event: an events.jsonl without any is bad input of its own (exit 2, issue 24 item 1)
    code, out, err = run(capsys, "replay", str(scenario(tmp_path, fleet=fleet, events=[crash(1)])), "--json")
    assert code == 0, err


def test_every_optional_key_still_replays(tmp_path, capsys):
    service = {"name": "api", "desiredCount": 2, "targetGroups": ["api-dev"], "loadBalancerType": "network",
               "healthCheck": {"path": "/ready", "intervalSeconds": 10, "unhealthyThresholdCount": 3,
                               "timeoutSeconds": 5, "healthyThresholdCount": 3, "matcher": "200-299"},
               "healthCheckGracePeriodSeconds": 0, "deploymentCircuitBreaker": {"enable": False, "rollback": False},
               "autoScaling": {"minCapacity": 0, "maxCapacity": 4},
               "containerHealthCheck": {"command": ["CMD", "/bin/true"], "interval": 5, "timeout": 2, "retries": 10,
                                        "startPeriod": 300},
               "containers": [{"name": "app"}, {"name": "sidecar", "essential": False}]}
    fleet = {**FLEET, "clusters": [{"name": "development", "services": [service, {"name": "agent",
                                                                               "schedulingStrategy": "DAEMON"}]}]}
    code, out, err = run(capsys, "replay", str(scenario(tmp_path, fleet=fleet, events=[crash(1)])), "--json")
    assert code == 0 and not err, err


def test_daemon_with_a_desired_count_is_a_warning(tmp_path, capsys):
    folder = scenario(tmp_path, fleet=_fleet(service__schedulingStrategy="DAEMON"), events=[crash(1)])
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 0 and len(err) == 1 and "desiredCount ignored" in err[0], err
