"""The watchdog's reserved concurrency, sized from the account's service count (issue 32 item 3).

The formula (docs/deploy.md, "Sizing the watchdog's reserved concurrency"; the parameter's description
names it)::

    T        = services x stopped tasks per failing service per minute   (the account's worst storm)
    t        = (1 - 1/CRASH_THRESHOLD) x FILING_S + 1/CRASH_THRESHOLD x DECISION_S   (s per invocation)
    R        = ceil(T / 60 x t / UTILISATION)                            (slots kept busy, with headroom)
    reserved = min(max(R, DEFAULT), quota - UNRESERVED_MINIMUM - OTHERS, 100), or 0 below DEFAULT

One stopped task is one watchdog invocation (its rule takes each STOPPED event); one in
``CRASH_THRESHOLD`` of a crash-looping service's stops is a decision, the rest are filings. The
service times are ``bench/storm.py``'s (``make bench``: the measured CPU per invocation plus its
DynamoDB and AWS calls at the latencies the bench states: 25 ms Lambda overhead, 6 ms a DynamoDB call,
40 ms an ECS / Auto Scaling / SNS call): a filing 43 ms, a decision 258 ms, the same from 100 to 2,000
services in one cluster (a decision reads a bounded number of items). At utilisation 0.7 an M/M/c
queue's p95 wait stays a few service times, far under the one minute a decision may take. Lambda keeps
``UNRESERVED_MINIMUM`` (100) of an account's concurrency unreserved (Lambda Developer Guide,
"Configuring reserved concurrency"), so an account whose quota is still 10 can reserve nothing: 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Sizing", "recommended_reserved_concurrency", "FILING_S", "DECISION_S", "UTILISATION", "DEFAULT",
           "UNRESERVED_MINIMUM", "OTHERS", "MAXIMUM"]

#: seconds one filing invocation takes (bench/storm.py service_times, 100-2,000 services)
FILING_S = 0.043
#: seconds one deciding invocation takes (bench/storm.py service_times)
DECISION_S = 0.258
#: the share of the reserved slots kept busy in the storm (the rest is headroom for its bursts)
UTILISATION = 0.7
#: the parameter's default (WatchdogReservedConcurrency, watchdog_reserved_concurrency): the floor
DEFAULT = 5
#: what Lambda keeps unreserved in every account (quota 1,000: at most 900 reserved in all)
UNRESERVED_MINIMUM = 100
#: the stack's other reservations: the sampler 1, the sweep function 2 (handlers/lane.py)
OTHERS = 3
#: the most the parameter takes (template.yaml AllowedPattern, terraform validation): about 48,000
#: stopped tasks a minute at the measured service times; past it, one stack per account splits the storm
MAXIMUM = 100


@dataclass(frozen=True)
class Sizing:
    """One recommendation and its terms: ``stopped_per_minute`` (T), ``mean_service_s`` (t),
    ``busy_slots`` (T/60 x t), ``reserved`` (the value to set; 0: reserve nothing), and ``why``."""

    stopped_per_minute: float
    mean_service_s: float
    busy_slots: float
    reserved: int
    why: str


def recommended_reserved_concurrency(services: int, *, stopped_per_service_minute: float = 1.0,
                                     crash_threshold: int = 5, quota: int = 1000,
                                     filing_s: float = FILING_S, decision_s: float = DECISION_S,
                                     utilisation: float = UTILISATION) -> Sizing:
    """The watchdog's reserved concurrency for an account of ``services`` ECS services (counts), all
    crash-looping at once at ``stopped_per_service_minute`` stopped tasks a minute each (a crash loop
    of one task per service restarts about once a minute), with ``CRASH_THRESHOLD`` ``crash_threshold``
    and the account's Lambda concurrency ``quota`` (Service Quotas, "Concurrent executions").

    Raises:
        ValueError: a negative service count, rate or quota, a rate that is not a finite number (or whose
            storm is not: ``1e308`` x services), a threshold below 1, a utilisation outside (0, 1].
    """
    if services < 0 or stopped_per_service_minute < 0:
        raise ValueError("services and stopped tasks per service a minute are counts: not negative")
    if services > 10**9:  # an account holds far fewer; past a float's range the product raised OverflowError
        raise ValueError("services is a count of an account's ECS services: at most 1,000,000,000")
    if not math.isfinite(stopped_per_service_minute) or not math.isfinite(services * stopped_per_service_minute):
        raise ValueError(f"stopped tasks per service a minute is a finite number of tasks, got "
                         f"{stopped_per_service_minute} (for {services} services)")
    if quota < 0:
        raise ValueError(f"the quota is a count of concurrent executions: not negative, got {quota}")
    if crash_threshold < 1:
        raise ValueError("CRASH_THRESHOLD is at least 1")
    if not 0 < utilisation <= 1:
        raise ValueError("utilisation is a share: above 0, at most 1")
    share = 1 / crash_threshold
    mean = (1 - share) * filing_s + share * decision_s
    per_minute = services * stopped_per_service_minute
    busy = per_minute / 60 * mean
    needed = max(DEFAULT, math.ceil(busy / utilisation))
    room = min(MAXIMUM, quota - UNRESERVED_MINIMUM - OTHERS)
    if room < DEFAULT:
        return Sizing(per_minute, mean, busy, 0, f"a quota of {quota} leaves no room to reserve (Lambda keeps "
                      f"{UNRESERVED_MINIMUM} unreserved): 0, no function reserves any")
    if needed > room:
        return Sizing(per_minute, mean, busy, room, f"the storm needs {needed}; at most {room} can be reserved "
                      f"(quota {quota}, {UNRESERVED_MINIMUM} kept unreserved, the parameter at most {MAXIMUM}): "
                      "ask for a higher quota, or split the services over accounts (one stack per account)")
    return Sizing(per_minute, mean, busy, needed,
                  f"{per_minute:,.0f} stopped tasks a minute x {mean * 1000:.0f} ms each = {busy:.1f} busy slots, "
                  f"at {utilisation:.0%} utilisation: {math.ceil(busy / utilisation)} (at least {DEFAULT})")
