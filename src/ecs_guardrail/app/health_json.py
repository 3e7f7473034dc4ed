"""``ecs-guardrail audit --health-json FILE``: read a saved health response and say what in it can turn
the load balancer's check DOWN (:mod:`ecs_guardrail.core.health_json`). Reads the file only: no
service is called, no AWS is asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.health_json import MAX_BYTES, HealthJsonError, HealthReport, analyse, read_health_json

__all__ = ["audit_health_json", "render"]


def audit_health_json(path: Path) -> HealthReport:
    """The report of the health response saved at ``path``.

    Raises:
        ScenarioError: the file cannot be read, or is none of the formats (one line naming the file; exit 2).
    """
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"--health-json {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return analyse(read_health_json(data))
    except HealthJsonError as exc:
        raise ScenarioError(f"--health-json {path}: {exc}") from None


def _shared(report: HealthReport) -> dict[str, str]:
    return {c.path: ("yes: fails every task at once" if c.shared else
                     "no: one task at a time" if c.shared is False else "unknown: is it shared?")
            for c in report.components}


def render(report: HealthReport, fmt: str, out: TextIO, fail_on: str, source: str) -> None:
    """Write ``report`` as ``text``, ``markdown`` or ``json`` (one line per finding, then the summary)."""
    summary = report.summary(fail_on)
    if fmt == "json":
        for f in report.findings:
            out.write(json.dumps(f.to_dict()) + "\n")
        out.write(json.dumps(summary) + "\n")
        return
    live, ready = report.endpoints
    shared = _shared(report)
    sev = summary["by_severity"]
    n, k = len(report.findings), len(report.components)
    closing = (f"{n} finding{'' if n == 1 else 's'} ({sev['high']} high, {sev['medium']} medium, {sev['low']} low) "
               f"in {k} component{'' if k == 1 else 's'}; --fail-on {fail_on}: exit {summary['exit_status']}")
    head = f"health response ({report.format_name}), status {report.status}: {source}"
    intro = ("what can turn the load balancer's check DOWN: an aggregate endpoint answers 503 while any of "
             "these is down")
    instead = f"instead: liveness {live}, readiness {ready}: {report.how}"
    if report.groups:
        instead += f" (this response lists the groups {', '.join(report.groups)})"
    if fmt == "markdown":
        lines = [f"## {head}", "", intro + ":", "", "| component | kind | status | shared |", "|---|---|---|---|"]
        lines += [f"| {c.path} | {c.kind} | {c.status} | {shared[c.path]} |" for c in report.components]
        lines += ["", "| severity | check | component | finding |", "|---|---|---|---|"]
        lines += [f"| {f.severity.value} | {f.check} | {f.component} | {f.message} |" for f in report.findings]
        lines += ["", instead, "", closing + ".", ""]
        out.write("\n".join(lines))
        return
    width = max([len("component")] + [len(c.path) for c in report.components]) + 2
    kind_w = max([len("kind")] + [len(c.kind) for c in report.components]) + 2
    status_w = max([len("status")] + [len(c.status) for c in report.components]) + 2
    lines = [head, intro + ":", f"  {'component':{width}}{'kind':{kind_w}}{'status':{status_w}}shared"]
    lines += [f"  {c.path:{width}}{c.kind:{kind_w}}{c.status:{status_w}}{shared[c.path]}" for c in report.components]
    if not report.components:
        lines.append("  (none: the response lists no component; its own status is the check)")
    if report.findings:
        lines.append("findings:")
        lines += [f"  {f.severity.value.upper():6} {f.check}  {f.message}" for f in report.findings]
    lines += [instead, closing]
    out.write("\n".join(lines) + "\n")
