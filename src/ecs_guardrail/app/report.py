"""The readable ``replay`` report (rich): settings, decisions with their reasons, then the summary."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

__all__ = ["print_report", "make_console"]

_STYLE = {"scale_to_zero": "bold red", "alert_only": "yellow", "hold": "cyan"}


class _Console(Console):
    """rich's console, except that a reader gone away (``| head -1``) is a :class:`BrokenPipeError` for
    the CLI's one exit path (141): rich's own answer is ``SystemExit(1)``, the status of a finding."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """A text line keeps to the console's width (wrapped between words) even where the console
        soft-wraps (a pipe): the banner and tables always did, text lines reached 232 columns
        (issue 38). Tables and other renderables print as before (their titles are not padded)."""
        if objects and all(isinstance(o, str) for o in objects) and "soft_wrap" not in kwargs:
            kwargs["soft_wrap"] = False
        super().print(*objects, **kwargs)


def make_console() -> Console:
    """stdout's console. On a terminal: the terminal's width. Piped or redirected: ``COLUMNS`` when it
    is set (a number from 40), else 200 columns; text lines are wrapped to it (:meth:`_Console.print`)."""
    import os
    import sys

    if sys.stdout.isatty():
        return _Console()
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return _Console(width=int(columns), soft_wrap=True)
    return _Console(width=200, soft_wrap=True)


def _why(decisions: list[dict[str, Any]], region: str | None = None, restored: frozenset[str] = frozenset(),
         table: str = "ecs-guardrail-history") -> list[str]:
    """One line per decision; a cluster-wide hold (mass_unhealthy) is said once for all its services.
    ``region``: the scenario's, named in each undo command (the decision's own ``region`` first);
    ``restored``: ``cluster/service`` a probe restored (nothing left to undo); ``table``: the history
    table the undo command names, the replay's ``HISTORY_TABLE`` (the one its alerts' Undo line names,
    and the README's examples: a deployed stack's is its ``HistoryTableName`` output)."""
    lines: list[str] = []
    held: dict[str, list[int]] = {}
    for i, d in enumerate(decisions, 1):
        if d["reason"] == "mass_unhealthy":
            held.setdefault(d["cluster"], []).append(i)
            if len(held[d["cluster"]]) > 1:
                continue
        lines.append(f"  {i}. {d['message']}")
        if d["action"] == "scale_to_zero" and f"{d['cluster']}/{d['service']}" in restored:
            lines.append(f"     previous desired count {d.get('previous_desired_count')}; restored by a probe that "
                         "passed (RECOVERY=probe): nothing to undo")
        elif d["action"] == "scale_to_zero":
            lines.append(f"     previous desired count {d.get('previous_desired_count')}; undo: ecs-guardrail "
                         f"restore --cluster {d['cluster']} --service {d['service']} --table {table}"
                         + (f" --region {d.get('region') or region}" if d.get("region") or region else ""))
    for cluster, numbers in held.items():
        if len(numbers) > 1:
            first = numbers[0]
            contiguous = numbers == list(range(first, numbers[-1] + 1))
            label = f"{first}-{numbers[-1]}" if contiguous else ",".join(map(str, numbers))
            # the message's counts are the first held service's own, not the cluster's: say whose they are
            lines[[n for n, ln in enumerate(lines) if ln.startswith(f"  {first}. ")][0]] = (
                f"  {label}. {len(numbers)} services of {cluster} held together; the first, "
                f"{decisions[first - 1]['service']}: {decisions[first - 1]['message']}")
    return lines


def _alert_kinds(result: Any, sent: int) -> str:
    """" (alert_only 1, recovery 1)" after the alerts sent: "decisions 1; alerts sent 2" read as two alerts
    for one decision, where the second is its recovery (or a job's summary). Each alert has exactly one
    Slack preview (:meth:`Runtime.preview_of`), so those are counted; nothing is added when they do not
    add up to ``sent``."""
    kinds: dict[str, int] = {}
    for a in getattr(result, "alerts", None) or ():
        if a.get("channel") == "slack":
            kinds[a.get("kind", "?")] = kinds.get(a.get("kind", "?"), 0) + 1
    if not sent or sum(kinds.values()) != sent:
        return ""
    return " (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"


def _counts_cell(d: dict[str, Any]) -> str:
    """The decisions table's crash/hc cell. A restart-policy loop counts container restarts inside running
    tasks (``crashes_in_window`` in ``--json``), no task crashed: "5/0" read as five crashed tasks."""
    if d.get("trigger") == "restart_loop":
        return f"{d['crashes_in_window']} restarts"
    return f"{d['crashes_in_window']}/{d['health_check_kills_in_window']}"


def print_report(name: str, scenario: Any, result: Any, console: Console | None = None) -> None:
    """Print the report of one replay to ``console`` (default: stdout)."""
    console = console or make_console()
    s = result.summary
    st = scenario.settings
    console.rule(f"ecs-guardrail replay: {name}")
    console.print(
        f"alert-only clusters: {', '.join(st.ALERT_ONLY_CLUSTERS) or 'unset = every cluster'}; "
        f"loop = {st.CRASH_THRESHOLD} crashes in {st.CRASH_WINDOW_MINUTES} min; "
        f"blast radius = max({st.MIN_ACTIONS_ALLOWED}, floor({st.MAX_ACTION_FRACTION} x services))"
        + ("; [bold]DRY RUN[/]" if st.DRY_RUN else ""))
    if result.decisions:
        t = Table(title=f"Decisions ({result.decisions[0]['time'][:10]}, UTC)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ("#", "time", "service", "action", "reason", "crash/hc"):
            t.add_column(col, no_wrap=col != "service", min_width=len(col))
        for i, d in enumerate(result.decisions, 1):
            style = _STYLE.get(d["action"], "")
            t.add_row(str(i), d["time"][11:19], f"{d['cluster']}/{d['service']}",
                      f"[{style}]{d['action']}[/]", d["reason"], _counts_cell(d))
        console.print(t)
        restored = frozenset(s.get("restored_by_probe") or ())
        for line in _why(result.decisions, getattr(scenario, "region", None), restored,
                         getattr(st, "HISTORY_TABLE", None) or "ecs-guardrail-history"):
            console.print(line, highlight=False)
    else:
        console.print("No decisions: nothing crossed a threshold.")
    stops = s.get("stops_by_kind") or {}
    if stops:
        repeats = s.get("stop_repeats") or 0
        console.print("stopped tasks by kind (only crashes count toward a loop): "
                      + ", ".join(f"{k} {v}" for k, v in stops.items())
                      + (f"; {repeats} more event{'s' if repeats != 1 else ''} repeated a task already counted "
                         "(each task counts once)" if repeats else ""), highlight=False)
    if "stopped_tasks_to_watchdog" in s:
        console.print(f"stopped tasks that reached the watchdog: {s['stopped_tasks_to_watchdog']} (only a task's "
                      "lastStatus STOPPED event does; STOPPING and DEPROVISIONING lines are recorded, not counted)",
                      highlight=False)
    jobs: dict[str, list[int]] = {}
    for j in result.job_failures:  # failed runs and alerts per family (one alert per window, then a summary)
        counts = jobs.setdefault(f"{j['cluster']}/{j['family']}", [0, 0])
        counts[0] += 1
        counts[1] += bool(j.get("alerted", True))
    for family, (runs, alerted) in jobs.items():
        console.print(f"job failed {runs} time{'s' if runs != 1 else ''} (never acted on; {alerted} failure alert"
                      f"{'s' if alerted != 1 else ''}, one per window, and a summary for each window of more than "
                      f"one failure): {family}")
    minutes = s["unavailable_service_minutes"]
    console.print(
        f"\nevents read {s['events_read']}, rejected {s['events_rejected']}, duplicates ignored "
        f"{s['duplicates_ignored']}; decisions {s['decisions']}; alerts sent {s['alerts_sent']}"
        + _alert_kinds(result, s["alerts_sent"]), highlight=False)
    back = set(s.get("restored_by_probe") or ())
    console.print("scaled to zero: " + (", ".join(f"{x} (restored by a probe)" if x in back else x
                                                  for x in s["scaled_to_zero"]) or "none"), highlight=False)
    console.print("unavailable service-minutes: "
                  + ("n/a (no healthy_hosts.csv)" if minutes is None else
                     f"{minutes}, of which {s.get('watchdog_service_minutes')} at zero by the watchdog"),
                  highlight=False)
    avail = getattr(result, "availability", None)
    if avail is not None:
        c = avail.by_cause
        console.print(f"availability {avail.availability_pct}% over {avail.denominator} service-minutes "
                      f"({avail.start:%H:%M}-{avail.end:%H:%M} UTC), coverage {avail.coverage_pct}%"
                      f"{_coverage_gap(avail)}; minutes lost: "
                      f"{c['down']} with no healthy host, {c['no_data']} with no datapoint, "
                      f"{c['zero_by_watchdog']} scaled to 0 by the watchdog; tasks running but no healthy target: "
                      f"{avail.divergent_service_minutes} service-minutes", highlight=False)
    for line in _more_lines(s):
        console.print(line, highlight=False)


def _coverage_gap(avail: Any) -> str:
    """watchdog-made-zero read "coverage 90.5%; minutes lost: ... 0 with no datapoint": 19 service-minutes
    without a datapoint, yet none "with no datapoint". They are minutes of a service the watchdog held at 0
    (its load balancer reports nothing for an empty target group), counted as the watchdog's: say so."""
    at_zero = sum(1 for m in avail.minutes or () if m.state.value == "zero_by_watchdog" and not m.has_data)
    if at_zero <= 0:
        return ""
    return f" ({at_zero} service-minute{'s' if at_zero != 1 else ''} at 0 by the watchdog had no datapoint)"


def _more_lines(s: dict[str, Any]) -> list[str]:
    """What the summary adds beyond the checker's minutes, said in words as ``--json`` says it in fields:
    the clients' view (``served_service_minutes``, ``idle_service_minutes``, ``checker_disagreement_minutes``:
    a gray failure is clients failing behind healthy hosts; ``healthy_hosts_only``), and with
    ``RECOVERY=probe`` the ``probes`` and ``image_pulls``."""
    out = []
    if "served_service_minutes" in s:
        d = s.get("checker_disagreement_minutes") or {}
        out.append(f"clients' view: served {s['served_service_minutes']} service-minutes, idle "
                   f"{s.get('idle_service_minutes')}; checker down while clients were served "
                   f"{d.get('checker_down_clients_served', 0)} (the health check, not the service); clients "
                   f"failing behind healthy hosts {d.get('checker_up_clients_failing', 0)} (a gray failure the "
                   "checker cannot see)")
        if s.get("healthy_hosts_only"):
            out.append(f"healthy hosts only (Network Load Balancer: no request metrics): "
                       f"{', '.join(s['healthy_hosts_only'])}")
    p = s.get("probes")
    if p is not None:
        q = s.get("image_pulls") or {}
        out.append(f"probes: {p.get('started', 0)} started, {p.get('passed', 0)} passed, {p.get('failed', 0)} "
                   f"failed; restored by a probe: {', '.join(s.get('restored_by_probe') or ()) or 'none'}")
        if not s.get("scaled_to_zero") and not any(q.values()):
            # quiet-window-recovery-sent read "0 if the loop were left alone" beside an alert-only loop of 7
            # crashes: the figures count only the loops the watchdog stopped
            out.append("image pulls: no service was scaled to 0, nothing to compare (the figures count the "
                       "crash loops the watchdog stops)")
        else:
            out.append(f"image pulls: {q.get('unstopped', 0)} if the loop were left alone, {q.get('manual', 0)} "
                       f"with RECOVERY=manual, {q.get('probe', 0)} with the probes")
    return out
