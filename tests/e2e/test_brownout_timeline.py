"""Issue 3's "done when": availability figures of every scenario, the brownout's timeline and verdict,
no_data minutes counted as unavailable, the PNG, and ``timeline`` reading the embedded table."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from ecs_guardrail import cli
from ecs_guardrail.local import TABLE, load_scenario, replay

SCENARIOS = Path(__file__).resolve().parents[2] / "events" / "scenarios"
BROWNOUT = SCENARIOS / "shared-cache-brownout"


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.iterdir() if (p / "expected.json").exists()))
def test_replay_figures_match_expected(name: str) -> None:
    folder = SCENARIOS / name
    expected = json.loads((folder / "expected.json").read_text())
    code, out = run_cli("replay", str(folder), "--json")
    summary = json.loads(out.splitlines()[-1])
    assert code == 0 and summary["type"] == "summary"
    assert sorted(summary["scaled_to_zero"]) == sorted(expected["scaled_to_zero"])
    assert summary["desired_counts"] == expected["desired_counts"]
    if "unavailable_service_minutes" in expected:
        assert summary["unavailable_service_minutes"] == expected["unavailable_service_minutes"]
    if not (folder / "healthy_hosts.csv").exists():
        assert summary["unavailable_service_minutes"] is None


def test_brownout_is_60_service_minutes_of_healthy_hosts_at_zero() -> None:
    result = replay(load_scenario(BROWNOUT))
    report = result.availability
    assert result.summary["unavailable_service_minutes"] == 60
    assert report.by_cause == {"down": 60, "no_data": 0, "zero_by_watchdog": 0}
    assert report.denominator == 12 * 30 and report.coverage_pct == 100.0
    assert report.divergent_service_minutes == 60  # tasks were running, nobody was healthy


def test_missing_datapoints_during_the_outage_count_as_unavailable(tmp_path: Path) -> None:
    folder = tmp_path / "brownout-no-data"
    shutil.copytree(BROWNOUT, folder)
    csv = (folder / "healthy_hosts.csv").read_text().splitlines()
    outage = {f"2025-08-21T15:0{i}:00Z" for i in range(4, 9)}
    kept = [csv[0]] + [row for row in csv[1:] if row.split(",")[0] not in outage]  # no targets: no datapoint
    (folder / "healthy_hosts.csv").write_text("\n".join(kept) + "\n")
    result = replay(load_scenario(folder))
    assert result.summary["unavailable_service_minutes"] == 60
    assert result.availability.by_cause == {"down": 0, "no_data": 60, "zero_by_watchdog": 0}
    assert result.availability.coverage_pct == round(100 * 25 / 30, 3)


@pytest.fixture(scope="module")
def brownout_text() -> str:
    code, out = run_cli("replay", str(BROWNOUT), "--timeline")
    assert code == 0
    return out[out.index("Incident timeline"):]


def test_brownout_timeline_reads_like_a_postmortem(brownout_text: str) -> None:
    lines = brownout_text.splitlines()
    first_kill = next(ln for ln in lines if "first health-check kill" in ln)
    assert first_kill.startswith("15:03:11") and "Task failed ELB health checks" in first_kill
    hold = next(ln for ln in lines if "decision: hold" in ln)
    assert "mass_unhealthy" in hold and "12 services (all)" in hold
    assert any(ln.startswith("15:04:00") and "healthy hosts dropped to 0" in ln for ln in lines)
    recovery = next(ln for ln in lines if "recovery" in ln and "every service healthy again" in ln)
    assert recovery.startswith("15:09:00") and "60 service-minutes lost" in recovery
    assert "SHARED DEPENDENCY OR CHECKER" in brownout_text
    assert "service-minutes lost: 60 (healthy hosts 0: 60" in brownout_text
    timeline_part = brownout_text[:brownout_text.index("Attribution")]
    assert len(timeline_part.splitlines()) <= 20  # fits on a screen


def test_brownout_timeline_json_and_attribution_verdict() -> None:
    code, out = run_cli("replay", str(BROWNOUT), "--json", "--timeline")
    objs = [json.loads(ln) for ln in out.splitlines()]
    assert objs[-1]["type"] == "summary"  # the summary stays last
    (tl,) = [o for o in objs if o["type"] == "timeline"]
    assert tl["attribution"]["verdict"] == "shared dependency or checker"
    assert tl["attribution"]["failing_services"] == 12 and len(tl["attribution"]["zones"]) == 3
    first = next(ln for ln in tl["lines"] if ln["category"] == "first_health_check_kill")
    assert first["start"] == "2025-08-21T15:03:11Z"
    assert any(ln["category"] == "decision" and ln["detail"]["action"] == "hold" for ln in tl["lines"])
    recovery = next(ln for ln in tl["lines"] if ln["category"] == "recovery")
    assert recovery["start"] == "2025-08-21T15:09:00Z"
    assert tl["availability"]["unavailable_service_minutes"] == 60


def test_timeline_command_reads_the_history_table() -> None:
    outputs: dict[str, str] = {}

    def keep_open(aws, result) -> None:
        for fmt in ("markdown", "csv"):
            code, out = run_cli("timeline", "--cluster", "staging", "--since", "2025-08-21T14:00:00Z",
                                "--until", "2025-08-21T16:00", "--format", fmt, "--table", TABLE,
                                "--region", aws.region)
            assert code == 0
            outputs[fmt] = out
        code, out = run_cli("timeline", "--cluster", "staging", "--service", "basket", "--since", "2025-08-21",
                            "--until", "2025-08-22", "--format", "json", "--table", TABLE, "--region", aws.region)
        outputs["json"] = out

    replay(load_scenario(BROWNOUT), keep_open=keep_open)
    assert "**first health-check kill**" in outputs["markdown"] and "shared dependency or checker" in outputs["markdown"]
    assert outputs["csv"].startswith("start,end,category,title,count,services,text")
    doc = json.loads(outputs["json"])
    assert doc["service"] == "basket" and doc["availability"]["unavailable_service_minutes"] == 5
    assert {s for ln in doc["lines"] for s in ln["services"]} == {"basket"}


def test_timeline_needs_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HISTORY_TABLE", raising=False)
    assert cli.main(["timeline", "--cluster", "c", "--since", "2025-08-21", "--until", "2025-08-22"]) == 2


def test_png_of_the_brownout(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the PNG needs the [plot] extra (matplotlib)")
    png = tmp_path / "brownout.png"
    code, _ = run_cli("replay", str(BROWNOUT), "--json", "--plot", str(png))
    assert code == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
