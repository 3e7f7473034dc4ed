"""The decision alert's two on-call fields (ARCHITECTURE.md, "What on-call reads"): the crashed
container's last log lines and the change that started the loop. :func:`decision_fields` is the one
hook the episode's alert calls; the wording is :mod:`ecs_guardrail.core.crash_words`'s.

AWS calls a decision alert makes for these (before this module: DescribeTaskDefinition once per task
definition ARN, cached for the execution environment, for the log links):

- the crash's words: one ``logs:FilterLogEvents`` on the newest crashed task's stream (a second one on
  the task before it when the first has no lines), within :mod:`ecs_guardrail.adapters.logs`'s budget;
  none when no task definition names an ``awslogs`` group with a stream prefix, or the cluster is in
  another account or region (said in one line);
- the change: the crashing revision and its image come from the failures' ``taskDefinitionArn`` and
  the cached DescribeTaskDefinition (no new call); only when a deployment event the watchdog keeps
  started within the crash window before the loop's first failure, one ``DescribeServices`` (its
  ``deployments[]``: ``taskDefinition``, ``createdAt``) and at most one DescribeTaskDefinition (the
  revision before, cached) name what ran before.

Nothing here raises: a failure to read is a line in the alert, and the alert goes out.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ecs_guardrail.adapters.ecs import describe_services
from ecs_guardrail.adapters.logs import CrashLogs, Wanted
from ecs_guardrail.core.alert import Where, pick_log_streams
from ecs_guardrail.core.crash_words import Revision, change_line
from ecs_guardrail.core.records import Decision, Failure

if TYPE_CHECKING:
    from ecs_guardrail.handlers.outbox import Outbox

__all__ = ["decision_fields", "crash_logs"]

_DEPLOYMENT_STARTED = frozenset({"SERVICE_DEPLOYMENT_IN_PROGRESS"})


def crash_logs(episodes: Outbox) -> CrashLogs:
    """The execution environment's :class:`CrashLogs` (the runtime's ``logs`` client, home account)."""
    rt = episodes.rt
    cached = rt.cache.get("crash_logs")
    if cached is None:
        cached = rt.cache["crash_logs"] = CrashLogs(rt.clients("logs"), rt.home)
    return cached


def decision_fields(episodes: Outbox, ck: str, decision: Decision, where: Where,
                    failures: tuple[Failure, ...]) -> dict[str, str]:
    """``{"Change": ..., "Last log lines (...)": ...}`` for the decision's alert (either may be missing:
    nothing to say). ``failures``: the decision's last failures with their task definition ARNs."""
    out: dict[str, str] = {}
    try:
        change = _change(episodes, ck, decision, failures)
    except Exception as exc:  # noqa: BLE001 - the alert goes out whatever the reads do
        change = f"not known ({type(exc).__name__})"
    if change:
        out["Change"] = change
    try:
        wanted = _wanted(episodes, where, failures)  # no awslogs stream named: no client, no call, no field
        words = crash_logs(episodes).last_words(wanted, where.account).field() if wanted else None
    except Exception as exc:  # noqa: BLE001
        words = ("Last log lines", f"not read ({type(exc).__name__})")
    if words:
        out[words[0]] = words[1]
    return out


def _wanted(episodes: Outbox, where: Where, failures: tuple[Failure, ...]) -> list[Wanted]:
    """The streams of the crashed tasks, newest first (the alert's log links pick the same ones)."""
    streams = pick_log_streams(failures, episodes.taskdefs().log_destinations, where.region)
    stopped = {f.task_arn.rsplit("/", 1)[-1]: f.time for f in failures}
    return [Wanted(s.group, s.stream, s.region, s.container, s.task_id, stopped[s.task_id])
            for s in reversed(streams) if s.task_id in stopped]


def _change(episodes: Outbox, ck: str, decision: Decision, failures: tuple[Failure, ...]) -> str | None:
    newest = next((f for f in reversed(failures) if f.task_definition_arn), None)
    if newest is None or newest.task_definition_arn is None:
        return None
    taskdefs = episodes.taskdefs()
    arn = newest.task_definition_arn
    crashing = Revision(arn, taskdefs.image(arn))
    window = episodes.config.window
    summary = episodes.state.load(ck, decision.service)
    loop = [f for f in summary.crashes + summary.kills if decision.time - window <= f.time <= decision.time]
    first = min((f.time for f in loop + list(failures)), default=decision.time)
    started = [n.time for n in summary.deployments
               if n.event_name in _DEPLOYMENT_STARTED and first - window <= n.time <= first]
    deployment_at = max(started, default=None)
    if deployment_at is None:
        return change_line(crashing, None, None, first, window)
    before, why = _before(episodes, decision, arn, deployment_at)
    if before is not None:
        before = Revision(before.arn, taskdefs.image(before.arn), before.since)
    crashed = before is not None and any(f.task_definition_arn == before.arn for f in summary.crashes + summary.kills)
    return change_line(crashing, before, deployment_at, first, window, unknown_before=why, before_crashed=crashed)


def _before(episodes: Outbox, decision: Decision, crashing: str,
            deployment_at: datetime) -> tuple[Revision | None, str | None]:
    """The revision that ran before the deployment: DescribeServices ``deployments[]`` with another
    ``taskDefinition`` (the one being replaced, or a rollback's target), the newest created first."""
    try:
        services = describe_services(episodes.rt.clients("ecs"), decision.cluster, [decision.service])
    except Exception as exc:  # noqa: BLE001 - one line instead
        code = getattr(exc, "response", {}).get("Error", {}).get("Code") or type(exc).__name__
        return None, f"the revision before is not known (DescribeServices: {code})"
    deployments: list[dict[str, Any]] = (services[0].get("deployments") or []) if services else []
    other = [d for d in deployments if d.get("taskDefinition") and d["taskDefinition"] != crashing]
    if not other:
        return None, "the revision before is not in DescribeServices' deployments any more"
    newest = max(other, key=lambda d: str(d.get("createdAt") or ""))
    return Revision(str(newest["taskDefinition"])), None
