"""Issue 3's "done when" on shared-cache-brownout: 60 unavailable service-minutes, a postmortem
timeline naming the first health-check kill, the hold and the recovery minute, the verdict "shared
dependency or checker", no_data minutes counted as unavailable, the PNG, and ``ecs-guardrail timeline``
reading the (embedded) history table. (Every scenario's figures against expected.json:
test_scenarios.py.)"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail import cli
from ecs_guardrail.app.timeline import load_timeline, render, scenario_span
from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import TABLE, load_scenario
from tests.conftest import SCENARIOS

BROWNOUT = SCENARIOS / "shared-cache-brownout"
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def brownout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One replay of the brownout; the timeline read while the embedded AWS is open, in every form."""
    scenario = load_scenario(BROWNOUT)
    got: dict[str, Any] = {"png": tmp_path_factory.mktemp("png") / "brownout.png"}

    def keep_open(aws, result) -> None:
        since, until = scenario_span(scenario)
        tl = load_timeline(result.history, "staging", since, until,
                           config=scenario.settings.policy())
        got["timeline"] = tl
        got["text"] = render(tl, "text")
        got["json"] = json.loads(render(tl, "json"))
        for fmt in ("markdown", "csv"):
            got[fmt] = run_cli("timeline", "--cluster", "staging", "--since", "2025-08-21T14:00:00Z",
                               "--until", "2025-08-21T16:00", "--format", fmt, "--table", TABLE,
                               "--region", aws.region)
        got["basket"] = run_cli("timeline", "--cluster", "staging", "--service", "basket", "--since", "2025-08-21",
                                "--until", "2025-08-22", "--format", "json", "--table", TABLE, "--region", aws.region)
        if HAVE_MATPLOTLIB:
            from ecs_guardrail.app.plot import plot_timeline

            plot_timeline(tl, got["png"])

    # the fast engine (issue 23: the same replay on moto cost about 25 s of CPU; the engines' agreement is
    # tests/e2e/test_engines.py, the table port's reads on moto tests/contract): the timeline command
    # runs through the door as an operator types it, and the store it opens is the replay's
    def open_table(aws, result) -> None:
        def store(client: Any, table: str, ttl_days: int = 90) -> Any:
            assert table == TABLE, table
            return result.history

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("ecs_guardrail.adapters.history.HistoryStore", store)
            keep_open(aws, result)

    got["result"] = replay(scenario, keep_open=open_table)
    return got


def test_brownout_is_60_service_minutes_of_healthy_hosts_at_zero(brownout) -> None:
    result = brownout["result"]
    report = result.availability
    assert result.summary["unavailable_service_minutes"] == 60
    assert report.by_cause == {"down": 60, "no_data": 0, "zero_by_watchdog": 0}
    assert report.denominator == 12 * 30 and report.coverage_pct == 100.0
    assert report.divergent_service_minutes == 60  # tasks were running, nobody was healthy


def test_brownout_timeline_reads_like_a_postmortem(brownout) -> None:
    text = brownout["text"]
    lines = text.splitlines()
    first_kill = next(ln for ln in lines if "first health-check kill" in ln)
    assert first_kill.startswith("15:03:11") and "Task failed ELB health checks" in first_kill
    hold = next(ln for ln in lines if "decision: hold" in ln)
    assert "mass_unhealthy" in hold and "12 services (all)" in hold
    assert any(ln.startswith("15:04:00") and "healthy hosts dropped to 0" in ln for ln in lines)
    recovery = next(ln for ln in lines if "every service healthy again" in ln)
    assert recovery.startswith("15:09:00") and "60 service-minutes lost" in recovery
    assert "SHARED DEPENDENCY OR CHECKER" in text
    assert "service-minutes lost: 60 (no healthy host: 60" in text
    assert len(text[:text.index("Attribution")].splitlines()) <= 20  # a screen


def test_brownout_attribution_verdict(brownout) -> None:
    doc = brownout["json"]
    assert doc["attribution"]["verdict"] == "shared dependency or checker"
    assert doc["attribution"]["failing_services"] == 12 and len(doc["attribution"]["zones"]) == 3
    first = next(ln for ln in doc["lines"] if ln["category"] == "first_health_check_kill")
    assert first["start"] == "2025-08-21T15:03:11Z"
    holds = [ln for ln in doc["lines"] if ln["category"] == "decision"]
    assert [ln["detail"] for ln in holds] == [{"action": "hold", "reason": "mass_unhealthy"}]
    recovery = next(ln for ln in doc["lines"] if ln["category"] == "recovery")
    assert recovery["start"] == "2025-08-21T15:09:00Z"


def test_timeline_command_reads_the_history_table(brownout) -> None:
    code, markdown = brownout["markdown"]
    assert code == 0 and "**first health-check kill**" in markdown
    assert "shared dependency or checker" in markdown
    code, csv_text = brownout["csv"]
    assert code == 0 and csv_text.startswith("start,end,category,title,count,services,text")


def test_timeline_command_one_service_is_one_document(brownout) -> None:
    """One account's cluster is one timeline, whatever items carry an account and region (the index projects them)."""
    code, out = brownout["basket"]
    assert code == 0
    doc = json.loads(out)
    assert doc["service"] == "basket" and doc["availability"]["unavailable_service_minutes"] == 5
    assert {s for ln in doc["lines"] for s in ln["services"]} == {"basket"}


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="the PNG needs the [plot] extra (matplotlib)")
def test_png_of_the_brownout(brownout) -> None:
    png: Path = brownout["png"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_missing_datapoints_during_the_outage_count_as_unavailable(tmp_path: Path) -> None:
    folder = tmp_path / "brownout-no-data"
    shutil.copytree(BROWNOUT, folder)
    rows = (folder / "healthy_hosts.csv").read_text().splitlines()
    outage = {f"2025-08-21T15:0{i}:00Z" for i in range(4, 9)}
    kept = [rows[0]] + [r for r in rows[1:] if r.split(",")[0] not in outage]  # no targets: no datapoint
    (folder / "healthy_hosts.csv").write_text("\n".join(kept) + "\n")
    (folder / "events.jsonl").write_text("")  # availability needs no events: only samples and desired counts
    result = replay(load_scenario(folder))
    assert result.summary["unavailable_service_minutes"] == 60
    assert result.availability.by_cause == {"down": 0, "no_data": 60, "zero_by_watchdog": 0}
    assert result.availability.coverage_pct == round(100 * 25 / 30, 3)


def test_timeline_needs_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HISTORY_TABLE", raising=False)
    assert cli.main(["timeline", "--cluster", "c", "--since", "2025-08-21", "--until", "2025-08-22"]) == 2
