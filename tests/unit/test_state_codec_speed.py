"""Issue 33.2's speed-ups of the watchdog's state layer change no byte: the stored summary text is what
``json.dumps(summary_to_doc(s))`` gave, and a stored summary is decoded again exactly when its version
(service, seq, doc text) changed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.adapters.store.watchdog_state import (
    UnreadableSummaryError,
    WatchdogState,
    _SummaryText,
    summary_to_doc,
)
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Failure, Reason
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import (
    ActionStatus,
    AlertStatus,
    DeploymentNote,
    Episode,
    EpisodeEnd,
    MinuteCount,
    RecoveryStatus,
    ServiceSummary,
    add_failure,
    add_spot,
)

T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
ARN = "arn:aws:ecs:eu-west-1:111122223333:task/development/"


def _failure(i: int, kind: StopKind, reason: str = "Essential container in task exited") -> Failure:
    return Failure(service="api", time=T0 + timedelta(seconds=7 * i, milliseconds=i % 3), kind=kind,
                   task_arn=f"{ARN}{i:032x}", availability_zone="eu-west-1a" if i % 2 else None,
                   stop_code="EssentialContainerExited", reason=reason, cause="OutOfMemoryError" if i % 3 else None,
                   exit_codes=(("app", 137), ("sidecar", None)) if i % 2 else ())


def _summaries() -> list[ServiceSummary]:
    out = [ServiceSummary("api")]
    s = ServiceSummary("api", seq=3)
    for i in range(14):  # past FULL_ENTRIES: the older entries are stored reduced
        s = add_failure(s, _failure(i, StopKind.CRASH if i % 4 else StopKind.HEALTH_CHECK_KILL,
                                    reason="naïve \"quoted\" \u2028 text"), 10) or s
        out.append(s)
    ep = Episode(decision_time=T0, last_failure=T0 + timedelta(minutes=3), action=Action.SCALE_TO_ZERO,
                 reason=Reason.CRASH_LOOP, trigger="crash_loop", action_status=ActionStatus.DONE,
                 alert_status=AlertStatus.SENT, previous_desired_count=2, lease_until=12.5,
                 recovery=RecoveryStatus.PENDING, ended_by=EpisodeEnd.QUIET, ended_at=T0 + timedelta(hours=1))
    out.append(replace(s, spot=((f"{ARN}{99:032x}", T0),), episode=ep, episode_end=EpisodeEnd.QUIET,
                       counted_after=T0, scaled=(T0, T0 + timedelta(seconds=1.5)), steady_at=T0,
                       deployments=(DeploymentNote(T0, "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/1", None),),
                       minutes=(MinuteCount(T0, 3, (0.0, 1.25, 59.999)),
                                MinuteCount(T0 + timedelta(minutes=7), 1, (2.0,)))))
    out.append(replace(out[-1], crashes=(), kills=(), minutes=(), recent=()))
    return out


def test_stored_text_is_json_dumps_of_the_document_byte_for_byte() -> None:
    text = _SummaryText()
    for _ in range(2):  # the second pass reads every entry's text from the memo
        for s in _summaries():
            assert text.text(s) == json.dumps(summary_to_doc(s), separators=(",", ":"))


def test_each_write_of_a_service_is_json_dumps_whatever_changed_since_the_write_before() -> None:
    """The text reuses what the write before made of the same service (rings, Spot notices, episode, minute
    rows): a sequence of filings, notices, a first minute dropped past the horizon, an episode and its end."""
    text = _SummaryText()
    s = ServiceSummary("api", seq=1)
    ep = Episode(decision_time=T0, last_failure=T0, action=Action.HOLD, reason=Reason.MASS_UNHEALTHY,
                 trigger="crash_loop", action_status=ActionStatus.NONE, alert_status=AlertStatus.PENDING)
    for i in range(90):
        f = _failure(i * 9, StopKind.CRASH if i % 3 else StopKind.HEALTH_CHECK_KILL)
        got = add_failure(s, f, 5, horizon=timedelta(minutes=6)) if i % 5 else \
            add_spot(s, f"{ARN}{10_000 + i:032x}", f.time)
        s = got or s
        if i == 30:
            s = replace(s, episode=ep)
        if i == 60:
            s = replace(s, episode=replace(ep, last_failure=f.time), episode_end=EpisodeEnd.QUIET, counted_after=f.time,
                        scaled=(T0,), steady_at=f.time)
        for other in (s, ServiceSummary("api"), s):  # an empty summary of the name in between, and back
            assert text.text(other) == json.dumps(summary_to_doc(other), separators=(",", ":"))


def test_unchanged_item_is_decoded_once_and_a_changed_one_again() -> None:
    table = MemoryTable()
    state = WatchdogState(table)
    s, _ = state.update("dev", "api", lambda x: add_failure(x, _failure(1, StopKind.CRASH), 10))
    first = state.load("dev", "api", fresh=True)
    assert state.load("dev", "api", fresh=True) is first  # the same version: not decoded again
    assert first.crashes == s.crashes and first.seq == s.seq
    state.update("dev", "api", lambda x: add_failure(x, _failure(2, StopKind.CRASH), 10))
    second = state.load("dev", "api", fresh=True)
    assert second is not first and len(second.crashes) == 2
    # the same seq with other text (written by hand) is another version too; unreadable text still raises
    pk, sk = keys.summary("dev", "api")
    item = table.get(pk, sk)
    table.put({**item, "doc": "{not json"})
    with pytest.raises(UnreadableSummaryError):
        state.load("dev", "api", fresh=True)


def test_a_write_stores_the_summary_with_the_next_seq_and_every_other_field_kept() -> None:
    from ecs_guardrail.adapters.store.watchdog_state import _with_seq

    for s in _summaries():
        assert _with_seq(s, s.seq + 1) == replace(s, seq=s.seq + 1)


@pytest.mark.parametrize("keep", [3, 5, 7])
def test_rings_and_notices_reused_from_the_write_before_in_any_order(keep: int) -> None:
    """Round 10: a ring that is the one before with a failure appended (its oldest maybe dropped) and Spot
    notices that are the ones before (the oldest maybe forgotten) plus one reuse their texts; out-of-order
    failures, notices that take a filed failure out again and rings past :data:`FULL_ENTRIES` take the long
    way. Every write is ``json.dumps`` of its document."""
    import random

    rnd = random.Random(keep)
    text = _SummaryText()
    s = ServiceSummary("api", seq=1)
    for i in range(400):
        at = i * 11 + rnd.choice((0, 0, 0, -300, -5000))  # mostly in order, some late, some very late
        f = _failure(at % 100_000 + 100_000 if at < 0 else at, StopKind.CRASH if rnd.random() < 0.5
                     else StopKind.HEALTH_CHECK_KILL)
        roll = rnd.random()
        if roll < 0.2:
            got = add_spot(s, f"{ARN}{rnd.randrange(1 << 20):032x}", T0 + timedelta(seconds=i * 11))
        elif roll < 0.3 and (s.crashes or s.kills):  # a notice of a filed task: its failure taken out
            victim = rnd.choice(s.crashes + s.kills)
            got = add_spot(s, victim.task_arn, victim.time)
        else:
            got = add_failure(s, f, keep, horizon=timedelta(minutes=30))
        s = got or s
        assert text.text(s) == json.dumps(summary_to_doc(s), separators=(",", ":")), i
