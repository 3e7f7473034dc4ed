"""``replay``: a scenario through the same handler code as Lambda, on the embedded AWS, with the
availability sampler's minute ticks and the sweep on the events' clock; the result and its summary.

The output contract is in SCENARIOS.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from msgspec import Struct, field

from ecs_guardrail.core.classify import StopKind, kind_with_notice
from ecs_guardrail.core.errors import EventRejectedError, ScenarioError
from ecs_guardrail.core.events import parse_event, parsed_once
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.restarts import RestartObservation
from ecs_guardrail.handlers import record, watchdog
from ecs_guardrail.handlers import sweep as sweep_handler  # its run_sweep read at each call (tests wrap it)
from ecs_guardrail.handlers.channels import simulate_channels
from ecs_guardrail.handlers.runtime import LambdaContextStub, build_runtime, metrics_enabled
from ecs_guardrail.handlers.runtime import logger as function_logger
from ecs_guardrail.replay import engine as engines  # make_aws, make_table read at each call (tests wrap them)
from ecs_guardrail.replay.clock import MinuteClock, event_time
from ecs_guardrail.replay.delivered import read_delivered
from ecs_guardrail.replay.embedded import EmbeddedAws
from ecs_guardrail.replay.event_checks import EventChecks
from ecs_guardrail.replay.fleet import fleet_warnings
from ecs_guardrail.replay.healthy_hosts import MAX_REPLAY_MINUTES, shifted_samples_warning
from ecs_guardrail.replay.lines import decode_line, loads, loads_utf8
from ecs_guardrail.replay.restarts import ReplayRestarts
from ecs_guardrail.replay.sampling import ReplaySampler
from ecs_guardrail.replay.scenario import TABLE, Scenario, samples_overlap_warning, scenario_warnings
from ecs_guardrail.routing import targets_for

__all__ = ["ReplayResult", "replay", "quiet_logs"]


class ReplayResult(Struct):
    """What a replay produced: decisions in order, the summary line, alerts and call counts.

    ``alerts``: one dict per alert per channel, in the order sent (``Runtime.preview_of``):
    ``{"time": event time, "kind", "channel": "sns", "format", "subject", "message"}`` and
    ``{"time", "kind", "channel": "slack", "text", "blocks"}``, each with ``route``: the ``ALERT_ROUTES``
    channel the alert took (``default`` for the default channel).
    """

    decisions: list[dict[str, Any]] = field(default_factory=list)
    job_failures: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    availability: Any = None
    timeline: Any = None
    #: the replay's history store (read the timeline from it inside ``keep_open``)
    history: Any = None
    #: first and last event time of the lines that moved the replay's clocks (accepted lines only)
    clock_span: tuple[datetime, datetime] | None = None


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Powertools logs go to stderr at ERROR during a replay (stdout carries only the report); the
    logger's level and streams are put back afterwards, so an in-process replay changes nothing for
    whatever runs next (a Lambda handler in the same process, a test)."""
    verbose = bool(os.environ.get("ECS_GUARDRAIL_VERBOSE"))
    if verbose:
        function_logger.name  # noqa: B018 - builds the Powertools logger: verbose replays log as Lambda does
    log = logging.getLogger("ecs-guardrail")
    level = log.level
    streams = [(h, h.stream) for h in log.handlers if isinstance(h, logging.StreamHandler)]
    for h, stream in streams:
        if stream is not sys.stderr:
            h.stream = sys.stderr  # not setStream: it flushes the old stream, which a test may have closed
    if not verbose:
        log.setLevel(logging.ERROR)
    try:
        # Powertools not built yet (a CLI replay): its log calls go to the standard logger, at ERROR, to
        # stderr, and Powertools is never imported
        with function_logger.standing_in(log):
            yield
    finally:
        log.setLevel(level)
        for h, stream in streams:
            h.stream = stream


def _fleet_names(fleet: dict[str, Any]) -> tuple[set[str], set[tuple[str, str]]]:
    clusters = {c["name"] for c in fleet["clusters"]}
    return clusters, {(c["name"], s["name"]) for c in fleet["clusters"] for s in c.get("services", [])}


def _unknown_to_fleet(raw: Any, clusters: set[str], services: set[tuple[str, str]]) -> str | None:
    """A one-line warning when a task event names a cluster or service that ``fleet.json`` lacks."""
    detail = raw.get("detail") if isinstance(raw, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("clusterArn"), str):
        return None
    cluster = resource_name(detail["clusterArn"])
    group = detail.get("group")
    if cluster not in clusters:
        return f"cluster {cluster!r} is not in fleet.json: its services cannot be read or scaled"
    if isinstance(group, str) and group.startswith("service:") and group[8:] and (cluster, group[8:]) not in services:
        return f"service {cluster}/{group[8:]} is not in fleet.json: it can be alerted on, never scaled"
    return None


def _crash_at_zero(raw: Any, at_zero: set[tuple[str, str]]) -> str | None:
    """One line when a crash comes from a service ``fleet.json`` gives ``desiredCount`` 0: a service at 0
    runs no tasks, so a scale-down alert would read "previous desired count 0"."""
    detail = raw.get("detail") if isinstance(raw, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("clusterArn"), str):
        return None
    group = detail.get("group")
    if not isinstance(group, str) or not group.startswith("service:"):
        return None
    key = (resource_name(detail["clusterArn"]), group[len("service:"):])
    if key not in at_zero:
        return None
    return (f"{key[0]}/{key[1]} has desiredCount 0 in fleet.json, yet its tasks crash: a service at 0 runs no "
            "tasks (a scale-down would record 0 as the count to restore); give it the desired count it had "
            "during the incident")


def _other_home(raw: Any, account: str, region: str) -> str | None:
    """A one-line warning when an event comes from another account or region than ``fleet.json``'s:
    the watchdog would treat its cluster as a member account's (alert-only) without saying why."""
    if not isinstance(raw, dict):
        return None
    acct, reg = raw.get("account"), raw.get("region")
    if acct == account and reg == region:  # fleet.json's own (the strings themselves): no warning
        return None
    if not isinstance(acct, str | None) or not isinstance(reg, str | None):
        return None  # a number where EventBridge writes a string: the recorder rejects the line and names it
    if (acct in (None, account)) and (reg in (None, region)):
        return None
    return (f"events of account {acct} in {reg}, but fleet.json is account {account} in {region}: those "
            "clusters are treated as another account's and only alerted on (set \"account\" and \"region\" "
            "in fleet.json to the events' own)")


