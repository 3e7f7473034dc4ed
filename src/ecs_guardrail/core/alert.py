"""What an alert says: composed here (pure), delivered by the Slack and SNS adapters.

Every alert states what the watchdog did, why, the counts, the last stop reasons and exit codes, and
*where*: account, region, cluster and service, with links (the service's console page, its stopped
tasks, the log streams of the last stops, a runbook). Kinds (:attr:`Alert.kind`): ``scale_down``,
``alert_only``, ``hold``, ``mass_hold``, ``recovery``, ``job_failure``, ``job_summary``.

Renderings, one per channel, all from the same :class:`Alert`:

- Slack Block Kit (:attr:`Alert.blocks`; api.slack.com/reference/block-kit/blocks), kept within
  Block Kit's limits (:data:`SLACK_LIMITS`): links become ``button`` elements with a ``url`` in one
  ``actions`` block;
- AWS Chatbot (Amazon Q Developer in chat applications) custom notifications, :func:`chatbot_message`,
  the SNS body when ``SNS_FORMAT=chatbot`` (:data:`CHATBOT_LIMITS`);
- plain text (:attr:`Alert.text`), the SNS body when ``SNS_FORMAT=text`` and Slack's fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import replace

from ecs_guardrail.core import links as L
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.lazy import lazy_callable
from ecs_guardrail.core.links import arn_parts, partition_of, resource_name
from ecs_guardrail.core.records import Action, Decision, Failure, Reason, TriggerKind, iso

if TYPE_CHECKING:
    from ecs_guardrail.core.crash_words import mask
    from ecs_guardrail.core.summary import Episode, ServiceSummary
else:  # the secret masks: loaded on the first alert with a stop reason or evidence to mask (issue 33 item 7)
    mask = lazy_callable("ecs_guardrail.core.crash_words", "mask", globals())

__all__ = [
    "Alert", "Where", "LogStream", "SLACK_LIMITS", "CHATBOT_LIMITS", "SNS_SUBJECT_MAX", "SNS_MESSAGE_MAX_BYTES",
    "alert_links", "decision_alert", "mass_alert", "job_failure_alert", "job_summary_alert", "recovery_alert",
    "still_failing_alert",
    "chatbot_message", "slack_payload", "pick_log_streams", "decision_id", "mrkdwn_escape",
    "where_of", "undo_command", "mass_shown", "mass_row", "with_task_definitions", "mass_held",
]

_ICON = {Action.SCALE_TO_ZERO: ":octagonal_sign:", Action.ALERT_ONLY: ":warning:", Action.HOLD: ":pause_button:"}
_VERB = {Action.SCALE_TO_ZERO: "SCALED TO 0", Action.ALERT_ONLY: "ALERT ONLY", Action.HOLD: "HELD"}
_KIND = {Action.SCALE_TO_ZERO: "scale_down", Action.ALERT_ONLY: "alert_only", Action.HOLD: "hold"}

#: Slack Block Kit limits (api.slack.com/reference/block-kit/blocks and .../block-elements#button):
#: 50 blocks per message; section text 3,000 characters; at most 10 section fields of 2,000 each;
#: header plain_text 150; actions block at most 25 elements; button text 75, url 3,000; context at
#: most 10 elements (each a text object of at most 3,000 characters).
SLACK_LIMITS = {"blocks": 50, "section_text": 3000, "fields": 10, "field_text": 2000, "header_text": 150,
                "actions_elements": 25, "button_text": 75, "button_url": 3000, "context_elements": 10,
                "context_text": 3000, "action_id": 255}

#: AWS Chatbot custom notification limits used here (docs: "Custom notifications using Amazon Q
#: Developer in chat applications", the ``content`` fields). Conservative: title 250 characters,
#: description 8,000, at most 10 nextSteps and 10 keywords, a keyword at most 75 characters (shorter
#: keeps them readable as Slack labels), a next step at most 500.
CHATBOT_LIMITS = {"title": 250, "description": 8000, "next_steps": 10, "next_step": 500, "keywords": 10,
                  "keyword": 75, "summary": 250}

#: SNS Publish: ``Subject`` at most 100 characters (ASCII, no line breaks); ``Message`` at most
#: 256 KB (262,144 bytes, UTF-8) (SNS API Reference, "Publish").
SNS_SUBJECT_MAX = 100
SNS_MESSAGE_MAX_BYTES = 262_144

_STOPPED_HINT = "stopped tasks: filter desired status Stopped"


class Where(Struct, frozen=True):
    """Where an alert happened: ``account`` (12 digits) and ``region`` (``None`` when unknown),
    ``partition`` (``aws``, ``aws-us-gov``, ``aws-cn``), ``cluster``, and ``service`` (``None`` for a
    cluster alert or a job) or ``family`` (a standalone job's task definition family)."""

    cluster: str
    service: str | None = None
    account: str | None = None
    region: str | None = None
    partition: str = "aws"
    family: str | None = None

    def context_line(self) -> str:
        """``account 123456789012 · region eu-west-1 · cluster dev · service api`` (unknowns said so)."""
        parts = [f"account {self.account or 'unknown'}", f"region {self.region or 'unknown'}",
                 f"cluster {self.cluster}"]
        if self.service:
            parts.append(f"service {self.service}")
        if self.family:
            parts.append(f"job family {self.family}")
        return " · ".join(parts)


class LogStream(Struct, frozen=True):
    """One container's ``awslogs`` stream of one stopped task: ``group``, ``stream``
    (``prefix/container/task-id``) and ``region`` (the ``awslogs-region`` option)."""

    task_id: str
    container: str
    group: str
    stream: str
    region: str


class Alert(Struct, frozen=True):
    """One alert.

    ``subject`` (at most 100 characters, SNS's limit), ``text`` (plain, for SNS's text format and
    the Slack fallback), ``blocks`` (Slack Block Kit), ``data`` (the facts as JSON fields: cluster,
    service, action, reason, time...), ``kind`` (see the module docstring), ``time`` (event time the
    alert is about; the replay's clock), ``title`` (one short line), ``links`` and ``where``.

    ``decision_id``: the id of the decision record the alert is about (:func:`decision_id`; ``None``
    for a job alert, which is no decision); ``alert_id``: ``KIND:ID``, the same on every repeat of
    this alert and different for each alert, so a receiver can drop a repeat (alerts are at least
    once: a repeat is sent when the write that records a delivery fails).
    """

    subject: str
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    kind: str = "alert"
    time: datetime | None = None
    title: str = ""
    links: tuple[L.Link, ...] = ()
    where: Where | None = None
    keywords: tuple[str, ...] = ()
    decision_id: str | None = None
    alert_id: str = ""


def decision_id(cluster: str, service: str, time: datetime, where: Where | None = None) -> str:
    """The stable id of a decision record: what the history table keys it on (its service and its
    event time ``T``, ``SVC#<cluster>#<service>`` / ``DEC#<time>``), with the account and region in
    front when known: ``111122223333/eu-west-1/dev/api/2025-08-21T10:04:00Z``. Every alert about the
    decision carries it (Slack and SNS), so a receiver can tell a repeat from a new decision."""
    head = f"{where.account}/{where.region}/" if where is not None and where.account and where.region else ""
    return f"{head}{cluster}/{service}/{iso(time)}"


# ---------------------------------------------------------------------------- links
def alert_links(where: Where, *, logs: tuple[LogStream, ...] = (), runbook: str | None = None) -> tuple[L.Link, ...]:
    """The links of an alert about ``where``: the service page and its stopped tasks (a job: the
    cluster's tasks), one per log stream in ``logs`` and the runbook (``RUNBOOK_URL`` template with
    ``{cluster}`` and ``{service}``). No console link without a region."""
    out: list[L.Link] = []
    if where.region:
        if where.service:
            out.append(L.Link("Service", L.service_url(where.region, where.cluster, where.service, where.partition)))
            out.append(L.Link("Stopped tasks", L.stopped_tasks_url(where.region, where.cluster, where.service,
                                                                   where.partition)))
        else:
            out.append(L.Link("Cluster tasks", L.cluster_tasks_url(where.region, where.cluster, where.partition)))
    for log in logs:
        out.append(L.Link(f"Logs {log.container} {log.task_id[:8]}"[:75],
                          L.log_stream_url(log.region, log.group, log.stream, where.partition)))
    if runbook:
        out.append(L.Link("Runbook", L.runbook_url(runbook, where.cluster, where.service or where.family or "")))
    return tuple(out)


# ---------------------------------------------------------------------------- text pieces
def _stops(failures: tuple[Failure, ...]) -> list[str]:
    """One line per stop (the last five): time, kind, stop code, reason, the classified cause where
    the reason does not say it already (``OutOfMemoryError`` of an exit 137: each line, not only the
    headline), exit codes, zone."""
    lines = []
    for f in failures[-5:]:
        codes = ", ".join(f"{n}={'unknown' if c is None else c}" for n, c in f.exit_codes) or "no exit code"
        # ECS's words may quote a credential (an image pulled from https://user:pass@..., a command line's
        # password=): masked as the crash's log lines are, before the cut (a cut secret keeps no shape)
        reason = mask((f.reason or "").strip())
        # a job's verdict lists the exit codes itself (core/classify.py): the brackets say them once, and
        # the cut never falls inside a container's name
        reason = _cut(reason.replace(f"; exit codes {codes}", "", 1), 160) or "(no reason)"
        if f.cause and f.cause not in reason:
            reason += f" ({f.cause})"
        # "container app exited 1 (log-router=137 non-essential)" says every code: no [app=1, ...] after it
        said = bool(f.exit_codes) and all(c is not None and (f"{n} exited {c}" in reason or f"{n}={c}" in reason)
                                          for n, c in f.exit_codes)
        lines.append(f"{f.time:%H:%M:%S}Z {f.kind.value} {f.stop_code or '-'}: {reason}{'' if said else f' [{codes}]'}"
                     + (f" in {f.availability_zone}" if f.availability_zone else ""))
    return lines


def _evidence_value(value: object) -> str:
    """An evidence value as an operator reads it: a list or tuple as ``a, b`` (never a Python repr such
    as ``['production']``), a dict as ``k=v, ...`` (in parentheses inside a list), a whole float as an
    integer, anything else as its text."""
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(f"({_evidence_value(v)})" if isinstance(v, dict) else _evidence_value(v)
                         for v in value) or "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_evidence_value(v)}" for k, v in value.items()) or "(none)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a count read as a float (CloudWatch's Sum): 0, not 0.0
    return str(value)


