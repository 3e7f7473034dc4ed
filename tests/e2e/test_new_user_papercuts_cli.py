"""A new user's papercuts through the command line (issue 38; issue 30 item 10): what stdout and stderr
say and the exit status, in this process (:func:`tests.conftest.cli_in_process`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ecs_guardrail import cli
from tests.conftest import cli_in_process

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "events" / "scenarios"
DEV = SCENARIOS / "bad-image-dev"


def _no_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the replay starts: the output must be refused before it."""
    import ecs_guardrail.replay.run as run

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("the replay ran before the output was checked")

    monkeypatch.setattr(run, "replay", boom)


# -- issue 30 item 10: an output that cannot be written is one line and 74, found before the replay ------

@pytest.mark.parametrize("flag", ["--alerts-out", "--plot"])
def test_a_file_name_too_long_is_refused_before_the_replay(tmp_path, monkeypatch, flag):
    _no_replay(monkeypatch)
    name = tmp_path / ("a" * 300 + (".png" if flag == "--plot" else ".jsonl"))
    proc = cli_in_process("replay", str(DEV), flag, str(name))
    assert proc.returncode == cli.EXIT_OUTPUT, proc.stderr
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f"ecs-guardrail: {flag}: cannot write ") and "too long" in proc.stderr


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="needs sysfs (Linux)")
def test_a_path_under_sys_is_refused_before_the_replay(monkeypatch):
    _no_replay(monkeypatch)
    proc = cli_in_process("replay", str(DEV), "--alerts-out", "/sys/kernel/alerts.jsonl")
    assert proc.returncode == cli.EXIT_OUTPUT, proc.stderr
    assert proc.stderr.splitlines() == [
        "ecs-guardrail: --alerts-out: cannot write /sys/kernel/alerts.jsonl: Permission denied"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder")
def test_a_folder_the_user_cannot_write_is_refused_before_the_replay(tmp_path, monkeypatch):
    _no_replay(monkeypatch)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = cli_in_process("replay", str(DEV), "--alerts-out", str(locked / "a.jsonl"))
    assert proc.returncode == cli.EXIT_OUTPUT and "Permission denied" in proc.stderr


def test_the_check_leaves_no_file_behind_and_a_good_path_is_written(tmp_path):
    out = tmp_path / "alerts.jsonl"
    cli._check_output(out, "--alerts-out")
    assert not out.exists()
    proc = cli_in_process("replay", str(DEV), "--json", "--alerts-out", str(out))
    assert proc.returncode == 0 and out.read_text().count("\n") >= 1


def test_a_plot_that_fails_after_the_replay_is_one_line_and_74(tmp_path, monkeypatch):
    """An OSError the check could not foresee (the disk filled during the replay) is one line too."""
    pytest.importorskip("matplotlib")
    import ecs_guardrail.app.plot as plot

    def full(_tl: object, path: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plot, "plot_timeline", full)
    png = tmp_path / "brownout.png"
    proc = cli_in_process("replay", str(SCENARIOS / "shared-cache-brownout"), "--plot", str(png))
    assert proc.returncode == cli.EXIT_OUTPUT, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"ecs-guardrail: --plot: cannot write {png}: No space left on device"
    assert "Traceback" not in proc.stderr


def _copy(tmp_path: Path, name: str = "bad-image-dev") -> Path:
    import shutil

    folder = tmp_path / name
    shutil.copytree(SCENARIOS / name, folder)
    return folder


# -- issue 38 item 1: input hints --------------------------------------------------------------------------

def test_one_pretty_printed_event_among_good_lines_gets_the_jq_hint_once(tmp_path):
    import json

    folder = _copy(tmp_path)
    lines = (folder / "events.jsonl").read_text().splitlines()
    pretty = json.dumps(json.loads(lines[3]), indent=2).splitlines()
    (folder / "events.jsonl").write_text("\n".join(lines[:3] + pretty + lines[4:]) + "\n")
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    hints = [ln for ln in proc.stderr.splitlines() if "pretty-printed JSON event" in ln]
    assert hints == [f"bad-image-dev/events.jsonl:4-{3 + len(pretty)}: these {len(pretty)} rejected lines are one "
                     "pretty-printed JSON event: one event per line, as AWS delivers them (`jq -c . FILE` prints "
                     "each event on one line)"]


def test_rejected_lines_that_are_no_json_together_get_no_hint(tmp_path):
    folder = _copy(tmp_path)
    lines = (folder / "events.jsonl").read_text().splitlines()
    (folder / "events.jsonl").write_text("\n".join(lines[:3] + ["{oops", "nope}"] + lines[3:]) + "\n")
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0 and proc.stderr.count("rejected: not JSON") == 2
    assert "pretty-printed" not in proc.stderr


def test_a_json_array_file_is_refused_with_the_jq_array_hint(tmp_path):
    import json

    folder = _copy(tmp_path)
    events = [json.loads(ln) for ln in (folder / "events.jsonl").read_text().splitlines() if ln.strip()]
    (folder / "events.jsonl").write_text(json.dumps(events) + "\n")  # > 64 KiB: the check's head is cut
    proc = cli_in_process("replay", str(folder))
    assert proc.returncode == 2 and proc.stdout == ""
    ev, fixed = folder / "events.jsonl", folder / "events.one-per-line.jsonl"
    # the fix ends in the file replay reads (fresh user 9: "use that file" named no way to)
    assert proc.stderr == ("ecs-guardrail: bad-image-dev/events.jsonl: one event per line: this looks like one JSON "
                           f"array; `jq -c '.[]' {ev} > {fixed} && mv {fixed} {ev}`\n")


def test_an_array_line_among_good_lines_names_the_jq_array_fix_once(tmp_path):
    folder = _copy(tmp_path)
    lines = (folder / "events.jsonl").read_text().splitlines()
    (folder / "events.jsonl").write_text("\n".join(lines[:3] + ['[{"a": 1}]', '[{"b": 2}]'] + lines[3:]) + "\n")
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0
    assert proc.stderr.count("event is a list, not a JSON object") == 2
    assert proc.stderr.count("jq -c '.[]'") == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"], ids=["bom", "no-bom"])
def test_a_utf16_file_is_named_utf16_with_the_fix(tmp_path, encoding):
    folder = _copy(tmp_path)
    text = (folder / "events.jsonl").read_text()
    (folder / "events.jsonl").write_bytes(text.encode(encoding))
    proc = cli_in_process("replay", str(folder))
    assert proc.returncode == 2 and proc.stdout == ""
    ev, fixed = folder / "events.jsonl", folder / "events.utf8.jsonl"
    assert proc.stderr.startswith("ecs-guardrail: bad-image-dev/events.jsonl: this file is UTF-16 (what Windows "
                                  f"PowerShell 5's `>` writes), not UTF-8: `iconv -f UTF-16 -t UTF-8 {ev} > {fixed} "
                                  f"&& mv {fixed} {ev}`")
    assert "replaced" not in proc.stderr and proc.stderr.count("\n") == 1


def test_a_pretty_printed_file_refusal_names_its_folder(tmp_path):
    import json

    folder = _copy(tmp_path)
    first = (folder / "events.jsonl").read_text().splitlines()[0]
    (folder / "events.jsonl").write_text(json.dumps(json.loads(first), indent=2) + "\n")
    proc = cli_in_process("replay", str(folder))
    assert proc.returncode == 2
    assert proc.stderr.startswith("ecs-guardrail: bad-image-dev/events.jsonl: one event per line: this looks like "
                                  "a pretty-printed JSON object")


# -- issue 38 item 2: a refused run prints nothing on stdout ----------------------------------------------

@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["report", "json"])
def test_a_run_of_which_no_line_was_accepted_prints_nothing_on_stdout(tmp_path, extra):
    folder = _copy(tmp_path)
    (folder / "events.jsonl").write_text('{"version": "0"}\nnot json\n')
    alerts = tmp_path / "alerts.jsonl"
    proc = cli_in_process("replay", str(folder), "--alerts-out", str(alerts), *extra)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert "none of its 2 lines was accepted" in proc.stderr.splitlines()[-1]
    assert not alerts.exists()


