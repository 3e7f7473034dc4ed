"""The clients' view end to end: the request columns are what keeps a serving service from being scaled,
and the sampler's cost model (``make bench``), counted from the requests its handler sends."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

from tests.conftest import ROOT, SCENARIOS
from tests.e2e.test_scenarios import run_replay


def _summary_and_decisions(folder: Path, *extra: str) -> tuple[dict, list[dict]]:
    proc = run_replay(folder, *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    return objs[-1], [o for o in objs if o["type"] == "decision"]


def test_without_the_request_columns_the_serving_loop_is_scaled(tmp_path: Path) -> None:
    folder = tmp_path / "no-clients-view"
    shutil.copytree(SCENARIOS / "loop-failing-checks-serving", folder)
    with (folder / "healthy_hosts.csv").open() as fh:
        rows = [{k: r[k] for k in ("time", "target_group", "healthy_host_count")} for r in csv.DictReader(fh)]
    with (folder / "healthy_hosts.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, ["time", "target_group", "healthy_host_count"], lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    summary, decisions = _summary_and_decisions(folder)
    assert summary["scaled_to_zero"] == ["staging/front"]  # the checker alone: 0 healthy hosts, not serving
    assert "served_service_minutes" not in summary and "checker_disagreement_minutes" not in summary
    with_view, kept = _summary_and_decisions(SCENARIOS / "loop-failing-checks-serving")
    assert with_view["scaled_to_zero"] == [] and [d["reason"] for d in kept] == ["still_serving"]


def test_a_stricter_error_ratio_turns_the_served_minutes_into_failing_ones() -> None:
    summary, _ = _summary_and_decisions(SCENARIOS / "checker-down-clients-served", "--set",
                                        "CLIENT_ERROR_RATIO=0.001")
    assert summary["served_service_minutes"] == 0  # 0.5 % of 5xx is above 0.1 %
    assert summary["checker_disagreement_minutes"]["checker_down_clients_served"] == 0


def test_the_sampler_cost_is_counted_from_the_requests_the_handler_sends() -> None:
    """Issue 33: the cost model runs the Lambda's entry point and counts GetMetricData at the client. An hour
    of 4 target groups, 2 with a restart policy: 2 block reads of 5 metrics a target group, and 12 restart
    reads (every 5 minutes) of the 2 services with a policy only, never the other 2."""
    sys.path.insert(0, str(ROOT / "bench"))
    import sampler_cost

    r = sampler_cost.measure(target_groups=4, restart_policies=2, minutes=60)
    per_day = 1440 / 60
    assert r["calls"] == {sampler_cost.ALB_NAMESPACE: 2 * per_day, sampler_cost.RESTART_NAMESPACE: 12 * per_day}
    assert r["metrics"] == {sampler_cost.ALB_NAMESPACE: 2 * 4 * 5 * per_day,
                            sampler_cost.RESTART_NAMESPACE: 12 * 2 * per_day}
    assert "SamplerRuns" in r["emf_metrics"] and r["invocations"] == 1440
    now = sampler_cost.monthly(r)
    was = {k: sampler_cost.monthly(v) for k, v in sampler_cost.before(4, 4, r).items()}
    # every service every minute, as release 4 read them: 4 x 1,440 x 30 metrics
    assert round(was["every service"]["GetMetricData, restart counts"], 2) == round(4 * 1440 * 30 / 1e5, 2)
    assert now["GetMetricData, restart counts"] < was["every service"]["GetMetricData, restart counts"] / 5
    assert now["total"] < was["every service"]["total"] and now["total"] < was["per-minute"]["total"]


def test_the_cost_model_counts_the_same_requests_on_moto() -> None:
    """The fast engine's provide-client-params event carries what botocore's does: the same counts on moto."""
    sys.path.insert(0, str(ROOT / "bench"))
    import sampler_cost

    fast, moto = (sampler_cost.measure(target_groups=2, restart_policies=1, engine=e, minutes=10)
                  for e in ("fast", "moto"))
    assert fast["calls"] == moto["calls"] and fast["metrics"] == moto["metrics"] and fast["items"] == moto["items"]
    assert moto["metrics"][sampler_cost.RESTART_NAMESPACE] == 2 * 144  # two reads in 10 minutes, one service
