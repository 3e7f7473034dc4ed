"""``replay`` as a new user meets it: one clock, sweep, and the rough edges (issue 10), through the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import SCENARIOS, cli_in_process

CLI = [sys.executable, "-m", "ecs_guardrail.cli"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ecs-guardrail ARGS...``: with ``--json`` in this process (machine output; issue 23: cheaper), else as
    a user's shell runs it, a process whose terminal width, streams and exit status are its own."""
    import os

    if "--json" in args:
        return cli_in_process(*args, env=env)
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, **(env or {})})


def copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(SCENARIOS / name, folder)
    return folder


def test_watchdog_minutes_are_counted_on_one_clock():
    # checkout serves nobody from 10:00 and is scaled to 0 at 10:10:30: 10 minutes down, then 20 at zero by
    # the watchdog. Judged with the end state, the 10 minutes were "an operator's zero" and dropped.
    proc = run("replay", str(SCENARIOS / "watchdog-made-zero"), "--json")
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["unavailable_service_minutes"] == 30 and summary["watchdog_service_minutes"] == 20
    # alert-only, the same minutes are all down: acting never makes availability look better
    proc = run("replay", str(SCENARIOS / "watchdog-made-zero"), "--json", "--set", "ALERT_ONLY_CLUSTERS=dev")
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["watchdog_service_minutes"] == 0 and summary["unavailable_service_minutes"] >= 30


def test_without_csv_the_minutes_are_null():
    summary = json.loads(run("replay", str(SCENARIOS / "bad-image-dev"), "--json").stdout.splitlines()[-1])
    assert summary["unavailable_service_minutes"] is None and summary["watchdog_service_minutes"] is None


def test_sweep_runs_the_grid_one_row_per_combination():
    proc = run("replay", str(SCENARIOS / "watchdog-made-zero"), "--json", "--sweep", "CRASH_THRESHOLD=3,5,8",
               "--sweep", "MAX_ACTION_FRACTION=0.1,0.2")
    assert proc.returncode == 0, proc.stderr
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    rows, summary = objs[:-1], objs[-1]
    assert [r["settings"] for r in rows] == [{"CRASH_THRESHOLD": c, "MAX_ACTION_FRACTION": f}
                                             for c in ("3", "5", "8") for f in ("0.1", "0.2")]
    # issue 38 item 4: the least among settings that act; threshold 8 never acts, and says so
    never = [{"CRASH_THRESHOLD": "8", "MAX_ACTION_FRACTION": f} for f in ("0.1", "0.2")]
    assert summary == {"type": "sweep_summary", "combinations": 6, "keys": ["CRASH_THRESHOLD", "MAX_ACTION_FRACTION"],
                       "least_watchdog_service_minutes": {"CRASH_THRESHOLD": "5", "MAX_ACTION_FRACTION": "0.1"},
                       "never_act": never,
                       "trade": [{"settings": s, "watchdog_service_minutes": m, "services_scaled": n,
                                  "image_pulls": None}
                                 for s, m, n in [(never[0], 0, 0), (never[1], 0, 0),
                                                 ({"CRASH_THRESHOLD": "5", "MAX_ACTION_FRACTION": "0.1"}, 20, 1),
                                                 ({"CRASH_THRESHOLD": "5", "MAX_ACTION_FRACTION": "0.2"}, 20, 1)]]}
    by = {r["settings"]["CRASH_THRESHOLD"]: r for r in rows}
    assert by["5"]["services_scaled"] == 1 and by["5"]["watchdog_service_minutes"] == 20
    assert by["5"]["decisions_by_action"]["scale_to_zero"] == 1
    assert by["8"]["services_scaled"] == 0 and by["8"]["watchdog_service_minutes"] == 0  # 6 crashes < 8
    # a piped report is as wide as COLUMNS says (README): pin it, whatever the runner's environment holds
    text = run("replay", str(SCENARIOS / "watchdog-made-zero"), "--sweep", "CRASH_THRESHOLD=5,8",
               env={"COLUMNS": "160"}).stdout
    assert "CRASH_THRESHOLD" in text and "watchdog svc-min" in text and len(text.splitlines()) >= 5


