"""Property test (issue 18): what must not depend on the order EventBridge delivers events in.

EventBridge delivers at least once and out of order, and an incident is exactly when delivery lags. Each
example is one scenario holding :data:`INCIDENTS` independent incidents (one cluster each: a service that
crash-loops in bursts, ended by a quiet window or by ECS's ``SERVICE_STEADY_STATE``, with maintenance
notices, a slow loop that ECS reports ``SERVICE_TASK_START_IMPAIRED`` for, and two neighbours whose
stops never count). It is replayed twice: in event-time order, and delivered the way a lagging bus
delivers it (every event at its time plus a lag of up to :data:`LAG`, a few events a second time later
still). Then, incident by incident:

- no stop is counted twice: every decision counts at most the distinct crashed tasks of its window, and
  the per-minute failure counts the watchdog keeps add up to the distinct failures (core/summary.py);
- every failure is in the episode its own time falls in: the same decisions (time, action, reason,
  crashes in the window), the same episode boundary (``counted_after``) and end at the close;
- the same services held at zero at the end (desired counts read back from ECS);
- the same unavailable and watchdog service-minutes (healthy_hosts.csv on the replay's one clock).

The lag is shorter than the spacing of one service's own crashes (two minutes and more): within that
bound the order of a service's own failures is kept, and the decision's ``T`` (the newest failure known
when it is delivered, ARCHITECTURE.md rule 1) is the same in both orders; a longer lag moves ``T`` itself,
by rule. Everything else moves: a crash stamped after a steady state is delivered before it, a steady
state before the crash that completes the loop, an IMPAIRED after the crashes that follow it, a
decision after minutes the sampler already ticked; the neighbours' stops and the duplicates anywhere.
A notice comes two minutes before its task's stop, as ECS sends it. ``ECS_GUARDRAIL_PROPERTY_EXAMPLES``
sets the number of examples (25 by default: 250 incidents, two replays each).
"""

from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import ecsgen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario

#: independent incidents (clusters) per generated scenario
INCIDENTS = 10
#: the longest delivery lag (seconds): shorter than the spacing of one service's own crashes
LAG = 100
WINDOW = timedelta(minutes=30)
THRESHOLD = 5
ENV = {"ALERT_ONLY_CLUSTERS": "prod-*", "CRASH_THRESHOLD": str(THRESHOLD), "CRASH_WINDOW_MINUTES": "30",
       "FLEET_SIGNAL_MIN_FAILURES": "2", "MAX_ACTION_FRACTION": "0.2", "MIN_ACTIONS_ALLOWED": "1"}
MAINTENANCE = "ECS is performing maintenance on the underlying infrastructure hosting the task"


@dataclass
class Incident:
    """One cluster's events and what the generator knows of them (its truth)."""

    cluster: str
    events: list[dict[str, Any]] = field(default_factory=list)
    crashes: dict[tuple[str, str], datetime] = field(default_factory=dict)  # (service, task id) -> crash time
    down: list[tuple[datetime, datetime]] = field(default_factory=list)  # minutes the target group has 0 healthy


def _service_action(cluster: str, service: str, name: str, t: datetime) -> dict[str, Any]:
    e = ecsgen.impaired_event(cluster, service, t)
    e["id"] = f"{name.lower()}-{cluster}-{service}-{ecsgen.iso(t)}"
    e["detail"].update(eventName=name, eventType="INFO" if name == "SERVICE_STEADY_STATE" else "WARN")
    return e


def _notice(cluster: str, service: str, task_id: str, t: datetime) -> dict[str, Any]:
    e = ecsgen.task_event(cluster, service, task_id, "crash_exit", t, version=5, last_status="RUNNING",
                          event_id=f"notice-{cluster}-{task_id}")
    e["detail"].update(stopCode="TerminationNotice", stoppedReason=MAINTENANCE, capacityProviderName="FARGATE")
    e["detail"]["containers"][0].pop("exitCode", None)
    e["detail"].pop("stoppedAt", None)
    return e


