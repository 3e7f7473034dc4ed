"""``ecs-guardrail audit``: gather the facts (an account, or a scenario built in moto), run the rules,
render text, markdown or JSON Lines.

The rules are :mod:`ecs_guardrail.core.audit`; the reads :mod:`ecs_guardrail.adapters.audit_facts`.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ecs_guardrail.adapters.audit_facts import AuditFacts
from ecs_guardrail.core.audit import (
    CHECKS,
    AuditConfig,
    ClusterAuditFacts,
    Finding,
    audit_fleet,
    stoppers,
    summary,
)
from ecs_guardrail.core.clusters import case_only_warning
from ecs_guardrail.core.errors import ScenarioError, SettingsError

__all__ = ["AuditRun", "audit_account", "audit_scenario", "account_settings", "render"]


class AuditRun:
    """What one audit produced: the facts per cluster, the findings, and the closing summary line."""

    def __init__(self, clusters: Sequence[ClusterAuditFacts], config: AuditConfig, fail_on: str) -> None:
        self.clusters = list(clusters)
        self.config = config
        self.fail_on = fail_on
        self.findings: list[Finding] = audit_fleet(self.clusters, config)
        self.summary: dict[str, Any] = summary(self.findings, self.clusters, fail_on)
        #: one line per cluster an ALERT_ONLY_CLUSTERS entry matches only without case (the IAM deny,
        #: written as typed, would not cover it): printed under the policy line
        self.warnings: list[str] = [case_only_warning(e, name) for e, name in config.policy.alert_only.case_only(
            (c.name, c.arn) for c in self.clusters)]

    @property
    def exit_status(self) -> int:
        return int(self.summary["exit_status"])


def account_settings(overrides: dict[str, str]) -> AuditConfig:
    """The audit's settings from the environment, then ``--set`` overrides.

    Raises:
        ScenarioError: an unknown ``--set`` key or an invalid value (bad input: exit 2).
    """
    from ecs_guardrail.settings import SETTING_NAMES, load_settings, unknown_setting

    for key in overrides:
        if key not in SETTING_NAMES:
            raise ScenarioError(f"--set: {unknown_setting(key)}")
    env = {k: v for k, v in os.environ.items() if k in SETTING_NAMES}
    try:
        return load_settings({**env, **overrides}).audit()
    except SettingsError as exc:
        raise ScenarioError(str(exc)) from None


def audit_account(clusters: Sequence[str], config: AuditConfig, fail_on: str,
                  client_factory: Callable[[str], Any]) -> AuditRun:
    """Audit ``clusters`` (names or ARNs) of the account that ``client_factory(service)`` reaches.

    Raises:
        ClusterNotFoundError: a cluster does not exist there.
        botocore.exceptions.ClientError / BotoCoreError: AWS refused or cannot be reached.
    """
    reader = AuditFacts(client_factory("ecs"), client_factory("elbv2"), client_factory("application-autoscaling"))
    return AuditRun([reader.cluster(c) for c in dict.fromkeys(clusters)], config, fail_on)


def audit_scenario(folder: Path, overrides: dict[str, str], fail_on: str,
                   on_warning: Callable[[str], None] | None = None) -> AuditRun:
    """Build the scenario's fleet in moto (:func:`ecs_guardrail.replay.fleet.build_fleet`, through
    :class:`~ecs_guardrail.replay.embedded.EmbeddedAws`) and audit every cluster of it through the same reads.

    Settings: the scenario's ``settings.env``, then ``overrides`` (as ``replay`` reads them).

    Raises:
        ScenarioError: the folder cannot be read (missing or malformed ``fleet.json``, a bad setting).
    """
    from ecs_guardrail.replay.embedded import EmbeddedAws
    from ecs_guardrail.replay.fleet import fleet_warnings
    from ecs_guardrail.replay.scenario import load_scenario

    scenario = load_scenario(folder, overrides)
    for text in fleet_warnings(scenario.fleet):
        if on_warning:
            on_warning(text)
    with EmbeddedAws(scenario) as aws:
        reader = AuditFacts(aws.client("ecs"), aws.client("elbv2"), aws.client("application-autoscaling"))
        clusters = [reader.cluster(c["name"]) for c in scenario.fleet["clusters"]]
    return AuditRun(clusters, scenario.settings.audit(), fail_on)


def render(run: AuditRun, fmt: str, out: TextIO) -> None:
    """Write ``run`` as ``text`` (rich tables), ``markdown`` or ``json`` (JSON Lines: one finding a line,
    then the summary) to ``out``."""
    if fmt == "json":
        for f in run.findings:
            out.write(json.dumps(f.to_dict()) + "\n")
        out.write(json.dumps(run.summary | ({"warnings": run.warnings} if run.warnings else {})) + "\n")
    elif fmt == "markdown":
        out.write(_markdown(run))
    else:
        _text(run, out)


_HEADERS = ("service", "tasks", "LB check: threshold x interval", "container: retries x interval", "grace",
            "watchdog", "autoscaling")


def _policy_line(config: AuditConfig) -> str:
    p = config.policy
    scope = ",".join(p.alert_only_clusters) or "unset: every cluster is alert-only"
    return (f"ALERT_ONLY_CLUSTERS={scope}; the watchdog acts on {p.crash_threshold} crashes in {p.window_minutes} min, "
            f"on at most max({p.min_actions_allowed}, floor({p.max_action_fraction} x services)) services at once; "
            "health-check kills are only ever alerted")


def _text(run: AuditRun, out: TextIO) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    tty = out.isatty()
    buffer = io.StringIO()
    width = int(os.environ.get("COLUMNS") or 0) or (None if tty else 150)
    console = Console(file=out if tty else buffer, width=width, highlight=False, soft_wrap=False)
    console.print("who can stop each service's tasks, and how fast", markup=False)
    console.print(_policy_line(run.config), markup=False, soft_wrap=True)
    for text in run.warnings:
        console.print(f"warning: {text}", markup=False, soft_wrap=True)
    for cluster in run.clusters:
        table = Table(title=f"cluster {cluster.name}", box=box.SIMPLE_HEAD, title_justify="left")
        for n, h in enumerate(_HEADERS):
            table.add_column(h, overflow="fold", no_wrap=n != 5)  # only the watchdog's text wraps
        for row in stoppers(cluster, run.config):
            table.add_row(row.service, row.tasks, row.load_balancer, row.container, row.grace, row.watchdog,
                          row.autoscaling)
        console.print(table)
    if run.findings:
        console.print("findings (the same finding on several services is one line):", markup=False)
    for severity, check, name, services, text in _grouped(run.findings):
        where = f"{name}/{','.join(services)}" if services else name
        console.print(f"  {severity.upper():6} {check}  {where}: {text}", markup=False, soft_wrap=True)
    s = run.summary
    sev = s["by_severity"]
    n = len(s["clusters"])
    console.print(f"{_count(s['findings'], 'finding')} ({sev['high']} high, {sev['medium']} medium, {sev['low']} "
                  f"low) in {_count(n, 'cluster')}, {_count(s['services'], 'service')}; --fail-on {s['fail_on']}: exit "
                  f"{s['exit_status']}", markup=False)
    if not tty:  # no padding to the console's width in a file or a pipe
        out.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def _count(n: int, word: str) -> str:
    """``1 finding``, ``0 findings``, ``2 services``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _by_severity(findings: Sequence[Finding]) -> list[Finding]:
    """Highest severity first, then by check in the contract's order, then as found (stable)."""
    order = {c: n for n, c in enumerate(CHECKS)}
    return sorted(findings, key=lambda f: (-f.severity.rank, order[f.check]))