def test_sweep_checks_every_value_before_replaying():
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), "--sweep", "CRASH_THRESHOLD=3,zero")
    assert proc.returncode == 2 and "--sweep CRASH_THRESHOLD=zero" in proc.stderr


def test_events_of_another_account_are_warned_once_naming_both(tmp_path):
    folder = copy(tmp_path, "bad-image-dev")
    fleet = json.loads((folder / "fleet.json").read_text())
    events_account = json.loads((folder / "events.jsonl").read_text().splitlines()[0])["account"]
    fleet["account"] = "999999999999"
    (folder / "fleet.json").write_text(json.dumps(fleet))
    proc = run("replay", str(folder), "--json")
    warnings = [ln for ln in proc.stderr.splitlines() if "events of account" in ln]
    assert len(warnings) == 1
    assert events_account in warnings[0] and "999999999999" in warnings[0]
    assert run("replay", str(SCENARIOS / "bad-image-dev"), "--json").stderr.count("events of account") == 0


def test_the_report_says_how_many_stopped_tasks_reached_the_watchdog(tmp_path):
    summary = json.loads(run("replay", str(SCENARIOS / "bad-image-dev"), "--json").stdout.splitlines()[-1])
    assert summary["stopped_tasks_to_watchdog"] > 0
    folder = copy(tmp_path, "bad-image-dev")
    text = (folder / "events.jsonl").read_text().replace('"lastStatus":"STOPPED"', '"lastStatus":"DEPROVISIONING"')
    text = text.replace('"lastStatus": "STOPPED"', '"lastStatus": "DEPROVISIONING"')
    (folder / "events.jsonl").write_text(text)
    proc = run("replay", str(folder), "--json")
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["stopped_tasks_to_watchdog"] == 0 and summary["decisions"] == 0
    assert "only the STOPPED event reaches the watchdog" in proc.stderr
    report = run("replay", str(folder)).stdout
    assert "stopped tasks that reached the watchdog: 0" in report


def test_output_paths_are_checked_before_the_replay(tmp_path):
    for flag in ("--plot", "--alerts-out"):
        proc = run("replay", str(SCENARIOS / "shared-cache-brownout"), flag, str(tmp_path / "missing" / "out"))
        assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
        # checked before the replay: one line on stderr and no report (a replay that ran would print one)
        assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), "--alerts-out", str(tmp_path))
    assert proc.returncode == 2 and "is a folder" in proc.stderr
    # a chart's format is its file name's: .txt failed in matplotlib after the whole replay, a traceback
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), "--plot", str(tmp_path / "chart.txt"))
    assert proc.returncode == 2 and "FILE.png" in proc.stderr and proc.stdout == ""


def test_piped_report_does_not_wrap_at_80_columns():
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), env={"COLUMNS": ""})
    long_lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("stopped tasks that reached the watchdog")]
    assert long_lines and len(long_lines[0]) > 80 and long_lines[0].rstrip().endswith("not counted)")


def test_help_reads_cleanly():
    top = run("--help").stdout
    assert "``" not in top and "capture" in top
    timeline = run("timeline", "--help").stdout
    assert "the ECS cluster's name" in timeline
    restore = run("restore", "--help").stdout
    assert "the ECS service's name" in restore
    assert "--engine" in run("replay", "--help").stdout


def test_plot_of_a_multi_cluster_scenario_names_every_cluster(tmp_path):
    import pytest

    pytest.importorskip("matplotlib")
    fleet = json.loads((SCENARIOS / "bad-image-dev" / "fleet.json").read_text())
    clusters = [c["name"] for c in fleet["clusters"]]
    assert len(clusters) > 1
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), "--plot", str(tmp_path / "p.png"))
    assert proc.returncode == 0, proc.stderr
    for name in clusters:  # each cluster drawn, or said to have nothing to draw
        assert f"(cluster {name})" in proc.stderr or f"cluster {name}: nothing to draw" in proc.stderr
    assert (tmp_path / "p.png").exists()


