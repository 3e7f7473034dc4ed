"""The fleet test's evidence per cluster and minute (ARCHITECTURE.md, decision policy rule 3, and
"Scale (beyond one account)"): a decision reads a bounded number of items whatever the cluster's size.

Rule 3 asks, at a decision's time ``T``: which other services of the cluster had at least
``FLEET_SIGNAL_MIN_FAILURES`` failures (crashes, health-check kills, container restarts) with event
time in ``[T - window, T]`` (both ends included), whatever happened to them since and however long ago
their newest failure was; and which services the watchdog scaled to zero in that window. Reading
every service's summary answers it, but costs a read of every service per decision: a storm of N
services then costs N x N reads.

Here the answer is kept per *cluster, shard and minute* instead: one :class:`FleetMinute` per
``(shard, minute)`` holds, for each service of the shard with a failure stamped in that minute, one
member per failure (:func:`member`: its offset into the minute and the task's short id), and the
times of the shard's scale-downs stamped in it. The store keeps them as (adapters/store/watchdog_state.py):

- the minute's *names*: one string set of the services that failed in it, and one of those that failed
  at least twice in it (one small item per shard and minute, about 20 bytes a failing service);
- each service's members in the minute: a small item of its own (at most :data:`MEMBERS_KEPT`), read
  only where the window cuts the minute, and there only for a service the whole minutes left undecided.

A decision reads the names of the ``window + 1`` minutes of every shard (:data:`SHARDS` Queries, at
most 31 items each with the defaults, whatever the cluster's size) and counts:

- a minute wholly inside the window counts all its members: with ``need`` 2 (the default) set algebra
  over the names in C (a service failing twice in one minute, or once in two), no member read;
- the minute cut by ``T - window`` counts the members at or after the cut, the minute cut by ``T``
  those at or before it (offsets are kept to the microsecond, so both ends are exact); their members
  are read for the services still undecided only (none, in a storm: every service failed twice in the
  whole minutes already).

So a decision's items read are bounded, and its CPU grows with the failing services only through C-speed
set operations over their names (and the hold's record, which names them: docs/benchmarks.md, "Storm").
The release before kept all of a shard-minute's members in one item (one attribute per failing service,
read and rewritten whole by every decision and every count): those items are read too, in the same
Query (they sort inside the window's range), until the table's TTL has removed them, so a decision in
the first window after a deploy counts every failure either release filed.

Members are a set: filing the same failure twice adds nothing (a retried write needs no read), and a
Spot or termination notice delivered after its task's STOPPED event takes that failure's member out
again, as it takes the failure out of the service's summary. A service-minute keeps at most
:data:`MEMBERS_KEPT` members; past that it is marked *overflowed*: a whole minute then counts at least
that many, and a cut minute is :attr:`FleetSignals.uncertain` (the caller asks that service's summary,
whose per-minute counts keep each minute's edge offsets).

Nothing here forgets by age: the items live until the table's TTL, so a late decision finds every
other service's failures of its window, however long ago that service's newest failure was (issue
31 item 7 names the older ring that forgot them).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta

from msgspec import Struct, field

from ecs_guardrail.core.links import resource_name

__all__ = ["SHARDS", "MEMBERS_KEPT", "FleetMinute", "FleetSignals", "shard_of", "minute_of", "member",
           "offset_of", "fleet_signals", "minutes_spanned"]

#: shards per cluster (partition keys ``FM#<cluster key>#<shard>``): a storm's writes spread over them,
#: and a decision reads each shard's minutes of the window in one Query (docs/benchmarks.md, "Storm")
SHARDS = 8
#: members kept per service and minute before the service-minute is marked overflowed (about 1 KB)
MEMBERS_KEPT = 64

_MINUTE = timedelta(minutes=1)
_US = timedelta(microseconds=1)


def shard_of(service: str) -> int:
    """The service's shard, ``0 <= n < SHARDS`` (CRC-32 of its UTF-8 name: stable across processes,
    unlike :func:`hash`)."""
    return zlib.crc32(service.encode("utf-8", "surrogatepass")) % SHARDS


def minute_of(t: datetime) -> datetime:
    """The UTC minute ``t`` falls in (its start)."""
    return t.astimezone(UTC).replace(second=0, microsecond=0)


def member(t: datetime, task_arn: str) -> str:
    """One failure's member in its minute: ``"<offset>|<task>"``, the offset in seconds (with six
    decimals when not whole) and the last 8 characters of the task id (as the summary's ``recent``)."""
    us = (t.astimezone(UTC) - minute_of(t)) // _US
    sec, frac = divmod(us, 1_000_000)
    offset = f"{sec}" if not frac else f"{sec}.{frac:06d}"
    return f"{offset}|{resource_name(task_arn)[-8:]}"


def offset_of(text: str) -> int:
    """A member's offset into its minute, in microseconds.

    Raises:
        ValueError: not a :func:`member`.
    """
    offset = text.split("|", 1)[0]
    sec, _, frac = offset.partition(".")
    return int(sec) * 1_000_000 + (int(frac.ljust(6, "0")[:6]) if frac else 0)


class FleetMinute(Struct, frozen=True):
    """One shard's minute as stored. Services are named by the adapter's key for them (any string,
    one per service, the same in every field; the adapter maps the answer back to names):

    - ``members``: a service's members (:func:`member`) in the minute; their offsets are read only
      where the window cuts the minute (a whole minute needs only who failed in it). Empty when the
      adapter reads them only on demand (the ``load`` of :func:`fleet_signals`);
    - ``twice``: the services with at least two members in the minute, overflowed ones included
      (kept by the writer, which sees the set's size after its write), so a whole minute is set
      algebra, not a loop over its services;
    - ``overflow``: services past :data:`MEMBERS_KEPT` members in the minute;
    - ``scaled``: a service to the times the watchdog scaled it to zero in the minute;
    - ``names``: every service with at least one member in the minute (``None``: the keys of
      ``members`` with ``twice`` and ``overflow``), kept by the writer as one string set, so a
      decision learns who failed in a whole minute without reading one member;
    - ``shard``: the shard the minute was read from (the adapter's, for its ``load``).
    """

    minute: datetime
    members: Mapping[str, Sequence[str]] = field(default_factory=dict)
    twice: AbstractSet[str] = frozenset()
    overflow: AbstractSet[str] = frozenset()
    scaled: Mapping[str, tuple[datetime, ...]] = field(default_factory=dict)
    names: Collection[str] | None = None
    shard: int = 0

    def failed(self) -> Collection[str]:
        """Every service with a member in the minute (``names``, else derived from ``members``; each once)."""
        if self.names is not None:
            return self.names
        return self.members.keys() | self.twice | self.overflow


class FleetSignals(Struct, frozen=True):
    """Rule 3's evidence from the minutes of one window: ``failing`` (services with enough failures in
    it), ``scaled_down`` (services scaled to zero in it), and ``uncertain`` (services that are not in
    ``failing`` and whose overflowed minute the window cuts: the caller decides them from their
    summaries). Named by the adapter's keys (:class:`FleetMinute`)."""

    failing: frozenset[str]
    scaled_down: frozenset[str]
    uncertain: frozenset[str] = frozenset()


def minutes_spanned(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The first and the last minute a window ``[start, end]`` touches (the items to read)."""
    return minute_of(start), minute_of(end)


def fleet_signals(minutes: Iterable[FleetMinute], start: datetime, end: datetime, need: int,
                  load: Callable[[FleetMinute], Mapping[str, Sequence[str]]] | None = None) -> FleetSignals:
    """Which services had at least ``need`` failures with ``start <= time <= end``, and which were
    scaled to zero in it, from the minutes of every shard (minutes outside the window are ignored).

    Exact: a whole minute counts all its members, a cut minute those on the right side of the cut.
    With ``need`` 2 (the default ``FLEET_SIGNAL_MIN_FAILURES``) the whole minutes are set algebra
    over :meth:`FleetMinute.failed` and ``twice`` (a service fails with two members in one minute, or
    members in two minutes), and a cut minute's members are read only for the services that could
    still reach ``need`` there: a decision costs C-speed set operations over the window's names plus
    a loop over the undecided services of the two cut minutes only, never over every member.

    ``load``: a minute's members when the minute holds only its names (``FleetMinute.members``
    empty); called at most once per minute, and only for a cut minute with undecided services (or,
    with ``need`` other than 2, for every minute in the window). ``None``: ``members`` are complete.
    """
    down: set[str] = set()
    whole: list[FleetMinute] = []
    cut: list[FleetMinute] = []
    for fm in minutes:
        lo = fm.minute
        if lo + _MINUTE <= start or lo > end:
            continue
        for svc, times in fm.scaled.items():
            if any(start <= t <= end for t in times):
                down.add(svc)
        (whole if lo >= start and lo + _MINUTE <= end else cut).append(fm)

    def members_of(fm: FleetMinute) -> Mapping[str, Sequence[str]]:
        return load(fm) if load is not None else fm.members

    counts: dict[str, int] = {}
    failing: set[str] = set()
    if need == 2:
        seen: set[str] = set()
        for fm in whole:
            names = fm.failed()
            failing.update(fm.twice, seen.intersection(names))
            seen.update(names)
        for svc in seen - failing:
            counts[svc] = 1
    else:
        for fm in whole:
            for svc, members in members_of(fm).items():
                n = counts.get(svc, 0) + len(members)
                counts[svc] = n
                if n >= need:
                    failing.add(svc)
            for svc in fm.overflow:  # at least MEMBERS_KEPT (or need) members there
                failing.add(svc)
    uncertain: set[str] = set()
    for fm in cut:
        undecided = set(fm.failed()).difference(failing)
        if undecided:
            s_off = max(0, (start - fm.minute) // _US)
            e_off = (end - fm.minute) // _US
            got = members_of(fm)
            for svc in undecided:
                members = got.get(svc, ())
                n = counts.get(svc, 0) + sum(1 for x in members if s_off <= offset_of(x) <= e_off)
                counts[svc] = n
                if n >= need:
                    failing.add(svc)
        uncertain.update(fm.overflow)
    return FleetSignals(frozenset(failing), frozenset(down), frozenset(uncertain - failing))
