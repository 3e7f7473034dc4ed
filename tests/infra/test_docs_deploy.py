"""docs/deploy.md's checkable claims, checked against what they describe (issue 29 item 7: the page had
drifted: 23 alarms for 24, $0.43 per target group for an ALB's 4 metrics, ``AWS_REGION``, "not ARNs").

Runs without AWS.
"""

from __future__ import annotations

import re

import iac
import pytest
from parity import TEMPLATE, TF, _cfn_alarms

DOC = (iac.ROOT / "docs" / "deploy.md").read_text()
README = (iac.ROOT / "README.md").read_text()
#: GetMetricData, USD per metric requested (CloudWatch pricing: $0.01 per 1,000 metrics requested)
PER_METRIC = 0.01 / 1000


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_alarm_count_and_its_price_are_the_templates():
    """The fixed-cost line prices the alarms both templates create at their defaults."""
    alarms = len(_cfn_alarms())
    assert alarms == 30  # four functions (the sweep's lane: issue 32), five rules
    assert f"{alarms} alarms × $0.10 = ${alarms * 0.10:.2f}" in _flat(DOC)
    assert not re.search(r"\b2[34] alarms\b", DOC)


def test_the_sampler_price_per_target_group_is_what_it_requests():
    """The table's target-group row from the metrics one sampler block requests (adapters/cloudwatch.queries_for):
    an ALB target group's 4 metrics and its load balancer's 1, once per 30-minute block, for 200 target groups."""
    from ecs_guardrail.adapters.cloudwatch import Series, queries_for

    alb = Series("targetgroup/web/0123456789abcdef", "app/front/0123456789abcdef")
    nlb = Series("targetgroup/tcp/0123456789abcdef", "net/edge/0123456789abcdef")
    per_alb_tg = len(queries_for([alb], requests=True)) - 1  # minus the load balancer's own 5xx metric
    per_lb = len(queries_for([alb], requests=True)) - per_alb_tg
    per_nlb_tg = len(queries_for([nlb], requests=True))
    assert (per_alb_tg, per_lb, per_nlb_tg) == (4, 1, 1)
    text = _flat(DOC)
    per_tg = per_alb_tg + per_lb
    blocks_a_day = 24 * 2
    a_day = 200 * per_tg * blocks_a_day
    assert f"{per_tg} metrics a target group" in text
    assert f"{a_day:,} metrics a day × $0.01/1,000 × 30 | {a_day * PER_METRIC * 30:.2f} |" in text
    assert "$0.43 per target group" not in text and "$0.43 a month per sampled target group" not in _flat(README)


def test_the_cli_region_is_what_boto3_reads(monkeypatch: pytest.MonkeyPatch):
    """The CLI's region comes from boto3: AWS_DEFAULT_REGION or the profile, never AWS_REGION alone."""
    import boto3

    for key in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert boto3.session.Session().region_name is None  # AWS_REGION alone: no region
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert boto3.session.Session().region_name == "eu-west-1"
    for match in re.finditer(r"AWS_REGION\b", DOC):
        assert "not read" in DOC[match.start():match.start() + 80], DOC[match.start() - 60:match.start() + 80]


def test_cluster_arns_are_documented_as_accepted():
    """ALERT_ONLY_CLUSTERS takes cluster ARNs (core/clusters.py); the page says so, never "not ARNs"."""
    from ecs_guardrail.core.clusters import EntryKind, parse_alert_only_clusters

    (entry,) = parse_alert_only_clusters("arn:aws:ecs:eu-west-1:111122223333:cluster/production").entries
    assert entry.kind is EntryKind.ARN and entry.name == "production"
    assert "not ARNs" not in DOC
    assert "takes names, globs and cluster ARNs" in _flat(DOC)


def test_the_parameter_table_gives_the_templates_defaults():
    """Each row `Param` / `var` | default of docs/deploy.md's parameter table is the template's default."""
    rows = re.findall(r"^\| `(\w+)` / `(\w+)` \| ([^|]+) \|", DOC, flags=re.M)
    assert len(rows) >= 20
    for parameter, variable, default in rows:
        spec = TEMPLATE["Parameters"][parameter]
        want = str(spec.get("Default", ""))
        shown = default.strip()
        if want == "":
            assert shown.startswith(("empty", "the stack")), (parameter, shown)
        else:
            assert shown.strip("`").split("`")[0] == want, (parameter, shown, want)
        assert variable in TF["variable"], variable
