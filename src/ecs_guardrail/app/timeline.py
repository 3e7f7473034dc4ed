"""``ecs-guardrail timeline`` and ``replay --timeline``: read the history table, build, render.

The decisions about what a timeline says are in :mod:`ecs_guardrail.core.timeline`; this module reads
(``HistoryStore.timeline_brief``: one Query per cluster-day on the ``gsi1`` index) and renders a
:class:`~ecs_guardrail.core.timeline.Timeline` as text, markdown, JSON or CSV.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.attribution import Attribution
from ecs_guardrail.core.availability import CLIENT_ERROR_RATIO, AvailabilityReport, MinuteState
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.policy import PolicyConfig
from ecs_guardrail.core.timeline import LOOKBEHIND, Line, Timeline, build_timeline, build_timelines, iso_second
from ecs_guardrail.replay.lines import decode_line

__all__ = ["FORMATS", "load_timeline", "load_timelines", "parse_time", "render", "render_csv", "render_markdown",
           "render_text", "scenario_span"]


def parse_time(text: str) -> datetime:
    """``2025-08-21T15:00:00Z``, ``2025-08-21T15:00`` or ``2025-08-21`` (UTC when no offset is given).

    Raises:
        ValueError: not an ISO 8601 date or time.
    """
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def probe_holds(store: HistoryStore, items: list[dict[str, Any]]) -> dict[tuple[str, str], datetime | None]:
    """Per ``(cluster, service)`` the watchdog scaled to 0 and then probed (``RECOVERY=probe``), when its own
    state says the hold ended (the probe that passed restored it), ``None`` while still held: a probe's
    desired count of 1 and its return to 0 are the watchdog's changes, never an operator's, so the
    availability keeps the hold's minutes the watchdog's (ARCHITECTURE.md, "Recovery"). One GetItem of
    the service's summary per service scaled in ``items``; a summary that cannot be read (another
    account's cluster key, a table without the state) leaves the service to the samples.
    """
    out: dict[tuple[str, str], datetime | None] = {}
    scaled = sorted({(str(i["cluster"]), str(i["service"])) for i in items
                     if i.get("type") == "decision" and i.get("action") == "scale_to_zero" and i.get("service")})
    for cluster, service in scaled:
        try:
            ep = store.state.load(cluster, service, fresh=True).episode
        except (ClientError, KeyError, ValueError):  # the samples still tell the story: never a failed timeline
            continue
        if ep is None or not ep.acted or not ep.probes:
            continue
        restored = ep.released
        out[(cluster, service)] = (ep.ended_at or ep.last_failure) if restored else None
    return out


def load_timeline(store: HistoryStore, cluster: str, since: datetime, until: datetime, *,
                  service: str | None = None, config: PolicyConfig | None = None,
                  client_error_ratio: float = CLIENT_ERROR_RATIO) -> Timeline:
    """Read the cluster's timeline items for ``[since, until]`` and build its :class:`Timeline`."""
    items = list(store.timeline_brief(cluster, since - LOOKBEHIND, until))  # blocks reaching into the window
    return build_timeline(items, cluster, since, until, service=service, config=config,
                          client_error_ratio=client_error_ratio, held_until=probe_holds(store, items))


def load_timelines(store: HistoryStore, cluster: str, since: datetime, until: datetime, *,
                   account: str | None = None, region: str | None = None, service: str | None = None,
                   config: PolicyConfig | None = None,
                   client_error_ratio: float = CLIENT_ERROR_RATIO) -> list[Timeline]:
    """One :class:`Timeline` per (account, region) that holds a cluster named ``cluster`` (the own one,
    ``account``/``region``, first): two accounts' clusters of one name never mix."""
    fields = tuple(dict.fromkeys((*HistoryStore.TIMELINE_FIELDS, "account", "region")))
    items = list(store.timeline_brief(cluster, since - LOOKBEHIND, until, fields=fields))
    return build_timelines(items, cluster, since, until, account=account, region=region, service=service,
                           config=config, client_error_ratio=client_error_ratio, held_until=probe_holds(store, items))