def test_sweep_of_an_unknown_setting_names_sweep_not_set():
    proc = run("replay", str(SCENARIOS / "bad-image-dev"), "--sweep", "CRASH_TRESHOLD=3,5")
    assert proc.returncode == 2
    assert "--sweep: unknown setting 'CRASH_TRESHOLD'" in proc.stderr and "--set" not in proc.stderr


def test_alerts_out_says_where_it_wrote_like_plot(tmp_path):
    out = tmp_path / "alerts.jsonl"
    proc = run("replay", str(SCENARIOS / "alerts-tour"), "--json", "--alerts-out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert lines and f"wrote {out} ({len(lines)} lines: one per alert per channel, slack, sns)" in proc.stderr
    assert all(json.loads(ln)["type"] in ("decision", "summary") for ln in proc.stdout.splitlines())


def test_plot_never_overwrites_a_cluster_of_the_same_name_in_another_account(tmp_path):
    """Three clusters named development (the fleet's account and two others): three files."""
    import pytest

    pytest.importorskip("matplotlib")
    from tests.fuzz.breakkit import crash, scenario

    events = []
    for k, account in enumerate(("111122223333", "444455556666", "777788889999")):
        for m in range(3):
            e = json.loads(json.dumps(crash(10 * k + m + 1, minute=m)).replace("111122223333", account))
            events.append(e)
    folder = scenario(tmp_path / "s", events=events)
    proc = run("replay", str(folder), "--plot", str(tmp_path / "p.png"))
    assert proc.returncode == 0, proc.stderr
    written = [ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("wrote ")]
    assert len(written) == 3 and len(set(written)) == 3, proc.stderr
    assert all(Path(w).exists() for w in written)


def test_a_setting_given_twice_to_set_is_an_error():
    """break-it: the second --set silently won, and production (alert-only by the first) was scaled."""
    proc = run("replay", str(SCENARIOS / "oom-loop-production"), "--json", "--set", "ALERT_ONLY_CLUSTERS=production",
               "--set", "ALERT_ONLY_CLUSTERS=none")
    assert proc.returncode == 2
    assert "--set: ALERT_ONLY_CLUSTERS is given twice ('production' and 'none')" in proc.stderr
    assert proc.stdout == ""


def test_replay_of_the_current_folder_is_titled_by_its_name():
    """A new user's finding: ``replay .`` printed an empty title (``ecs-guardrail replay:``) and warnings
    and rejections without a scenario name (``: warning: ...``)."""
    import os

    proc = subprocess.run([*CLI, "replay", "."], capture_output=True, text=True, timeout=300, check=False,
                          cwd=SCENARIOS / "bad-image-dev", env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "ecs-guardrail replay: bad-image-dev" in proc.stdout


def test_a_sweep_never_drops_what_it_was_given():
    """A new user's finding: a setting given to two --sweep options ran only the last one's values, and
    --calls beside --sweep printed nothing; both are refused now, before any replay, as --plot is."""
    folder = str(SCENARIOS / "bad-image-dev")
    twice = run("replay", folder, "--json", "--sweep", "CRASH_THRESHOLD=3,5", "--sweep", "CRASH_THRESHOLD=8")
    assert twice.returncode == 2 and "--sweep CRASH_THRESHOLD is given twice" in twice.stderr, twice.stderr
    calls = run("replay", folder, "--json", "--sweep", "CRASH_THRESHOLD=3,5", "--calls")
    assert calls.returncode == 2 and "--calls" in calls.stderr and calls.stdout == "", calls.stderr


def test_job_line_counts_failure_alerts_and_names_the_summaries() -> None:
    # alerts-tour's job sends 4 alerts (2 failures, 2 summaries): the line said "2 alerts", as if that were all
    run = cli_in_process("replay", str(SCENARIOS / "alerts-tour"))
    assert run.returncode == 0
    assert ("job failed 13 times (never acted on; 2 failure alerts, one per window, and a summary for each window "
            "of more than one failure): development/nightly-report") in " ".join(run.stdout.split())  # any width