def _minutes(span: timedelta) -> int:
    """Whole minutes, rounded to the nearest (never negative)."""
    return max(0, round(span.total_seconds() / 60))


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def mrkdwn_escape(text: str) -> str:
    """Text that is not ours (stop reasons, messages quoting them) made inert in Slack mrkdwn: ``&``,
    ``<`` and ``>`` escaped as Slack requires (api.slack.com, "Formatting text for app surfaces":
    escaping text), so ``<!channel>``, ``<!here>``, ``<@U123>``, ``<#C123>`` and ``<!subteam^S1>`` ping
    nobody and ``<URL|label>`` hides no link. Used for Slack's blocks and text and for every SNS body
    (AWS Chatbot posts its description to Slack as it is)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_mrkdwn = mrkdwn_escape


def _button(link: L.Link, n: int) -> dict[str, Any] | None:
    """A Block Kit ``button`` with a ``url`` (``None`` when the URL is past Slack's 3,000: a cut URL is
    a wrong URL)."""
    if len(link.url) > SLACK_LIMITS["button_url"]:
        return None
    return {"type": "button", "text": {"type": "plain_text", "text": _cut(link.label, SLACK_LIMITS["button_text"])},
            "url": link.url, "action_id": f"link-{n}"}


def _blocks(header: str, summary: str, fields: dict[str, str], stops: list[str], links: tuple[L.Link, ...] = (),
            where: Where | None = None, note: str | None = None, ident: str | None = None) -> list[dict[str, Any]]:
    """Block Kit within :data:`SLACK_LIMITS`: header, summary, fields, last stops, buttons, context."""
    lim = SLACK_LIMITS
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(header, lim["header_text"])}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _cut(_mrkdwn(summary), lim["section_text"])}},
    ]
    items = list(fields.items())
    for i in range(0, min(len(items), 20), lim["fields"]):  # at most two field sections
        blocks.append({"type": "section", "fields": [{"type": "mrkdwn",
                                                      "text": _cut(f"*{k}*\n{_mrkdwn(v)}", lim["field_text"])}
                                                     for k, v in items[i:i + lim["fields"]]]})
    if stops:
        body = _mrkdwn("\n".join(stops)).replace("```", "'''")  # a reason never closes the code block
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "*Last stops*\n```"
                                                   + _cut(body, lim["section_text"] - 20) + "```"}})
    buttons = [b for b in (_button(link, n) for n, link in enumerate(links)) if b is not None]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons[:lim["actions_elements"]]})
    context = [where.context_line() if where else None, note, _mrkdwn(ident) if ident else None, "ecs-guardrail"]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(t, lim["context_text"])}
                                                   for t in context if t][:lim["context_elements"]]})
    return blocks[:lim["blocks"]]


def _text(title: str, summary: str, fields: dict[str, str], stops: list[str], links: tuple[L.Link, ...],
          where: Where | None, ident: str | None = None) -> str:
    lines = [title, summary]
    if where is not None:
        lines.append(where.context_line())
    if ident:
        lines.append(ident)
    lines += [f"{k}:{'' if v.startswith(chr(10)) else ' '}{v}" for k, v in fields.items()]  # lines: below
    if stops:
        lines += ["Last stops:", *stops]
    if links:
        lines += ["Links:", *[f"{link.label}: {link.url}" for link in links]]
    return "\n".join(lines)


def _subject(text: str) -> str:
    """SNS's subject: ASCII, one line, at most :data:`SNS_SUBJECT_MAX` characters."""
    ascii_only = text.encode("ascii", "replace").decode().replace("\n", " ").replace("\r", " ")
    return ascii_only[:SNS_SUBJECT_MAX]


