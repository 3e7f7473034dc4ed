"""The watchdog's state: one bounded summary per service, held-at-zero slots, mass events, job
families, and the decision records, on the table port.

Why one summary item per service (``WD#<cluster key>`` / ``S#<service>``) and not one item per
failure: the policy needs, per event, "is an episode open, and how many crashes are in the window".
A summary answers both in the write that files the failure, and it stays small because it keeps
only the newest ``keep`` failures of each kind (``keep >= CRASH_THRESHOLD``: older ones cannot change
a decision), Spot notices for 30 minutes and six deployment events (:mod:`ecs_guardrail.core.summary`).

DynamoDB cost per event: a stopped task below the threshold is **one PutItem** of the summary (about
1 KB with the defaults, so 1 write unit; it does not grow with the loop), conditional on the summary's
``seq`` (optimistic concurrency). The summary read is free when this execution environment wrote it
last (the cache of :class:`WatchdogState`); otherwise one strongly consistent GetItem (0.5 read
unit), or, after a lost race, the ``ALL_OLD`` of the failed write. A decision adds one Query of the
cluster's summaries and slots (``WD#<cluster key>``: bounded by the number of services, never by
history), one TransactWriteItems (the episode claim and the decision record, 2 items x 2 units), a
slot write for a scale-down, and one PutItem to finish the episode.

Every write is conditional, so two invocations on one service never both claim an episode, both
take a slot or both act: the loser reads the winner's state and follows it.
"""

from __future__ import annotations

import json
import logging
import operator
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec import Struct

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.event_log import EventLog
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError, Item, Table
from ecs_guardrail.core.errors import StateConflictError, UnreadableSummaryError
from ecs_guardrail.core.fleet_minutes import (
    MEMBERS_KEPT,
    SHARDS,
    FleetMinute,
    FleetSignals,
    fleet_signals,
    member,
    minute_of,
    minutes_spanned,
    shard_of,
)
from ecs_guardrail.core.links import resource_name
from ecs_guardrail.core.permissions import permissions
from ecs_guardrail.core.records import Action, Failure, Reason, iso, parse_time
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import (
    ActionStatus,
    AlertStatus,
    DeploymentNote,
    Episode,
    EpisodeEnd,
    JobFiling,
    JobSummary,
    MinuteCount,
    RecoveryStatus,
    ServiceSummary,
    close_job_window,
    count_minutes,
    file_job_failure,
    scale_down_times,
)

__all__ = ["WatchdogState", "ClusterView", "Slot", "StateConflictError", "UnreadableSummaryError", "summary_to_doc",
           "summary_from_doc"]

_RETRIES = 8
#: decoded summaries kept per environment (one per service read; bounded for a fleet of any size)
_DECODED_LIMIT = 20_000
_log = logging.getLogger(__name__)


class Slot(Struct, frozen=True):
    """One held-at-zero slot (``H#<n>``): taken by ``service`` at event time ``time``, or ``released``."""

    n: int
    service: str
    time: datetime
    released: bool


class ClusterView(Struct, frozen=True):
    """One Query of ``WD#<cluster key>``: every service summary, the slots and the last mass hold."""

    summaries: tuple[ServiceSummary, ...]
    slots: tuple[Slot, ...]
    mass_last: datetime | None

    def held(self) -> tuple[str, ...]:
        """Services holding a slot now (scaled to 0 by the watchdog, not restored)."""
        return tuple(sorted({s.service for s in self.slots if not s.released}))

    def with_slot(self, n: int, service: str, at: datetime) -> ClusterView:
        """This view with slot ``n`` held by ``service`` since event time ``at`` (a slot this invocation
        just wrote, e.g. by :meth:`WatchdogState.claim_with_slot`): :meth:`WatchdogState.take_slot` over it
        reuses the slot and writes nothing."""
        others = tuple(x for x in self.slots if x.n != n)
        return replace(self, slots=(*others, Slot(n, service, at, False)))


# ---------------------------------------------------------------------------- codec
def _ep_doc(ep: Episode) -> dict[str, Any]:
    doc = {"dt": iso(ep.decision_time), "lf": iso(ep.last_failure), "ac": ep.action.value, "re": ep.reason.value,
           "tr": ep.trigger, "as": ep.action_status.value, "al": ep.alert_status.value,
           "pd": ep.previous_desired_count, "ps": ep.previous_suspended, "lo": ep.lease_owner,
           "lu": ep.lease_until or None, "es": ep.escalated or None, "co": ep.cluster_alert_owner or None,
           "rc": ep.recovery.value if ep.recovery is not RecoveryStatus.NONE else None,
           "eb": ep.ended_by.value if ep.ended_by else None, "ea": iso(ep.ended_at) if ep.ended_at else None,
           "pn": ep.probes or None, "pa": iso(ep.probe_at) if ep.probe_at else None,
           "pm": ep.probe_delay_minutes or None, "pl": ep.probe_live or None, "sf": ep.still_failing_sent or None,
           "ev": iso(ep.evaluated_at) if ep.evaluated_at else None}
    return {k: v for k, v in doc.items() if v is not None}


def _ep(doc: dict[str, Any]) -> Episode:
    return Episode(decision_time=parse_time(doc["dt"]), last_failure=parse_time(doc["lf"]), action=Action(doc["ac"]),
                   reason=Reason(doc["re"]), trigger=doc["tr"], action_status=ActionStatus(doc["as"]),
                   alert_status=AlertStatus(doc["al"]), previous_desired_count=doc.get("pd"),
                   previous_suspended=doc.get("ps"), lease_owner=doc.get("lo"), lease_until=float(doc.get("lu") or 0),
                   escalated=bool(doc.get("es")), cluster_alert_owner=bool(doc.get("co")),
                   recovery=RecoveryStatus(doc.get("rc", "none")),
                   ended_by=EpisodeEnd(doc["eb"]) if doc.get("eb") else None,
                   ended_at=parse_time(doc["ea"]) if doc.get("ea") else None,
                   probes=int(doc.get("pn") or 0), probe_at=parse_time(doc["pa"]) if doc.get("pa") else None,
                   probe_delay_minutes=int(doc.get("pm") or 0), probe_live=bool(doc.get("pl")),
                   still_failing_sent=bool(doc.get("sf")),
                   evaluated_at=parse_time(doc["ev"]) if doc.get("ev") else None)


#: failures stored whole per ring (the alert's last stops); older ones keep time, kind and task id only
FULL_ENTRIES = 5


def _ring_doc(ring: tuple[Failure, ...]) -> list[dict[str, Any]]:
    """Oldest first; all but the newest :data:`FULL_ENTRIES` reduced to ``{"t", "k", "a": task id}`` (about
    75 bytes), so even ``CRASH_THRESHOLD=1000`` with long reasons stays far below DynamoDB's 400 KB item."""
    cut = max(0, len(ring) - FULL_ENTRIES)
    return [{"t": iso(f.time), "k": f.kind.value, "a": resource_name(f.task_arn)} for f in ring[:cut]] + \
        [f.to_doc() for f in ring[cut:]]


