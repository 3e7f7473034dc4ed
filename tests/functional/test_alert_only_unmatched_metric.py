"""Issue 17 item 11: the watchdog counts, on every invocation, the ALERT_ONLY_CLUSTERS entries that match
no cluster of its account and region (metric AlertOnlyEntriesUnmatched; both stacks alarm above 0),
reading the clusters once per cold start (ECS ListClusters on moto)."""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from ecs_guardrail.handlers import runtime, watchdog
from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime, report_unmatched_alert_only
from ecs_guardrail.replay.embedded import create_history_table
from ecs_guardrail.settings import load_settings
from tests.functional.test_handlers import crash

REGION, ACCOUNT = "eu-west-1", "123456789012"
HOME_CTX = LambdaContextStub(invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:watchdog")


@pytest.fixture
def ecs_calls(monkeypatch) -> Any:
    calls: Counter[str] = Counter()

    def client(service: str) -> Any:
        c = boto3.client(service, region_name=REGION)
        c.meta.events.register("before-call.*.*", lambda model, **_: calls.update([model.name]))
        return c

    with mock_aws(), contextlib.redirect_stdout(io.StringIO()):  # EMF metrics print to stdout
        ecs = boto3.client("ecs", region_name=REGION)
        for name in ("production", "dev", "prod-eu"):
            ecs.create_cluster(clusterName=name)
        create_history_table(boto3.client("dynamodb", region_name=REGION), "history")
        monkeypatch.setenv("HISTORY_TABLE", "history")
        monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
        runtime.set_client_factory(client)
        runtime.metrics.clear_metrics()
        yield calls
        runtime.metrics.clear_metrics()
        runtime.set_client_factory(None)


def _rt(alert_only: str, factory: Any = None) -> runtime.Runtime:
    settings = load_settings({"HISTORY_TABLE": "history", "ALERT_ONLY_CLUSTERS": alert_only})
    return build_runtime(settings, Clients(factory or (lambda s: boto3.client(s, region_name=REGION))),
                         watchdog=True, home=(ACCOUNT, REGION))


def _metric() -> list[float]:
    return runtime.metrics.metric_set["AlertOnlyEntriesUnmatched"]["Value"]


@pytest.mark.parametrize(("alert_only", "unmatched"), [
    ("prodution,dev", ("prodution",)),  # the typo
    ("production,prod-*,team?", ("team?",)),
    (f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/production,arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/gone",
     (f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/gone",)),
    ("arn:aws:ecs:us-east-1:444455556666:cluster/elsewhere", ()),  # another account: not listable, not counted
    ("none", ()),
    ("", ()),
])
def test_entries_matching_no_cluster_of_the_account_are_counted(ecs_calls, alert_only, unmatched):
    assert report_unmatched_alert_only(_rt(alert_only)) == unmatched
    assert _metric() == [float(len(unmatched))]


def test_the_lambda_handler_emits_it_on_every_invocation_listing_clusters_once(ecs_calls, monkeypatch, caplog):
    monkeypatch.setenv("ALERT_ONLY_CLUSTERS", "prodution")
    runtime.reset()
    for n in range(3):
        with contextlib.suppress(Exception):
            watchdog.handler(crash(n, n), HOME_CTX)
        assert runtime.metrics.metric_set == {}  # flushed by log_metrics after each invocation
    assert ecs_calls["ListClusters"] == 1  # once per cold start
    warned = [r for r in caplog.records if "match no cluster" in r.getMessage()]
    assert len(warned) == 1


def test_a_failed_list_clusters_never_stops_the_invocation(ecs_calls, caplog):
    def denied(service: str) -> Any:
        c = boto3.client(service, region_name=REGION)
        if service == "ecs":
            def refuse(**_: Any) -> None:
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "ListClusters")
            c.meta.events.register("before-call.ecs.ListClusters", refuse)
        return c

    rt = _rt("prodution", denied)
    assert report_unmatched_alert_only(rt) == ()
    assert "AlertOnlyEntriesUnmatched" not in runtime.metrics.metric_set  # unknown is not "all match"
    assert any("ListClusters failed" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("alert_only", "case_only"), [
    ("Production,dev", 1),  # the code holds production alert-only; the IAM deny (as typed) does not
    ("PROD-*,production", 1),  # a glob too: prod-eu
    (f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/DEV", 1),
    ("production,dev,prod-*", 0),
])
def test_entries_matching_a_cluster_only_without_case_are_counted_and_logged(ecs_calls, caplog, alert_only,
                                                                              case_only):
    """Issue 29 item 7: metric AlertOnlyEntriesCaseOnly and one warning per cluster matched only without case."""
    report_unmatched_alert_only(_rt(alert_only))
    assert runtime.metrics.metric_set["AlertOnlyEntriesCaseOnly"]["Value"] == [float(case_only)]
    warned = [r.getMessage() for r in caplog.records if "only without case" in r.getMessage()]
    assert len(warned) == case_only