def _make(kind: str, title: str, header: str, summary: str, fields: dict[str, str], stops: list[str],
          links: tuple[L.Link, ...], where: Where | None, data: dict[str, Any], time: datetime | None,
          keywords: tuple[str, ...], note: str | None = None, *, decision: str | None = None,
          subject_id: str | None = None) -> Alert:
    """``decision``: the decision id (:func:`decision_id`); ``subject_id``: what a non-decision alert
    is about (a job family's window), for its ``alert_id``."""
    where_data = {}
    if where is not None:
        where_data = {"account": where.account, "region": where.region, "partition": where.partition}
    alert_id = f"{kind}:{decision or subject_id or title}"
    ident = f"decision id {decision}" if decision else f"alert id {alert_id}"
    first = header.split(" ", 1)[1] if header.startswith(":") and " " in header else header  # no Slack emoji
    ids = {"alert_id": alert_id, **({"decision_id": decision} if decision else {})}
    return Alert(subject=_subject(f"ecs-guardrail {title}"),
                 text=_text(first, summary, fields, stops, links, where, ident),
                 blocks=_blocks(header, summary, fields, stops, links, where, note, ident),
                 data={**data, **where_data, "kind": kind, **ids, "links": {link.label: link.url for link in links}},
                 kind=kind, time=time, title=title, links=links, where=where, keywords=keywords,
                 decision_id=decision, alert_id=alert_id)


