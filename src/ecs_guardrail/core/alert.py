"""What an alert says: composed here (pure), delivered by the Slack and SNS adapters.

Every alert states what the watchdog did, why, the counts, the last stop reasons and exit codes, and
the service. Slack gets Block Kit (api.slack.com/reference/block-kit/blocks); SNS gets the same text
as the message body and the decision as JSON in a ``MessageAttributes``-free, subject-bearing message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ecs_guardrail.core.records import Action, Decision, Failure

__all__ = ["Alert", "decision_alert", "mass_alert", "job_failure_alert"]

_ICON = {Action.SCALE_TO_ZERO: ":octagonal_sign:", Action.ALERT_ONLY: ":warning:", Action.HOLD: ":pause_button:"}
_VERB = {Action.SCALE_TO_ZERO: "SCALED TO 0", Action.ALERT_ONLY: "ALERT ONLY", Action.HOLD: "HELD"}


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert: ``subject`` (at most 100 characters, SNS's limit), ``text`` (plain, for SNS and the
    Slack fallback), ``blocks`` (Slack Block Kit) and ``data`` (the decision as JSON fields)."""

    subject: str
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def _stops(failures: tuple[Failure, ...]) -> list[str]:
    lines = []
    for f in failures[-5:]:
        codes = ", ".join(f"{n}={'unknown' if c is None else c}" for n, c in f.exit_codes) or "no exit code"
        reason = (f.reason or "").strip()[:160] or "(no reason)"
        lines.append(f"{f.time:%H:%M:%S}Z {f.kind.value} {f.stop_code or '-'}: {reason} [{codes}]"
                     + (f" in {f.availability_zone}" if f.availability_zone else ""))
    return lines


def _blocks(header: str, summary: str, fields: dict[str, str], stops: list[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": header[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": summary[:3000]}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"[:2000]}
                                       for k, v in list(fields.items())[:10]]},
    ]
    if stops:
        blocks.append({"type": "section",
                       "text": {"type": "mrkdwn", "text": ("*Last stops*\n```" + "\n".join(stops) + "```")[:3000]}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "ecs-guardrail"}]})
    return blocks


def decision_alert(decision: Decision, *, previous_desired_count: int | None = None,
                   extra: dict[str, str] | None = None, undo: str | None = None) -> Alert:
    """The per-service alert for a decision; ``undo`` is the exact restore command for a scale-down."""
    where = f"{decision.cluster}/{decision.service}"
    header = f"{_ICON[decision.action]} {_VERB[decision.action]}: {where}"
    fields = {
        "Action": decision.action.value,
        "Reason (rule)": decision.reason.value,
        "Crashes in window": str(decision.crashes_in_window),
        "Health-check kills in window": str(decision.health_check_kills_in_window),
        "Failing services in cluster": f"{decision.failing_services} of {decision.services_in_cluster} "
                                       f"(bound {decision.bound})",
        "Event time": f"{decision.time:%Y-%m-%d %H:%M:%S}Z",
    }
    if previous_desired_count is not None:
        fields["Previous desired count"] = str(previous_desired_count)
    if decision.evidence:
        fields["Evidence"] = "; ".join(f"{k}={v}" for k, v in decision.evidence.items())[:1900]
    if decision.action is Action.SCALE_TO_ZERO:
        undo = undo or f"ecs-guardrail restore --cluster {decision.cluster} --service {decision.service}"
        fields["Undo"] = f"`{undo}`"
    fields.update(extra or {})
    stops = _stops(decision.last_failures)
    text = "\n".join([f"{_VERB[decision.action]}: {where}", decision.message,
                      *[f"{k}: {v}" for k, v in fields.items()], "Last stops:", *stops])
    return Alert(
        subject=f"ecs-guardrail {_VERB[decision.action].lower()}: {where}"[:100],
        text=text,
        blocks=_blocks(header, decision.message, fields, stops),
        data={"cluster": decision.cluster, "service": decision.service, "action": decision.action.value,
              "reason": decision.reason.value, "time": f"{decision.time:%Y-%m-%dT%H:%M:%SZ}"},
    )


def mass_alert(decision: Decision, failing: list[str]) -> Alert:
    """The one cluster alert of a mass event: the watchdog holds and says why."""
    header = f"{_ICON[Action.HOLD]} HELD: {decision.failing_services} of {decision.services_in_cluster} " \
             f"services in {decision.cluster} failing at once"
    summary = (f"Acting on nobody. {decision.failing_services} services failing together (bound "
               f"{decision.bound}) point at a shared dependency or the health check, not the services. "
               f"Check what they all depend on, and the target groups' health-check paths.")
    fields = {
        "Cluster": decision.cluster,
        "Action": "hold",
        "Reason": decision.reason.value,
        "Failing services": ", ".join(sorted(failing))[:1500] or "-",
        "First trigger": f"{decision.service} at {decision.time:%H:%M:%S}Z",
    }
    stops = _stops(decision.last_failures)
    text = "\n".join([header, summary, *[f"{k}: {v}" for k, v in fields.items()], "Last stops:", *stops])
    return Alert(
        subject=f"ecs-guardrail held: mass failure in {decision.cluster}"[:100],
        text=text,
        blocks=_blocks(header, summary, fields, stops),
        data={"cluster": decision.cluster, "service": None, "action": "hold", "reason": decision.reason.value,
              "time": f"{decision.time:%Y-%m-%dT%H:%M:%SZ}", "failing_services": sorted(failing)},
    )


def job_failure_alert(cluster: str, family: str, failure: Failure) -> Alert:
    """A standalone task (``family:NAME``) whose essential container exited non-zero or unknown."""
    header = f":x: JOB FAILED: {cluster}/{family}"
    summary = "A standalone task failed. The watchdog never acts on standalone tasks."
    fields = {"Cluster": cluster, "Family": family, "Task": failure.task_arn.rsplit("/", 1)[-1]}
    stops = _stops((failure,))
    text = "\n".join([header, summary, *[f"{k}: {v}" for k, v in fields.items()], *stops])
    return Alert(subject=f"ecs-guardrail job failed: {cluster}/{family}"[:100], text=text,
                 blocks=_blocks(header, summary, fields, stops),
                 data={"cluster": cluster, "family": family, "action": "alert_only", "reason": "job_failed",
                       "time": f"{failure.time:%Y-%m-%dT%H:%M:%SZ}"})