def scenario_span(scenario: Any, events: tuple[datetime, datetime] | None = None,
                  *, read_events: bool = True) -> tuple[datetime, datetime] | None:
    """First and last time of a scenario, or ``None``: of its events and of ``healthy_hosts.csv``'s rows.

    ``events``: the replay's own span of the events it accepted (``ReplayResult.clock_span``), used instead
    of reading ``events.jsonl`` when ``read_events`` is false. A rejected event's stamp (a wrong clock's
    year 2199) is no time of the incident: it must not stretch the timeline's window, whose reads are one
    Query per shard of every cluster-hour in it (63,000 days: minutes of CPU and a report "to 2199").
    """
    times: list[datetime] = []
    if not read_events:
        times.extend(events or ())
    else:
        with scenario.events_path.open("rb") as fh:
            for line in fh:
                try:
                    t = json.loads(decode_line(line)[0]).get("time")
                    if t:
                        times.append(parse_time(str(t)))
                except (ValueError, AttributeError, UnicodeDecodeError):
                    continue
    csv_path: Path | None = scenario.healthy_hosts_path
    if csv_path is not None:  # read as the replay reads it: quoted cells, the time column anywhere
        from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv

        with contextlib.suppress(ScenarioError):  # the replay named the bad row already
            times.extend(row[0] for row in read_healthy_hosts_csv(csv_path))
    return (min(times), max(times)) if times else None


FORMATS = ("text", "markdown", "json", "csv")


def _clock(t: datetime, day: bool) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S" if day else "%H:%M:%S")


def _when(line: Line, day: bool) -> str:
    if line.end and line.end != line.start:
        end = _clock(line.end, day and line.end.date() != line.start.date())
        return f"{_clock(line.start, day)}-{end}"
    return _clock(line.start, day)


def _totals(tl: Timeline) -> list[str]:
    r = tl.availability
    day = tl.since.date() != tl.until.date()
    if r is None:
        return ["availability: no samples in this window (no target group, or the sampler was not running)"]
    c = r.by_cause
    return [
        f"service-minutes lost: {r.unavailable_service_minutes} (no healthy host: {c['down']}, no datapoint: "
        f"{c['no_data']}, scaled to 0 by the watchdog: {c['zero_by_watchdog']})",
        f"availability {r.availability_pct}% of {r.denominator} service-minutes, "
        f"{_clock(r.start, day)[:-3]}-{_clock(r.end, day)[:-3]} UTC; "
        f"coverage {r.coverage_pct}%; set to 0 by an operator (not counted): "
        f"{sum(s.minutes[MinuteState.ZERO_BY_OPERATOR] for s in r.services)}",
        f"tasks running but no healthy target: {r.divergent_service_minutes} service-minutes",
        *_clients_totals(r),
    ]


def _clients_totals(r: AvailabilityReport) -> list[str]:
    """The clients' view beside the checker's (request metrics), and who has healthy hosts only."""
    if not r.clients_view:
        return []
    d = r.checker_disagreement_minutes or {}
    out = [f"clients' view (requests, 5xx under the error ratio): served {r.served_service_minutes} "
           f"service-minutes, idle {r.idle_service_minutes}; observers disagree: checker down while clients "
           f"served {d.get('checker_down_clients_served', 0)}, checker up while clients failed "
           f"{d.get('checker_up_clients_failing', 0)}"]
    if r.healthy_hosts_only:
        out.append(f"healthy hosts only (Network Load Balancer: no request metrics): {', '.join(r.healthy_hosts_only)}")
    return out


def _attribution_rows(a: Attribution) -> list[tuple[str, str, str, str, str]]:
    return [(r.service, f"{r.failed_tasks}/{r.tasks_seen}", f"{r.share:.0%}",
             f"{r.crashes}/{r.health_check_kills}", ", ".join(r.zones) or "-") for r in a.rows]


def _home(tl: Timeline) -> str:
    """``" (account A, region R)"`` when known: two accounts' clusters of one name get a timeline each."""
    parts = [f"account {tl.account}" if tl.account else "", f"region {tl.region}" if tl.region else ""]
    parts = [p for p in parts if p]
    return f" ({', '.join(parts)})" if parts else ""