def _where_of(decision: Decision, where: Where | None, service: bool = True) -> Where:
    if where is not None:
        return where
    return Where(cluster=decision.cluster, service=decision.service if service else None)


# ---------------------------------------------------------------------------- the alerts
def decision_alert(decision: Decision, *, previous_desired_count: int | None = None,
                   extra: dict[str, str] | None = None, undo: str | None = None, where: Where | None = None,
                   links: tuple[L.Link, ...] = ()) -> Alert:
    """The per-service alert for a decision; ``undo`` is the exact restore command for a scale-down.

    ``where`` and ``links`` (:func:`alert_links`) say where it happened and where to look.
    """
    w = _where_of(decision, where)
    at = f"{decision.cluster}/{decision.service}"
    title = f"{_VERB[decision.action].lower()}: {at}"
    header = f"{_ICON[decision.action]} {_VERB[decision.action]}: {at}"
    fields = {
        "Action": decision.action.value,
        "Reason (rule)": decision.reason.value,
        # a restart-policy loop stops no task: its failures are container restarts inside running tasks
        ("Container restarts in window" if decision.trigger == TriggerKind.RESTART_LOOP else "Crashes in window"):
            str(decision.crashes_in_window),
        "Health-check kills in window": str(decision.health_check_kills_in_window),
        "Failing services in cluster": f"{decision.failing_services} of {decision.services_in_cluster} "
                                       f"(bound {decision.bound})",
        "Event time": f"{decision.time:%Y-%m-%d %H:%M:%S}Z",
    }
    if previous_desired_count is not None:
        fields["Previous desired count"] = str(previous_desired_count)
    if decision.evidence:
        # ECS's words among the facts (a deployment's reason) masked as a stop reason is, before the cut
        fields["Evidence"] = mask("; ".join(f"{k}={_evidence_value(v)}"
                                            for k, v in decision.evidence.items()))[:1900]
    if decision.action is Action.SCALE_TO_ZERO:
        undo = undo or f"ecs-guardrail restore --cluster {decision.cluster} --service {decision.service}"
        fields["Undo"] = f"`{undo}`"
    fields.update(extra or {})
    return _make(_KIND[decision.action], title, header, decision.message, fields, _stops(decision.last_failures),
                 links, w,
                 {"cluster": decision.cluster, "service": decision.service, "action": decision.action.value,
                  "reason": decision.reason.value, "time": iso(decision.time),
                  **({"undo": undo} if decision.action is Action.SCALE_TO_ZERO else {})},
                 decision.time, (decision.action.value, decision.reason.value), _STOPPED_HINT if links else None,
                 decision=decision_id(decision.cluster, decision.service, decision.time, w))


#: per-service lines a mass-hold alert shows at most (the field "Failing services" names them all)
MASS_LINES = 20


def mass_lines(per_service: list[tuple[str, int, int, Failure | None]], window_minutes: int) -> list[str]:
    """One line per failing service of a mass event (what an on-call needs to see the pattern): its
    crash and health-check-kill counts in the window and its last stop (as :func:`_stops` writes it)."""
    lines = []
    rows = sorted(per_service, key=lambda x: x[0])
    if len(rows) > MASS_LINES:
        rows, more = rows[:MASS_LINES], len(rows) - MASS_LINES
    else:
        more = 0
    for name, crashes, kills, last in rows:
        line = (f"{name}: {crashes} {'crash' if crashes == 1 else 'crashes'}, "
                f"{kills} health-check {'kill' if kills == 1 else 'kills'} in {window_minutes} min")
        if last is not None:
            line += "; last " + _stops((last,))[0]
        lines.append(line)
    if more:
        lines.append(f"… and {more} more failing services (Failing services names them all)")
    return lines


