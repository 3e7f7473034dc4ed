"""What ``replay`` writes once a scenario ran: plots, the alerts file, call counts, then the report or JSON Lines.

Moved out of ``cli.py``'s ``_cmd_replay`` (issue 34 item 5), as every other verb's output lives in ``app/``.
The order is the contract the tests and users read: ``--plot`` files (one per cluster), ``--alerts-out``,
``--calls`` on stderr, then stdout (``--json``: decisions, timelines, one summary; else the text report and the
timelines that have lines). Any ``OSError`` while writing becomes :class:`OutputWriteError` (exit 74).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from ecs_guardrail.core.errors import GuardrailError, OutputWriteError

__all__ = ["ReplayOutputs", "writing", "write_replay_outputs", "write_plots", "write_alerts", "print_calls",
           "print_result"]


class ReplayOutputs(Struct, frozen=True):
    """What the user asked for: ``plot`` (``--plot FILE``), ``alerts_out`` (``--alerts-out FILE.jsonl``),
    ``calls`` (``--calls``), ``timeline`` (``--timeline``) and ``json`` (``--json``)."""

    plot: Path | None = None
    alerts_out: Path | None = None
    calls: bool = False
    timeline: bool = False
    json: bool = False


@contextlib.contextmanager
def writing(target: str, flag: str | None = None) -> Iterator[None]:
    """Any ``OSError`` inside (a full disk, a name too long, a folder the user cannot write, a path
    under ``/sys``) becomes :class:`OutputWriteError` for ``target`` (a file, or ``stdout``) of ``flag``; a
    reader of stdout gone away (``BrokenPipeError``) is left to ``main``'s quiet 141."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputWriteError(target, exc, flag) from None


def write_plots(plot: Path, timelines: Sequence[Any]) -> None:
    """One chart per cluster's timeline: the first at ``plot``, the others at ``FILE-CLUSTER.png`` (and
    ``FILE-CLUSTER-ACCOUNT-REGION.png`` for a cluster name seen twice); a cluster with nothing to draw gets
    one line on stderr. Raises :class:`PlotUnavailableError` (no matplotlib) and :class:`OutputWriteError`."""
    from ecs_guardrail.app.plot import PlotUnavailableError, plot_timeline

    n = 0
    used: set[Path] = set()
    for tl in timelines:  # one file per cluster: the first at FILE, the others at FILE-CLUSTER
        path = plot if n == 0 else plot.with_name(f"{plot.stem}-{tl.cluster}{plot.suffix}")
        if path in used:  # a cluster of the same name in another account or region: never overwrite
            path = plot.with_name(f"{plot.stem}-{tl.cluster}-{tl.account or 'own'}-"
                                  f"{tl.region or 'own'}{plot.suffix}")
        try:
            with writing(str(path), "--plot"):
                plot_timeline(tl, path)
        except (PlotUnavailableError, OutputWriteError):  # not "nothing to draw": one line and exit 74
            raise
        except GuardrailError:
            print(f"--plot: cluster {tl.cluster}: nothing to draw (no samples, crashes, health-check kills "
                  "or decisions)", file=sys.stderr)
            continue
        n += 1
        used.add(path)
        home = f" of account {tl.account} in {tl.region}" if tl.account and tl.region else ""
        print(f"wrote {path} (cluster {tl.cluster}){home}", file=sys.stderr)


def write_alerts(path: Path, alerts: Sequence[dict[str, Any]]) -> None:
    """``--alerts-out``: one JSON line per alert per channel (keys sorted), then one line on stderr."""
    with writing(str(path), "--alerts-out"), path.open("w") as fh:
        for a in alerts:
            fh.write(json.dumps(a, sort_keys=True) + "\n")
    channels = sorted({a.get("channel", "?") for a in alerts})
    print(f"wrote {path} ({len(alerts)} lines: one per alert per channel"
          + (f", {', '.join(channels)}" if channels else "") + ")", file=sys.stderr)


def print_calls(calls: dict[tuple[str, str], int]) -> None:
    """``--calls``: ``aws-calls SERVICE.OPERATION COUNT`` per operation on stderr, sorted."""
    for (svc, op), n in sorted(calls.items()):
        print(f"aws-calls {svc}.{op} {n}", file=sys.stderr)


def print_result(name: str, scenario: Any, result: Any, timelines: Sequence[Any], *, as_json: bool) -> None:
    """stdout: JSON Lines (decisions, timelines, one summary) or the text report and each timeline with lines."""
    with writing("stdout"):
        if as_json:
            out = sys.stdout
            for d in result.decisions:
                out.write(json.dumps(d, sort_keys=False) + "\n")
            for tl in timelines:
                out.write(json.dumps(tl.to_dict()) + "\n")
            out.write(json.dumps(result.summary) + "\n")
            return
        from ecs_guardrail.app.report import print_report

        print_report(name, scenario, result)
        if timelines:
            from ecs_guardrail.app.timeline import render

            for tl in timelines:
                if tl.lines:
                    print()
                    sys.stdout.write(render(tl, "text"))
        sys.stdout.flush()  # a full disk behind `> report.txt` surfaces here, as one line and 74


def write_replay_outputs(name: str, scenario: Any, result: Any, timelines: Sequence[Any],
                         outputs: ReplayOutputs) -> None:
    """Every output of one replay of scenario folder ``name``, in the order the module docstring gives.

    ``timelines``: the clusters' timelines kept open for ``--timeline`` or ``--plot`` (printed only with
    ``--timeline``). Raises :class:`OutputWriteError` (exit 74) when a file or stdout cannot be written.
    """
    if outputs.plot:
        write_plots(outputs.plot, timelines)
    if not outputs.timeline:
        timelines = []
    if outputs.alerts_out:
        write_alerts(outputs.alerts_out, result.alerts)
    if outputs.calls:
        print_calls(result.calls)
    print_result(name, scenario, result, timelines, as_json=outputs.json)