@st.composite
def incident(draw: st.DrawFn, n: int) -> Incident:
    """A crash loop in bursts, each ended by a quiet window or by a steady state, plus what never counts."""
    cluster = f"qa-{n}"
    inc = Incident(cluster)
    ids = iter(range(1, 10_000))

    def task_id() -> str:
        return f"{n:08x}{next(ids):024x}"

    t = ecsgen.T0 + timedelta(seconds=draw(st.integers(0, 600)))
    for _ in range(draw(st.integers(1, 3))):
        start = t
        for _ in range(draw(st.integers(3, 8))):
            tid = task_id()
            kind = draw(st.sampled_from(["crash_exit", "crash_exit", "crash_start", "maintenance"]))
            if kind == "maintenance":  # a TerminationNotice two minutes before the task stops with exit 143
                inc.events.append(_notice(cluster, "loop", tid, t - timedelta(seconds=120)))
                stop = ecsgen.task_event(cluster, "loop", tid, "crash_exit", t)
                stop["detail"]["containers"][0]["exitCode"] = 143
                inc.events.append(stop)
            else:
                inc.events.append(ecsgen.task_event(cluster, "loop", tid, kind, t))
                inc.crashes[("loop", tid)] = t
            t += timedelta(seconds=draw(st.integers(120, 240)))
        last = t - timedelta(seconds=120)
        inc.down.append((start, last + timedelta(minutes=2)))
        if draw(st.booleans()):  # ECS reports the service steady a little after its last crash ...
            steady = last + timedelta(seconds=draw(st.integers(20, 300)))
            inc.events.append(_service_action(cluster, "loop", "SERVICE_STEADY_STATE", steady))
            t = steady + timedelta(seconds=draw(st.integers(20, 300)))  # ... and the next burst soon after
        else:  # a quiet window longer than the crash window
            t = last + WINDOW + timedelta(seconds=draw(st.integers(61, 900)))
    if draw(st.booleans()):  # a slow loop (below the rate) that ECS reports impaired
        for k in range(3):
            tid = task_id()
            inc.events.append(ecsgen.task_event(cluster, "slow", tid, "crash_start", t + timedelta(minutes=9 * k)))
            inc.crashes[("slow", tid)] = t + timedelta(minutes=9 * k)
        # ECS's own signal, between two of its failures and more than the lag away from both (its T is its
        # own time: a crash delivered around it would change what the decision counts, by rule)
        inc.events.append(_service_action(cluster, "slow", "SERVICE_TASK_START_IMPAIRED", t + timedelta(
            minutes=9 * draw(st.integers(1, 2)), seconds=draw(st.integers(LAG + 20, 540 - LAG - 20)))))
    for _ in range(draw(st.integers(0, 4))):  # stops that never count: Spot, deployments, users
        at = ecsgen.T0 + timedelta(seconds=draw(st.integers(0, 7200)))
        kind = draw(st.sampled_from(["spot", "deploy", "user"]))
        inc.events.extend(ecsgen.task_stop_events(cluster, "quiet", task_id(), kind, at,
                                                  with_notice=kind == "spot"))
    return inc


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    incidents = [draw(incident(n)) for n in range(INCIDENTS)]
    events = [e for inc in incidents for e in inc.events]
    lagged = []
    for i, e in enumerate(sorted(events, key=lambda e: e["time"])):
        t = datetime.fromisoformat(e["time"].replace("Z", "+00:00"))
        lagged.append((t + timedelta(seconds=draw(st.integers(0, LAG))), i, e))
        if draw(st.integers(0, 9)) == 0:  # delivered twice, the second time later still
            lagged.append((t + timedelta(seconds=draw(st.integers(0, LAG))), i + 0.5, copy.deepcopy(e)))
    delivered = [e for _, _, e in sorted(lagged, key=lambda x: (x[0], x[1]))]
    return {"incidents": incidents, "in_order": sorted(events, key=lambda e: e["time"]), "delivered": delivered}


def _fleet(incidents: list[Incident]) -> dict[str, Any]:
    fleet = ecsgen.fleet({inc.cluster: [("loop", 2, {}), ("slow", 2, {}), ("quiet", 2, {})] for inc in incidents})
    for c in fleet["clusters"]:
        c["services"][0]["targetGroups"] = [f"{c['name']}-loop"]
    return fleet