def mass_alert(decision: Decision, failing: list[str], *, where: Where | None = None,
               links: tuple[L.Link, ...] = (), per_service: list[tuple[str, int, int, Failure | None]] | None = None,
               window_minutes: int | None = None) -> Alert:
    """The one cluster alert of a mass event: the watchdog holds and says why. ``per_service``
    (``(service, crashes, health-check kills, last failure)`` of each failing service, counted over
    ``window_minutes``): one stop line per service instead of the first trigger's last stops."""
    w = _where_of(decision, where, service=False)
    title = f"held: mass failure in {decision.cluster}"
    header = f"{_ICON[Action.HOLD]} HELD: {decision.failing_services} of {decision.services_in_cluster} " \
             f"services in {decision.cluster} failing at once"
    summary = (f"Acting on nobody. {decision.failing_services} services failing together (bound "
               f"{decision.bound}) point at a shared dependency or the health check, not the services. "
               f"Check what they all depend on, and the target groups' health-check paths.")
    names = sorted(failing)
    listing = ", ".join(names)
    if len(listing) > 1500:
        shown = _cut(listing, 1400).rsplit(", ", 1)[0]
        listing = f"{shown} … and {len(names) - shown.count(', ') - 1} more"
    fields = {
        "Cluster": decision.cluster,
        "Action": "hold",
        "Reason": decision.reason.value,
        "Failing services": listing or "-",
        "First trigger": f"{decision.service} at {decision.time:%H:%M:%S}Z",
    }
    stops = mass_lines(per_service, window_minutes or 0) if per_service else _stops(decision.last_failures)
    return _make("mass_hold", title, header, summary, fields, stops, links, w,
                 {"cluster": decision.cluster, "service": None, "action": "hold", "reason": decision.reason.value,
                  "time": iso(decision.time), "failing_services": names},
                 decision.time, ("hold", decision.reason.value),
                 decision=decision_id(decision.cluster, decision.service, decision.time, w))


def job_failure_alert(cluster: str, family: str, failure: Failure, *, where: Where | None = None,
                      links: tuple[L.Link, ...] = (), window_minutes: int | None = None,
                      window_end: datetime | None = None) -> Alert:
    """The first failure of standalone job ``family`` in a window (``family:NAME``: an essential
    container exited non-zero or unknown). Later failures until ``window_end`` are counted, not
    alerted; their summary follows (:func:`job_summary_alert`)."""
    w = where or Where(cluster=cluster, family=family)
    title = f"job failed: {cluster}/{family}"
    header = f":x: JOB FAILED: {cluster}/{family}"
    summary = "A standalone task failed. The watchdog never acts on standalone tasks."
    if window_minutes is not None and window_end is not None:
        summary += (f" Further failures of this family until {window_end:%H:%M:%S}Z ({window_minutes} min) are "
                    "counted, not alerted; their summary follows when that window closes.")
    fields = {"Cluster": cluster, "Family": family, "Task": resource_name(failure.task_arn),
              "Event time": f"{failure.time:%Y-%m-%d %H:%M:%S}Z"}
    return _make("job_failure", title, header, summary, fields, _stops((failure,)), links, w,
                 {"cluster": cluster, "family": family, "action": "alert_only", "reason": "job_failed",
                  "time": iso(failure.time)},
                 failure.time, ("job_failed",), subject_id=f"{cluster}/{family}/{iso(failure.time)}")


def job_summary_alert(cluster: str, family: str, *, failures: int, window_minutes: int, window_start: datetime,
                      last_exit: str, last_time: datetime, next_failure: Failure | None = None,
                      ok_run_at: datetime | None = None, closed_at: datetime | None = None,
                      where: Where | None = None, links: tuple[L.Link, ...] = ()) -> Alert:
    """The summary of a closed job window: "failed N times in M min, last exit X".

    ``failures``: runs that failed in the window that opened at ``window_start`` (event time) and
    lasted ``window_minutes``; ``last_exit``/``last_time``: the newest of them. ``next_failure``: the
    failure that arrived after the window closed and opens the next one (it is reported here, in the
    same message, instead of a second alert). ``ok_run_at``: instead, the event time of a run that
    finished normally after the window closed (the job stopped failing: this summary closes the story).
    ``closed_at``: instead, the time the scheduled sweep found the window over (no run came after it).
    """
    w = where or Where(cluster=cluster, family=family)
    headline = f"failed {failures} times in {window_minutes} min, last exit {last_exit}"
    title = f"job {headline}: {cluster}/{family}"
    header = f":x: JOB SUMMARY: {cluster}/{family} {headline}"
    summary = (f"Standalone job {family} {headline} (window {window_start:%H:%M:%S}Z to "
               f"{window_start + timedelta(minutes=window_minutes):%H:%M:%S}Z; last failure {last_time:%H:%M:%S}Z).")
    if next_failure is not None:
        end = next_failure.time + timedelta(minutes=window_minutes)
        summary += (f" It failed again at {next_failure.time:%H:%M:%S}Z: a new window runs to {end:%H:%M:%S}Z; its "
                    "failures are counted and summarised the same way.")
    elif ok_run_at is not None:
        summary += f" A run finished normally at {ok_run_at:%H:%M:%S}Z: no window is open."
    elif closed_at is not None:
        summary += f" No failure since: the window closed at {closed_at:%H:%M:%S}Z and no window is open."
    fields = {"Cluster": cluster, "Family": family, "Failures in window": str(failures),
              "Window": f"{window_start:%Y-%m-%d %H:%M:%S}Z + {window_minutes} min", "Last exit": last_exit,
              "Last failure": f"{last_time:%Y-%m-%d %H:%M:%S}Z"}
    stops = _stops((next_failure,)) if next_failure is not None else []
    at = next_failure.time if next_failure is not None else ok_run_at or closed_at or last_time
    return _make("job_summary", title, header, summary, fields, stops, links, w,
                 {"cluster": cluster, "family": family, "action": "alert_only", "reason": "job_failed",
                  "time": iso(at), "failures": failures, "window_minutes": window_minutes,
                  "window_start": iso(window_start), "last_exit": last_exit},
                 at, ("job_failed", "summary"), subject_id=f"{cluster}/{family}/{iso(window_start)}")