# -- issue 38 item 4: sweep oddities ----------------------------------------------------------------------

def test_a_setting_given_to_both_sweep_and_set_is_refused(monkeypatch):
    _no_replay(monkeypatch)
    proc = cli_in_process("replay", str(DEV), "--sweep", "CRASH_THRESHOLD=3,5", "--set", "CRASH_THRESHOLD=4")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("ecs-guardrail: CRASH_THRESHOLD is given to both --sweep and --set; the sweep replaces the "
                           "--set value: give it once (--sweep CRASH_THRESHOLD=V1,V2,... or --set CRASH_THRESHOLD=V)\n")


def test_a_value_given_twice_in_a_sweep_is_refused_by_the_parser(monkeypatch):
    _no_replay(monkeypatch)
    proc = cli_in_process("replay", str(DEV), "--sweep", "CRASH_THRESHOLD=3,3")
    assert proc.returncode == 2
    assert "--sweep CRASH_THRESHOLD: value '3' is given twice; give each value once" in proc.stderr
    assert "replay" in proc.stderr.splitlines()[0]  # replay's usage, not the top-level one


def _warnings(proc: object) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ": warning: " in ln]  # type: ignore[attr-defined]


# -- issue 38 item 3 (and issue 31 item 14): samples shifted inside the events' span ----------------------

