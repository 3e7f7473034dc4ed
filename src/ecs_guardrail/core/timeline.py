"""The incident timeline: what the history table recorded, minute by minute, as a postmortem reads it.

Input is the cluster's timeline items as :meth:`HistoryStore.timeline_items` yields them (plain dicts:
``type`` ``task`` / ``service`` / ``decision`` / ``healthy_hosts``, fields as written by the recorder,
the watchdog and the sampler). Output is a :class:`Timeline`: grouped lines (first crash, first
health-check kill, runs of stops, decisions with their reason, healthy hosts dropping to zero and coming
back, recovery), the attribution table and the availability totals; :mod:`ecs_guardrail.app.timeline`
renders it as text, markdown, JSON or CSV. Grouping keeps a two-hour incident on one screen: stops of
one kind less than ``gap_minutes`` apart are one line whatever the number of services; same decisions
in the same minute are one line.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from ecs_guardrail.core.lazy import lazy_callable

if TYPE_CHECKING:
    from ecs_guardrail.core.attribution import Attribution, attribute, group_by_home, is_clean_job_exit
else:  # a timeline's attribution (the timeline command, replay --timeline), not a replay's report: imported on
    # first use (issue 33 item 2: its enum and structs). ``Timeline.attribution``'s annotation stays a name: a
    # Timeline is built and encoded, never decoded or converted (which would resolve it).
    attribute = lazy_callable("ecs_guardrail.core.attribution", "attribute", globals())
    group_by_home = lazy_callable("ecs_guardrail.core.attribution", "group_by_home", globals())
    is_clean_job_exit = lazy_callable("ecs_guardrail.core.attribution", "is_clean_job_exit", globals())
from ecs_guardrail.core.availability import (
    BLOCK_FIELDS,
    BLOCK_MINUTES,
    CLIENT_ERROR_RATIO,
    AvailabilityReport,
    Disagreement,
    MinuteState,
    Sample,
    SampleBlock,
    ScaleDown,
    ServiceCounts,
    ServiceMinute,
    availability_report,
    minute_floor,
    running_tasks_by_minute,
)
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.policy import Failure, PolicyConfig

__all__ = ["Line", "Timeline", "build_timeline", "build_timelines", "busiest_window", "availability_from_items",
           "availability_from_values", "ITEM_FIELDS",
           "samples_from_items", "observers_verdict", "iso_second", "LOOKBEHIND"]

FORMATS = ("text", "markdown", "json", "csv")

_STOP_TITLES = {
    "crash": "crashes",
    "finished": "standalone tasks finished (exit 0)",
    "health_check_kill": "health-check kills",
    "spot": "Spot interruptions",
    "scheduler": "scheduler stops (deployments, scale-in)",
    "user": "stops by a user",
    "infrastructure": "infrastructure stops",
    "unknown": "stops of unknown cause",
}
# same-time ordering: what happened, then what the watchdog made of it, then what clients saw
_ORDER = {"first_health_check_kill": 0, "first_crash": 0, "stops": 1, "service_event": 2, "decision": 3,
          "healthy_hosts": 4, "observers": 5, "recovery": 6}


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def iso_second(t: datetime) -> str:
    """``2025-08-21T12:25:03Z``: a timeline time in UTC, to the second."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Line(Struct, frozen=True):
    """One line of the timeline: from ``start`` (to ``end`` for a run), a ``category``
    (``first_crash``, ``first_health_check_kill``, ``stops``, ``decision``, ``service_event``,
    ``healthy_hosts``, ``observers``: the checker and the clients disagree, ``recovery``), the services
    involved, a count (service-minutes for ``observers``) and the words."""

    start: datetime
    category: str
    title: str
    text: str
    services: tuple[str, ...] = ()
    count: int = 1
    end: datetime | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"start": iso_second(self.start), "end": iso_second(self.end) if self.end else None,
                "category": self.category,
                "title": self.title, "text": self.text, "services": list(self.services), "count": self.count,
                **({"detail": self.detail} if self.detail else {})}


