"""RECOVERY=probe in a replay (issue 21): the recorded stream stands in for the probe; manual vs probe
on the bundled recovery scenarios, and ``--sweep RECOVERY=manual,probe``."""

from __future__ import annotations

import json

from ecs_guardrail.cli import main
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario
from tests.conftest import SCENARIOS

FIXED = SCENARIOS / "probe-bad-image-fixed"


def test_manual_keeps_the_summary_shape_and_probe_restores_with_fewer_watchdog_minutes():
    manual = replay(load_scenario(FIXED, {"RECOVERY": "manual"})).summary
    probe = replay(load_scenario(FIXED, {"RECOVERY": "probe"})).summary
    assert "probes" not in manual and "image_pulls" not in manual  # RECOVERY=manual: today's output
    assert manual["desired_counts"]["dev/checkout"] == 0
    assert probe["desired_counts"]["dev/checkout"] == 2 and probe["restored_by_probe"] == ["dev/checkout"]
    assert probe["probes"] == {"started": 2, "passed": 1, "failed": 1}
    assert probe["watchdog_service_minutes"] < manual["watchdog_service_minutes"]
    pulls = probe["image_pulls"]
    assert pulls["manual"] < pulls["probe"] < pulls["unstopped"]
    assert pulls["probe"] == pulls["manual"] + probe["probes"]["started"]


def test_sweep_over_recovery_prints_both_rows(capsys):
    assert main(["replay", str(FIXED), "--sweep", "RECOVERY=manual,probe", "--json"]) in (0, None)
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    manual, probe = (r for r in rows if r["type"] == "sweep_row")
    assert manual["settings"] == {"RECOVERY": "manual"} and "probes" not in manual
    assert probe["probes"]["passed"] == 1 and probe["image_pulls"]["unstopped"] == 24
    assert probe["watchdog_service_minutes"] < manual["watchdog_service_minutes"]
    assert rows[-1]["least_watchdog_service_minutes"] == {"RECOVERY": "probe"}


def test_a_probe_whose_target_group_reports_no_healthy_host_fails(tmp_path):
    """ARCHITECTURE.md "Recovery": a probe passes only if, where the service has target groups, they
    report a healthy host in the pass window: the same recorded fix, but checkout-dev never healthy
    again after it (healthy_hosts.csv 0 from the new revision on), restores nothing."""
    import shutil

    folder = tmp_path / "fixed-but-unhealthy"
    shutil.copytree(FIXED, folder)
    csv = folder / "healthy_hosts.csv"
    head, *rows = csv.read_text().splitlines()
    rows = [f"{t},{tg},{'0' if t >= '2026-03-04T10:48:00Z' else n}" for t, tg, n in (r.split(",") for r in rows)]
    csv.write_text("\n".join([head, *rows]) + "\n")
    s = replay(load_scenario(folder, {})).summary
    assert s["probes"] == {"started": 2, "passed": 0, "failed": 2} and s["restored_by_probe"] == []
    assert s["desired_counts"]["dev/checkout"] == 0


def test_a_start_impaired_while_probing_counts_as_the_probe_failing_in_the_replay(tmp_path):
    """A SERVICE_TASK_START_IMPAIRED during the probe the new revision started is the probe's verdict
    (issue 21): no restore, and the replay's probes count it as failed, not only the crashes."""
    import shutil

    folder = tmp_path / "fixed-but-impaired"
    shutil.copytree(FIXED, folder)
    lines = (folder / "events.jsonl").read_text().splitlines()
    arn = json.loads(lines[0])["detail"]["clusterArn"]
    impaired = {"version": "0", "id": "impaired-during-probe", "detail-type": "ECS Service Action",
                "source": "aws.ecs", "account": "111122223333", "time": "2026-03-04T10:52:00Z",
                "region": "eu-west-1", "resources": [arn.replace(":cluster/", ":service/") + "/checkout"],
                "detail": {"clusterArn": arn, "createdAt": "2026-03-04T10:52:00.000Z",
                           "eventName": "SERVICE_TASK_START_IMPAIRED", "eventType": "WARN"}}
    (folder / "events.jsonl").write_text("\n".join([*lines, json.dumps(impaired)]) + "\n")
    s = replay(load_scenario(folder, {})).summary
    assert s["restored_by_probe"] == [] and s["desired_counts"]["dev/checkout"] == 0
    assert s["probes"]["passed"] == 0 and s["probes"]["failed"] == s["probes"]["started"] == 2