_DEPLOYMENT_OPEN = "SERVICE_DEPLOYMENT_IN_PROGRESS"
_DEPLOYMENT_CLOSED = ("SERVICE_DEPLOYMENT_COMPLETED", "SERVICE_DEPLOYMENT_FAILED")


def _deployment_mark(raw: Any) -> tuple[str, str, str] | None:
    """``(cluster/service, deployment id, eventName)`` of a service's ECS Deployment State Change, else None."""
    if not isinstance(raw, dict) or raw.get("detail-type") != "ECS Deployment State Change":
        return None
    detail, resources = raw.get("detail"), raw.get("resources")
    if not isinstance(detail, dict) or not isinstance(resources, list) or not resources \
            or not isinstance(resources[0], str) or ":service/" not in resources[0]:
        return None
    did, name = detail.get("deploymentId"), detail.get("eventName")
    if not isinstance(did, str) or not isinstance(name, str):
        return None
    parts = resources[0].split(":service/", 1)[1].split("/")
    return (f"{parts[0]}/{parts[-1]}" if len(parts) > 1 else parts[0]), did, name


def unclosed_deployment_warnings(opened: dict[tuple[str, str], int], closed: set[tuple[str, str]],
                                 fleet: dict[str, Any]) -> list[str]:
    """One line per deployment a ``SERVICE_DEPLOYMENT_IN_PROGRESS`` opened (``opened``: ``(cluster/service,
    id)`` -> its events.jsonl line) that no closing event (``closed``) ends and no row of the service's
    fleet.json ``deployments`` lists: the watchdog reads it as in progress for the whole replay
    (ARCHITECTURE.md rule 4: fail safe), which protects the service from a scale-down."""
    listed = {(f"{c['name']}/{s['name']}", str(r.get("id"))) for c in fleet["clusters"]
              for s in c.get("services", []) for r in s.get("deployments") or [] if isinstance(r, dict)}
    # only where something other than the watchdog finishes the deployment (the protection applies)
    protected = {f"{c['name']}/{s['name']}" for c in fleet["clusters"] for s in c.get("services", [])
                 if (s.get("deploymentCircuitBreaker") or {}).get("enable")
                 or (s.get("deploymentController") or "ECS") != "ECS"
                 or ((s.get("deploymentStrategy") or {}).get("strategy") or "ROLLING") != "ROLLING"}
    return [f"events.jsonl:{line}: deployment {did} of {svc} has no closing event (SERVICE_DEPLOYMENT_COMPLETED "
            f"or _FAILED) and fleet.json's deployments does not list it: it is read as in progress throughout "
            f"(add its row with the time it ended, as capture writes it: {{\"id\": \"{did}\", \"status\": "
            f"\"SUCCESSFUL\", \"startedAt\": \"...Z\", \"finishedAt\": \"...Z\"}}; "
            "without finishedAt it stays in progress)"
            for (svc, did), line in sorted(opened.items(), key=lambda kv: kv[1])
            if svc in protected and (svc, did) not in closed and (svc, did) not in listed]


#: an event this far past the rest of events.jsonl is named (a wrong clock, without delivered.csv to reject it)
FAR_PAST_THE_REST = timedelta(hours=24)


def far_future_warnings(accepted: dict[int, datetime], delivered: dict[int, datetime]) -> list[str]:
    """One line per accepted event stamped more than :data:`FAR_PAST_THE_REST` after every earlier-stamped
    event, when such events are few (at most 3, and under 5 % of the events) and ``delivered.csv`` has no
    row for them: a wrong clock (2099) that production's time-sanity check would reject; in a replay
    without delivery times it is taken as the service's newest failure, and the loop detection of its
    service measures every window from it (its real loop is never seen)."""
    if len(accepted) < 2:
        return []
    times = accepted.values()
    if max(times) - min(times) <= FAR_PAST_THE_REST:  # no gap between two of them can be wider
        return []
    order = sorted(accepted.items(), key=lambda kv: kv[1])
    gap_at = max(range(1, len(order)), key=lambda i: order[i][1] - order[i - 1][1])
    gap = order[gap_at][1] - order[gap_at - 1][1]
    late = order[gap_at:]
    if gap <= FAR_PAST_THE_REST or len(late) > 3 or len(late) * 20 > len(order):
        return []
    rest = order[gap_at - 1][1]
    return [f"events.jsonl:{n}: stamped {t:%Y-%m-%dT%H:%M:%SZ}, {(t - rest) / timedelta(days=1):.0f} day(s) past "
            f"every other event (the last {rest:%Y-%m-%dT%H:%M:%SZ}): a wrong clock? Without delivered.csv the "
            "replay cannot reject it, and its service's loop detection measures its windows from it "
            "(capture writes delivered.csv)"
            for n, t in late if n not in delivered]


def _task_arn(raw: Any) -> str:
    """``detail.taskArn`` of a task event ('' when absent: the recorder rejected such lines already)."""
    detail = raw.get("detail") if isinstance(raw, dict) else None
    arn = detail.get("taskArn") if isinstance(detail, dict) else None
    return arn if isinstance(arn, str) else ""


def _stop_line_kind(raw: Any) -> str | None:
    """``lastStatus`` of a task event whose task is stopping (desiredStatus STOPPED), else None
    (:meth:`Replay._route` reads the same of the fields it has read already)."""
    if not isinstance(raw, dict) or raw.get("detail-type") != "ECS Task State Change":
        return None
    detail = raw.get("detail")
    if not isinstance(detail, dict) or detail.get("desiredStatus") != "STOPPED":
        return None
    status = detail.get("lastStatus")
    return status if isinstance(status, str) else None