class Timeline(Struct):
    """A cluster's incident between ``since`` and ``until``."""

    cluster: str
    since: datetime
    until: datetime
    service: str | None
    lines: list[Line]
    services_in_cluster: int
    attribution: Attribution
    availability: AvailabilityReport | None
    #: ``(time, service, what)`` for plots: each stop's kind, and ``decision:<action>``
    marks: list[tuple[datetime, str, str]] = field(default_factory=list)
    #: the cluster's account and region when known (two clusters of one name never share a timeline)
    account: str | None = None
    region: str | None = None
    #: what the two observers say about the verdict (``None`` without the clients' view)
    observers: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "timeline",
            **({"observers": self.observers} if self.observers else {}),
            "cluster": self.cluster,
            **({"account": self.account} if self.account else {}),
            **({"region": self.region} if self.region else {}),
            "since": iso_second(self.since),
            "until": iso_second(self.until),
            "service": self.service,
            "lines": [ln.to_dict() for ln in self.lines],
            "attribution": self.attribution.to_dict(),
            "availability": self.availability.to_dict() if self.availability else None,
        }


class _Stop(Struct, frozen=True):
    time: datetime
    service: str
    kind: str
    task_arn: str
    az: str | None
    cause: str | None
    reason: str | None
    exit_codes: tuple[str, ...]


def _stops(items: Iterable[dict[str, Any]]) -> list[_Stop]:
    """One stop per task ARN: its earliest classified event (the notice, DEPROVISIONING or STOPPED)."""
    first: dict[str, _Stop] = {}
    for i in items:
        if i.get("type") != "task" or not i.get("kind") or not i.get("task_arn"):
            continue
        kind = "finished" if is_clean_job_exit(i.get("group"), i.get("exit_codes")) else i["kind"]
        s = _Stop(_t(i["time"]), i.get("service") or i.get("group") or "?", kind, i["task_arn"],
                  i.get("az"), i.get("cause"), i.get("stopped_reason"),
                  tuple(f"{e.get('name')}={e.get('code')}" for e in i.get("exit_codes") or []))
        if s.task_arn not in first or s.time < first[s.task_arn].time:
            first[s.task_arn] = s
    return sorted(first.values(), key=lambda s: (s.time, s.service))


def _names(services: Iterable[str], total: int, limit: int = 6) -> str:
    names = sorted(set(services))
    head = f"{len(names)} service{'s' if len(names) != 1 else ''}"
    if total and len(names) == total and total > 1:
        head += " (all)"
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return f"{head}: {shown}" if len(names) > 1 else names[0] if names else "no service"


def _stop_words(s: _Stop) -> str:
    reason = s.reason or s.kind
    if len(reason) > 90:  # cut, and close what the cut left open: "(target-group arn:aws:…)", not "(… ; exit"
        reason = reason[:89] + "\u2026"
        reason += ")" * max(0, reason.count("(") - reason.count(")"))
    bits = [reason]
    if s.cause:
        bits.append(s.cause)
    if s.exit_codes:
        bits.append("exit " + ", ".join(s.exit_codes))
    if s.az:
        bits.append(s.az)
    return f"{s.service}: " + "; ".join(b for b in bits if b)


def _stop_lines(stops: list[_Stop], total: int, gap: timedelta) -> list[Line]:
    lines: list[Line] = []
    for kind in ("crash", "health_check_kill"):
        mine = [s for s in stops if s.kind == kind]
        if mine:
            f = mine[0]
            title = "first crash" if kind == "crash" else "first health-check kill"
            lines.append(Line(f.time, f"first_{kind}", title, _stop_words(f), (f.service,), 1,
                              detail={"task_arn": f.task_arn}))
    by_kind: dict[str, list[_Stop]] = defaultdict(list)
    for s in stops:
        by_kind[s.kind].append(s)
    for kind, mine in by_kind.items():
        for run in _runs(mine, lambda r: r.time, gap):
            services = {r.service for r in run}
            zones = sorted({r.az for r in run if r.az})
            causes = sorted({r.cause for r in run if r.cause})
            text = f"{len(run)} task{'s' if len(run) != 1 else ''} of {_names(services, total)}"
            if zones:
                text += f"; {len(zones)} zone{'s' if len(zones) != 1 else ''} ({', '.join(zones)})"
            if causes:
                text += f"; causes {', '.join(causes)}"
            lines.append(Line(run[0].time, "stops", _STOP_TITLES.get(kind, kind), text, tuple(sorted(services)),
                              len(run), run[-1].time if len(run) > 1 else None, {"kind": kind}))
    return lines