def recovery_alert(where: Where, *, action: Action, reason: str, decision_time: datetime, ended_by: str,
                   ended_at: datetime, detail: str | None = None, links: tuple[L.Link, ...] = (),
                   held: list[str] | None = None) -> Alert:
    """The episode of ``where`` is over: how long it lasted (minutes from the decision to ``ended_at``)
    and what ended it (``ended_by``: ``quiet``, ``steady_state``, ``restored``, ``operator_raised``)."""
    minutes = _minutes(ended_at - decision_time)
    at = f"{where.cluster}/{where.service}"
    what = {"quiet": "a full window passed with no failure",
            "steady_state": "ECS reported SERVICE_STEADY_STATE",
            "restored": "the service was restored",
            "operator_raised": "an operator set the service's desired count"}.get(ended_by, ended_by)
    title = f"recovered: {at} after {minutes} min"
    header = f":white_check_mark: RECOVERED: {at} after {minutes} min"
    summary = (f"The episode that began with the {action.value} decision ({reason}) at "
               f"{decision_time:%Y-%m-%d %H:%M:%S}Z is over: {what} at {ended_at:%Y-%m-%d %H:%M:%S}Z. "
               f"It lasted {minutes} min.")
    if detail:
        summary += " " + detail
    fields = {"Ended by": ended_by, "Duration": f"{minutes} min", "Decision": f"{action.value} ({reason})",
              "Decided at": f"{decision_time:%Y-%m-%d %H:%M:%S}Z", "Ended at": f"{ended_at:%Y-%m-%d %H:%M:%S}Z"}
    if held:  # a mass hold's recovery names every service it held
        fields["Services held"] = _cut(", ".join(held), 1500)
    return _make("recovery", title, header, summary, fields, [], links, where,
                 {"cluster": where.cluster, "service": where.service, "action": action.value, "reason": reason,
                  "time": iso(ended_at), "ended_by": ended_by, "duration_minutes": minutes,
                  "decision_time": iso(decision_time), **({"services_held": list(held)} if held else {})},
                 ended_at, ("recovery", ended_by),
                 decision=decision_id(where.cluster, where.service or "", decision_time, where))


def still_failing_alert(where: Where, *, probes: int, delay_minutes: int, decision_time: datetime, at: datetime,
                        links: tuple[L.Link, ...] = ()) -> Alert:
    """``RECOVERY=probe``: the service held at zero since ``decision_time`` failed ``probes`` probes and
    the delay between probes reached its cap, ``delay_minutes`` (``PROBE_MAX_DELAY_MINUTES``), at ``at``.
    Sent once per episode (ARCHITECTURE.md, "Recovery"); probing goes on at the cap."""
    minutes = _minutes(at - decision_time)
    svc = f"{where.cluster}/{where.service}"
    title = f"still failing: {svc} after {probes} probes"
    header = f":rotating_light: STILL FAILING: {svc} after {probes} probes"
    summary = (f"{svc} has been held at zero for {minutes} min and failed {probes} probes (desired count 1 with "
               f"its scalable target suspended); the delay between probes reached its cap of {delay_minutes} min. "
               f"The watchdog keeps probing every {delay_minutes} min and sends no more of these: the cause "
               "needs an operator (a fix, a new task definition revision, or restore).")
    fields = {"Probes failed": str(probes), "Held for": f"{minutes} min", "Next probe in": f"{delay_minutes} min",
              "Decided at": f"{decision_time:%Y-%m-%d %H:%M:%S}Z"}
    return _make("still_failing", title, header, summary, fields, [], links, where,
                 {"cluster": where.cluster, "service": where.service, "time": iso(at), "probes": probes,
                  "delay_minutes": delay_minutes, "decision_time": iso(decision_time)},
                 at, ("still_failing",))


# ---------------------------------------------------------------------------- channel renderings
def slack_payload(alert: Alert) -> dict[str, Any]:
    """What a Slack incoming webhook receives: ``{"text": fallback, "blocks": [...]}`` (text within
    the 3,000 characters Slack shows as a notification; Slack parses it as mrkdwn too, so it is
    escaped like the blocks)."""
    return {"text": _cut(_mrkdwn(alert.text), SLACK_LIMITS["section_text"]), "blocks": alert.blocks}