def replay(scenario: Scenario, *, on_reject: Callable[[int, str], None] | None = None,
           keep_open: Callable[[EmbeddedAws, ReplayResult], None] | None = None,
           on_warning: Callable[[str], None] | None = None, engine: str = "fast",
           on_progress: Callable[[int], None] | None = None,
           on_stage: Callable[[tuple[Any, ...], int, int, int], None] | None = None) -> ReplayResult:
    """Feed ``events.jsonl`` through the recorder and watchdog handlers on the embedded AWS, with the
    availability sampler's minute ticks on the same clock (:mod:`ecs_guardrail.replay.clock`).

    The recipe: :class:`Replay` reads the scenario's inputs, :meth:`Replay.start` builds both handlers'
    runtimes on the embedded AWS, :meth:`Replay.feed` takes each line of ``events.jsonl`` (read once, in
    order), :meth:`Replay.finish` runs the minutes left and :meth:`Replay.result` reads what came out.

    Each line goes where the EventBridge rules would send it (:mod:`ecs_guardrail.routing`); both
    handlers run exactly as in Lambda. Malformed lines are counted, reported through ``on_reject(line
    number, reason)`` and skipped. ``keep_open(aws, result)`` runs before the embedded AWS closes (the
    timeline is read there). ``engine``: ``fast`` or ``moto`` (:mod:`ecs_guardrail.replay.engine`).
    ``on_progress(lines)``: called with the number of lines of ``events.jsonl`` read since its last
    call, every 100 lines and at the end (:mod:`ecs_guardrail.app.progress` draws it).
    ``on_stage(stage, decisions, alerts, job failures)``: ``replay --jobs``'s hook
    (:mod:`ecs_guardrail.replay.parallel`), called as each stage starts (``("line", n, accepted time or
    None)``, ``("tick", minute)``, ``("end",)``) with how many decisions, alert previews and job failures
    came before it.

    Raises:
        ScenarioError: a ``healthy_hosts.csv`` that cannot be read (before any event is replayed).
    """
    run = Replay(scenario, on_reject=on_reject, on_warning=on_warning, on_stage=on_stage)
    with engines.make_aws(engine, scenario) as aws, contextlib.ExitStack() as stack:
        stack.enter_context(quiet_logs())
        run.start(aws, engine)
        # read 1 MiB at a time (the default buffer, a few KiB, costs a read call per few lines of a 100 MB file)
        with scenario.events_path.open("rb", buffering=_READ_BUFFER) as fh, run.feeding():
            feed = run.feed
            if on_progress is None:
                for line in fh:
                    feed(line)
            else:
                for line in fh:
                    if (run.n + 1) % 100 == 0:
                        on_progress(100)
                    feed(line)
            run.finish()
            if on_progress is not None and run.n % 100:
                on_progress(run.n % 100)
        res = run.result()
        if keep_open is not None:
            keep_open(aws, res)
    return res


#: bytes :func:`replay` reads of ``events.jsonl`` at a time (its lines are taken from them one by one)
_READ_BUFFER = 1 << 20

#: what :meth:`Replay._decode` returns for a line it rejected (``None`` is a JSON value)
_REJECTED = object()


