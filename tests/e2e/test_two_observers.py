"""The clients' view end to end: the request columns are what keeps a serving service from being scaled,
and the sampler's cost model (``make bench``) stays at most a fifth of the recipe it replaced."""

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


def test_the_sampler_costs_at_most_a_fifth_of_the_replaced_recipe() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import sampler_cost

    r = sampler_cost.measure(target_groups=4)
    before, after = (sampler_cost.monthly(r[k], 200) for k in ("before", "after"))
    assert r["before"]["metrics"] == 1440 and r["after"]["metrics"] == 48 * 5  # 5 metrics per read, 48 reads
    assert r["after"]["items"] < r["before"]["items"] / 10
    assert after["total"] <= before["total"] / 5
    assert round(before["get_metric_data"], 2) == 86.40  # the figure: one metric a minute, 200 TGs
