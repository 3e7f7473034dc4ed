"""Issue 30 item 9: a mistyped opt-out tag never acts (ARCHITECTURE.md rule 4, ``opted_out``): any other
value of ``ecs-guardrail:mode`` and any other ``ecs-guardrail:`` key is opted out (fail safe), warned by
``replay`` and reported by ``audit``; the watchdog's own tag is none of them."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from ecs_guardrail.adapters.ecs import PREVIOUS_COUNT_TAG
from ecs_guardrail.core.audit import CHECKS, AuditConfig, ClusterAuditFacts, ServiceAuditFacts, audit_cluster, stoppers
from ecs_guardrail.core.entitlement import EntitlementFacts, entitlement
from ecs_guardrail.core.policy import WATCHDOG_TAG_KEYS, PolicyConfig, read_opt_out
from tests.conftest import ROOT

SHARED = ROOT.parent / "shared" / "scenarios"


@pytest.mark.parametrize("tags", [
    {"ecs-guardrail:mode": "alert_only"}, {"ecs-guardrail:mode": "alertonly"}, {"ecs-guardrail:mode": ""},
    {"ecs-guardrail:mode": "off"}, {"ecs-guardrail:mdoe": "alert-only"}, {"ECS-Guardrail:Mode": "alert-only"},
    {"ecs-guardrail:": "x"}, {" ecs-guardrail:mode": "alert-only"}, {"team": "a", "ecs-guardrail:owner": "me"},
])
def test_any_other_ecs_guardrail_tag_is_opted_out_and_named(tags):
    got = read_opt_out(tags)
    assert got.opted_out and got.mistyped
    assert all(m.split("=", 1)[0] in tags for m in got.mistyped)


@pytest.mark.parametrize("value", ["alert-only", " Alert-Only "])
def test_the_documented_tag_is_opted_out_and_not_mistyped(value):
    assert read_opt_out({"ecs-guardrail:mode": value}) == read_opt_out({"ecs-guardrail:mode": "alert-only"})
    assert read_opt_out({"ecs-guardrail:mode": value}).opted_out
    assert read_opt_out({"ecs-guardrail:mode": value}).mistyped == ()


@pytest.mark.parametrize("tags", [{}, None, {"team": "payments"}, {"guardrail:mode": "alert_only"},
                                  {PREVIOUS_COUNT_TAG: "2"}])
def test_no_opt_out_without_an_ecs_guardrail_tag_and_the_watchdogs_own_tag_is_none(tags):
    assert read_opt_out(tags).opted_out is False
    assert PREVIOUS_COUNT_TAG in WATCHDOG_TAG_KEYS


def test_the_decision_says_the_tag_is_mistyped():
    facts = EntitlementFacts(cluster="tools-dev", service="linter", opted_out=True,
                             opt_out_mistyped=("ecs-guardrail:mode=alert_only",))
    from datetime import UTC, datetime

    v = entitlement("crash_loop", facts, datetime(2026, 10, 27, 10, 28, tzinfo=UTC))
    assert not v.entitled and v.reason.value == "opted_out"
    assert "ecs-guardrail:mode=alert_only" in v.message and "fail safe" in v.message


def test_audit_reports_a_mistyped_tag_and_its_row_says_alert_only():
    svc = ServiceAuditFacts(cluster="tools-dev", name="linter", desired_count=2, circuit_breaker=True,
                            tags={"ecs-guardrail:mode": "alert_only"})
    cluster = ClusterAuditFacts("tools-dev", services=(svc,))
    config = AuditConfig(policy=PolicyConfig(alert_only_clusters=("prod-*",)))
    found = [f for f in audit_cluster(cluster, config) if f.check == "opt_out_tag_mistyped"]
    assert len(found) == 1 and found[0].evidence["tags"] == ["ecs-guardrail:mode=alert_only"]
    assert CHECKS["opt_out_tag_mistyped"].value == "medium"
    assert stoppers(cluster, config)[0].watchdog.startswith("alert only (mistyped tag")
    right = dataclasses.replace(svc, tags={"ecs-guardrail:mode": "alert-only"})
    assert not [f for f in audit_cluster(ClusterAuditFacts("tools-dev", services=(right,)), config)
                if f.check == "opt_out_tag_mistyped"]


def test_replay_of_a_mistyped_tag_alerts_only_and_warns(tmp_path: Path, capsys):
    from ecs_guardrail.cli import main

    src = ROOT / "events" / "scenarios" / "dev-opt-out-impaired"
    folder = tmp_path / "typo"
    shutil.copytree(src, folder)
    fleet = (folder / "fleet.json").read_text()
    assert '"ecs-guardrail:mode": "alert-only"' in fleet
    (folder / "fleet.json").write_text(fleet.replace('"alert-only"', '"alert_only"'))
    assert main(["replay", str(folder), "--json"]) == 0
    out = capsys.readouterr()
    import json

    api = [r for r in map(json.loads, out.out.splitlines()) if r.get("type") == "decision" and r["service"] == "api"]
    assert api and all((r["action"], r["reason"]) == ("alert_only", "opted_out") for r in api)
    assert "tag ecs-guardrail:mode=alert_only is not ecs-guardrail:mode=alert-only" in out.err
