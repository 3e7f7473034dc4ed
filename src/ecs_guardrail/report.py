"""The readable ``replay`` report (rich): decisions first, then the summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_report"]

_STYLE = {"scale_to_zero": "bold red", "alert_only": "yellow", "hold": "cyan"}


def print_report(name: str, scenario: Any, result: Any, console: Console | None = None) -> None:
    console = console or Console()
    s = result.summary
    console.rule(f"ecs-guardrail replay: {name}")
    settings = scenario.settings
    console.print(f"alert-only clusters: {', '.join(settings.ALERT_ONLY_CLUSTERS) or 'unset: every cluster'}  "
                  f"threshold {settings.CRASH_THRESHOLD} crashes / {settings.CRASH_WINDOW_MINUTES} min  "
                  f"blast radius max({settings.MIN_ACTIONS_ALLOWED}, floor({settings.MAX_ACTION_FRACTION} x services))"
                  + ("  [bold]DRY RUN[/]" if settings.DRY_RUN else ""))
    if result.decisions:
        t = Table(title="Decisions", show_lines=False)
        for col in ("time", "service", "action", "reason", "crashes", "hc kills", "why"):
            t.add_column(col, overflow="fold")
        for d in result.decisions:
            t.add_row(d["time"], f"{d['cluster']}/{d['service']}", f"[{_STYLE.get(d['action'], '')}]{d['action']}[/]",
                      d["reason"], str(d["crashes_in_window"]), str(d["health_check_kills_in_window"]), d["message"])
        console.print(t)
    else:
        console.print("No decisions: nothing crossed a threshold.")
    for j in result.job_failures:
        console.print(f"job failed: {j['cluster']}/{j['family']}")
    console.print(
        f"events read {s['events_read']}, rejected {s['events_rejected']}, duplicates ignored "
        f"{s['duplicates_ignored']}; decisions {s['decisions']}; alerts sent {s['alerts_sent']}; "
        f"scaled to zero: {', '.join(s['scaled_to_zero']) or 'none'}; unavailable service-minutes: "
        f"{'n/a (no healthy_hosts.csv)' if s['unavailable_service_minutes'] is None else s['unavailable_service_minutes']}")
    changed = {k: v for k, v in s["desired_counts"].items() if v == 0}
    console.print(f"desired counts now 0: {', '.join(sorted(changed)) or 'none'}")