def _minutes_doc(minutes: tuple[MinuteCount, ...]) -> dict[str, Any]:
    """``{"b": first minute (ISO), "n": [[minutes after it, count, offset, ...], ...]}``: about 15 bytes
    a minute with failures, at most two windows of minutes (core/summary.py bounds them); ``{}`` for none."""
    if not minutes:
        return {}
    base = minutes[0].minute
    return {"b": iso(base), "n": [[int((m.minute - base).total_seconds() // 60), m.count,
                                   *[_sec(x) for x in m.seconds]] for m in minutes]}


def _minutes(doc: dict[str, Any] | None) -> tuple[MinuteCount, ...]:
    if not doc or not doc.get("n"):
        return ()
    base = parse_time(doc["b"])
    return tuple(MinuteCount(base + timedelta(minutes=int(row[0])), int(row[1]), tuple(float(x) for x in row[2:]))
                 for row in doc["n"])


def summary_to_doc(s: ServiceSummary) -> dict[str, Any]:
    """The JSON document a summary is stored as (compact keys; see :func:`summary_from_doc`)."""
    doc: dict[str, Any] = {"c": _ring_doc(s.crashes), "k": _ring_doc(s.kills), **_head_doc(s),
                           "m": _minutes_doc(s.minutes),  # always written: an item without it predates the counts
                           **_tail_doc(s)}
    return {k: v for k, v in doc.items() if v != [] and (k == "m" or v != {})}


def _head_doc(s: ServiceSummary) -> dict[str, Any]:
    """The document's keys between the rings and the minutes (``s d e x a``), each only when it has a value."""
    head: dict[str, Any] = {}
    if s.spot:
        head["s"] = [[t, iso(when)] for t, when in s.spot]
    if s.deployments:
        head["d"] = [{"t": iso(n.time), "n": n.event_name, "i": n.deployment_id, "r": n.reason}
                     for n in s.deployments]
    if s.episode is not None:
        head["e"] = _ep_doc(s.episode)
    if s.episode_end is not None:
        head["x"] = s.episode_end.value
    if s.counted_after is not None:
        head["a"] = iso(s.counted_after)
    return head


def _tail_doc(s: ServiceSummary) -> dict[str, Any]:
    """The document's keys after the minutes (``r z y``), each only when it has a value."""
    tail: dict[str, Any] = {}
    if s.recent:
        tail["r"] = list(s.recent)
    if s.scaled:
        tail["z"] = [iso(t) for t in s.scaled]
    if s.steady_at is not None:
        tail["y"] = iso(s.steady_at)
    return tail


_ENCODER = json.JSONEncoder(separators=(",", ":"))
#: the C encoder ``_ENCODER.encode`` builds at every call, built once (no circular check: a summary's document
#: is a tree); ``None`` where the interpreter has no C accelerator
_C_MAKE = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = (_C_MAKE(None, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True)
             if _C_MAKE is not None else None)


def _JSON(value: Any) -> str:  # noqa: N802 - read as the constant it replaces
    """``json.dumps(value, separators=(",", ":"))``, the same text (``json.dumps`` builds an encoder per call)."""
    if _C_ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


class _Written:
    """What :class:`_SummaryText` made of one service's last summary: each field's value (the very tuple or
    episode) and its ``"key":value`` text; the minutes' first minute and row texts too."""

    __slots__ = ("c", "c_text", "c_rows", "k", "k_text", "k_rows", "spot", "spot_text", "spot_rows", "ep",
                 "ep_text", "m", "m_text", "m_base", "m_base_text", "m_rows", "r", "r_text")

    def __init__(self) -> None:
        self.c: Any = None
        self.c_text = ""
        self.c_rows: list[str] = []
        self.k: Any = None
        self.k_text = ""
        self.k_rows: list[str] = []
        self.spot: Any = None
        self.spot_text = ""
        self.spot_rows: list[str] = []
        self.ep: Any = None
        self.ep_text = ""
        self.m: Any = None
        self.m_text = ""
        self.m_base: Any = None
        self.m_base_text = ""
        self.m_rows: list[str] = []
        self.r: Any = None
        self.r_text = ""


class _SummaryText:
    """:func:`summary_to_doc`'s document as the JSON text ``json.dumps(doc, separators=(",", ":"))`` gives,
    byte for byte, made from what the write before made of the same service (issue 33.2): a summary is written
    at every failure or notice it files, and nearly all of it is the same objects as in the write before (a
    ring, the Spot notices or the episode that did not change is that very object again; a new failure adds
    one ring entry and changes the newest minute's row). Each ring entry's and Spot notice's text is made once
    per object; the minutes' rows once per object and first minute. Entries are held by identity (the objects
    are immutable and kept alive by the memo, so an id is never reused while it is remembered); the memos
    are cleared when they reach :data:`_TEXT_LIMIT` entries."""

    def __init__(self) -> None:
        #: id -> (the object, what was made of it): a failure -> [reduced text, whole text]; a Spot notice
        #: ``(task ARN, time)`` -> its text
        self._memo: dict[int, tuple[Any, Any]] = {}
        #: service -> what the last write of that service's summary made (one per service name: a fleet's)
        self._last: dict[str, _Written] = {}

    def _get(self, obj: Any) -> Any:
        got = self._memo.get(id(obj))
        return got[1] if got is not None and got[0] is obj else None

    def _put(self, obj: Any, made: Any) -> Any:
        if len(self._memo) >= _TEXT_LIMIT:
            self._memo.clear()
        self._memo[id(obj)] = (obj, made)
        return made

    def _ring(self, ring: tuple[Failure, ...], old: Any, old_rows: list[str]) -> list[str]:
        """The entries' texts of ``ring``; ``old`` and ``old_rows``: the ring written before and its entries'
        texts. A ring of at most :data:`FULL_ENTRIES` (every entry whole) that is the one before with one
        failure appended, its oldest maybe dropped, reuses those texts (the service's own, no memo look-up)."""
        n = len(ring)
        if old is not None and 0 < n <= FULL_ENTRIES and len(old) <= FULL_ENTRIES:
            drop = len(old) - n + 1  # 0: grew by the new failure; 1: it pushed the oldest out
            if 0 <= drop <= 1 and all(map(operator.is_, ring[:-1], old[drop:])):
                return [*old_rows[drop:], _JSON(ring[-1].to_doc())]
        cut = max(0, n - FULL_ENTRIES)
        out = []
        memo = self._memo
        for n, f in enumerate(ring):
            got = memo.get(id(f))
            texts = got[1] if got is not None and got[0] is f else self._put(f, [None, None])
            full = n >= cut
            entry = texts[full]
            if entry is None:
                entry = texts[full] = _JSON(f.to_doc() if full else
                                            {"t": iso(f.time), "k": f.kind.value, "a": resource_name(f.task_arn)})
            out.append(entry)
        return out

    def _spot(self, spot: tuple[tuple[str, datetime], ...], old: Any, old_rows: list[str]) -> list[str]:
        """The notices' texts; the notices written before (``old``, their texts ``old_rows``) reused when
        ``spot`` is those, the oldest maybe dropped, and one new notice (what :func:`add_spot` makes)."""
        if old is not None:
            drop = len(old) - len(spot) + 1
            if drop >= 0 and all(map(operator.is_, spot[:-1], old[drop:])):
                t, when = spot[-1]
                return [*old_rows[drop:], _JSON([t, iso(when)])]
        out = []
        for pair in spot:
            entry = self._get(pair)
            if entry is None:
                t, when = pair
                entry = self._put(pair, _JSON([t, iso(when)]))
            out.append(entry)
        return out

    @staticmethod
    def _minutes(w: _Written, minutes: tuple[MinuteCount, ...]) -> str:
        """The minutes' text; the rows of the tuple written before reused while they are the same objects
        from the start with the same first minute (a new failure changes the newest row, or adds one)."""
        base = minutes[0].minute
        n = 0
        old = w.m
        if old is not None and w.m_base == base:
            k = min(len(old), len(minutes)) - 1  # nearly always the same rows but the newest: compared in C
            if k > 0 and all(map(operator.is_, old[:k], minutes[:k])):
                n = k + (old[k] is minutes[k])
            else:
                for a, b in zip(old, minutes, strict=False):
                    if a is not b:
                        break
                    n += 1
        if base is not w.m_base:  # the text of the very same first minute is the same (an equal one may differ)
            w.m_base_text = '{"b":' + _JSON(iso(base)) + ',"n":['
        rows = w.m_rows[:n] if n else []
        for m in minutes[n:]:  # [minutes after the first, count, seconds...]
            rows.append(_JSON([int((m.minute - base).total_seconds() // 60), m.count, *[_sec(x) for x in m.seconds]]))
        w.m_base, w.m_rows = base, rows
        return w.m_base_text + ",".join(rows) + "]}"

    def text(self, s: ServiceSummary) -> str:
        """The stored ``doc`` of ``s`` (:func:`summary_to_doc`, encoded)."""
        w = self._last.get(s.service)
        if w is None:
            if len(self._last) >= _TEXT_LIMIT:
                self._last.clear()
            w = self._last[s.service] = _Written()
        parts = []
        if s.crashes:
            if s.crashes is not w.c:
                w.c_rows = self._ring(s.crashes, w.c, w.c_rows)
                w.c, w.c_text = s.crashes, '"c":[' + ",".join(w.c_rows) + "]"
            parts.append(w.c_text)
        if s.kills:
            if s.kills is not w.k:
                w.k_rows = self._ring(s.kills, w.k, w.k_rows)
                w.k, w.k_text = s.kills, '"k":[' + ",".join(w.k_rows) + "]"
            parts.append(w.k_text)
        if s.spot:
            if s.spot is not w.spot:
                w.spot_rows = self._spot(s.spot, w.spot, w.spot_rows)
                w.spot, w.spot_text = s.spot, '"s":[' + ",".join(w.spot_rows) + "]"
            parts.append(w.spot_text)
        if s.deployments:
            parts.append('"d":' + _JSON([{"t": iso(n.time), "n": n.event_name, "i": n.deployment_id, "r": n.reason}
                                         for n in s.deployments]))
        if s.episode is not None:
            if s.episode is not w.ep:
                w.ep, w.ep_text = s.episode, '"e":' + _JSON(_ep_doc(s.episode))
            parts.append(w.ep_text)
        if s.episode_end is not None:
            parts.append('"x":' + _JSON(s.episode_end.value))
        if s.counted_after is not None:
            parts.append('"a":' + _JSON(iso(s.counted_after)))
        if s.minutes is not w.m:
            w.m_text = '"m":' + (self._minutes(w, s.minutes) if s.minutes else "{}")
            w.m = s.minutes
        parts.append(w.m_text)
        if s.recent:
            if s.recent is not w.r:
                w.r, w.r_text = s.recent, '"r":' + _JSON(list(s.recent))
            parts.append(w.r_text)
        if s.scaled:
            parts.append('"z":' + _JSON([iso(t) for t in s.scaled]))
        if s.steady_at is not None:
            parts.append('"y":' + _JSON(iso(s.steady_at)))
        return "{" + ",".join(parts) + "}"


#: ring entries and minute rows whose text :class:`_SummaryText` keeps (a fleet's summaries hold a few per
#: service: bounded for a fleet of any size)
_TEXT_LIMIT = 50_000


def _sec(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 3)


def summary_from_doc(service: str, seq: int, doc: dict[str, Any]) -> ServiceSummary:
    """Read :func:`summary_to_doc`'s document back into the typed record. An item written before the
    per-minute counts existed gets them from its rings (what it knew of the fleet test's failures)."""
    crashes = tuple(Failure.from_doc(service, f) for f in doc.get("c", []))
    kills = tuple(Failure.from_doc(service, f) for f in doc.get("k", []))
    return ServiceSummary(
        service=service, seq=seq,
        crashes=crashes,
        kills=kills,
        spot=tuple((t, parse_time(when)) for t, when in doc.get("s", [])),
        deployments=tuple(DeploymentNote(parse_time(n["t"]), n["n"], n.get("i"), n.get("r"))
                          for n in doc.get("d", [])),
        episode=_ep(doc["e"]) if "e" in doc else None,
        episode_end=EpisodeEnd(doc["x"]) if "x" in doc else None,
        counted_after=parse_time(doc["a"]) if "a" in doc else None,
        minutes=_minutes(doc["m"]) if "m" in doc else count_minutes(crashes + kills),
        recent=tuple(doc.get("r", [])),
        scaled=tuple(parse_time(t) for t in doc.get("z", [])),
        steady_at=parse_time(doc["y"]) if "y" in doc else None,
    )


def _with_seq(s: ServiceSummary, seq: int) -> ServiceSummary:
    """``s`` with its next ``seq`` (every summary write makes one): :func:`msgspec.structs.replace`, in C."""
    return replace(s, seq=seq)


#: attributes of a fleet minute item that name no service
_RESERVED = ("pk", "expires_at")
_TEXT = frozenset((str,))


def _name_set(value: Any) -> bool:
    """True when ``value`` (a fleet minute's ``n`` or ``t``) reads as the string set this code writes (or is
    absent): a list of texts (C-speed check; a storm's minute names 1,000s of services)."""
    return value is None or (type(value) in (list, tuple, set, frozenset) and _TEXT.issuperset(map(type, value)))


def _seq_of(item: dict[str, Any]) -> int:
    """A summary item's ``seq``: a whole number from 0, as this code writes it (a DynamoDB number). A missing
    one is a ``KeyError`` (``missing field 'seq'``); any other value (a text, a fraction, a boolean, a set) a
    ``ValueError`` naming it: ``int()`` would read ``"3"`` or ``2.5`` as a seq, and every conditional write
    on it would then fail (``seq = 2`` never holds of a stored ``2.5`` or ``"3"``)."""
    seq = item["seq"]
    if type(seq) is not int or seq < 0:
        raise ValueError(f"seq is not a whole number from 0 ({type(seq).__name__} {str(seq)[:100]!r})")
    return seq


def _summary_from_item(item: dict[str, Any]) -> ServiceSummary:
    try:
        if "sk" in item and item["sk"] != f"S#{item['service']}":  # copied to another service's key
            raise ValueError(f"its service {str(item['service'])[:200]!r} is not its key's")
        return summary_from_doc(item["service"], _seq_of(item), json.loads(item["doc"]))
    except (KeyError, ValueError, TypeError, AttributeError, IndexError, OverflowError, RecursionError) as exc:
        # OverflowError: Infinity or 1e15 minutes in a hand-edited doc; RecursionError: nested past json's depth
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise UnreadableSummaryError(f"stored summary {str(item.get('pk'))[:200]} {str(item.get('sk'))[:300]} is "
                                     f"unreadable: {what[:200]}", item.get("pk"), item.get("sk")) from exc


#: a held-at-zero slot's time when its item has none readable (used only to write the slot back released)
_NO_TIME = datetime(2000, 1, 1, tzinfo=UTC)


def _slot(item: dict[str, Any]) -> Slot | None:
    """A slot item as a :class:`Slot`. A hand-edited one (no service or time, a time that is not one) is
    counted as held (fail safe: the blast-radius bound never widens on a guess), logged as an error;
    ``None`` for a key that names no slot number (no slot this code takes is stored there)."""
    sk = item["sk"]
    try:
        n = int(sk[2:])
    except ValueError:
        _log.error("%s %s: not a slot number: ignored", item.get("pk"), sk)
        return None
    try:
        return Slot(n, item["service"], parse_time(item["time"]), bool(item.get("released")))
    except (KeyError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        _log.error("%s %s: unreadable slot item (%s): counted as held", item.get("pk"), sk, exc)
        service = item.get("service")
        return Slot(n, service if isinstance(service, str) else f"<unreadable slot {sk}>", _NO_TIME,
                    bool(item.get("released")))


def _job_from_item(family: str, item: dict[str, Any] | None) -> JobSummary:
    if item is None:
        return JobSummary(family)
    try:
        doc = json.loads(item["doc"])
        return JobSummary(family, _seq_of(item), tuple(doc.get("t", [])),
                          parse_time(doc["l"]) if doc.get("l") else None, int(doc.get("n", 0)),
                          doc.get("x"), parse_time(doc["lt"]) if doc.get("lt") else None)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError, OverflowError, RecursionError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise UnreadableSummaryError(f"stored job summary {str(item.get('pk'))[:200]} {str(item.get('sk'))[:300]} "
                                     f"is unreadable: {what[:200]}", item.get("pk"), item.get("sk")) from exc


class SummaryItem(Item):
    """A service summary's item as :meth:`WatchdogState.save` writes it (typed: a table stores it without
    inspecting it, :class:`~ecs_guardrail.adapters.store.table.Item`): keys ``S#<cluster key>`` /
    ``S#<service>`` (:func:`~ecs_guardrail.adapters.store.keys.summary`), ``type`` ``service_summary``,
    the ``service`` name, its write count ``seq`` (each write's condition), the ``doc`` JSON text
    (:func:`summary_to_doc`) and the TTL ``expires_at`` (Unix seconds; ``None``: no failure nor decision yet)."""

    pk: str
    sk: str
    type: str
    service: str
    seq: int
    doc: str
    expires_at: int | None


# ---------------------------------------------------------------------------- adapter
class WatchdogState:
    """The watchdog's reads and writes (see the module docstring for the cost of each).

    ``cache``: summaries this execution environment wrote or read last, keyed by
    ``(cluster key, service)``; a hint only (every write is conditional on ``seq``). Pass one dict
    per runtime; never share it between runtimes.
    """


    def __init__(self, table: Table, ttl_days: int = 90,
                 cache: dict[tuple[str, str], ServiceSummary] | None = None) -> None:
        self.table = table
        self._log = EventLog(table, ttl_days)
        self._cache = cache if cache is not None else {}
        #: (pk, sk) -> (service, seq, doc text, the summary decoded from them): a stored summary is decoded
        #: again only when its version changed (the sweep reads every indexed service every minute, a
        #: decision every summary of its cluster; issue 33.2)
        self._decoded: dict[tuple[Any, Any], tuple[Any, Any, Any, ServiceSummary]] = {}
        self._text = _SummaryText()  # the stored doc's text, each ring entry's made once

    def _summary(self, item: dict[str, Any]) -> ServiceSummary:
        """:func:`_summary_from_item`, decoded once per stored version (the same ``service``, ``seq`` and
        ``doc`` text give the same summary: it is immutable). Raises :class:`UnreadableSummaryError`."""
        key = (item.get("pk"), item.get("sk"))
        seen = self._decoded.get(key)
        service, seq, doc = item.get("service"), item.get("seq"), item.get("doc")
        if seen is not None and seen[0] == service and seen[1] == seq and seen[2] == doc:
            return seen[3]
        s = _summary_from_item(item)
        if len(self._decoded) >= _DECODED_LIMIT:
            self._decoded.clear()
        self._decoded[key] = (service, seq, doc, s)
        return s

    # -------------------------------------------------------------- summaries
    @permissions(history_table=["dynamodb:GetItem"])
    def load(self, ck: str, service: str, *, fresh: bool = False) -> ServiceSummary:
        """The service's summary (cached unless ``fresh``; a new empty one when none is stored)."""
        if not fresh and (ck, service) in self._cache:
            return self._cache[(ck, service)]
        item = self.table.get(*keys.summary(ck, service))
        s = self._summary(item) if item else ServiceSummary(service)
        self._cache[(ck, service)] = s
        return s

    def _item(self, ck: str, s: ServiceSummary, seq: int) -> SummaryItem:
        pk, sk = keys.summary(ck, s.service)
        last = s.newest_failure or (s.episode.decision_time if s.episode else None)
        return SummaryItem(pk, sk, "service_summary", s.service, seq, self._text.text(s),
                           self._log.expires(last) if last else None)

    @staticmethod
    def _cond(s: ServiceSummary) -> Cond:
        return Cond(absent=True) if s.seq == 0 else Cond(any_of=({"seq": s.seq},))

    @permissions(history_table=["dynamodb:PutItem"])
    def save(self, ck: str, current: ServiceSummary, new: ServiceSummary) -> ServiceSummary:
        """Write ``new`` if the stored summary is still ``current`` (same ``seq``).

        Returns the stored summary (``seq`` + 1). Raises :class:`ConditionFailedError` with the
        winner's item when another writer got there first (the cache then holds the winner).
        """
        stored = _with_seq(new, current.seq + 1)
        gone = self._mark_scale_downs(ck, current, new)
        try:
            self.table.put(self._item(ck, stored, stored.seq), self._cond(current))
        except ConditionFailedError as exc:
            if exc.old is not None:
                self._cache[(ck, current.service)] = self._summary(exc.old)
            else:
                self._cache.pop((ck, current.service), None)
            raise
        self._cache[(ck, current.service)] = stored
        self._unmark_scale_downs(ck, current.service, gone)
        return stored

    def update(self, ck: str, service: str,
               change: Callable[[ServiceSummary], ServiceSummary | None]) -> tuple[ServiceSummary, bool]:
        """Apply the pure ``change`` to the service's summary and store it, retrying on a lost race
        with the winner's state. ``change`` returns ``None`` for "nothing to write".

        Returns ``(summary, changed)``. Raises :class:`StateConflictError` after repeated lost races.
        """
        # Not cached: presume no summary exists and write conditionally on that (attribute_not_exists);
        # if one does, the failed write returns it (ALL_OLD). A service's first failure is one call.
        known = (ck, service) in self._cache
        s = self._cache.get((ck, service)) or ServiceSummary(service)
        for _ in range(_RETRIES):
            new = change(s)
            if new is None:
                if not known:  # "nothing to write" on a presumed state: check against the stored one
                    s, known = self.load(ck, service, fresh=True), True
                    continue
                return s, False
            try:
                return self.save(ck, s, new), True
            except ConditionFailedError:
                s, known = self.load(ck, service), True  # the winner's item (ALL_OLD) or a fresh read
        raise StateConflictError(f"{ck}/{service}: summary kept changing under {_RETRIES} writes")

    @permissions(history_table=["dynamodb:Query"])
    def cluster(self, ck: str) -> ClusterView:
        """Every service summary, slot and the mass event of the cluster (one strongly consistent Query)."""
        summaries, slots, mass_last = [], [], None
        for item in self.table.query(keys.summaries(ck)):
            sk = item["sk"]
            if sk.startswith("S#"):
                try:
                    s = self._summary(item)
                except UnreadableSummaryError as exc:
                    # another service's corrupt item must not stop every decision in the cluster (its own
                    # events still fail on it, naming it); its held-at-zero slot, an item of its own, counts
                    _log.error("%s: skipped in the cluster's view", exc)
                    continue
                summaries.append(s)
                self._cache[(ck, s.service)] = s
            elif sk.startswith("H#"):
                slot = _slot(item)
                if slot is not None:
                    slots.append(slot)
            elif sk == "M#mass":
                try:
                    mass_last = parse_time(item["last"])
                except (KeyError, ValueError, TypeError, AttributeError, OverflowError) as exc:
                    _log.error("%s %s: unreadable mass event item (%s): read as none", ck, sk, exc)
        return ClusterView(tuple(summaries), tuple(slots), mass_last)

    # -------------------------------------------------------------- fleet minutes (rule 3, core/fleet_minutes.py)
    # Per shard and minute (partition ``FM#<cluster key>#<shard>``): the names item ``<minute>#n`` (string
    # sets ``n``, every service with a member in the minute, and ``t``, those with two or more), the
    # overflowed ones (``<minute>#o``: ``o#<service>``) and the scale-downs (``<minute>#z``: ``z#<service>``,
    # decision times); each service's members in a small item of its own (``m#<minute>#<service>``: set
    # ``f``). A decision Queries each shard's window once (the names: no member is read) and a cut
    # minute's members only for its undecided services. The release before kept the members in the
    # minute's own item (``<minute>``: ``f#<service>``) and the twice-failed in ``<minute>#2``: both are
    # still read (they are in the window's range) until the table's TTL has removed them.
    @permissions(history_table=["dynamodb:UpdateItem"])
    def count_failures(self, ck: str, service: str, failures: list[Failure], need: int = 2) -> None:
        """Add each filed failure's member to the service's member item of its minute: one UpdateItem per
        minute (ADD to the string set ``f``; a member already there changes nothing, so a retry or a
        redelivery is harmless), one more when the set was empty before (the service's name ADDed to
        the minute's names ``n``), and one when the set reaches two members (its name in ``t``). Past
        :data:`MEMBERS_KEPT` (or ``need``) members the service-minute is marked overflowed instead
        (``#o``, and ``t``). Call it after the summary write that filed the failures (the summary's
        verdict decides what counts). Every item is small: one service's members, or one name per
        failing service of the shard and minute (about 20 bytes each: 2,000 failing services in one
        shard-minute is about 40 KB, a tenth of DynamoDB's 400 KB item limit)."""
        shard = shard_of(service)
        if len(failures) == 1:  # the usual call: one stop filed
            f = failures[0]
            by_minute = {minute_of(f.time): [member(f.time, f.task_arn)]}
        else:
            by_minute = {}
            for f in failures:
                by_minute.setdefault(minute_of(f.time), []).append(member(f.time, f.task_arn))
        for minute, members in (sorted(by_minute.items()) if len(by_minute) > 1 else by_minute.items()):
            pk, sk = keys.fleet_minute(ck, shard, minute)
            ttl = self._log.expires(minute)
            size = self.table.add_to_set(pk, keys.fleet_member_sort(sk, service), "f", members,
                                         max_size=max(MEMBERS_KEPT, need), expires_at=ttl)
            if size is None:
                self.table.add_to_set(pk, f"{sk}#o", f"o#{service}", ["1"], expires_at=ttl)
            elif size - len(members) < 1:  # the first (or a redelivery of it): the service failed in the minute
                self.table.add_to_set(pk, f"{sk}#n", "n", [service], expires_at=ttl)
            if size is None or (size >= 2 and size - len(members) < 2):
                self.table.add_to_set(pk, f"{sk}#n", "t", [service], expires_at=ttl)

    def _members_left(self, pk: str, service: str, minute: datetime, old: frozenset[str] = frozenset()) -> int:
        """The members a service still has in a minute: its own item's, with ``old`` (the release before's)."""
        new = (self.table.get(pk, f"{keys.fleet_member_prefix(minute)}{service}") or {}).get("f") or ()
        return len(old.union(new))

    @permissions(history_table=["dynamodb:UpdateItem", "dynamodb:GetItem"])
    def uncount_failures(self, ck: str, service: str, failures: list[Failure]) -> None:
        """Take the members of ``failures`` out of their minutes again (a notice delivered after its
        task's STOPPED event: core/summary.py :func:`~ecs_guardrail.core.summary.add_spot`); a service left
        with fewer than two members in a minute leaves its ``t`` (and the release before's ``#2``), with
        none its ``n``. A concurrent count of the same service-minute is seen by reading the members
        again after those deletes: a name taken out while a member came back is ADDed again."""
        shard = shard_of(service)
        for f in failures:
            minute = minute_of(f.time)
            pk, sk = keys.fleet_minute(ck, shard, minute)
            gone = [member(f.time, f.task_arn)]
            before = self.table.get(pk, sk)  # the release before's minute item (gone after the table's TTL)
            old = frozenset((before or {}).get(f"f#{service}") or ())
            self.table.delete_from_set(pk, keys.fleet_member(ck, shard, minute, service)[1], "f", gone)
            if gone[0] in old:
                self.table.delete_from_set(pk, sk, f"f#{service}", gone)
                old = old - set(gone)
            left = self._members_left(pk, service, minute, old)
            if left >= 2:
                continue
            self.table.delete_from_set(pk, f"{sk}#n", "t", [service])
            if before is not None:
                self.table.delete_from_set(pk, f"{sk}#2", f"f#{service}", ["1"])
            if left == 0:
                self.table.delete_from_set(pk, f"{sk}#n", "n", [service])
            again = self._members_left(pk, service, minute, old)  # only this release adds members
            ttl = self._log.expires(minute)
            if again >= 1 and left == 0:
                self.table.add_to_set(pk, f"{sk}#n", "n", [service], expires_at=ttl)
            if again >= 2:
                self.table.add_to_set(pk, f"{sk}#n", "t", [service], expires_at=ttl)

    @permissions(history_table=["dynamodb:UpdateItem"])
    def _mark_scale_downs(self, ck: str, current: ServiceSummary, new: ServiceSummary) -> tuple[datetime, ...]:
        """Before a summary write: mark each scale-down ``new`` adds (``z#<service>``, its decision time,
        in its minute's ``#z`` item), so no concurrent fleet test misses it. Returns the scale-downs
        ``new`` drops, unmarked after the write (:meth:`_unmark_scale_downs`)."""
        if current.episode is new.episode and current.scaled is new.scaled:  # what scale_down_times reads
            return ()
        before, after = scale_down_times(current), scale_down_times(new)
        if before == after:
            return ()
        shard = shard_of(new.service)
        for t in sorted(set(after) - set(before)):
            pk, sk = keys.fleet_minute(ck, shard, minute_of(t))
            self.table.add_to_set(pk, f"{sk}#z", f"z#{new.service}", [iso(t)], expires_at=self._log.expires(t))
        return tuple(sorted(set(before) - set(after)))

    @permissions(history_table=["dynamodb:UpdateItem"])
    def _unmark_scale_downs(self, ck: str, service: str, gone: tuple[datetime, ...]) -> None:
        if not gone:
            return
        shard = shard_of(service)
        for t in gone:
            pk, sk = keys.fleet_minute(ck, shard, minute_of(t))
            self.table.delete_from_set(pk, f"{sk}#z", f"z#{service}", [iso(t)])

    @permissions(history_table=["dynamodb:Query"])
    def fleet_minutes(self, ck: str, start: datetime, end: datetime) -> list[FleetMinute]:
        """Every shard's minutes that ``[start, end]`` touches: :data:`SHARDS` Queries of at most
        ``window + 1`` minutes each (a minute is one names item, and one more while a service overflowed
        or was scaled down in it), whatever the cluster's size (strongly consistent). No member is read
        here: :meth:`minute_members` reads a cut minute's when the count needs them. Services are named
        by their names; a minute the release before wrote (its ``""`` and ``#2`` items) is read too, and
        a minute both releases wrote has its members read at once (the twice-failed of each half)."""
        first, last = minutes_spanned(start, end)
        lo, hi = iso(first), iso(last) + "#~"
        times: dict[str, datetime] = {}
        out = []
        for shard in range(SHARDS):
            parts: dict[str, dict[str, dict[str, Any]]] = {}
            for item in self.table.query(keys.fleet_minutes(ck, shard), lo=lo, hi=hi):
                minute, _, part = item["sk"].partition("#")
                parts.setdefault(minute, {})[part] = item
            for minute, got in parts.items():
                at = times.get(minute)
                if at is None:
                    at = times[minute] = parse_time(minute)
                o, z, n = got.get("o"), got.get("z"), got.get("n")
                overflow = {k[2:] for k in o if k.startswith("o#")} if o else set()
                scaled = ({k[2:]: tuple(parse_time(t) for t in v) for k, v in z.items() if k.startswith("z#")}
                          if z else {})
                if n and not (_name_set(n.get("n")) and _name_set(n.get("t"))):
                    # hand-edited (a String, a Number, a map...): iterated as it is, "api" named the failing
                    # services a, p, i (hostile10); its minute is read from the member items instead
                    _log.error("%s %s#n: unreadable names of a fleet minute (n %.200r, t %.200r): its members read "
                               "instead", keys.fleet_minutes(ck, shard), minute, n.get("n"), n.get("t"))
                    old = {k[2:]: v for k, v in got.get("", {}).items() if k.startswith("f#")}
                    read = self._merged_members(ck, shard, at, old)
                    twice = {k for k, v in read.items() if len(v) >= 2} | overflow
                    twice |= {k[2:] for k in got.get("2", {}) if k.startswith("f#")}
                    out.append(FleetMinute(at, read, twice, overflow, scaled, read.keys() | twice, shard))
                    continue
                names: Any = n.get("n", ()) if n else ()  # a string set: each service once
                twice = set(n.get("t", ())) if n else set()
                if overflow:
                    twice |= overflow
                if twice and not twice.issubset(names):
                    names = twice.union(names)
                members: dict[str, Any] = {}
                if "" in got or "2" in got:  # written by the release before
                    members = {k[2:]: v for k, v in got.get("", {}).items() if k.startswith("f#")}
                    names = members.keys() | set(names)
                    twice |= {k[2:] for k in got.get("2", {}) if k.startswith("f#")}
                    if n:  # both releases: count each service's members of both halves
                        members = self._merged_members(ck, shard, at, members)
                        names |= members.keys()
                        twice |= {k for k, v in members.items() if len(v) >= 2}
                out.append(FleetMinute(at, members, twice, overflow, scaled, names, shard))
        return out

    def _merged_members(self, ck: str, shard: int, minute: datetime,
                        old: dict[str, Any]) -> dict[str, tuple[str, ...]]:
        got = {k: set(v) for k, v in old.items()}
        for svc, members in self.minute_members(ck, shard, minute).items():
            got.setdefault(svc, set()).update(members)
        # a service whose members were all taken back (uncount_failures: its member item stays, its emptied
        # set gone) did not fail in the minute (hostile10: it was read as a name with no member)
        return {k: tuple(sorted(v)) for k, v in got.items() if v}

    @permissions(history_table=["dynamodb:Query"])
    def minute_members(self, ck: str, shard: int, minute: datetime) -> dict[str, list[str]]:
        """Every service's members in one shard's minute (one Query of its member items), by service."""
        prefix = keys.fleet_member_prefix(minute)
        n = len(prefix)
        return {item["sk"][n:]: item["f"] for item in
                self.table.query(keys.fleet_minutes(ck, shard), prefix=prefix, fields=("sk", "f"))
                if item.get("f")}  # an item whose members were all taken back names no failure

    def fleet(self, ck: str, start: datetime, end: datetime, need: int) -> FleetSignals:
        """Rule 3's evidence for the window ``[start, end]``, by service name
        (:func:`~ecs_guardrail.core.fleet_minutes.fleet_signals` over :meth:`fleet_minutes`, the members of
        a minute read only when the count needs them)."""

        def load(fm: FleetMinute) -> dict[str, Any]:
            if fm.members and fm.names is not None and fm.members.keys() >= set(fm.names) - fm.overflow:
                return dict(fm.members)  # read whole already (a minute both releases wrote)
            got: dict[str, Any] = {k: list(v) for k, v in fm.members.items()}
            for svc, members in self.minute_members(ck, fm.shard, fm.minute).items():
                got[svc] = sorted(set(got.get(svc, ())) | set(members))
            return got

        return fleet_signals(self.fleet_minutes(ck, start, end), start, end, need, load)

    @permissions(history_table=["dynamodb:Query"])
    def service_names(self, ck: str) -> set[str]:
        """The services of the cluster with a summary (one Query of the summaries' keys): the fleet
        test's denominator when ListServices cannot say (a cluster in another account)."""
        return {item["sk"][2:] for item in self.table.query(keys.summaries(ck), prefix="S#", fields=("sk",))}

    @permissions(history_table=["dynamodb:Query"])
    def slots_view(self, ck: str) -> ClusterView:
        """The cluster's held-at-zero slots (one Query of ``H#``: at most the largest bound ever used),
        without the summaries: what a decision reads for the cap (rule 5)."""
        pk, prefix = keys.slots(ck)
        slots = tuple(Slot(int(item["sk"][2:]), item["service"], parse_time(item["time"]), bool(item.get("released")))
                      for item in self.table.query(pk, prefix=prefix))
        return ClusterView((), slots, None)

    # -------------------------------------------------------------- episode claim and decision records
    @permissions(history_table=["dynamodb:PutItem"])
    def claim(self, ck: str, current: ServiceSummary, new: ServiceSummary, record: dict[str, Any], *,
              also: tuple[tuple[dict[str, Any], Cond | None], ...] = ()) -> ServiceSummary:
        """Open (or escalate) the episode in ``new`` and write the decision record, in ONE transaction
        (with ``also``, further conditional puts in the same transaction: :meth:`claim_with_slot`).

        Both or neither: a throttled decision write can never leave a claimed episode without its
        record (DynamoDB TransactWriteItems). Raises :class:`ConditionFailedError` when the summary
        changed since ``current`` (another invocation claimed first), the record exists, or a condition
        of ``also`` failed (its ``failed`` says which: 0 the summary, 1 the record, 2... ``also``).
        """
        return self._claim(ck, current, new, record, also)

    @permissions(history_table=["dynamodb:PutItem"])
    def claim_with_slot(self, ck: str, current: ServiceSummary, new: ServiceSummary, record: dict[str, Any], *,
                        at: datetime, bound: int, view: ClusterView,
                        slotted: ServiceSummary | None = None) -> tuple[ServiceSummary, int | None]:
        """:meth:`claim` that also takes the service's held-at-zero slot (rule 5, as :meth:`take_slot`: its
        own slot reused, else the first free of ``bound`` in ``view``; ``at``: event time) in the SAME
        transaction: one TransactWriteItems instead of a claim and a PutItem (issue 33 item 6).
        ``slotted``: the summary to store instead of ``new`` when the slot is the service's after the
        transaction (the episode one step on: its facts recorded), so that step's own write is saved too.

        Returns the summary as stored and the slot taken (``None``: no slot was free, or the slot's
        condition failed: ``new`` was then claimed alone, as :meth:`claim`, and the caller takes the
        slot, or is denied it, as before). Raises :class:`ConditionFailedError` when the claim itself
        failed (the summary changed, or the record exists).
        """
        held = next((x.n for x in view.slots if x.service == current.service and not x.released), None)
        taken = {x.n for x in view.slots if not x.released}
        n = held if held is not None else next((k for k in range(bound) if k not in taken), None)
        if n is None:
            return self.claim(ck, current, new, record), None
        pk, sk = keys.slot(ck, n)
        slot = ({"pk": pk, "sk": sk, "service": current.service, "time": iso(at), "released": False},
                Cond(absent=True, any_of=({"released": True}, {"service": current.service})))
        try:
            return self.claim(ck, current, slotted or new, record, also=() if held is not None else (slot,)), n
        except ConditionFailedError as exc:
            if exc.failed != (2,):  # the claim's own condition (or not known): as claim
                raise
        return self.claim(ck, current, new, record), None  # only the slot was taken meanwhile

    def _claim(self, ck: str, current: ServiceSummary, new: ServiceSummary, record: dict[str, Any],
               more: tuple[tuple[dict[str, Any], Cond | None], ...]) -> ServiceSummary:
        stored = _with_seq(new, current.seq + 1)
        t = parse_time(record["time"])
        pk, sk = keys.decision(ck, current.service, t)
        cluster = record["cluster"]
        sort = keys.timeline_sort(t, "decision", current.service)
        dec = {"pk": pk, "sk": sk, "gsi1pk": keys.timeline_partition(cluster, t, sort), "gsi1sk": sort,
               "type": "decision",
               "cluster": cluster, "service": current.service, "time": record["time"], "action": record["action"],
               "reason": record["reason"], "message": record["message"],
               "previous_desired_count": record.get("previous_desired_count"),
               "decision": json.dumps(record, sort_keys=True), "expires_at": self._log.expires(t)}
        gone = self._mark_scale_downs(ck, current, new)
        try:
            self.table.transact_put([(dict(self._item(ck, stored, stored.seq).items()), self._cond(current)),
                                     (dec, Cond(absent=True)), *more])
        except ConditionFailedError:
            self._cache.pop((ck, current.service), None)
            raise
        self._cache[(ck, current.service)] = stored
        self._unmark_scale_downs(ck, current.service, gone)
        return stored

    @permissions(history_table=["dynamodb:GetItem"])
    def decision(self, ck: str, service: str, t: datetime) -> dict[str, Any] | None:
        """The recorded decision (public JSON shape) at event time ``t``, or ``None``."""
        item = self.table.get(*keys.decision(ck, service, t))
        return json.loads(item["decision"]) if item and item.get("decision") else None

    @permissions(history_table=["dynamodb:GetItem", "dynamodb:PutItem"])
    def amend_decision(self, ck: str, record: dict[str, Any]) -> None:
        """Rewrite the decision record (a scale-down turned into a hold by the cap, the evidence added)."""
        t = parse_time(record["time"])
        pk, sk = keys.decision(ck, record["service"], t)
        item = self.table.get(pk, sk) or {"pk": pk, "sk": sk}
        item.update({"action": record["action"], "reason": record["reason"], "message": record["message"],
                     "decision": json.dumps(record, sort_keys=True)})
        self.table.put(item)

    # -------------------------------------------------------------- held-at-zero slots (rule 5)
    @permissions(history_table=["dynamodb:PutItem"])
    def take_slot(self, ck: str, service: str, at: datetime, bound: int, view: ClusterView) -> int | None:
        """Take one of the cluster's ``bound`` held-at-zero slots for ``service`` (event time ``at``).

        A slot is free when never used or released; the service's own slot is reused (a resumed
        action never takes two). Returns the slot number, or ``None`` when every slot is held.
        """
        for slot in view.slots:
            if slot.service == service and not slot.released:
                return slot.n
        taken = {s.n for s in view.slots if not s.released}
        for n in [n for n in range(bound) if n not in taken] + [n for n in range(bound) if n in taken]:
            pk, sk = keys.slot(ck, n)
            try:
                self.table.put({"pk": pk, "sk": sk, "service": service, "time": iso(at), "released": False},
                               Cond(absent=True, any_of=({"released": True}, {"service": service})))
                return n
            except ConditionFailedError:
                continue
        return None

    # -------------------------------------------------------------- the sweep's index of open work
    def open_work(self, ck: str, cluster: str, service: str) -> None:
        """Name ``service`` (of cluster ``cluster``, key ``ck``) in the sweep's index of open work: a
        service held at zero whose probe or recovery message is still owed, or one whose episode alerted
        (its quiet window's end and recovery are the sweep's to find). One item per cluster
        (``OPEN#work`` / cluster key), a map of at most the cluster's held services; written with a
        version condition, so two writers never lose each other's entry. Idempotent."""
        self._index_change(ck, lambda svcs: None if svcs.get(service) == cluster else {**svcs, service: cluster})

    def close_work(self, ck: str, service: str) -> None:
        """Drop ``service`` from the cluster's index item (its recovery is over). Idempotent."""
        self._index_change(ck, lambda svcs: {k: v for k, v in svcs.items() if k != service}
                           if service in svcs else None)

    @permissions(history_table=["dynamodb:Query"])
    def open_work_items(self) -> list[tuple[str, str, str]]:
        """Every ``(cluster key, cluster, service)`` of the index (one Query of a partition whose items
        are the clusters with open work: bounded by the held services, never the history)."""
        out = []
        for item in self.table.query(keys.OPEN_WORK):
            try:
                entries = sorted((item.get("services") or {}).items())
            except (AttributeError, TypeError) as exc:  # hand-edited: the other clusters' entries are still read
                _log.error("%s %s: unreadable services of the sweep's index (%s): skipped", keys.OPEN_WORK,
                           item.get("sk"), exc)
                continue
            for service, cluster in entries:
                out.append((item["sk"], str(cluster), service))
        return out

    def open_job(self, ck: str, cluster: str, family: str, due: datetime) -> None:
        """Name job ``family`` in the cluster's index item with the end of its open window (``due``,
        event time): the sweep closes that window on time and sends its summary, with no further run
        of the job needed. At most one entry per family (a new window replaces the old one). Idempotent."""
        entry = [cluster, iso(due)]
        self._index_change(ck, lambda jobs: None if jobs.get(family) == entry else {**jobs, family: entry},
                           field="jobs")

    def close_job(self, ck: str, family: str, due: datetime) -> None:
        """Drop ``family``'s entry if it still names the window that ended at ``due`` (a window opened
        since keeps its entry). Idempotent."""
        stamp = iso(due)
        self._index_change(ck, lambda jobs: {k: v for k, v in jobs.items() if k != family}
                           if isinstance(jobs.get(family), list | tuple) and list(jobs[family])[1:] == [stamp]
                           else None, field="jobs")

    @permissions(history_table=["dynamodb:Query"])
    def open_job_items(self) -> list[tuple[str, str, str, datetime]]:
        """Every ``(cluster key, cluster, family, window end)`` of the index (the same one Query as
        :meth:`open_work_items`: bounded by the families with an open window, never the history)."""
        out = []
        for item in self.table.query(keys.OPEN_WORK):
            try:
                entries = sorted((item.get("jobs") or {}).items())
            except (AttributeError, TypeError) as exc:
                _log.error("%s %s: unreadable jobs of the sweep's index (%s): skipped", keys.OPEN_WORK,
                           item.get("sk"), exc)
                continue
            for family, entry in entries:
                try:
                    cluster, due = entry
                    out.append((item["sk"], str(cluster), family, parse_time(str(due))))
                except (ValueError, TypeError, OverflowError) as exc:  # one hand-edited entry: the rest are read
                    _log.error("%s %s: unreadable job entry %r of the sweep's index (%s): skipped", keys.OPEN_WORK,
                               item.get("sk"), str(family)[:200], exc)
        return out

    @permissions(history_table=["dynamodb:GetItem", "dynamodb:PutItem"])
    def _index_change(self, ck: str, change: Any, field: str = "services") -> None:
        pk, sk = keys.open_work(ck)
        for _ in range(_RETRIES):
            item = self.table.get(pk, sk)
            seq = item.get("seq") if item else 0
            read = {"seq": seq}
            if type(seq) is not int:
                # hand-edited (absent, a string, a fraction, a boolean, a map): logged; the count starts again
                # at 1, the write conditional on every value read, so a concurrent change is never lost
                _log.error("%s %s: seq of the sweep's index is not an integer (%s %.200r): counted again from 1",
                           keys.OPEN_WORK, sk, type(seq).__name__, seq)
                read = {"pk": pk, **{k: v for k, v in (item or {}).items() if k in ("seq", "services", "jobs")}}
                seq = 0
            entries = (item or {}).get(field) or {}
            if not isinstance(entries, dict):
                # hand-edited: the readers skip it (it names nothing the sweep can read); this change's own
                # entry is written in its place, so the held service or open window is not lost with it
                _log.error("%s %s: %s of the sweep's index is not a map (%s %.500r): replaced by this change's "
                           "entries", keys.OPEN_WORK, sk, field, type(entries).__name__, entries)
                entries = {}
            new = change(dict(entries))
            if new is None:
                return
            cond = Cond(absent=True) if item is None else Cond(any_of=(read,))
            doc = {k: v for k, v in (item or {}).items() if k in ("services", "jobs")}
            try:
                self.table.put({"pk": pk, "sk": sk, **doc, "seq": seq + 1, field: new}, cond)
                return
            except ConditionFailedError:
                continue
        raise StateConflictError(f"{ck}: the index of open work kept changing under {_RETRIES} writes")

    @permissions(history_table=["dynamodb:PutItem"])
    def release_slot(self, ck: str, service: str, view: ClusterView | None = None) -> bool:
        """Free the slot ``service`` holds (restore, or an operator raised its desired count). Idempotent."""
        view = view or self.cluster(ck)
        freed = False
        for slot in view.slots:
            if slot.service == service and not slot.released:
                pk, sk = keys.slot(ck, slot.n)
                try:
                    self.table.put({"pk": pk, "sk": sk, "service": service, "time": iso(slot.time), "released": True},
                                   Cond(any_of=({"service": service},)))
                    freed = True
                except ConditionFailedError:
                    pass
        return freed

    # -------------------------------------------------------------- mass events (one cluster alert)
    @permissions(history_table=["dynamodb:GetItem", "dynamodb:PutItem"])
    def open_mass_event(self, ck: str, at: datetime, window: timedelta) -> bool:
        """True for the first hold of a mass event in this cluster (send the one cluster alert).

        The event stays open while holds keep coming at most a window apart (``last`` moves forward).
        """
        pk, sk = keys.mass(ck)
        item = self.table.get(pk, sk)
        last = parse_time(item["last"]) if item else None
        first = last is None or at - last > window
        new = {"pk": pk, "sk": sk, "last": iso(max(at, last) if last and not first else at),
               "opened": iso(at) if first or item is None else item.get("opened", iso(at))}
        try:
            self.table.put(new, Cond(absent=True) if item is None else Cond(any_of=({"last": item["last"]},)))
        except ConditionFailedError:
            return False  # another invocation opened or moved it: it owns the alert
        return first

    # -------------------------------------------------------------- standalone jobs (never in the fleet test)
    def job_failure(self, ck: str, family: str, task_arn: str, at: datetime, window: timedelta,
                    exit_text: str = "unknown") -> JobFiling | None:
        """File a failed run of job ``family`` (:func:`~ecs_guardrail.core.summary.file_job_failure`).

        One item per family (``JOB#<cluster key>`` / ``J#<family>``), written conditionally on its
        ``seq``: of two concurrent invocations exactly one opens (or closes) a window, so a window
        gets one alert and one summary. The item holds the window (start, count, last exit, last
        time) and the newest 32 task ARNs; nothing in it grows with the number of failures.

        Returns the filing (``opened``: send the window's alert; ``closed``: the summary to send), or
        ``None`` for a redelivered task. Raises :class:`StateConflictError` after repeated lost races.
        """
        return self._file_job(ck, family, at, lambda job: file_job_failure(job, task_arn, at, exit_text, window))

    def job_window_due(self, ck: str, family: str, at: datetime, window: timedelta) -> JobFiling | None:
        """The sweep at ``at``: close ``family``'s window when it is over, as a clean run does
        (:meth:`job_run_ok`); of the sweep and a concurrent event exactly one sends the summary."""
        return self._file_job(ck, family, at, lambda job: close_job_window(job, at, window))

    @permissions(history_table=["dynamodb:GetItem"])
    def job(self, ck: str, family: str) -> JobSummary:
        """Job ``family``'s current window as stored (one GetItem; nothing written)."""
        return _job_from_item(family, self.table.get(*keys.job(ck, family)))

    def job_run_ok(self, ck: str, family: str, at: datetime, window: timedelta) -> JobFiling | None:
        """A run of job ``family`` finished normally at ``at``: close its window when that window is over
        (:func:`~ecs_guardrail.core.summary.close_job_window`), so a job that stops failing still gets its
        last window's summary. One GetItem (none is written for a family that never failed or has
        nothing to summarise); the closing write is conditional on ``seq``, so of two concurrent
        invocations one sends the summary. Returns the filing (``closed``: send it) or ``None``.
        Raises :class:`StateConflictError` after repeated lost races.
        """
        return self._file_job(ck, family, at, lambda job: close_job_window(job, at, window))

    @permissions(history_table=["dynamodb:GetItem", "dynamodb:PutItem"])
    def _file_job(self, ck: str, family: str, at: datetime,
                  change: Callable[[JobSummary], JobFiling | None]) -> JobFiling | None:
        pk, sk = keys.job(ck, family)
        for _ in range(_RETRIES):
            item = self.table.get(pk, sk)
            job = _job_from_item(family, item)
            filing = change(job)
            if filing is None:
                return None
            j = filing.job
            doc = {"t": list(j.tasks), "l": iso(j.last_alert) if j.last_alert else None, "n": j.failures_since_alert,
                   "x": j.last_exit, "lt": iso(j.last_time) if j.last_time else None}
            try:
                self.table.put({"pk": pk, "sk": sk, "type": "job_summary", "family": family, "seq": job.seq + 1,
                                "doc": json.dumps(doc, separators=(",", ":")),
                                "expires_at": self._log.expires(max(at, j.last_time or at))},
                               Cond(absent=True) if item is None else Cond(any_of=({"seq": job.seq},)))
                return replace(filing, job=replace(j, seq=job.seq + 1))
            except ConditionFailedError:
                continue
        raise StateConflictError(f"{ck}/family:{family}: kept changing under {_RETRIES} writes")