@pytest.mark.parametrize(("offset", "hours"), [("+02:00", "2.0"), ("+03:00", "3.0")])
def test_samples_shifted_by_an_offset_inside_the_events_span_are_flagged(tmp_path, offset, hours):
    folder = _copy(tmp_path, "shared-cache-brownout")
    csv = folder / "healthy_hosts.csv"
    csv.write_text(csv.read_text().replace("Z,", f"{offset},"))  # sed -i 's/Z,/+02:00,/'
    proc = cli_in_process("replay", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    [w] = [w for w in _warnings(proc) if "shifted" in w]
    assert w.startswith("shared-cache-brownout: warning: healthy_hosts.csv: staging/")
    assert f"{hours} h from its nearest failure" in w and "+02:00" in w


def test_the_bundled_brownout_earns_no_shifted_warning():
    proc = cli_in_process("replay", str(SCENARIOS / "shared-cache-brownout"), "--json")
    assert proc.returncode == 0 and _warnings(proc) == []


# -- issue 38 item 7: messages ----------------------------------------------------------------------------

def test_a_target_group_missing_from_fleet_json_is_a_prefixed_warning(tmp_path):
    folder = _copy(tmp_path, "shared-cache-brownout")
    with (folder / "healthy_hosts.csv").open("a") as fh:
        fh.write("2025-08-21T15:00:00Z,no-such-tg,2\n")
    proc = cli_in_process("replay", str(folder), "--json")
    assert ("shared-cache-brownout: warning: healthy_hosts.csv: target group 'no-such-tg' is not in fleet.json; "
            "rows ignored") in proc.stderr.splitlines()


# -- issue 38 item 8: silent defaults in hand-written files ----------------------------------------------

def test_two_rows_for_one_target_group_minute_are_warned(tmp_path):
    folder = _copy(tmp_path, "shared-cache-brownout")
    csv = folder / "healthy_hosts.csv"
    lines = csv.read_text().splitlines()
    t, tg, _ = lines[1].split(",")
    csv.write_text("\n".join([*lines, f"{t},{tg},0"]) + "\n")
    proc = cli_in_process("replay", str(folder), "--json")
    [w] = [w for w in _warnings(proc) if "more than one row" in w]
    assert f"(first: {tg} at {t[:16]}Z: 2, 0)" in w and "one row per target group and minute" in w


def test_a_fleet_without_region_account_or_desired_count_is_warned(tmp_path):
    import json

    folder = _copy(tmp_path)
    fleet = json.loads((folder / "fleet.json").read_text())
    del fleet["region"], fleet["account"]
    del fleet["clusters"][0]["services"][0]["desiredCount"]
    (folder / "fleet.json").write_text(json.dumps(fleet))
    proc = cli_in_process("replay", str(folder), "--json")
    ws = _warnings(proc)
    name = f"{fleet['clusters'][0]['name']}/{fleet['clusters'][0]['services'][0]['name']}"
    assert 'bad-image-dev: warning: fleet.json has no "region": the fleet is built in us-east-1; set it to the ' \
           "events' region (their \"region\" field)" in ws
    assert any('fleet.json has no "account": the fleet is built in account 123456789012 (moto\'s default)' in w
               for w in ws)
    assert any(f"fleet.json: {name} has no desiredCount: built with 1" in w for w in ws)


def test_events_that_all_share_one_task_arn_are_warned(tmp_path):
    import json

    folder = _copy(tmp_path)
    events = [json.loads(ln) for ln in (folder / "events.jsonl").read_text().splitlines() if ln.strip()]
    arn = next(e["detail"]["taskArn"] for e in events if "taskArn" in e.get("detail", {}))
    for e in events:
        if "taskArn" in e.get("detail", {}):
            e["detail"]["taskArn"] = arn
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    proc = cli_in_process("replay", str(folder), "--json")
    [w] = [w for w in _warnings(proc) if "reusing one taskArn" in w]
    assert w.startswith(f"bad-image-dev: warning: task {arn}: events stamped at ")


def test_redelivered_events_earn_no_shared_task_warning():
    """dev-loop-redelivered: EventBridge's redeliveries repeat the first event's time: no warning."""
    proc = cli_in_process("replay", str(SCENARIOS / "dev-loop-redelivered"), "--json")
    assert proc.returncode == 0 and _warnings(proc) == []


# -- issue 38 item 6: piped output keeps to its width -----------------------------------------------------

@pytest.mark.parametrize(("columns", "width"), [("80", 80), ("", 200)], ids=["COLUMNS=80", "default"])
def test_every_line_of_a_piped_report_keeps_to_its_width(columns, width):
    proc = cli_in_process("replay", str(SCENARIOS / "shared-cache-brownout"), env={"COLUMNS": columns})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= width
    assert "5 health-check kills in 30 min." in " ".join(proc.stdout.split())  # wrapped, not cut
