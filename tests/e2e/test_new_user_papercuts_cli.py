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