def _healthy_hosts(incidents: list[Incident]) -> str:
    """One row per minute per loop target group, from the first event to ten minutes after the last: 2
    healthy hosts, 0 while a burst crashes."""
    end = max(datetime.fromisoformat(e["time"].replace("Z", "+00:00")) for inc in incidents for e in inc.events)
    end += timedelta(minutes=10)
    rows = ["time,target_group,healthy_host_count"]
    m = ecsgen.T0
    while m <= end:
        for inc in incidents:
            down = any(a - timedelta(seconds=59) <= m <= b for a, b in inc.down)
            rows.append(f"{ecsgen.iso(m)},{inc.cluster}-loop,{0 if down else 2}")
        m += timedelta(minutes=1)
    return "\n".join(rows) + "\n"


def _replay(incidents: list[Incident], events: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
    state: dict[str, Any] = {}

    def read_state(_aws: Any, res: Any) -> None:
        for inc in incidents:
            for service in ("loop", "slow"):
                state[(inc.cluster, service)] = res.history.state.load(inc.cluster, service, fresh=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = ecsgen.write_scenario(Path(tmp), _fleet(incidents), events, ENV)
        (folder / "healthy_hosts.csv").write_text(_healthy_hosts(incidents))
        return replay(load_scenario(folder), keep_open=read_state), state


def _decisions(res: Any, cluster: str) -> list[tuple[Any, ...]]:
    return sorted((d["service"], d["time"], d["action"], d["reason"], d["crashes_in_window"])
                  for d in res.decisions if d["cluster"] == cluster)


def _minutes(res: Any, cluster: str) -> tuple[int, int]:
    mins = [m for m in res.availability.minutes if m.cluster == cluster]
    return (sum(m.state.value in ("down", "no_data", "zero_by_watchdog") for m in mins),
            sum(m.state.value == "zero_by_watchdog" for m in mins))


EXAMPLES = int(os.environ.get("ECS_GUARDRAIL_PROPERTY_EXAMPLES", "25"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])
@given(scenario=scenarios())
def test_decisions_do_not_depend_on_delivery_order(scenario: dict[str, Any]) -> None:
    incidents: list[Incident] = scenario["incidents"]
    ordered, ordered_state = _replay(incidents, scenario["in_order"])
    lagged, lagged_state = _replay(incidents, scenario["delivered"])
    assert lagged.summary["events_rejected"] == ordered.summary["events_rejected"] == 0
    for inc in incidents:
        c = inc.cluster
        # every failure in the episode its own time falls in: the same decisions, at the same T
        assert _decisions(lagged, c) == _decisions(ordered, c), (c, _decisions(ordered, c), _decisions(lagged, c))
        # no stop counted twice: a decision never counts more than the distinct crashed tasks of its window
        for d in (d for d in lagged.decisions if d["cluster"] == c):
            t = datetime.fromisoformat(d["time"].replace("Z", "+00:00"))
            mine = [x for (svc, _), x in inc.crashes.items() if svc == d["service"] and t - WINDOW <= x <= t]
            assert d["crashes_in_window"] <= len(mine), d
        for service in ("loop", "slow"):
            a, b = ordered_state[(c, service)], lagged_state[(c, service)]
            assert (a.counted_after, a.episode_end) == (b.counted_after, b.episode_end), (c, service)
            assert [(m.minute, m.count) for m in a.minutes] == [(m.minute, m.count) for m in b.minutes], (c, service)
        # the same services held at zero, the same availability and watchdog minutes
        key = f"{c}/loop"
        assert lagged.summary["desired_counts"][key] == ordered.summary["desired_counts"][key]
        assert _minutes(lagged, c) == _minutes(ordered, c), c
    assert lagged.summary["desired_counts"] == ordered.summary["desired_counts"]
    assert lagged.summary["unavailable_service_minutes"] == ordered.summary["unavailable_service_minutes"]
    assert lagged.summary["watchdog_service_minutes"] == ordered.summary["watchdog_service_minutes"]
    # the counts the watchdog keeps add up to the distinct failures of their horizon: every stop counted once
    for inc in incidents:
        for service in ("loop", "slow"):
            s = lagged_state[(inc.cluster, service)]
            if not s.minutes:
                assert not [1 for (svc, _) in inc.crashes if svc == service], (inc.cluster, service)
                continue
            oldest = s.minutes[0].minute
            mine = [x for (svc, _), x in inc.crashes.items() if svc == service and x >= oldest]
            assert sum(m.count for m in s.minutes) == len(mine), (inc.cluster, service)