def _grouped(findings: Sequence[Finding]) -> list[tuple[str, str, str, list[str], str]]:
    """``(severity, check, cluster, [service, ...], message without its "cluster/service: " prefix)``,
    findings whose messages are otherwise equal merged, highest severity first."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for f in _by_severity(findings):
        prefix = f"{f.cluster}/{f.service}: " if f.service else f"{f.cluster}: "
        text = f.message[len(prefix):] if f.message.startswith(prefix) else f.message
        groups.setdefault((f.severity.value, f.check, f.cluster, text), [])
        if f.service:
            groups[(f.severity.value, f.check, f.cluster, text)].append(f.service)
    return [(sev, check, cluster, services, text) for (sev, check, cluster, text), services in groups.items()]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _markdown(run: AuditRun) -> str:
    lines = ["# ecs-guardrail audit", "", f"{_policy_line(run.config)}.", ""]
    lines += [f"**Warning**: {_cell(text)}." for text in run.warnings] + ([""] if run.warnings else [])
    for cluster in run.clusters:
        lines += [f"## Cluster `{cluster.name}`", "", "| " + " | ".join(_HEADERS) + " |",
                  "|" + " --- |" * len(_HEADERS)]
        for r in stoppers(cluster, run.config):
            lines.append("| " + " | ".join(_cell(c) for c in (r.service, r.tasks, r.load_balancer, r.container,
                                                                 r.grace, r.watchdog, r.autoscaling)) + " |")
        lines.append("")
    lines += ["## Findings", ""]
    if not run.findings:
        lines.append("None.")
    for f in _by_severity(run.findings):
        where = f"{f.cluster}/{f.service}" if f.service else f.cluster
        lines.append(f"- **{f.severity.value}** `{f.check}` ({_cell(where)}): {f.message}")
    s = run.summary
    lines += ["", f"{_count(s['findings'], 'finding')}; --fail-on {s['fail_on']}: exit {s['exit_status']}.", ""]
    return "\n".join(lines)
