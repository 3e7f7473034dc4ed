"""Property tests: generated event storms over a small fleet, replayed end to end on the embedded AWS.

Invariants (STYLE.md "Tests", ARCHITECTURE.md "Decision policy"):

- nothing in an alert-only cluster, and no service tagged ``ecs-guardrail:mode=alert-only``, is scaled;
- only services with a genuine crash loop (crashes or SERVICE_TASK_START_IMPAIRED) are ever scaled:
  Spot stops, deployments, user stops and ELB health-check kills never cause a scale-down;
- in no window does the watchdog scale more services of a cluster than the blast-radius bound;
- a service gets at most one decision per episode (the stream spans less than one window), plus the one
  escalation of an episode opened by health-check kills;
- delivering the stream twice (every event duplicated, or the whole stream redelivered) yields the
  same decisions and the same desired counts.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections import Counter
from datetime import timedelta
from pathlib import Path

import ecsgen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_guardrail.replay.run import replay
from ecs_guardrail.replay.scenario import load_scenario

DEV = [f"svc{i}" for i in range(6)]
PROD = ["orders", "payments"]
WINDOW_MIN = 30
THRESHOLD = 3


@st.composite
def storms(draw: st.DrawFn) -> dict:
    opted_out = draw(st.sets(st.sampled_from(DEV), max_size=2))
    fraction = draw(st.sampled_from(["0.2", "0.34", "0.5"]))
    incidents = draw(st.lists(
        st.tuples(
            st.sampled_from([("development", s) for s in DEV] + [("production", s) for s in PROD]),
            st.sampled_from(ecsgen.KINDS),
            st.integers(0, 24),  # start minute: the whole stream fits in one 30-minute window
            st.integers(1, 4),  # tasks stopped this way
        ),
        min_size=1, max_size=6))
    impaired = draw(st.lists(st.sampled_from([("development", s) for s in DEV] + [("production", "orders")]),
                             max_size=2, unique=True))
    events: list[dict] = []
    n = 0
    for (cluster, service), kind, minute, count in incidents:
        for k in range(count):
            n += 1
            t = ecsgen.T0 + timedelta(minutes=minute, seconds=37 * k)
            events.extend(ecsgen.task_stop_events(cluster, service, f"{n:032x}", kind, t,
                                                  with_notice=draw(st.booleans())))
    for i, (cluster, service) in enumerate(impaired):
        events.append(ecsgen.impaired_event(cluster, service, ecsgen.T0 + timedelta(minutes=20 + i)))
    events.sort(key=lambda e: e["time"])
    # small reordering: swap a few neighbours; duplicates: repeat a few events a little later
    for i in draw(st.lists(st.integers(0, max(0, len(events) - 2)), max_size=6)):
        if i + 1 < len(events):
            events[i], events[i + 1] = events[i + 1], events[i]
    for i in draw(st.lists(st.integers(0, len(events) - 1), max_size=4)):
        events.insert(min(len(events), i + 3), events[i])
    fleet = ecsgen.fleet({
        "development": [(s, 2, ecsgen.OPT_OUT if s in opted_out else {"team": "x"}) for s in DEV],
        "production": [(s, 3, {}) for s in PROD],
    })
    env = {"ALERT_ONLY_CLUSTERS": "production", "CRASH_THRESHOLD": str(THRESHOLD),
           "CRASH_WINDOW_MINUTES": str(WINDOW_MIN), "MAX_ACTION_FRACTION": fraction,
           "MIN_ACTIONS_ALLOWED": "1", "FLEET_SIGNAL_MIN_FAILURES": "2"}
    return {"fleet": fleet, "events": events, "env": env, "opted_out": opted_out,
            "impaired": set(impaired), "fraction": float(fraction)}


def _run(storm: dict, events: list[dict]):
    with tempfile.TemporaryDirectory() as tmp:
        folder = ecsgen.write_scenario(Path(tmp), storm["fleet"], events, storm["env"])
        return replay(load_scenario(folder))


def _key(d: dict) -> tuple:
    return (d["cluster"], d["service"], d["action"], d["reason"], d["time"], d["crashes_in_window"],
            d["health_check_kills_in_window"])


def _crash_looping(storm: dict) -> set[tuple[str, str]]:
    """Services that may legitimately be scaled: enough distinct crashed tasks, or ECS said impaired."""
    crashed: Counter[tuple[str, str]] = Counter()
    seen = set()
    for e in storm["events"]:
        d = e["detail"]
        if e["detail-type"] == "ECS Task State Change" and d.get("stopCode") in (
                "EssentialContainerExited", "TaskFailedToStart") and d["taskArn"] not in seen:
            seen.add(d["taskArn"])
            crashed[(d["clusterArn"].rsplit("/", 1)[1], d["group"].split(":", 1)[1])] += 1
    return {s for s, n in crashed.items() if n >= THRESHOLD} | storm["impaired"]


def _check_invariants(storm: dict, res) -> None:
    initial = {f"{c['name']}/{s['name']}": s["desiredCount"] for c in storm["fleet"]["clusters"]
               for s in c["services"]}
    counts = res.summary["desired_counts"]
    scaled = [d for d in res.decisions if d["action"] == "scale_to_zero"]
    # alert-only cluster and opted-out services: never scaled, never a scale decision
    for name in ("production/orders", "production/payments", *(f"development/{s}" for s in storm["opted_out"])):
        assert counts[name] == initial[name], (name, res.decisions)
    assert not [d for d in scaled if d["cluster"] == "production" or d["service"] in storm["opted_out"]]
    # only a real crash loop is ever scaled; every changed count is one the watchdog decided
    allowed = _crash_looping(storm)
    for d in scaled:
        assert (d["cluster"], d["service"]) in allowed, d
    changed = {k for k, v in counts.items() if v != initial[k]}
    assert changed == {f"{d['cluster']}/{d['service']}" for d in scaled}
    assert all(counts[k] == 0 for k in changed)
    # blast radius: in any window, at most the bound of scale-downs per cluster
    bound = max(1, math.floor(storm["fraction"] * len(DEV) + 1e-9))
    times = sorted(d["time"] for d in scaled if d["cluster"] == "development")
    for i, start in enumerate(times):
        in_window = [t for t in times[i:] if t <= ecsgen.iso(_parse(start) + timedelta(minutes=WINDOW_MIN))]
        assert len(in_window) <= bound, (times, bound)
    # one decision per service per episode (the whole stream is one episode), plus at most the one escalation
    # of an episode opened by health-check kills (rule 2)
    per_service = Counter((d["cluster"], d["service"]) for d in res.decisions if not d["escalation"])
    assert max(per_service.values(), default=0) <= 1, res.decisions
    for d in (d for d in res.decisions if d["escalation"]):
        first = [x for x in res.decisions if (x["cluster"], x["service"]) == (d["cluster"], d["service"])]
        assert len(first) == 2 and first[0]["trigger"] == "health_check_kills" and first[0]["time"] <= d["time"], first
        assert d["trigger"] in ("crash_loop", "impaired"), d


def _parse(text: str):
    from datetime import UTC, datetime

    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)


# each example is two full replays on moto (~0.5-1 s each): sizes keep the suite fast; raise them with
# ECS_GUARDRAIL_PROPERTY_EXAMPLES for a deeper run
EXAMPLES = int(os.environ.get("ECS_GUARDRAIL_PROPERTY_EXAMPLES", "12"))


SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(storm=storms())
def test_storm_invariants_and_duplicate_delivery(storm: dict) -> None:
    once = _run(storm, storm["events"])
    _check_invariants(storm, once)
    # every event delivered twice in a row: same decisions, same desired counts
    twice = _run(storm, [e for e in storm["events"] for _ in (0, 1)])
    _check_invariants(storm, twice)
    assert sorted(map(_key, twice.decisions)) == sorted(map(_key, once.decisions))
    assert twice.summary["desired_counts"] == once.summary["desired_counts"]
    assert twice.summary["events_rejected"] == once.summary["events_rejected"] == 0


@settings(max_examples=max(3, EXAMPLES // 3), deadline=None, suppress_health_check=SLOW)
@given(storm=storms())
def test_whole_stream_redelivered_changes_nothing(storm: dict) -> None:
    once = _run(storm, storm["events"])
    again = _run(storm, storm["events"] + storm["events"])
    assert sorted(map(_key, again.decisions)) == sorted(map(_key, once.decisions))
    assert again.summary["desired_counts"] == once.summary["desired_counts"]
    # one alert per decision at most, redelivery sends none of its own
    assert again.summary["alerts_sent"] == once.summary["alerts_sent"]