class Replay:
    """One replay, fed a line at a time: ``Replay(scenario)``, :meth:`start` on the embedded AWS, then
    :meth:`feed` for every line of ``events.jsonl`` in order (inside :meth:`feeding`), :meth:`finish`
    and :meth:`result`. :func:`replay` is the recipe that calls them; the events file is read once.

    One clock: :class:`SweepTicks` moves the sweep, the sampler's ``healthy_hosts.csv`` minutes and the
    restart observations of ``container_restarts.csv`` (its lane) by the accepted events' times.

    Raises:
        ScenarioError: a ``delivered.csv`` that cannot be read (from the constructor), a ``healthy_hosts.csv``
            that cannot be read (from :meth:`start`), too many minutes swept (from :meth:`feed`, :meth:`finish`).
    """

    def __init__(self, scenario: Scenario, *, on_reject: Callable[[int, str], None] | None = None,
                 on_warning: Callable[[str], None] | None = None,
                 on_stage: Callable[[tuple[Any, ...], int, int, int], None] | None = None) -> None:
        self.scenario, self.on_reject, self.on_warning, self.on_stage = scenario, on_reject, on_warning, on_stage
        self.builder = ResultBuilder()
        self.warned: set[str] = set()
        self.delivered = read_delivered(scenario.delivered_path)  # ScenarioError before any event is replayed
        for text in fleet_warnings(scenario.fleet) + scenario_warnings(scenario):
            self.warn(text)
        self.fleet_clusters, self.fleet_services = _fleet_names(scenario.fleet)
        self.at_zero = {(c["name"], s["name"]) for c in scenario.fleet["clusters"] for s in c.get("services", [])
                        if s.get("desiredCount", 1) == 0 and s.get("schedulingStrategy", "REPLICA") == "REPLICA"}
        self.n = self.read = 0  # lines seen, non-blank lines read
        self.span: tuple[datetime, datetime] | None = None  # first and last event time
        self.accepted: dict[int, datetime] = {}  # events.jsonl line -> event time, of the lines accepted
        self.opened: dict[tuple[str, str], int] = {}  # (cluster/service, deployment id) -> its IN_PROGRESS line
        self.closed: set[tuple[str, str]] = set()
        self.account, self.region = scenario.account, scenario.region  # properties: read once, not per event
        self._fleet_seen: dict[tuple[str, str | None], str | None] = {}  # _unknown_to_fleet per (cluster ARN, group)
        #: _route's warnings per (cluster ARN, group, account, region) (:meth:`_warnings`)
        self._homes: dict[tuple[str, str | None, str | None, str | None], tuple[str, ...]] = {}

    def warn(self, text: str | None, line: int | None = None) -> None:
        """Each warning once; ``line``: the events.jsonl line that first gave it (named in the text)."""
        if text and text not in self.warned:
            self.warned.add(text)
            if self.on_warning:
                self.on_warning(text if line is None else f"events.jsonl:{line}: {text} (first seen here)")

    def start(self, aws: EmbeddedAws, engine: str) -> None:
        """Build the recorder's and the watchdog's runtimes on ``aws`` (``engine``'s table), the sampler
        and the one clock. ``ValueError`` for an unknown engine; ``ScenarioError`` for unreadable CSVs."""
        scenario = self.scenario
        self.aws = aws
        self.ctx = LambdaContextStub(invoked_function_arn=f"arn:aws:lambda:{scenario.region}:{scenario.account}:"
                                                          f"function:ecs-guardrail-local")
        settings = scenario.settings.with_values(HISTORY_TABLE=TABLE, ALERT_TOPIC_ARN=aws.topic_arn)
        if settings.CENTRAL_ALERT_TOPIC_ARN:  # the organisation's topic is stood in for by the embedded one
            settings = settings.with_values(CENTRAL_ALERT_TOPIC_ARN=aws.topic_arn)
        clients = aws.clients()
        self.table = engines.make_table(engine, clients, scenario.region)  # ValueError for an unknown engine
        home = (scenario.account, scenario.region)
        self.rt_record = build_runtime(settings, clients, table=self.table, home=home)
        self.rt_watchdog = build_runtime(settings, clients, watchdog=True, table=self.table, home=home)
        self.history = self.rt_record.history  # the recorder's store, read once (not per event)
        self._targets = targets_for(scenario.account)  # the rules' patterns for this account, compiled once
        self.previews: list[dict[str, Any]] = []
        self.rt_watchdog.previews = self.previews  # what each channel receives, stamped with the event time
        simulate_channels(self.rt_watchdog, aws.topic_arn)  # ALERT_ROUTES' channels, simulated as the default one
        self.sampler = ReplaySampler(scenario, aws, engine, self.rt_record.history, settings.CLIENT_ERROR_RATIO)
        for text in self.sampler.warnings + aws.warnings:  # aws.warnings: logs.jsonl lines left out (issue 35)
            self.warn(text)
        self.checks = EventChecks()  # what a hand-written file earns a warning for (issue 38)
        probes = settings.probes()
        self.clock = SweepTicks(self.sampler, self.rt_watchdog, self.ctx, probes)
        self.clock.on_stage = self.stage if self.on_stage is not None else None
        self.recovery = self.clock if probes is not None else None  # what RECOVERY=probe adds to the summary
        self.restarts = ReplayRestarts(scenario, aws)
        for name in self.restarts.unknown:
            self.warn(f"container_restarts.csv: service {name!r} is not in fleet.json; rows ignored")
        self.clock.lanes.append(MinuteClock(self.restarts.first, self.restarts.last, self._restart_tick))

    def stage(self, key: tuple[Any, ...]) -> None:
        """``--jobs``: where each decision and alert was made (``on_stage``'s counts before ``key``)."""
        if self.on_stage is not None:
            self.on_stage(key, len(self.builder.decisions), len(self.previews), len(self.builder.job_failures))

    def _restart_tick(self, minute: datetime) -> None:
        """The sampler's restart observations of ``minute`` go to the watchdog."""
        for observed in self.restarts.tick(minute):
            self.builder.add(_invoke_watchdog(watchdog, observed, self.rt_watchdog, self.ctx))

    @contextlib.contextmanager
    def feeding(self) -> Iterator[None]:
        """Where :meth:`feed` and :meth:`finish` run. EMF metrics print to stdout in Lambda; a replay reports
        none (--calls counts AWS calls, not metrics), so they are off; stdout carries only the report. Each
        line is decoded into a fresh object and validated once for the recorder and the watchdog."""
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), metrics_enabled(False), \
                parsed_once():
            yield

    def feed(self, line: bytes) -> None:
        """The next line of ``events.jsonl`` (bytes as read, newline kept): decoded, routed, recorded and
        delivered as the bus would, moving the clock first; a malformed one is rejected with its reason."""
        self.n += 1
        if not line.strip():
            return
        self.read += 1
        raw = self._decode(self.n, line)
        if raw is not _REJECTED:
            self._route(self.n, raw)

    def _decode(self, n: int, line: bytes) -> Any:
        try:
            return loads_utf8(line)  # UTF-8 and JSON msgspec takes: the value the long way gives
        except (ValueError, RecursionError):
            pass  # the long way: the replaced bytes named, json.loads' words for a rejection
        text, replaced = decode_line(line)
        if replaced:
            self.warn("bytes that are not UTF-8 replaced with U+FFFD (the event is kept; save the file as UTF-8)", n)
        try:
            return loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = f"not JSON: {exc.msg if hasattr(exc, 'msg') else exc}"
        except RecursionError:
            reason = "not JSON: nested too deeply to decode"
        except ValueError as exc:  # e.g. an integer longer than sys.get_int_max_str_digits()
            reason = f"not JSON: {str(exc)[:120]}"
        self.builder.reject(n, reason, self.on_reject)
        return _REJECTED

    def _route(self, n: int, raw: Any) -> None:
        """One decoded event: where the rules send it, the recorder's verdict, the clock, the watchdog.

        The envelope's ``detail`` and ``detail-type`` are read once here for every step that reads them: the
        warnings (:func:`_other_home` has none for fleet.json's own account and region; :meth:`_unknown` once
        per cluster ARN and group), the deployment's mark (:func:`_deployment_mark`, of a deployment event
        only) and the status of a stopping task (``lastStatus`` of a task event whose ``desiredStatus`` is
        STOPPED, counted per status for the summary's closing warning)."""
        result = self.builder
        routes = self._targets(raw)
        if "sweep" in routes:  # the sweep function runs the watchdog's code (its own lane: issue 32)
            routes = routes | _WATCHDOG
        if isinstance(raw, dict):
            detail, kind = raw.get("detail"), raw.get("detail-type")
            if not isinstance(detail, dict):
                detail = None
        else:
            detail = kind = None
        if detail is not None and raw.get("account") == self.account and raw.get("region") == self.region:
            # fleet.json's own account and region (the strings themselves): no _other_home warning; the
            # fleet's warning per (cluster ARN, group), as _unknown looks it up
            arn, group = detail.get("clusterArn"), detail.get("group")
            if type(arn) is str and (group is None or type(group) is str):
                text = self._fleet_seen.get((arn, group), "")  # "": not looked at yet (None is an answer)
                if text == "":
                    text = self._unknown(raw)
                if text:
                    self.warn(text, n)
            else:
                for text in self._warnings(raw):
                    self.warn(text, n)
        else:
            for text in self._warnings(raw):
                self.warn(text, n)
        at = self.delivered.get(n)
        out = (record.record_event(raw, self.history, delivered_at=at)
               if "recorder" in routes or not routes else None)
        if out is not None and out["status"] == "rejected":
            result.reject(n, out["reason"], self.on_reject)
            return
        # only an accepted event opens or closes a deployment: a rejected one (a deploymentId with a
        # control character, 100,000 digits ...) was never read, and its id is not echoed in a warning
        if kind == "ECS Deployment State Change":  # _deployment_mark is None for every other event
            mark = _deployment_mark(raw)
            if mark is not None and mark[2] == _DEPLOYMENT_OPEN:
                self.opened.setdefault(mark[:2], n)
            elif mark is not None and mark[2] in _DEPLOYMENT_CLOSED:
                self.closed.add(mark[:2])
        # the clock to an accepted line's event time (``None``: the line moves no clock). Only a line the
        # replay accepts moves it (a rejected one is named, not swept): the recorder's verdict, or for a
        # line only the watchdog reads (a restart observation) its own
        t = event_time(raw) if out is not None or _accepted(raw, self.account) else None
        if t is not None:
            if self.aws.deployments_in_events:  # else saw_event has nothing to follow
                self.aws.saw_event(raw)  # DescribeServices' deployments[] during a rolling deployment
            clock = self.clock
            quiet = clock.quiet
            if quiet is None or not quiet[0] <= t < quiet[1]:  # else no minute of any clock ends by ``t``
                clock.before_event(t)
            if self.on_stage is not None:
                self.stage(("line", n, t))
            span = self.span
            if span is None:
                self.span = (t, t)
            elif t > span[1]:
                self.span = (span[0], t)
            elif t < span[0]:
                self.span = (t, span[1])
            self.accepted[n] = t
        elif self.on_stage is not None:
            self.stage(("line", n, t))
        # the line's notice, stop and stopping-task status, for the summary and the warnings
        if out is not None:
            notice, stop = out.get("notice_kind"), out.get("stop_kind")
            if notice:
                result.note_notice(raw, notice, t)
            if stop:
                result.count_stop(raw, stop, t)
                self.checks.stop(raw, stop)
                if stop == "crash":
                    self.warn(_crash_at_zero(raw, self.at_zero), n)
        if kind == "ECS Task State Change" and detail is not None and detail.get("desiredStatus") == "STOPPED":
            stop_line = detail.get("lastStatus")  # _stop_line_kind
            if isinstance(stop_line, str):
                result.stop_lines[stop_line] += 1
                if stop_line == "STOPPED" and "watchdog" in routes:
                    arn = detail.get("taskArn")  # _task_arn
                    result.stopped_to_watchdog.add(arn if isinstance(arn, str) else "")
        if out is not None and out["status"] == "duplicate":
            result.duplicates += 1
            self.checks.duplicate(raw)
            if "watchdog" in routes:  # the bus delivers the duplicate to the watchdog too
                result.add(_invoke_watchdog(watchdog, raw, self.rt_watchdog, self.ctx, at))
            return
        if "watchdog" in routes:
            self._to_watchdog(n, raw, out, at)

    def _warnings(self, raw: Any) -> tuple[str, ...]:
        """The warnings :meth:`_unknown` and :func:`_other_home` give of ``raw``, in that order, looked up
        once per (cluster ARN, group, account, region): the two read nothing else of an event."""
        detail = raw.get("detail") if type(raw) is dict else None
        if type(detail) is dict:
            arn, group, account, region = detail.get("clusterArn"), detail.get("group"), raw.get("account"), \
                raw.get("region")
            if type(arn) is str and (group is None or type(group) is str) \
                    and (account is None or type(account) is str) and (region is None or type(region) is str):
                key = (arn, group, account, region)
                found = self._homes.get(key)
                if found is None:
                    if len(self._homes) >= 65_536:
                        self._homes.clear()
                    found = self._homes[key] = self._warnings_of(raw)
                return found
        return self._warnings_of(raw)

    def _warnings_of(self, raw: Any) -> tuple[str, ...]:
        return tuple(text for text in (self._unknown(raw), _other_home(raw, self.account, self.region)) if text)

    def _unknown(self, raw: Any) -> str | None:
        """:func:`_unknown_to_fleet` of ``raw``, once per (cluster ARN, group): it reads nothing else."""
        detail = raw.get("detail") if isinstance(raw, dict) else None
        if not isinstance(detail, dict):
            return None  # as _unknown_to_fleet: no cluster named
        arn, group = detail.get("clusterArn"), detail.get("group")
        if type(arn) is not str or (group is not None and type(group) is not str):
            return _unknown_to_fleet(raw, self.fleet_clusters, self.fleet_services)
        key = (arn, group)
        text = self._fleet_seen.get(key, "")  # "": not looked at yet (None is an answer, "" never one)
        if text == "":
            text = self._fleet_seen[key] = _unknown_to_fleet(raw, self.fleet_clusters, self.fleet_services)
        return text

    def _to_watchdog(self, n: int, raw: Any, out: dict[str, Any] | None, at: datetime | None) -> None:
        """Deliver a line the rules route to the watchdog (``at``: its delivered.csv time, if any)."""
        result, recovery = self.builder, self.recovery
        result.clock = self.span[1] if self.span is not None else None  # when its decisions act
        outcome = _invoke_watchdog(watchdog, raw, self.rt_watchdog, self.ctx, at)
        if out is None and outcome.get("status") == "rejected":  # the watchdog's alone (restarts)
            result.reject(n, outcome.get("reason", "rejected"), self.on_reject)
            return
        result.add(outcome)
        if recovery is not None and out is not None and out.get("stop_kind") in _FAILURE_KINDS:
            recovery.failure(raw, outcome)
        elif recovery is not None and outcome.get("status") == "probe_failed":
            recovery.counts["failed"] += 1  # a SERVICE_TASK_START_IMPAIRED failed the probe

    def finish(self) -> None:
        """After the last line: the minutes left on the clock, then the ``("end",)`` stage."""
        self.clock.finish()
        self.stage(("end",))

    def _closing_warnings(self) -> None:
        sampler, n = self.sampler, self.n
        warn = self.warn
        warn(samples_overlap_warning(self.span, (sampler.first, sampler.last)
                                     if sampler.first and sampler.last else None)
             or shifted_samples_warning(sampler.rows, self.scenario.fleet, self.checks.failures))
        warn(self.checks.shared_task_warning())
        for text in unclosed_deployment_warnings(self.opened, self.closed, self.scenario.fleet) + far_future_warnings(
                self.accepted, self.delivered):
            warn(text)
        beyond = sorted(k for k in self.delivered if k > n)
        if beyond:  # silently unused rows hide a delivered.csv that belongs to another events.jsonl
            warn(f"delivered.csv: {len(beyond)} row(s) name lines past the last line ({n}) of events.jsonl "
                 f"(first: line {beyond[0]}); they check nothing: is it the delivered.csv of another capture?")
        stop_lines = self.builder.stop_lines
        if stop_lines and not stop_lines.get("STOPPED"):
            warn(f"{sum(stop_lines.values())} task event(s) of stopping tasks "
                 f"({', '.join(sorted(stop_lines))}) and none with lastStatus STOPPED: only the STOPPED "
                 "event reaches the watchdog, so no stop was counted")

    def result(self) -> ReplayResult:
        """The warnings that need the whole file, then the result and its summary (after :meth:`finish`)."""
        self._closing_warnings()
        aws, recovery = self.aws, self.recovery
        res = self.builder.build(self.read)
        res.clock_span = self.span
        res.calls = aws.counter.calls
        res.history = self.rt_record.history
        if getattr(self.table, "calls", None):
            res.calls.update({("dynamodb", op): k for op, k in self.table.calls.items()})
        res.availability = self.sampler.report(recovery.held_until(self.builder) if recovery is not None else None,
                                               self.builder.acted_at)
        avail = res.availability
        res.summary["unavailable_service_minutes"] = avail.unavailable_service_minutes if avail is not None else None
        res.summary["watchdog_service_minutes"] = avail.by_cause["zero_by_watchdog"] if avail is not None else None
        if avail is not None and avail.clients_view:
            # the clients' view beside the checker's (healthy_hosts.csv with the request columns)
            res.summary["served_service_minutes"] = avail.served_service_minutes
            res.summary["idle_service_minutes"] = avail.idle_service_minutes
            res.summary["checker_disagreement_minutes"] = avail.checker_disagreement_minutes
            if avail.healthy_hosts_only:
                res.summary["healthy_hosts_only"] = avail.healthy_hosts_only
        res.summary["alerts_sent"] = len(aws.alerts())  # published to SNS, read back from the embedded AWS
        res.alerts = self.previews  # the watchdog runtime's previews (the same list)
        res.summary["desired_counts"] = aws.desired_counts()
        if recovery is not None:
            recovery.summarise(res, self.builder)
        return res