def chatbot_message(alert: Alert) -> dict[str, Any]:
    """The AWS Chatbot custom notification for ``alert`` (docs: "Custom notifications using Amazon Q
    Developer in chat applications").

    Shape: ``{"version": "1.0", "source": "custom", "id": str, "content": {"textType":
    "client-markdown", "title", "description", "nextSteps": [str], "keywords": [str]}, "metadata":
    {"threadId", "summary", "eventType", "relatedResources": [str], "additionalContext": {str: str}}}``
    within :data:`CHATBOT_LIMITS`. ``id`` is :attr:`Alert.alert_id` (the same on a repeat) and
    ``additionalContext`` holds ``decision_id``. ``description`` is the plain text of the alert; the
    links are ``nextSteps`` (Chatbot shows them as a list; Slack makes the URLs clickable). Chatbot
    posts the text to Slack as it is, so every text field is escaped as Slack's own text is
    (:func:`mrkdwn_escape`): a stop reason's ``<!channel>`` pings nobody.
    """
    lim = CHATBOT_LIMITS
    w = alert.where
    steps, in_description, whole = _next_steps(alert)
    keywords = [k for k in (*alert.keywords, w.cluster if w else None, w.account if w else None,
                            w.region if w else None) if k]
    thread = None
    if w is not None:
        thread = f"{w.cluster}/{w.service or w.family or 'cluster'}"
    related = [str(alert.data[k]) for k in ("cluster_arn", "service_arn") if alert.data.get(k)]
    context = {k: _mrkdwn(str(v)) for k, v in alert.data.items()
               if k in ("cluster", "service", "family", "action", "reason", "time", "account", "region", "kind",
                        "ended_by", "duration_minutes", "failures", "last_exit", "decision_id", "alert_id")
               and v is not None}
    msg: dict[str, Any] = {
        "version": "1.0",
        "source": "custom",
        "id": alert.alert_id or f"{alert.kind}:{thread or ''}:{alert.data.get('time', '')}",
        "content": {
            "textType": "client-markdown",
            "title": _cut(_inert(alert.title or alert.subject), lim["title"]),
            "description": _fit_lines(_inert(alert.text).split("\n"), lim["description"], in_description,
                                      whole),
            "nextSteps": steps,
            "keywords": [_cut(_mrkdwn(str(k)), lim["keyword"]) for k in dict.fromkeys(keywords)][:lim["keywords"]],
        },
        "metadata": {"summary": _cut(_mrkdwn(alert.subject), lim["summary"]), "eventType": alert.kind,
                     "relatedResources": related, "additionalContext": context},
    }
    if thread:
        msg["metadata"]["threadId"] = thread
    if not msg["content"]["nextSteps"]:
        del msg["content"]["nextSteps"]
    return msg


def _inert(text: str) -> str:
    """:func:`mrkdwn_escape`, and a ```` ``` ```` made ``'''``: Chatbot's ``client-markdown`` would
    otherwise turn the rest of the text into code (the Slack blocks neutralise it the same way)."""
    return _mrkdwn(text).replace("```", "'''")


def _next_steps(alert: Alert) -> tuple[list[str], list[str], list[str]]:
    """Chatbot ``nextSteps`` for ``alert`` (the undo command first, then the links) within
    :data:`CHATBOT_LIMITS`; the lines the description must then hold whole; and the commands and URLs
    no line may be cut through. A step is never cut (a cut command or URL is a wrong one): an undo
    command too long for a step (255-character cluster and service names) loses its ``Undo:`` label
    first, then moves to the description whole, a step saying so; links too long for a step, or past
    the tenth step, move there too, one step naming them."""
    lim = CHATBOT_LIMITS["next_step"]
    steps: list[str] = []
    moved: list[str] = []
    whole: list[str] = []
    undo = alert.data.get("undo")
    if undo:
        whole.append(_inert(str(undo)))
        fitting = [c for c in (_inert(f"Undo: {undo}"), _inert(str(undo))) if len(c) <= lim]
        if fitting:
            steps.append(fitting[0])
        else:
            steps.append("Undo: the restore command is in the description, whole (too long for a next step)")
            moved.append(_inert(f"Undo: {undo}"))
    links = [(link, _inert(f"{link.label}: {link.url}")) for link in alert.links]
    whole += [_inert(link.url) for link in alert.links]
    fit = [step for _, step in links if len(step) <= lim]
    free = CHATBOT_LIMITS["next_steps"] - len(steps)
    shown = fit if len(fit) == len(links) and len(fit) <= free else fit[:max(0, free - 1)]
    steps += shown
    rest = [(link, step) for link, step in links if step not in shown]
    if rest:
        labels = ", ".join(link.label for link, _ in rest)
        steps.append(_cut(_inert(f"{len(rest)} more link(s) in the description: {labels}"), lim))
        moved += [step for _, step in rest]
    return steps, moved, whole


def _fit_lines(lines: list[str], limit: int, keep: list[str], whole: list[str]) -> str:
    """``lines`` joined within ``limit`` characters, cut at a line; a line holding one of ``whole`` (a
    command, a URL) is never cut through (kept whole or left out), and every line of ``keep`` that the
    cut left out follows it, whole."""
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    tail = list(keep)
    budget = limit - sum(len(k) + 1 for k in tail) - 2  # "…" and its line break
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget:
            if budget - used > 40 and not any(w and w in line for w in whole):
                out.append(_cut(line, budget - used - 1))
            break
        out.append(line)
        used += len(line) + 1
    tail = [k for k in tail if k not in out]
    return "\n".join(out + ["…"] + tail)[:limit]


