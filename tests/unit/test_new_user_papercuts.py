"""A new user's papercuts (issue 38, issue 30 item 10): hints, refusals, sweeps, widths, messages and
silent defaults; each item has a test here (reading files and calling functions; no replay unless needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecs_guardrail.replay.scenario import alert_only_warnings, load_scenario

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(p for p in (ROOT / "events" / "scenarios").iterdir() if (p / "fleet.json").exists())


# -- item 5: the project's own data earns no "a typo?" warning ------------------------------------------

@pytest.mark.parametrize("folder", BUNDLED, ids=lambda p: p.name)
def test_bundled_settings_name_only_clusters_of_their_fleet(folder: Path) -> None:
    assert alert_only_warnings(load_scenario(folder)) == []


# -- item 4: a sweep's summary never calls "never act" the best ------------------------------------------

def _row(threshold: str, minutes: int | None, scaled: int, pulls: int | None = None) -> object:
    from ecs_guardrail.replay.settings_sweep import SweepRow

    probing = pulls is not None
    return SweepRow(settings={"CRASH_THRESHOLD": threshold}, services_scaled=scaled, watchdog_service_minutes=minutes,
                    probes={"started": 1, "passed": 0, "failed": 1} if probing else None,
                    image_pulls={"unstopped": 30, "manual": 5, "probe": pulls} if probing else None)


def test_the_least_minutes_are_among_settings_that_act_and_never_act_is_named():
    from ecs_guardrail.replay.settings_sweep import summary, trade_lines

    rows = [_row("1", 0, 0), _row("3", 40, 2), _row("5", 25, 2), _row("8", 10, 1)]
    s = summary(rows)  # type: ignore[arg-type]
    assert s["least_watchdog_service_minutes"] == {"CRASH_THRESHOLD": "8"}
    assert s["never_act"] == [{"CRASH_THRESHOLD": "1"}]
    # 3 is beaten by 5 (fewer minutes, as many services stopped); the rest is the trade
    assert [t["settings"]["CRASH_THRESHOLD"] for t in s["trade"]] == ["1", "8", "5"]
    lines = trade_lines(rows)  # type: ignore[arg-type]
    assert lines[0] == ("fewest watchdog service-minutes among settings that act: CRASH_THRESHOLD=8 (10 min, "
                        "1 service(s) stopped)")
    assert lines[1].startswith("never act: CRASH_THRESHOLD=1: 0 watchdog minutes because their crash loops run on")


def test_no_setting_acts_gives_no_best_and_pulls_join_the_trade():
    from ecs_guardrail.replay.settings_sweep import summary

    assert summary([_row("8", 0, 0), _row("9", 0, 0)])["least_watchdog_service_minutes"] is None  # type: ignore[list-item]
    rows = [_row("3", 30, 1, pulls=9), _row("5", 20, 1, pulls=20)]
    trade = summary(rows)["trade"]  # type: ignore[arg-type]
    assert [(t["watchdog_service_minutes"], t["image_pulls"]) for t in trade] == [(20, 20), (30, 9)]


# -- item 7: messages --------------------------------------------------------------------------------------

def test_a_rule_across_settings_names_only_its_settings():
    from ecs_guardrail.core.errors import SettingsError
    from ecs_guardrail.settings import load_settings

    with pytest.raises(SettingsError) as info:
        load_settings({"PROBE_DELAY_MINUTES": "300", "PROBE_MAX_DELAY_MINUTES": "100", "CRASH_THRESHOLD": "5"})
    text = str(info.value)
    assert text.startswith("invalid setting: PROBE_MAX_DELAY_MINUTES (100) is below PROBE_DELAY_MINUTES (300)")
    assert "CRASH_THRESHOLD" not in text and "settings=" not in text and "Value error" not in text


def test_a_fleet_json_that_is_not_utf8_says_so(tmp_path):
    from ecs_guardrail.core.errors import ScenarioError

    (tmp_path / "fleet.json").write_bytes(b'{"region": "caf\xe9"}')
    (tmp_path / "events.jsonl").write_text("")
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path)
    assert str(info.value) == "fleet.json: not UTF-8 (byte 0xe9 at offset 15); save it as UTF-8"


def test_a_file_of_a_scenario_given_for_its_folder_names_the_folder(tmp_path):
    from ecs_guardrail.core.errors import ScenarioError

    folder = ROOT / "events" / "scenarios" / "bad-image-dev"
    with pytest.raises(ScenarioError) as info:
        load_scenario(folder / "events.jsonl")
    assert str(info.value) == f"{folder / 'events.jsonl'}: not a scenario folder (a file of one: replay {folder})"
    with pytest.raises(ScenarioError) as info:  # a file elsewhere: no suggestion
        (tmp_path / "x.jsonl").write_text("")
        load_scenario(tmp_path / "x.jsonl")
    assert "a file of one" not in str(info.value)


@pytest.mark.parametrize(("n", "text"), [(0, "0 findings"), (1, "1 finding"), (2, "2 findings")])
def test_audit_counts_are_singular_for_one(n, text):
    from ecs_guardrail.app.audit import _count

    assert _count(n, "finding") == text


def test_the_audit_summary_line_says_one_service_and_one_finding(monkeypatch):
    import io

    from ecs_guardrail.app import audit
    from ecs_guardrail.settings import load_settings

    class Run:  # the summary _text reads: one cluster, no services table, one finding
        clusters: list[object] = []
        findings: list[object] = []
        warnings: list[object] = []
        config = load_settings({}).audit()
        summary = {"findings": 1, "by_severity": {"high": 1, "medium": 0, "low": 0}, "clusters": ["dev"],
                   "services": 1, "fail_on": "high", "exit_status": 1}

    monkeypatch.delenv("COLUMNS", raising=False)  # a file's width: 150, whatever the runner's terminal says
    out = io.StringIO()
    audit._text(Run(), out)  # type: ignore[arg-type]
    assert "1 finding (1 high, 0 medium, 0 low) in 1 cluster, 1 service; --fail-on high: exit 1" in out.getvalue()


@pytest.mark.parametrize(("raw", "said"), [
    ("dev/api: MISSING", "dev/api: no such service"),
    ("dev/api: ClusterNotFoundException", "dev/api: no such cluster"),
    ("dev/api: INACTIVE", "dev/api: the service was deleted (ECS lists it INACTIVE for a while)"),
    ("cluster dev not found", "cluster dev not found: no such active cluster or service"),
])
def test_restore_names_ecs_tokens_in_words(raw, said):
    from ecs_guardrail.cli import _not_found

    assert _not_found(raw) == said


def test_evidence_is_written_without_python_reprs():
    from ecs_guardrail.core.alert import _evidence_value

    assert _evidence_value(["production"]) == "production"
    assert _evidence_value(("prod-*", "live")) == "prod-*, live"
    listed = [{"target_group": "tg", "healthy_host_count": 0.0}]
    assert _evidence_value(listed) == "(target_group=tg, healthy_host_count=0)"
    assert _evidence_value(0.5) == "0.5" and _evidence_value([]) == "(none)"


def test_a_job_stop_line_names_the_container_whole_and_its_exit_code_once():
    from datetime import UTC, datetime

    from ecs_guardrail.core.alert import _stops
    from ecs_guardrail.core.classify import StopKind, job_failed
    from ecs_guardrail.core.records import Failure
    from ecs_guardrail.core.structs import replace

    codes = (("example-web_container-dev", 1),)
    _, verdict = job_failed(codes, None)  # "essential unknown ...; exit codes example-web_container-dev=1"
    f = Failure("nightly", datetime(2025, 9, 2, 10, 0, 30, tzinfo=UTC), StopKind.CRASH,
                stop_code="EssentialContainerExited", reason=verdict, exit_codes=codes)
    [line] = _stops((f,))
    assert line.count("example-web_container-dev") == 1 and line.count("=1") == 1
    assert line.endswith("or it was deleted) [example-web_container-dev=1]")
    both = (("app", 1), ("log-router", 137))
    _, known = job_failed(both, frozenset({"app"}))  # "essential container app exited 1 (log-router=137 ...)"
    [line] = _stops((replace(f, reason=known, exit_codes=both),))
    assert "app exited 1" in line and "[app=1" not in line


def test_a_folder_of_scenarios_names_them_and_a_missing_folder_says_so(tmp_path):
    from ecs_guardrail.core.errors import ScenarioError

    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "fleet.json").write_text("{}")
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path)
    assert str(info.value) == (f"{tmp_path}: missing fleet.json; it holds scenario folders: give one of them "
                               f"(a, b), e.g. replay {tmp_path / 'a'}")
    with pytest.raises(ScenarioError, match=r"not a scenario folder \(no such folder\)$"):
        load_scenario(tmp_path / "nope")


def test_a_sweep_without_service_minutes_says_why_and_still_names_what_never_acts():
    from ecs_guardrail.replay.settings_sweep import trade_lines

    rows = [_row("3", None, 1), _row("8", None, 0)]
    assert trade_lines(rows) == [  # type: ignore[arg-type]
        "service-minutes n/a: the scenario has no healthy_hosts.csv, so no trade is named; scale nothing: "
        "CRASH_THRESHOLD=8"]


def test_never_act_by_a_mass_hold_is_not_called_a_loop_left_running():
    """shared-cache-brownout's sweep: every setting held all 12 services (a shared dependency down), and the
    summary said their "crash loops run on ... not a saving": blame for the decision the policy asks for when
    everything looks broken (a new user, round 10). A held row says it held; a row that neither acted nor
    held keeps the loop wording."""
    from ecs_guardrail.replay.settings_sweep import SweepRow, trade_lines

    held = [SweepRow(settings={"CRASH_THRESHOLD": v}, services_held=12, watchdog_service_minutes=0) for v in "35"]
    line = trade_lines(held)[-1]
    assert line.startswith("never act: CRASH_THRESHOLD=3, CRASH_THRESHOLD=5: 0 watchdog minutes; held the failing")
    assert "not a saving" not in line and "mass hold" in line
    mixed = [*held, SweepRow(settings={"CRASH_THRESHOLD": "9"}, watchdog_service_minutes=0)]
    line = trade_lines(mixed)[-1]
    assert "2 of them held the failing services" in line and "the others' crash loops run on" in line