_FAILURE_KINDS = ("crash", "health_check_kill")
_WATCHDOG = frozenset({"watchdog"})
MINUTE = timedelta(minutes=1)


def _accepted(raw: Any, account: str | None = None) -> bool:
    """Whether the recorder or the watchdog (of a stack in ``account``) accepts ``raw`` (an ECS event, or
    a restart observation)."""
    try:
        if RestartObservation.from_event(raw, account=account) is not None:
            return True
        parse_event(raw)
    except (EventRejectedError, ValueError):
        return False
    return True


class SweepTicks:
    """The replay's one-minute schedule (ARCHITECTURE.md, "Recovery"; SCENARIOS.md): the sweep
    (:func:`ecs_guardrail.handlers.sweep.run_sweep`) runs every minute from the first accepted event to
    one quiet window (``CRASH_WINDOW_MINUTES``) + 1 min past the last one, whatever ``RECOVERY`` says,
    as production's sweep does; with ``RECOVERY=probe`` at least ``PROBE_PASS_MINUTES`` + 1 past it.
    The availability sampler's ``healthy_hosts.csv`` minutes tick on the same clock (each tick samples
    first, then sweeps at minute + 1 min), placed as :class:`~ecs_guardrail.replay.clock.MinuteClock`
    places its ticks (the tick of minute M before the first event stamped M + 1 min or later).

    Only minutes in which something can fall due are swept: within :meth:`horizon` of an accepted event
    (a quiet window's end, a job window's end, and with ``RECOVERY=probe`` the longest probe delay and
    its pass), and the CSV's minutes. A minute past all of them sweeps an index in which nothing is due,
    so skipping it changes nothing, and an event stamped years away costs no years of ticks. The caller
    gives only accepted events to :meth:`before_event`: a rejected line (malformed, or stamped in the
    future by ``delivered.csv``) moves no clock.

    With ``RECOVERY=probe`` the recorded stream stands in for the probe: a genuine crash or
    health-check kill of a probing service is its failure (the watchdog sees it as in production),
    and a probe with none for ``PROBE_PASS_MINUTES`` passes; no probe is stepped later than
    ``PROBE_PASS_MINUTES`` + 1 past the last event (nor the CSV's last minute): nothing recorded says how
    it would end. Also counts what the summary reports then: ``probes`` (started, passed, failed), the
    services ``restored`` by a probe, and ``image_pulls``.

    Raises:
        ScenarioError: (from :meth:`before_event` or :meth:`finish`) more than ``MAX_REPLAY_MINUTES``
            minutes swept.
    """

    def __init__(self, sampler: Any, rt: Any, ctx: Any, probes: Any) -> None:
        self.sampler, self.rt, self.ctx, self.probes = sampler, rt, ctx, probes
        window = rt.settings.policy().window
        self.tail = window + MINUTE
        if probes is not None:
            self.tail = max(self.tail, timedelta(minutes=probes.pass_minutes + 1))
        self.reach = self.horizon(window, probes)
        self.csv = (sampler.first, sampler.last) if sampler.first is not None and sampler.last is not None else None
        self._next: datetime | None = None  # the next minute to tick
        self._until: datetime | None = None  # the last minute an accepted event so far reaches
        self._newest: datetime | None = None  # the newest accepted event's minute
        #: [minute, minute + 1 min) of the last event, while another event in it moves nothing (_sweep_before)
        self._minute_done: tuple[datetime, datetime] | None = None
        #: ``[from, to)``: an event time in it ends no minute of this clock nor of :attr:`lanes`, so
        #: :meth:`before_event` would do nothing for it (``None``: not known; set by :meth:`before_event`)
        self.quiet: tuple[datetime, datetime] | None = None
        self.ticks = 0
        self.counts = {"started": 0, "passed": 0, "failed": 0}
        self.restored: list[str] = []
        self.failures: list[tuple[str, datetime, str]] = []  # (cluster/service, time, watchdog status)
        self.on_stage: Callable[[tuple[Any, ...]], None] | None = None  # replay's stage hook (--jobs)
        #: minute clocks that move with this one, each after it (the restart observations' ticks)
        self.lanes: list[MinuteClock] = []

    @staticmethod
    def horizon(window: timedelta, probes: Any) -> timedelta:
        """How long after an event something it started can still fall due with no further event: one
        quiet window + 1 min (the episode's quiet end and its recovery, a job window's summary); with
        ``RECOVERY=probe`` also the longest probe delay, the probe's pass and the restore's minute."""
        reach = window + MINUTE
        if probes is not None:
            reach += timedelta(minutes=probes.max_delay_minutes + probes.pass_minutes + 1)
        return reach

    def _active(self, m: datetime) -> bool:
        return ((self._until is not None and m <= self._until)
                or (self.csv is not None and self.csv[0] <= m <= self.csv[1]))

    def _upcoming(self, m: datetime) -> datetime | None:
        """The first minute at or after ``m`` that ticks as far as known now (``None``: none yet)."""
        if self._active(m):
            return m
        if self.csv is not None and m < self.csv[0]:
            return self.csv[0]
        return None

    def _run_until(self, before: datetime | None, last: datetime | None) -> None:
        """Tick every known minute ``m`` with ``m + 1 min <= before`` (``None``: no bound) and ``m <= last``."""
        while self._next is not None:
            m = self._upcoming(self._next)
            if m is None or (before is not None and m + MINUTE > before) or (last is not None and m > last):
                return
            self._next = m + MINUTE
            self.ticks += 1
            if self.ticks > MAX_REPLAY_MINUTES:  # the sweep runs every one of them: it would never finish
                raise ScenarioError(f"events.jsonl: the sweep runs every minute within one quiet window of an "
                                    f"event: more than {MAX_REPLAY_MINUTES} minutes, the most a replay runs")
            self.tick(m)

    def before_event(self, t: datetime | None) -> None:
        """Call before delivering an accepted event of time ``t``: runs every minute that ended by ``t``,
        then lets the minutes within :meth:`horizon` of ``t`` tick. A late event (older than minutes
        already ticked) runs none; the clock never goes back. Then each of :attr:`lanes` to ``t``."""
        if t is None:
            return
        same = self._minute_done
        if same is None or not same[0] <= t < same[1]:  # else nothing more ends before ``t`` (_sweep_before)
            self._sweep_before(t)
        for lane in self.lanes:
            if lane.due_at is not None and lane.due_at <= t:  # else it has no minute to tick by ``t``
                lane.before_event(t)
        # the stretch of event times after ``t`` that end no minute of this clock or of a lane (a caller
        # delivering many events of one minute skips the call for each of them)
        same, quiet = self._minute_done, None
        if same is not None:
            end = same[1]
            for lane in self.lanes:
                if lane.due_at is not None and lane.due_at < end:
                    end = lane.due_at
            quiet = (same[0], end) if same[0] < end else None
        self.quiet = quiet

    def _sweep_before(self, t: datetime | None) -> None:
        if t is None:
            return
        same = self._minute_done
        if same is not None and same[0] <= t < same[1]:
            return  # the minute of the last event moved the clock already: nothing more ends before ``t``
        m = t.replace(second=0, microsecond=0)
        if self._next is None:
            self._next = m if self.csv is None else min(m, self.csv[0])
        else:
            ahead = self._upcoming(self._next)
            if ahead is None or ahead > m:  # the minutes before this event's own are ones nothing falls due in
                self._next = max(self._next, m)
        self._run_until(t, None)
        ahead = self._upcoming(self._next) if self._next is not None else None
        if self._next is not None and (ahead is None or ahead > m):
            self._next = max(self._next, m)  # the minutes up to this event's own: nothing falls due in them
        self._until = m + self.reach if self._until is None else max(self._until, m + self.reach)
        self._newest = m if self._newest is None else max(self._newest, m)
        # another event of minute ``m`` finds nothing to tick (every minute it could end is before ``m``,
        # and the next one to tick is ``m`` or later) and changes nothing: :meth:`_sweep_before` returns at once
        self._minute_done = (m, m + MINUTE) if self._next is not None and self._next >= m else None

    def finish(self) -> None:
        """Runs the minutes left: to one quiet window past the newest event, and the CSV's last minute;
        then each of :attr:`lanes` to its end."""
        self.quiet = None
        self._sweep_finish()
        for lane in self.lanes:
            lane.finish()

    def _sweep_finish(self) -> None:
        if self._next is None:
            if self.csv is None:
                return
            self._next = self.csv[0]
        last = self._newest + self.tail if self._newest is not None else None
        if self._until is not None and last is not None:
            self._until = min(self._until, last)
        end = max(x for x in (last, self.csv[1] if self.csv is not None else None) if x is not None)
        self._run_until(None, end)

    @property
    def probe_end(self) -> datetime | None:
        """The last minute a probe is stepped: ``PROBE_PASS_MINUTES`` + 1 past the newest event (and the
        CSV's minutes); ``None`` without ``RECOVERY=probe`` or before any event."""
        if self.probes is None or self._newest is None:
            return None
        end = self._newest + timedelta(minutes=self.probes.pass_minutes + 1)
        return max(end, self.csv[1]) if self.csv is not None else end

    def tick(self, minute: datetime) -> None:
        """Sample ``minute`` (inside the CSV's minutes), then sweep at ``minute`` + 1 min."""
        if self.on_stage is not None:
            self.on_stage(("tick", minute))
        s = self.sampler
        if s.first is not None and s.last is not None and s.first <= minute <= s.last:
            s.tick(minute)
        probing = self.probe_end is not None and minute <= self.probe_end
        out = sweep_handler.run_sweep(self.rt, minute + timedelta(minutes=1), self.ctx, probes=probing)
        if self.probes is None:
            return
        for k in self.counts:
            self.counts[k] += out["probes"][k]
        self.restored.extend(out.get("restored", []))

    def failure(self, raw: Any, outcome: dict[str, Any]) -> None:
        """A genuine failure event and what the watchdog made of it (``probe_failed``, ``held_at_zero``...)."""
        detail = raw.get("detail") or {}
        group, arn = str(detail.get("group") or ""), str(detail.get("clusterArn") or "")
        t = event_time(raw)
        if not group.startswith("service:") or t is None:
            return
        status = str(outcome.get("status"))
        if status == "probe_failed":
            self.counts["failed"] += 1
        self.failures.append((f"{resource_name(arn)}/{group[8:]}", t, status))

    def held_until(self, result: ResultBuilder) -> dict[tuple[str, str], datetime | None]:
        """Per service the watchdog scaled, when its own state says the hold ended (a probe restored it,
        or ``restore``), ``None`` while still held: a probe's desired count of 1 is not a restore."""
        state = self.rt.history.state
        out: dict[tuple[str, str], datetime | None] = {}
        for d in result.decisions:
            if d["action"] != "scale_to_zero":
                continue
            ep = state.load(d["cluster"], d["service"], fresh=True).episode
            if ep is None:
                continue
            restored = ep.released
            out[(d["cluster"], d["service"])] = (ep.ended_at or ep.last_failure) if restored else None
        return out

    def summarise(self, res: ReplayResult, result: ResultBuilder) -> None:
        """Add ``probes``, ``restored_by_probe`` and ``image_pulls`` to the summary.

        Image pulls of the services the watchdog scaled to 0 (each task launch pulls the image once):
        ``unstopped``: every genuine failure of theirs in the stream (the loop left alone); ``manual``:
        those up to the first scale-down (held at zero after it); ``probe``: those the watchdog saw
        while the service ran (before the scale-down and after a probe restored it) plus one per probe.
        """
        self.counts["started"] += result.probes_on_events
        first: dict[str, datetime] = {}
        for d in res.decisions:
            if d["action"] == "scale_to_zero":
                key = f"{d['cluster']}/{d['service']}"
                t = datetime.fromisoformat(str(d["time"]).replace("Z", "+00:00"))
                first[key] = min(first.get(key, t), t)
        mine = [(k, t, st) for k, t, st in self.failures if k in first]
        unstopped = len({(k, t) for k, t, _ in mine})
        manual = len({(k, t) for k, t, _ in mine if t <= first[k]})
        running = len({(k, t) for k, t, st in mine if st not in ("held_at_zero", "probe_failed", "duplicate")})
        res.summary["probes"] = dict(self.counts)
        res.summary["restored_by_probe"] = sorted(set(self.restored))
        res.summary["image_pulls"] = {"unstopped": unstopped, "manual": manual,
                                      "probe": running + self.counts["started"]}