def _runs(rows: list[Any], when: Any, gap: timedelta) -> list[list[Any]]:
    """Split time-sorted ``rows`` where two neighbours are more than ``gap`` apart."""
    out: list[list[Any]] = []
    for r in rows:
        if out and when(r) - when(out[-1][-1]) <= gap:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def _decision_lines(items: list[dict[str, Any]], total: int, gap: timedelta) -> list[Line]:
    """Same action and reason less than ``gap`` apart: one line (a mass hold is one line, not twelve)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for d in sorted(items, key=lambda d: d["time"]):
        groups[(d.get("action", "?"), d.get("reason", "?"))].append(d)
    lines = []
    for (action, reason), rows in groups.items():
        for ds in _runs(rows, lambda d: _t(d["time"]), gap):
            message = ds[0].get("message") or ""
            if len(ds) > 1:
                message = message.split(". ", 1)[0]
            text = f"{action} ({reason}) for {_names([d['service'] for d in ds], total)}. {message}".rstrip()
            lines.append(Line(_t(ds[0]["time"]), "decision", f"decision: {action}", text,
                              tuple(sorted({d["service"] for d in ds})), len(ds),
                              _t(ds[-1]["time"]) if len(ds) > 1 else None, {"action": action, "reason": reason}))
    return lines


def _service_event_lines(items: list[dict[str, Any]], total: int) -> list[Line]:
    groups: dict[tuple[datetime, str], list[dict[str, Any]]] = defaultdict(list)
    for e in items:
        groups[(minute_floor(_t(e["time"])), e.get("event_name") or e.get("detail_type") or "?")].append(e)
    return [Line(_t(es[0]["time"]), "service_event", f"ECS {name}", _names([e["service"] for e in es], total),
                 tuple(sorted({e["service"] for e in es})), len(es))
            for (_m, name), es in sorted(groups.items())]


_TRANSITIONS = {
    MinuteState.DOWN: "healthy hosts dropped to 0",
    MinuteState.NO_DATA: "healthy hosts: no datapoint (counted as down)",
    MinuteState.ZERO_BY_WATCHDOG: "at 0 by the watchdog",  # from this minute on: the scale-down may come later in it
    MinuteState.ZERO_BY_OPERATOR: "set to 0 by an operator (out of the count)",
    MinuteState.UP: "healthy hosts back",
}


def _availability_lines(report: AvailabilityReport, total: int) -> list[Line]:
    per: dict[str, list[ServiceMinute]] = defaultdict(list)
    for sm in report.minutes:
        per[sm.service].append(sm)
    changes: dict[tuple[datetime, MinuteState], list[tuple[str, float | None, int]]] = defaultdict(list)
    for service, ms in per.items():
        prev_state, since = MinuteState.UP, None
        for sm in ms:
            if sm.state is not prev_state:
                length = int((sm.minute - since).total_seconds() // 60) if since is not None else 0
                changes[(sm.minute, sm.state)].append((service, sm.healthy_host_count, length))
                prev_state, since = sm.state, sm.minute
    lines = []
    for (m, state), svcs in sorted(changes.items()):
        text = _names([s for s, _, _ in svcs], total)
        if state is MinuteState.UP:
            lengths = sorted({n for _, _, n in svcs if n})
            if lengths:
                text += f" after {lengths[0]}" + (f"-{lengths[-1]}" if len(lengths) > 1 else "") + " min"
        values = sorted({v for _, v, _ in svcs if v is not None})
        if values and state is MinuteState.UP:
            text += f" (minimum {int(values[0]) if float(values[0]).is_integer() else values[0]})"
        lines.append(Line(m, "healthy_hosts", _TRANSITIONS[state], text, tuple(sorted(s for s, _, _ in svcs)),
                          len(svcs), detail={"state": state.value}))
    # recovery: the first minute every service is up again after some were not
    by_minute: dict[datetime, list[ServiceMinute]] = defaultdict(list)
    for sm in report.minutes:
        by_minute[sm.minute].append(sm)
    outage_start, lost = None, 0
    for m in sorted(by_minute):
        bad = [sm for sm in by_minute[m] if sm.state not in (MinuteState.UP, MinuteState.ZERO_BY_OPERATOR)]
        if bad and outage_start is None:
            outage_start, lost = m, 0
        lost += len(bad)
        if not bad and outage_start is not None:
            minutes = int((m - outage_start).total_seconds() // 60)
            lines.append(Line(m, "recovery", "recovery",
                              f"every service healthy again; outage {outage_start:%H:%M}-"
                              f"{m - timedelta(minutes=1):%H:%M} ({minutes} min), {lost} service-minutes lost",
                              detail={"outage_start": iso_second(outage_start), "minutes": minutes,
                                      "service_minutes_lost": lost}))
            outage_start = None
    return lines


def _block(i: dict[str, Any]) -> SampleBlock:
    """A ``healthy_hosts`` block item (``per_minute``) as the sampler wrote it."""
    per = i["per_minute"]
    values = {k: tuple(None if v is None else float(v) for v in per[k]) for k in BLOCK_FIELDS if k in per}
    return SampleBlock(i["cluster"], i["service"], i["target_group"], _t(i["time"]), values,
                       request_metrics=any(k in per for k in BLOCK_FIELDS[1:]),
                       sampled_at=_t(i["sampled_at"]) if i.get("sampled_at") else None)


def _sampler_item(i: dict[str, Any]) -> SampleBlock | Sample | ServiceCounts | None:
    """One of the sampler's items as what it holds: a block item (``per_minute``) as its
    :class:`SampleBlock` (30 minutes in one object), a one-minute item (written before blocks) as its
    :class:`Sample`, a ``service_counts`` item as :class:`ServiceCounts`; ``None`` for any other item."""
    if i.get("type") == "healthy_hosts" and isinstance(i.get("per_minute"), dict):
        return _block(i)
    if i.get("type") == "healthy_hosts":
        return Sample(i["cluster"], i["service"], i["target_group"], _t(i["time"]),
                      None if i.get("no_data") or i.get("healthy_host_count") is None
                      else float(i["healthy_host_count"]),
                      i.get("desired_count"), i.get("running_count"),
                      _t(i["sampled_at"]) if i.get("sampled_at") else None)
    if i.get("type") == "service_counts":
        return ServiceCounts(i["cluster"], i["service"], _t(i["time"]), i.get("desired_count"),
                             i.get("running_count"))
    return None


def samples_from_items(items: Iterable[dict[str, Any]]) -> tuple[list[Sample], list[ServiceCounts]]:
    """The sampler's items as per-minute :class:`Sample` s and :class:`ServiceCounts`: block items
    (``per_minute``) are expanded, one-minute items (written before blocks) read as they are."""
    samples: list[Sample] = []
    counts: list[ServiceCounts] = []
    for i in items:
        found = _sampler_item(i)
        if isinstance(found, SampleBlock):
            samples.extend(found.samples())
        elif isinstance(found, Sample):
            samples.append(found)
        elif isinstance(found, ServiceCounts):
            counts.append(found)
    return samples, counts


_DISAGREEMENT_TITLES = {
    Disagreement.CHECKER_DOWN_CLIENTS_SERVED: "checker down, clients served",
    Disagreement.CHECKER_UP_CLIENTS_FAILING: "checker up, clients failing",
}
_DISAGREEMENT_WORDS = {
    Disagreement.CHECKER_DOWN_CLIENTS_SERVED: "no healthy host while requests succeeded (the load balancer failed "
                                              "open: the health check, not the service, is broken)",
    Disagreement.CHECKER_UP_CLIENTS_FAILING: "healthy hosts while clients got 5xx (a gray failure the health check "
                                             "cannot see)",
}


def _observer_lines(report: AvailabilityReport, total: int) -> list[Line]:
    """Runs of minutes where the two observers disagree, one line per direction and run (minutes of
    several services one minute apart are one run), with the service-minutes and services."""
    lines = []
    for kind in Disagreement:
        minutes = sorted((sm.minute, sm.service) for sm in report.minutes if sm.disagreement is kind)
        for run in _runs(minutes, lambda r: r[0], timedelta(minutes=1)):
            services = sorted({svc for _, svc in run})
            text = f"{len(run)} service-minutes of {_names(services, total)}: {_DISAGREEMENT_WORDS[kind]}"
            lines.append(Line(run[0][0], "observers", _DISAGREEMENT_TITLES[kind], text, tuple(services), len(run),
                              run[-1][0] if run[-1][0] != run[0][0] else None, {"disagreement": kind.value}))
    return lines


def observers_verdict(report: AvailabilityReport | None) -> str | None:
    """One sentence for the attribution: what the clients saw while the checker failed the services.

    "health checks failed on 6 of 6 services while clients were served: the checker, not the fleet"
    when every service whose checker was down had its clients served; the gray-failure sentence when
    the checker passed services whose clients failed. ``None`` without the clients' view or without a
    disagreement.
    """
    if report is None or not report.clients_view:
        return None
    down = {sm.service for sm in report.minutes if sm.state is MinuteState.DOWN and sm.clients is not None}
    served = {sm.service for sm in report.minutes if sm.disagreement is Disagreement.CHECKER_DOWN_CLIENTS_SERVED}
    failing = {sm.service for sm in report.minutes if sm.disagreement is Disagreement.CHECKER_UP_CLIENTS_FAILING}
    parts = []
    if served:
        n = len(down)
        tail = ("the checker, not the fleet" if served == down
                else "the checker is wrong about those; the rest were down for clients too")
        parts.append(f"health checks failed on {len(served)} of {n} service{'s' if n != 1 else ''} while "
                     f"clients were served: {tail}")
    if failing:
        names = ", ".join(sorted(failing)[:6]) + (f" and {len(failing) - 6} more" if len(failing) > 6 else "")
        parts.append(f"clients got 5xx from {len(failing)} service{'s' if len(failing) != 1 else ''} the health "
                     f"check called healthy ({names}): a gray failure the checker cannot see")
    return "; ".join(parts) or None


#: what :func:`availability_from_values` reads of each timeline item, in this order
ITEM_FIELDS = ("type", "time", "cluster", "service", "task_arn", "last_status", "action", "target_group",
               "healthy_host_count", "no_data", "desired_count", "running_count", "sampled_at", "per_minute")


def availability_from_items(items: Iterable[dict[str, Any]], start: datetime | None = None,
                            end: datetime | None = None, *, client_error_ratio: float = CLIENT_ERROR_RATIO,
                            within: tuple[datetime, datetime] | None = None,
                            held_until: Mapping[tuple[str, str], datetime | None] | None = None,
                            acted_at: Mapping[tuple[str, str, datetime], datetime] | None = None
                            ) -> AvailabilityReport | None:
    """The availability report from timeline items: ``healthy_hosts`` samples (blocks of minutes),
    ``service_counts``, ``scale_to_zero`` decisions and task events (running tasks). ``start``/``end``
    default to the first and last sampled minute (of those ``within`` the span given, when given);
    ``None`` when there is no sample at all. ``client_error_ratio``: ``CLIENT_ERROR_RATIO`` for the
    clients' view. ``held_until``: per ``(cluster, service)``, when the watchdog's own state says its
    hold ended (``None``: still held), for services probed under ``RECOVERY=probe``; ``acted_at``: per
    ``(cluster, service, T)`` of a scale-down, when it was delivered and acted on (a replay's event clock
    then: a decision on a late-delivered event acts after samples that still show the old count)
    (:attr:`~ecs_guardrail.core.availability.ScaleDown.held`).

    ``items`` is read once, as it comes (a store's reads can stream): what is kept of it is the blocks
    (one per target group per 30 minutes), the counts, the decisions and one ``(cluster, service, task,
    time, lastStatus)`` tuple per task event; the blocks are classified whole, as per-minute columns
    (:func:`~ecs_guardrail.core.availability.classify_service_minutes`), and expanded to per-minute samples
    only for ``within`` or to find the default ``start``/``end``."""
    return availability_from_values((tuple(map(i.get, ITEM_FIELDS)) for i in items), start, end,
                                    client_error_ratio=client_error_ratio, within=within, held_until=held_until,
                                    acted_at=acted_at)


def availability_from_values(rows: Iterable[tuple[Any, ...]], start: datetime | None = None,
                            end: datetime | None = None, *, client_error_ratio: float = CLIENT_ERROR_RATIO,
                            within: tuple[datetime, datetime] | None = None,
                            held_until: Mapping[tuple[str, str], datetime | None] | None = None,
                            acted_at: Mapping[tuple[str, str, datetime], datetime] | None = None
                            ) -> AvailabilityReport | None:
    """:func:`availability_from_items` from each item's values of :data:`ITEM_FIELDS`, in that order, as
    a tuple (``None``: no such attribute; values after those are ignored): what
    :meth:`~ecs_guardrail.adapters.store.timeline_reads.TimelineReads.timeline_values` yields, read without
    a dict per item (a fleet-day's 100,000 task events)."""
    sources: list[SampleBlock | Sample] = []  # in the items' order: a later sample of a minute replaces one
    counts: list[ServiceCounts] = []
    decisions: list[tuple[str, str, datetime]] = []
    # per (cluster, service), its task events as (task, time text, lastStatus), in the items' order: only the
    # services with samples are counted (a fleet-day's 100,000 task events name some 200 services, of which
    # 20 have a target group), their times read then. One string object per distinct task and status: each
    # item read is a fresh copy
    task_events: defaultdict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
    shared: dict[str, str] = {}
    one = shared.setdefault  # the loop's per-item call, looked up once
    for row in rows:
        kind = row[0]
        if kind == "task":
            service, arn = row[3], row[4]  # read by position: no slice of the row built per item
            if service and arn:
                cluster, time, status = row[2], row[1], row[5]
                if cluster is None or time is None:  # as an item's ``i["cluster"]``, ``i["time"]`` refuse it
                    raise KeyError("cluster" if cluster is None else "time")
                task_events[cluster, service].append((one(arn, arn), time,
                                                      "" if status is None else one(status, status)))
        elif kind == "healthy_hosts" or kind == "service_counts":
            found = _sampler_item({f: v for f, v in zip(ITEM_FIELDS, row, strict=False) if v is not None})
            if isinstance(found, ServiceCounts):
                counts.append(found)
            elif found is not None:
                sources.append(found)
        elif kind == "decision" and row[6] == "scale_to_zero":
            item = {f: v for f, v in zip(ITEM_FIELDS, row, strict=False) if v is not None}
            decisions.append((item["cluster"], item["service"], _t(item["time"])))

    def samples() -> Iterator[Sample]:
        for source in sources:
            for s in source.samples() if isinstance(source, SampleBlock) else (source,):
                if within is None or within[0] <= s.minute <= within[1]:
                    yield s

    if start is None or end is None or within is not None:
        sampled = [s.minute for s in samples()]
        if not sampled:
            return None
        start = start or min(sampled)
        end = end or max(sampled)
    elif not any(isinstance(s, Sample) or s.minutes for s in sources):
        return None
    held_until = held_until or {}
    acted_at = acted_at or {}
    downs = [ScaleDown(cluster, service, t, (cluster, service) in held_until, held_until.get((cluster, service)),
                       acted_at.get((cluster, service, t)))
             for cluster, service, t in decisions]
    with_samples = {(x.cluster, x.service) for x in sources}
    running = running_tasks_by_minute(((cluster, service, arn, _t(t), status)
                                       for (cluster, service), events in task_events.items()
                                       if (cluster, service) in with_samples for arn, t, status in events), start, end)
    del task_events, shared
    # without ``within`` the blocks go in whole (classified as columns, never a Sample per minute)
    return availability_report(samples() if within is not None else iter(sources), start, end, scale_downs=downs,
                               running_tasks=running, counts=counts, client_error_ratio=client_error_ratio)


def busiest_window(failures: list[Failure], config: PolicyConfig) -> tuple[datetime, datetime]:
    """The span attribution weighs: the ``config.window`` (the watchdog's crash window) holding the most
    failing services (each with ``fleet_signal_min_failures`` failures in it; then the most failures;
    then the earliest), from
    its first failure to its last. "At once" means what it means to the fleet test: a window, not a
    whole incident, so failures hours apart are never counted together.

    ``failures``: sorted by time (non-empty). Returns ``(first failure time, last failure time)``; one
    sliding pass, O(len(failures)).
    """
    counts: dict[str, int] = defaultdict(int)
    failing = 0
    lo = 0
    best: tuple[int, int, int, int] = (-1, -1, 0, 0)  # (failing services, failures, start index, end index)
    need = config.fleet_signal_min_failures
    for hi, f in enumerate(failures):
        counts[f.service] += 1
        if counts[f.service] == need:
            failing += 1
        while failures[lo].time < f.time - config.window:
            gone = failures[lo].service
            if counts[gone] == need:
                failing -= 1
            counts[gone] -= 1
            lo += 1
        if (failing, hi - lo + 1) > best[:2]:
            best = (failing, hi - lo + 1, lo, hi)
    return failures[best[2]].time, failures[best[3]].time


#: how far before a timeline's start its readers look for blocks and counts that reach into it
LOOKBEHIND = timedelta(minutes=BLOCK_MINUTES)


def _in_window(i: dict[str, Any], since: datetime, until: datetime) -> bool:
    """An item about ``[since, until]``: by its time; a block of samples when any of its minutes is in
    it, the counts of the sampler from one block before (they hold until the next ones)."""
    t = _t(i["time"])
    if i.get("type") == "healthy_hosts" and isinstance(i.get("per_minute"), dict):
        n = len(i["per_minute"].get("healthy_host_count") or ())
        return t <= until and t + timedelta(minutes=n) > since
    if i.get("type") == "service_counts":
        return since - LOOKBEHIND <= t <= until
    return since <= t <= until


def _services_in_cluster(items: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> int:
    """The cluster's services count: the most of the services its items name and the
    ``services_in_cluster`` its decisions recorded (on the item, or inside its ``decision`` JSON)."""
    known = {i["service"] for i in items if i.get("service")}
    counted = [int(d["services_in_cluster"]) for d in decisions if d.get("services_in_cluster")]
    for d in decisions:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            counted.append(int(json.loads(d.get("decision") or "{}").get("services_in_cluster") or 0))
    return max([len(known), *counted])


def _cluster_attribution(config: PolicyConfig, tasks: list[dict[str, Any]], stops: list[_Stop],
                         services_in_cluster: int, since: datetime, until: datetime) -> Attribution:
    """:func:`attribute` over the services' crashes and health-check kills in their busiest window
    (``[since, until]`` without any), each service's share counted among the tasks alive then."""
    zones = {i["az"] for i in tasks if i.get("az")}
    # only services' tasks (group service:...) are in the fleet test, so in the attribution: standalone tasks
    # (family:..., or a custom RunTask group) are not
    of_services = {i["task_arn"] for i in tasks if i.get("service") and i.get("task_arn")}
    failures = [Failure(s.service, s.time, StopKind(s.kind), s.task_arn, s.az) for s in stops
                if s.kind in (StopKind.CRASH.value, StopKind.HEALTH_CHECK_KILL.value)
                and s.task_arn in of_services]
    span = busiest_window(failures, config) if failures else (since, until)
    # the share's denominator: the tasks alive during the span (first seen by its end, not stopped before its
    # start), not every task of the query window: a longer --since/--until must not dilute a service's failure
    first: dict[tuple[str, str], datetime] = {}
    stopped: dict[tuple[str, str], datetime] = {}
    for i in tasks:
        if i.get("service") and i.get("task_arn"):
            key, t = (i["service"], i["task_arn"]), _t(i["time"])
            first[key] = min(first.get(key, t), t)
            if i.get("last_status") == "STOPPED":
                stopped[key] = min(stopped.get(key, t), t)
    seen: dict[str, set[str]] = defaultdict(set)
    for (svc, arn), t in first.items():
        if t <= span[1] and stopped.get((svc, arn), span[0]) >= span[0]:
            seen[svc].add(arn)
    return attribute(config, failures, seen, zones, services_in_cluster, span[0], span[1])


def build_timeline(
    items: Iterable[dict[str, Any]],
    cluster: str,
    since: datetime,
    until: datetime,
    *,
    service: str | None = None,
    config: PolicyConfig | None = None,
    gap_minutes: int = 5,
    account: str | None = None,
    region: str | None = None,
    client_error_ratio: float = CLIENT_ERROR_RATIO,
    held_until: Mapping[tuple[str, str], datetime | None] | None = None,
) -> Timeline:
    """Build the timeline of ``cluster`` from its items in ``[since, until]``.

    ``held_until``: per ``(cluster, service)`` the watchdog's own hold (as
    :func:`availability_from_items` takes it): a probe's desired count of 1 and its return to 0 are
    the watchdog's, never an operator's (``RECOVERY=probe``).

    ``account``/``region``: keep only that account's and region's items (an item without them is
    taken as theirs); ``None`` keeps all (use :func:`build_timelines` when several may be present).

    ``service`` narrows the lines and the availability figures to one service; attribution always
    weighs the whole cluster (the verdict needs the fleet). Availability covers the minutes where
    the sampler wrote samples (services without a target group have no figure).
    """
    config = config or PolicyConfig()
    items = [i for i in items if i.get("cluster") in (cluster, None) and "time" in i
             and (account is None or i.get("account") in (account, None))
             and (region is None or i.get("region") in (region, None))
             and _in_window(i, since, until)]
    tasks = [i for i in items if i.get("type") == "task"]
    stops = _stops(tasks)
    decisions = [i for i in items if i.get("type") == "decision"]
    services_in_cluster = _services_in_cluster(items, decisions)
    attribution = _cluster_attribution(config, tasks, stops, services_in_cluster, since, until)

    def mine(i: dict[str, Any]) -> bool:
        return service is None or i.get("service") == service

    report = availability_from_items([i for i in items if mine(i)], client_error_ratio=client_error_ratio,
                                      within=(since, until), held_until=held_until)
    total = services_in_cluster if service is None else 1
    gap = timedelta(minutes=gap_minutes)
    lines = _stop_lines([s for s in stops if mine({"service": s.service})], total, gap)
    lines += _decision_lines([d for d in decisions if mine(d)], total, gap)
    lines += _service_event_lines([e for e in items if e.get("type") == "service" and mine(e)], total)
    if report is not None:
        with_figure = len({(sm.service) for sm in report.minutes}) if service is None else 1
        lines += _availability_lines(report, with_figure)
        lines += _observer_lines(report, with_figure)
    lines.sort(key=lambda ln: (ln.start, _ORDER.get(ln.category, 9)))
    marks = [(s.time, s.service, s.kind) for s in stops if mine({"service": s.service})]
    marks += [(_t(d["time"]), d["service"], f"decision:{d.get('action')}") for d in decisions if mine(d)]
    return Timeline(cluster, since, until, service, lines, services_in_cluster, attribution, report, sorted(marks),
                    account, region, observers_verdict(report))


def build_timelines(items: Iterable[dict[str, Any]], cluster: str, since: datetime, until: datetime, *,
                    account: str | None = None, region: str | None = None, **kwargs: Any) -> list[Timeline]:
    """One timeline per (account, region) holding a cluster named ``cluster``: clusters of two accounts
    or regions never mix (their stops, decisions, attribution and availability stay apart). Items without
    an account or region are ``account``'s and ``region``'s (the reader's own). The own home comes first.
    """
    items = [i for i in items if i.get("cluster") in (cluster, None)]
    if account is None and region is None:
        # a reader that does not know its own home (the timeline command): when every item that names
        # one names the same account and region, the items without one (samples, decisions) are theirs
        named = {(i.get("account"), i.get("region")) for i in items if i.get("account") and i.get("region")}
        if len(named) == 1:
            account, region = next(iter(named))
    groups = group_by_home(items, account, region)
    homes = sorted(groups, key=lambda h: (h[:2] != (account, region), str(h[0]), str(h[1])))
    if not homes:
        homes = [(account, region, cluster)]
    return [build_timeline(groups.get(h, []), cluster, since, until, account=h[0], region=h[1], **kwargs)
            for h in homes]
