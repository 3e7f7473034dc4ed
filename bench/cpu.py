"""CPU time of whole processes, paired and alternated, for a loaded machine (issue 23).

Wall time on a machine that other jobs share measures the other jobs. Each figure here is the CPU time
(user + system, ``os.wait4``'s rusage of the child, which includes the children it waited for) of a
fresh process; the processes being compared run in pairs, in alternating order (A B, B A, A B...), so
a slow stretch of the machine lands on both sides. A ratio is the ratio of the medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Runs:
    """CPU seconds and peak resident memory (MB, ``ru_maxrss``) of each run of one command."""

    label: str
    cpu_s: list[float] = field(default_factory=list)
    peak_mb: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.cpu_s)

    def spread(self) -> str:
        """``min / median / max`` CPU seconds."""
        return f"{min(self.cpu_s):.3f} / {self.median:.3f} / {max(self.cpu_s):.3f}"


def run_once(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None,
             timeout_s: float = 3600.0) -> tuple[float, float]:
    """Run ``cmd`` to completion; ``(CPU seconds, peak MB)`` of it and its waited-for children.

    Raises:
        RuntimeError: a non-zero exit (with the tail of its stderr), or ``timeout_s`` of wall time.
    """
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(list(cmd), stdout=null, stderr=subprocess.PIPE, env=dict(env) if env else None,
                                cwd=cwd)
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{cmd[0]}: over {timeout_s:.0f} s")
            time.sleep(0.02)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)[:200]}: exit {proc.returncode}: {err[-600:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def paired(commands: Mapping[str, Sequence[str]], rounds: int, *, env: Mapping[str, str] | None = None,
           cwd: Path | None = None, progress: Callable[[str], None] | None = None,
           warmup: bool = False) -> dict[str, Runs]:
    """Run every command ``rounds`` times, all of them each round, the order reversed every other round.

    ``warmup``: first run each command once, not counted (it writes the bytecode a venv keeps after its
    first import, :func:`bytecode_env`). Returns ``{label: Runs}``. ``progress`` gets one line per run.
    """
    out = {label: Runs(label) for label in commands}
    labels = list(commands)
    for label in labels if warmup else ():
        run_once(commands[label], env=env, cwd=cwd)
        if progress:
            progress(f"warm-up: {label} (not counted)")
    for n in range(rounds):
        for label in labels if n % 2 == 0 else labels[::-1]:
            cpu, peak = run_once(commands[label], env=env, cwd=cwd)
            out[label].cpu_s.append(cpu)
            out[label].peak_mb.append(peak)
            if progress:
                progress(f"round {n + 1}/{rounds}: {label}: {cpu:.3f} s CPU, {peak:.0f} MB")
    return out


def python_import(module: str, *, python: str = sys.executable, extra: Sequence[str] = ()) -> list[str]:
    """A fresh interpreter that imports ``module`` (then each of ``extra``) and exits."""
    code = "; ".join(f"import {m}" for m in (module, *extra))
    return [python, "-c", code]


def bytecode_env(cache: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) for a Python that keeps its bytecode, as a venv does
    after its first import: ``PYTHONPYCACHEPREFIX=cache`` and no ``PYTHONDONTWRITEBYTECODE``. A machine that
    sets that variable (this one does) would otherwise compile the project from source in every measured
    process, a cost no installed venv pays twice; the cache directory keeps the checkout clean."""
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def instructions(cmd: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> int | None:
    """Instructions ``cmd`` executes, counted by valgrind's callgrind (``Collected : N``): unlike CPU seconds, a
    count the machine's load does not move (callgrind runs the program about 50x slower; a few seconds for an
    import). ``None`` when valgrind is not installed.

    Raises:
        RuntimeError: valgrind or ``cmd`` failed (the tail of valgrind's report).
    """
    import re
    import shutil

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    run = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], capture_output=True,
                         text=True, env=dict(env) if env else None, cwd=cwd)
    found = re.search(r"Collected : (\d+)", run.stderr)
    if run.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind {' '.join(cmd)[:200]}: exit {run.returncode}: {run.stderr[-600:]}")
    return int(found.group(1))

