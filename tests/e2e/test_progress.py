"""Progress on a terminal only, never in --json output nor in a pipe (issue 24 item 8).

stderr is a pseudo-terminal (``pty``) in these tests: what a user's shell gives the command.
"""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys

from ecs_guardrail.app.progress import progress, progress_enabled
from tests.conftest import SCENARIOS

CLI = [sys.executable, "-m", "ecs_guardrail.cli"]


def _run_on_a_terminal(*args: str) -> tuple[int, bytes, bytes]:
    """Run the CLI with stderr on a pseudo-terminal; returns (status, stdout, what the terminal got).

    stdout goes to a file, so a long report cannot block the child while the terminal is read."""
    import tempfile

    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen([*CLI, *args], stdout=stdout, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        got = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            got.append(chunk)
        os.close(master)
        status = proc.wait(timeout=300)
        stdout.seek(0)
        return status, stdout.read(), b"".join(got)


def test_replay_on_a_terminal_shows_lines_read_and_keeps_stdout_clean():
    status, out, terminal = _run_on_a_terminal("replay", str(SCENARIOS / "bad-image-dev"))
    assert status == 0
    assert b"replay bad-image-dev (fast)" in terminal and b"/374" in terminal
    assert b"\x1b[" not in out and b"Decisions" in out


def test_json_output_never_gets_a_progress_byte():
    status, out, terminal = _run_on_a_terminal("replay", str(SCENARIOS / "bad-image-dev"), "--json")
    assert status == 0 and b"replay bad-image-dev" not in terminal and b"\x1b[" not in terminal
    assert json.loads(out.splitlines()[-1])["type"] == "summary"


def test_a_sweep_counts_its_combinations():
    status, _, terminal = _run_on_a_terminal("replay", str(SCENARIOS / "bad-image-dev"), "--sweep",
                                             "CRASH_THRESHOLD=3,5")
    assert status == 0 and b"sweep bad-image-dev (fast)" in terminal and b"/2" in terminal


def test_a_pipe_gets_no_progress():
    proc = subprocess.run([*CLI, "replay", str(SCENARIOS / "bad-image-dev")], capture_output=True, timeout=300,
                          check=False)
    assert proc.returncode == 0 and b"\x1b[" not in proc.stderr and b"replay bad-image-dev" not in proc.stderr


def test_progress_enabled_only_for_a_terminal_without_json():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert progress_enabled(Tty()) and not progress_enabled(Tty(), json_output=True)
    assert not progress_enabled(io.StringIO())
    closed = io.StringIO()
    closed.close()
    assert not progress_enabled(closed)
    with progress("x", 3, enabled=False) as advance:  # disabled: a no-op, nothing written anywhere
        advance(1)


def test_columns_sets_the_width_of_a_piped_report():
    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([*CLI, "replay", str(SCENARIOS / "bad-image-dev")], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    rule = proc.stdout.splitlines()[0]
    assert proc.returncode == 0 and "bad-image-dev" in rule and len(rule) == 80