def render_text(tl: Timeline, max_attribution_rows: int = 12) -> str:
    day = tl.since.date() != tl.until.date()
    head = (f"Incident timeline: cluster {tl.cluster}{_home(tl)}" + (f", service {tl.service}" if tl.service else "")
            + f", {iso_second(tl.since)} to {iso_second(tl.until)} (UTC)")
    out = [head, "=" * min(len(head), 100)]
    if not tl.lines:
        out.append("nothing recorded in this window")
    width = max((len(_when(ln, day)) for ln in tl.lines), default=8)
    twidth = max((len(ln.title) for ln in tl.lines), default=10)
    for ln in tl.lines:
        out.append(f"{_when(ln, day):<{width}}  {ln.title:<{twidth}}  {ln.text}")
    a = tl.attribution
    # a timeline that spans days dates its attribution too (14:02 of which day?)
    out += ["", f"Attribution {_clock(a.start, day)}-{_clock(a.end, day)}: {a.verdict.value.upper()} - {a.why}"]
    if tl.observers:
        out.append(f"  two observers: {tl.observers}")
    if a.rows:
        out.append(f"  {'service':<20} {'failed/seen':>11} {'share':>6} {'crash/hc':>9}  zones")
        for svc, fs, share, ch, zones in _attribution_rows(a)[:max_attribution_rows]:
            out.append(f"  {svc:<20} {fs:>11} {share:>6} {ch:>9}  {zones}")
        if len(a.rows) > max_attribution_rows:
            out.append(f"  ... and {len(a.rows) - max_attribution_rows} more services")
    out += ["", "Totals"] + [f"  {t}" for t in _totals(tl)]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(tl: Timeline) -> str:
    day = tl.since.date() != tl.until.date()
    out = [f"### Incident timeline: `{tl.cluster}`" + (f" / `{tl.service}`" if tl.service else "") + _home(tl),
           "", f"{iso_second(tl.since)} to {iso_second(tl.until)} (UTC)", "",
           "| time (UTC) | what | detail |", "| --- | --- | --- |"]
    for ln in tl.lines:
        title = f"**{ln.title}**" if ln.category in ("first_crash", "first_health_check_kill", "decision",
                                                       "observers", "recovery") else ln.title
        out.append(f"| {_when(ln, day)} | {_md(title)} | {_md(ln.text)} |")
    a = tl.attribution
    out += ["", f"**Attribution** ({_clock(a.start, day)}-{_clock(a.end, day)}): **{a.verdict.value}**. "
            f"{_md(a.why)}.", ""]
    if tl.observers:
        out += [f"**Two observers**: {_md(tl.observers)}.", ""]
    if a.rows:
        out += ["| service | failed / seen tasks | share | crashes / hc kills | zones |",
                "| --- | --- | --- | --- | --- |"]
        out += [f"| {' | '.join(_md(c) for c in row)} |" for row in _attribution_rows(a)]
        out.append("")
    out += ["**Totals**", ""] + [f"- {t}" for t in _totals(tl)]
    return "\n".join(out) + "\n"


def render_csv(tl: Timeline) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["start", "end", "category", "title", "count", "services", "text"])
    for ln in tl.lines:
        w.writerow([iso_second(ln.start), iso_second(ln.end) if ln.end else "", ln.category, ln.title, ln.count,
                    " ".join(ln.services), ln.text])
    r = tl.availability
    if r is not None and r.clients_view:  # both observers' figures, side by side, as rows of category "totals"
        start, end = iso_second(r.start), iso_second(r.end)
        w.writerow([start, end, "totals", "unavailable_service_minutes", r.unavailable_service_minutes, "",
                    "the health checker's view: no healthy host, no datapoint or scaled to 0 by the watchdog"])
        w.writerow([start, end, "totals", "served_service_minutes", r.served_service_minutes, "",
                    "the clients' view: requests answered, 5xx under the error ratio"])
        for kind, n in (r.checker_disagreement_minutes or {}).items():
            w.writerow([start, end, "totals", kind, n, "", "minutes where the two observers disagree"])
        if r.healthy_hosts_only:
            w.writerow([start, end, "totals", "healthy_hosts_only", len(r.healthy_hosts_only),
                        " ".join(r.healthy_hosts_only), "Network Load Balancer: no request metrics"])
        if tl.observers:
            w.writerow([start, end, "totals", "two_observers", "", "", tl.observers])
    return buf.getvalue()


def render(tl: Timeline, fmt: str = "text") -> str:
    """The timeline as ``text``, ``markdown``, ``json`` (one document) or ``csv`` (the lines; with the clients'
    view, then rows of category ``totals``: both observers' figures side by side)."""
    if fmt == "text":
        return render_text(tl)
    if fmt == "markdown":
        return render_markdown(tl)
    if fmt == "json":
        return json.dumps(tl.to_dict(), indent=2) + "\n"
    if fmt == "csv":
        return render_csv(tl)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