def pick_log_streams(failures: tuple[Failure, ...], destinations: Callable[[str], Mapping[str, Any]],
                     region: str | None, newest: int = 5) -> tuple[LogStream, ...]:
    """The ``awslogs`` stream an alert links for each of the ``newest`` failures: the task's first
    failing container that logs with ``awslogs`` and a stream prefix (then any other that does).

    ``destinations(task_definition_arn)`` gives container name -> destination with ``group``, ``prefix``
    and ``region`` (the task definition's ``logConfiguration.options``: ``awslogs-group``,
    ``awslogs-stream-prefix``, ``awslogs-region``); the stream name is ``prefix/container/task-id``
    (the awslogs driver's documented naming). ``region``: the alert's region when the options have none.
    """
    out: list[LogStream] = []
    for f in failures[-newest:]:
        if not f.task_definition_arn:
            continue
        dests = destinations(f.task_definition_arn)
        failing = [n for n, c in f.exit_codes if c != 0] + [n for n, c in f.exit_codes if c == 0]
        for name in failing + sorted(set(dests) - set(failing)):
            d = dests.get(name)
            if d is not None and d.prefix and (d.region or region):
                task_id = resource_name(f.task_arn)
                out.append(LogStream(task_id, name, d.group, L.log_stream_name(d.prefix, name, task_id),
                                     d.region or region or ""))
                break
    return tuple(out)


# ---------------------------------------------------------------------- the parts an episode's alert reads
def where_of(ck: str, cluster: str, *, arn: str | None, home: tuple[str, str] | None, region: str | None,
             service: str | None = None, family: str | None = None) -> Where:
    """Account, region and partition of cluster key ``ck`` (``NAME`` at home, ``NAME@ACCOUNT@REGION``
    elsewhere): from ``arn`` (an ARN of the cluster seen in this invocation), else the cluster key, else
    ``home`` (the function's ``(account, region)``), else ``region`` (the table's region)."""
    partition, reg, account = arn_parts(arn)
    if reg is None and "@" in ck:
        _, account, reg = ck.split("@", 2)
    if reg is None and home is not None:
        account, reg = home
    reg = reg or region
    return Where(cluster=cluster, service=service, family=family, account=account, region=reg,
                 partition=partition or partition_of(reg or ""))


def undo_command(decision: Decision, table: str, region: str | None) -> str | None:
    """The exact ``ecs-guardrail restore`` command for a scale-down (``table``: the watchdog's DynamoDB
    table; ``region`` when known), else ``None`` (nothing to undo)."""
    if decision.action is not Action.SCALE_TO_ZERO:
        return None
    return (f"ecs-guardrail restore --cluster {decision.cluster} --service {decision.service} "
            f"--table {table}" + (f" --region {region}" if region else ""))


def mass_shown(decision: Decision) -> tuple[list[str], set[str]]:
    """The failing services of a mass event (the decision's ``failing``, else its own service) and the
    ones the cluster alert shows a line for: the first :data:`MASS_LINES` names, sorted (the rest are
    counted, so their summaries need no read)."""
    names = list(decision.failing or (decision.service,))
    return names, set(sorted(names)[:MASS_LINES])


def mass_row(name: str, s: ServiceSummary | None, decision: Decision,
             window: timedelta) -> tuple[str, int, int, Failure | None]:
    """One line of the cluster alert: ``(service, crashes, health-check kills, last failure)`` in the
    ``window`` ending at the decision, from the service's summary (``None`` or never written: zeros)."""
    if s is None or s.seq == 0:
        return name, 0, 0, None
    crashes = s.counted(StopKind.CRASH, decision.time, window)
    kills = s.counted(StopKind.HEALTH_CHECK_KILL, decision.time, window)
    return name, len(crashes), len(kills), max(crashes + kills, key=lambda f: f.time, default=None)


def with_task_definitions(failures: tuple[Failure, ...], s: ServiceSummary) -> tuple[Failure, ...]:
    """``failures`` (from a decision record, which does not carry it) with each task's task definition
    ARN, from the service's summary ``s`` where it still holds the task."""
    known = {f.task_arn: f.task_definition_arn for f in s.crashes + s.kills if f.task_definition_arn}
    return tuple(replace(f, task_definition_arn=f.task_definition_arn or known.get(f.task_arn)) for f in failures)


def mass_held(service: str, ep: Episode, record: Mapping[str, Any],
              summaries: tuple[ServiceSummary, ...]) -> tuple[list[str], list[str]]:
    """Every service a mass hold held (``record``'s ``failing``: the services its decision found failing,
    and each later hold of the same mass event in the cluster's ``summaries``, whose alert this one
    covered), and those still in their own episode; both sorted."""
    names = set(record.get("failing") or ()) | {service}
    end = ep.ended_at or ep.last_failure
    for x in summaries:
        e = x.episode
        if e is not None and e.reason is Reason.MASS_UNHEALTHY and ep.decision_time <= e.decision_time <= end:
            names.add(x.service)
    by_name = {x.service: x for x in summaries}
    still = sorted(n for n in names if n != service and n in by_name and by_name[n].episode is not None
                   and by_name[n].episode_end is None)
    return sorted(names), still