def _invoke_watchdog(watchdog: Any, raw: Any, rt: Any, ctx: Any,
                     delivered_at: datetime | None = None) -> dict[str, Any]:
    try:
        return watchdog.invoke(raw, rt, ctx, delivered_at=delivered_at)
    except watchdog.AlertDeliveryError as exc:
        return exc.outcome


class ResultBuilder:
    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []
        self.job_failures: list[dict[str, Any]] = []
        self.rejected: list[tuple[int, str]] = []
        self.duplicates = 0
        self.stops: dict[str, str] = {}  # task ARN -> kind of its first classified STOPPED event
        self.notices: dict[str, tuple[Any, datetime]] = {}  # task id -> its first Spot/termination notice
        self.stop_times: dict[str, tuple[str, datetime]] = {}  # task id -> (task ARN, its STOPPED event's time)
        self.stop_events = 0  # classified STOPPED events (a task redelivered under a new id counts again)
        self.stop_lines: Counter[str] = Counter()  # lastStatus of events of stopping tasks
        self.stopped_to_watchdog: set[str] = set()  # task ARNs whose STOPPED event reached the watchdog
        self.probes_on_events = 0  # probes a new task definition revision started (RECOVERY=probe)
        self.clock: datetime | None = None  # the replay's event clock when the watchdog last ran
        self.acted_at: dict[tuple[str, str, datetime], datetime] = {}  # scale-down -> when it acted

    def count_stop(self, raw: Any, kind: str, at: datetime | None = None) -> None:
        """Count a stopped task once by ``detail.taskArn`` (its first kind stands), every event in
        ``stop_events``: the summary's kinds are tasks, and ``stop_repeats`` says how many events were
        the same tasks again (EventBridge delivers at least once). A Spot or termination notice the
        task got before (:meth:`note_notice`) makes it the notice's kind, as the watchdog counts it
        (:func:`~ecs_guardrail.core.classify.kind_with_notice`). ``at``: the STOPPED event's time."""
        self.stop_events += 1
        arn = _task_arn(raw)
        if arn in self.stops:
            return
        tid = resource_name(arn)
        notice = self.notices.get(tid)
        if notice is not None and at is not None:
            kind = kind_with_notice(StopKind(kind), at, notice, notice_first=True).value
        self.stops[arn] = kind
        if at is not None:
            self.stop_times[tid] = (arn, at)

    def note_notice(self, raw: Any, kind: str, at: datetime | None) -> None:
        """A stopping task's Spot or termination notice (``kind``: spot, infrastructure) at event time
        ``at``: remembered per task (its first one stands); delivered after the task's STOPPED event, it
        takes back a crash or health-check kill stamped at or after it, as the watchdog does."""
        tid = resource_name(_task_arn(raw))
        if at is None or tid in self.notices:
            return
        self.notices[tid] = (StopKind(kind), at)
        stopped = self.stop_times.get(tid)
        if stopped is not None:
            arn, t = stopped
            self.stops[arn] = kind_with_notice(StopKind(self.stops[arn]), t, self.notices[tid],
                                               notice_first=False).value

    def reject(self, n: int, reason: str, on_reject: Callable[[int, str], None] | None) -> None:
        self.rejected.append((n, reason))
        if on_reject:
            on_reject(n, reason)

    def add(self, outcome: dict[str, Any]) -> None:
        for d in outcome.get("decisions", []):
            self.decisions.append(d)
            if d.get("action") == "scale_to_zero" and self.clock is not None:
                # acted on at the replay's clock (a late-delivered event's decision acts after its T)
                t = datetime.fromisoformat(str(d["time"]).replace("Z", "+00:00"))
                self.acted_at.setdefault((d["cluster"], d["service"], t), max(t, self.clock))
        if outcome.get("probe") == "started":
            self.probes_on_events += 1
        if outcome.get("status") == "job_failed":
            self.job_failures.append({"type": "job_failure", "cluster": outcome["cluster"],
                                      "family": outcome["family"], "alerted": bool(outcome.get("alerted"))})

    def build(self, read: int) -> ReplayResult:
        scaled = sorted({f"{d['cluster']}/{d['service']}" for d in self.decisions if d["action"] == "scale_to_zero"})
        return ReplayResult(
            decisions=self.decisions,
            job_failures=self.job_failures,
            rejected=self.rejected,
            summary={
                "type": "summary",
                "events_read": read,
                "events_rejected": len(self.rejected),
                "duplicates_ignored": self.duplicates,
                "decisions": len(self.decisions),
                "scaled_to_zero": scaled,
                "alerts_sent": 0,
                "unavailable_service_minutes": None,
                "watchdog_service_minutes": None,
                "desired_counts": {},
                # added field: STOPPED task events the watchdog received (DEPROVISIONING lines never reach it)
                "stopped_tasks_to_watchdog": len(self.stopped_to_watchdog),
                # added field: how the stopped tasks were classified (why there was, or was not, a decision),
                # one per task ARN
                "stops_by_kind": dict(sorted(Counter(self.stops.values()).items())),
                # added field: classified STOPPED events that repeated a task already counted
                "stop_repeats": self.stop_events - len(self.stops),
            },
        )
