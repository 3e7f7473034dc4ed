"""The watchdog's per-service summary and its pure transitions (core/summary.py), without AWS."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Failure, Reason
from ecs_guardrail.core.structs import replace
from ecs_guardrail.core.summary import (
    DEPLOYMENT_MEMORY,
    SPOT_MEMORY,
    ActionStatus,
    AlertStatus,
    DeploymentNote,
    Episode,
    EpisodeEnd,
    JobSummary,
    RecoveryStatus,
    ServiceSummary,
    add_deployment,
    add_failure,
    add_spot,
    close_episode,
    close_job_window,
    episode_is_open,
    failures_between,
    file_job_failure,
    in_window,
    mark_restored,
    recovery_owed,
)

T0 = datetime(2025, 8, 21, 10, 0, tzinfo=UTC)
W = timedelta(minutes=30)
KEEP = 5


def crash(n: int, minutes: float = 0, kind: StopKind = StopKind.CRASH, service: str = "api") -> Failure:
    return Failure(service, T0 + timedelta(minutes=minutes), kind, task_arn=f"task-{n}")


def ep(last: float = 0, decided: float = 0, **kw) -> Episode:
    base = dict(decision_time=T0 + timedelta(minutes=decided), last_failure=T0 + timedelta(minutes=last),
                action=Action.ALERT_ONLY, reason=Reason.CRASH_LOOP, trigger="crash_loop",
                action_status=ActionStatus.NONE, alert_status=AlertStatus.SENT)
    return Episode(**{**base, **kw})


# ---------------------------------------------------------------- add_failure
def test_add_failure_files_crashes_and_kills_in_their_own_rings():
    s = add_failure(ServiceSummary("api"), crash(1), KEEP)
    s = add_failure(s, crash(2, 1, StopKind.HEALTH_CHECK_KILL), KEEP)
    assert [f.task_arn for f in s.crashes] == ["task-1"] and [f.task_arn for f in s.kills] == ["task-2"]
    assert s.newest_failure == T0 + timedelta(minutes=1)


def test_add_failure_dedupes_per_task():
    s = add_failure(ServiceSummary("api"), crash(1), KEEP)
    assert add_failure(s, crash(1), KEEP) is None
    # the same task later, or as the other kind: the first final verdict stands
    assert add_failure(s, crash(1, 5), KEEP) is None
    assert add_failure(s, crash(1, 5, StopKind.HEALTH_CHECK_KILL), KEEP) is None


def test_spot_verdict_blocks_a_later_crash_of_the_same_task():
    s = add_spot(ServiceSummary("api"), "task-1", T0)
    assert s is not None and s.knows_task("task-1")
    assert add_failure(s, crash(1, 2), KEEP) is None
    assert add_failure(s, crash(1, 2, StopKind.HEALTH_CHECK_KILL), KEEP) is None
    # a second notice for the same task changes nothing either
    assert add_spot(s, "task-1", T0 + timedelta(minutes=1)) is None


def test_a_crash_verdict_is_not_overridden_by_a_later_spot_notice():
    s = add_failure(ServiceSummary("api"), crash(1), KEEP)
    assert add_spot(s, "task-1", T0 + timedelta(minutes=1)) is None
    assert len(s.crashes) == 1


def test_spot_notices_are_forgotten_after_spot_memory():
    s = add_spot(ServiceSummary("api"), "old", T0)
    s = add_spot(s, "new", T0 + SPOT_MEMORY + timedelta(seconds=1))
    assert [t for t, _ in s.spot] == ["new"]


@pytest.mark.parametrize("kind", [StopKind.SPOT, StopKind.SCHEDULER, StopKind.USER, StopKind.UNKNOWN,
                                  StopKind.INFRASTRUCTURE])
def test_add_failure_refuses_kinds_that_do_not_count(kind):
    assert not kind.counts_as_failure
    with pytest.raises(ValueError):
        add_failure(ServiceSummary("api"), crash(1, 0, kind), KEEP)


def test_ring_is_bounded_to_keep_under_a_hot_loop():
    s = ServiceSummary("api")
    for i in range(5_000):
        new = add_failure(s, crash(i, i * 2 / 60), KEEP)
        assert new is not None
        s = new
    assert len(s.crashes) == KEEP
    assert [f.task_arn for f in s.crashes] == [f"task-{i}" for i in range(4_995, 5_000)]  # the newest


def test_ring_keeps_the_newest_by_event_time_and_drops_a_late_old_one():
    s = ServiceSummary("api")
    for i in range(KEEP):
        s = add_failure(s, crash(i, 10 + i), KEEP)
    older = add_failure(s, crash(99, 1), KEEP)  # older than the KEEP newest: its own threshold cannot change
    assert older is not None and older.crashes == s.crashes
    # ... but it is counted in its own minute for the fleet test, and known as filed
    assert failures_between(older.minutes, T0, T0 + timedelta(minutes=2), 2) == 1
    assert add_failure(older, crash(99, 1), KEEP) is None
    late = add_failure(s, crash(100, 11.5), KEEP)  # late but among the newest: kept, in time order
    assert late is not None and len(late.crashes) == KEEP
    assert [f.task_arn for f in late.crashes] == ["task-1", "task-100", "task-2", "task-3", "task-4"]


# ---------------------------------------------------------------- add_deployment
def test_add_deployment_dedupes_and_is_bounded():
    s = ServiceSummary("api")
    note = DeploymentNote(T0, "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/1")
    s = add_deployment(s, note)
    assert add_deployment(s, DeploymentNote(T0, "SERVICE_DEPLOYMENT_IN_PROGRESS", "ecs-svc/1")) is None
    for i in range(20):
        s = add_deployment(s, DeploymentNote(T0 + timedelta(minutes=i + 1), "SERVICE_DEPLOYMENT_COMPLETED",
                                             f"ecs-svc/{i}")) or s
    assert len(s.deployments) == DEPLOYMENT_MEMORY
    assert [n.deployment_id for n in s.deployments] == [f"ecs-svc/{i}" for i in range(14, 20)]


def test_add_deployment_keeps_event_time_order_for_late_ones():
    s = add_deployment(ServiceSummary("api"), DeploymentNote(T0 + timedelta(minutes=5), "B"))
    s = add_deployment(s, DeploymentNote(T0, "A"))
    assert [n.event_name for n in s.deployments] == ["A", "B"]


# ---------------------------------------------------------------- episodes
def test_episode_is_open_up_to_exactly_last_failure_plus_window():
    s = ServiceSummary("api", episode=ep(last=0))
    assert episode_is_open(s, T0 + W, W)
    assert not episode_is_open(s, T0 + W + timedelta(microseconds=1), W)
    assert episode_is_open(s, T0 + timedelta(minutes=29), W)
    assert not episode_is_open(ServiceSummary("api"), T0, W)


def test_an_ended_episode_is_never_open():
    s = ServiceSummary("api", episode=ep(last=0), episode_end=EpisodeEnd.RESTORED)
    assert not episode_is_open(s, T0 + timedelta(minutes=1), W)


def test_close_episode_records_why_and_what_no_longer_counts():
    s = ServiceSummary("api", crashes=(crash(1, 0), crash(2, 4)), episode=ep(last=4))
    closed = close_episode(s, EpisodeEnd.STEADY_STATE, T0 + timedelta(minutes=2))
    assert closed is not None and closed.episode_end is EpisodeEnd.STEADY_STATE
    # defect 3 (issue 18): the episode ended at 2; the crash stamped 4 (delivered before the steady
    # state) belongs to the next episode, by its own time
    assert closed.counted_after == T0 + timedelta(minutes=2)
    assert [f.task_arn for f in closed.counted(StopKind.CRASH, T0 + timedelta(minutes=4), W)] == ["task-2"]
    # the record of the decision stays; the write that ended it owes its recovery message (it alerted)
    assert replace(closed.episode, recovery=RecoveryStatus.NONE, ended_by=None, ended_at=None) == s.episode
    assert closed.episode.recovery is RecoveryStatus.PENDING and closed.episode.ended_by is EpisodeEnd.STEADY_STATE
    assert close_episode(closed, EpisodeEnd.QUIET, T0 + timedelta(minutes=60)) is None  # already ended
    assert close_episode(ServiceSummary("api"), EpisodeEnd.QUIET, T0) is None  # nothing to end
    later = close_episode(s, EpisodeEnd.RESTORED, T0 + timedelta(minutes=9))
    assert later.counted_after == T0 + timedelta(minutes=9) and later.episode_end is EpisodeEnd.RESTORED


def test_held_at_zero_and_unfinished():
    assert ep(action=Action.SCALE_TO_ZERO, action_status=ActionStatus.PENDING).held_at_zero
    assert ep(action=Action.SCALE_TO_ZERO, action_status=ActionStatus.DONE).held_at_zero
    assert not ep(action=Action.SCALE_TO_ZERO, action_status=ActionStatus.RESTORED).held_at_zero
    assert not ep(action=Action.HOLD, action_status=ActionStatus.NONE).held_at_zero
    assert ep(action_status=ActionStatus.PENDING).unfinished
    assert ep(alert_status=AlertStatus.PENDING).unfinished
    assert ep(alert_status=AlertStatus.FAILED).unfinished
    assert not ep(alert_status=AlertStatus.COVERED).unfinished
    assert not ep(action_status=ActionStatus.DONE, alert_status=AlertStatus.SENT).unfinished


def test_lease_runs_until_its_expiry():
    e = ep(lease_owner="a", lease_until=100.0)
    assert e.leased(99.9) and not e.leased(100.0) and not ep().leased(0)


def test_in_window_is_inclusive_and_sorted():
    fs = (crash(3, 30), crash(1, 0), crash(2, 15), crash(4, 31))
    got = in_window(fs, T0 + W, W)
    assert [f.task_arn for f in got] == ["task-1", "task-2", "task-3"]
    assert [f.task_arn for f in in_window(fs, T0 + W, W, after=T0)] == ["task-2", "task-3"]


# ---------------------------------------------------------------- recovery (issue 13)
def test_recovery_is_owed_once_and_only_for_episodes_that_alerted():
    assert recovery_owed(ep(), EpisodeEnd.QUIET) and recovery_owed(ep(), EpisodeEnd.STEADY_STATE)
    for status in (AlertStatus.PENDING, AlertStatus.FAILED, AlertStatus.COVERED):  # never alerted: no recovery
        assert not recovery_owed(ep(alert_status=status), EpisodeEnd.STEADY_STATE)
    assert not recovery_owed(ep(recovery=RecoveryStatus.SENT), EpisodeEnd.QUIET)  # at most once
    s = ServiceSummary("api", episode=ep(last=4))
    closed = close_episode(s, EpisodeEnd.QUIET, T0 + timedelta(minutes=4), T0 + timedelta(minutes=34))
    assert closed.episode.recovery is RecoveryStatus.PENDING and closed.episode.ended_at == T0 + timedelta(minutes=34)
    never = close_episode(ServiceSummary("api", episode=ep(alert_status=AlertStatus.COVERED)), EpisodeEnd.QUIET, T0)
    assert never.episode.recovery is RecoveryStatus.NONE


def test_a_scale_down_recovers_only_when_restored():
    down = ep(action=Action.SCALE_TO_ZERO, action_status=ActionStatus.DONE, previous_desired_count=3)
    s = ServiceSummary("api", episode=down)
    # quiet and steady because it is stopped: the episode ends, no recovery is owed
    quiet = close_episode(s, EpisodeEnd.QUIET, T0)
    assert quiet.episode_end is EpisodeEnd.QUIET and quiet.episode.recovery is RecoveryStatus.NONE
    assert close_episode(s, EpisodeEnd.STEADY_STATE, T0).episode.recovery is RecoveryStatus.NONE
    # restored later (after the episode ended quiet): now it is owed, once, ended at the restore
    back = mark_restored(quiet, T0 + timedelta(minutes=90))
    assert back.episode.action_status is ActionStatus.RESTORED and back.episode.recovery is RecoveryStatus.PENDING
    assert back.episode.ended_by is EpisodeEnd.RESTORED and back.episode.ended_at == T0 + timedelta(minutes=90)
    assert mark_restored(back, T0 + timedelta(minutes=91)) is None
    # restored while still open: the episode ends at its last failure (event time), recovery owed
    open_back = mark_restored(s, T0 + timedelta(minutes=50))
    assert open_back.episode_end is EpisodeEnd.RESTORED and open_back.counted_after == down.last_failure
    assert mark_restored(ServiceSummary("api", episode=ep()), T0) is None  # not a scale-down


# ---------------------------------------------------------------- job windows (issue 13)
def test_job_window_counts_then_closes_with_a_summary():
    job = JobSummary("nightly")
    f = file_job_failure(job, "t1", T0, "1", W)
    assert f.opened and f.closed is None and f.job.failures_since_alert == 1
    job = f.job
    assert file_job_failure(job, "t1", T0, "1", W) is None  # redelivery
    for i, m in enumerate((5, 10, 30), 2):
        f = file_job_failure(job, f"t{i}", T0 + timedelta(minutes=m), "137" if m == 30 else "1", W)
        assert not f.opened and f.job.failures_since_alert == i
        job = f.job
    assert (job.last_exit, job.last_time) == ("137", T0 + W)
    f = file_job_failure(job, "t9", T0 + timedelta(minutes=31), "2", W)
    assert f.opened and f.closed == (T0, 4, "137", T0 + W)
    assert (f.job.last_alert, f.job.failures_since_alert, f.job.last_exit) == (T0 + timedelta(minutes=31), 1, "2")


def test_job_window_of_one_failure_needs_no_summary_and_state_stays_bounded():
    f = file_job_failure(JobSummary("hourly"), "t1", T0, "1", W)
    f = file_job_failure(f.job, "t2", T0 + timedelta(hours=1), "1", W)
    assert f.opened and f.closed is None  # the opening alert already said all there was
    job = f.job
    for i in range(500):
        job = file_job_failure(job, f"x{i}", T0 + timedelta(hours=1, seconds=i), "1", W).job
    assert len(job.tasks) == 32 and job.failures_since_alert == 501


def test_a_clean_run_closes_only_a_window_that_is_over_and_counted_more_than_its_opener():
    job = JobSummary("nightly")
    for n, minutes in enumerate((0, 5, 10)):
        job = file_job_failure(job, f"t{n}", T0 + timedelta(minutes=minutes), "1", W).job
    assert close_job_window(job, T0 + timedelta(minutes=29), W) is None  # window still open
    assert close_job_window(job, T0 + W, W) is None  # both ends of the window belong to it
    filing = close_job_window(job, T0 + timedelta(minutes=31), W)
    assert filing is not None and not filing.opened
    assert filing.closed == (T0, 3, "1", T0 + timedelta(minutes=10))
    assert filing.job.last_alert == T0 and filing.job.failures_since_alert == 0  # summarised
    assert close_job_window(filing.job, T0 + timedelta(minutes=90), W) is None  # closed once
    reopened = file_job_failure(filing.job, "t9", T0 + timedelta(minutes=95), "2", W)
    assert reopened is not None and reopened.opened and reopened.closed is None


def test_a_clean_run_after_a_single_failure_has_nothing_to_say():
    job = file_job_failure(JobSummary("nightly"), "t0", T0, "1", W).job
    assert close_job_window(job, T0 + timedelta(hours=2), W) is None
    assert close_job_window(JobSummary("never-failed"), T0, W) is None


def test_a_late_failure_of_a_window_a_clean_run_summarised_opens_no_window_in_the_past():
    """Failures at 10:00 and 10:10, a clean run at 10:45 closes the window and its summary goes out;
    the failure of 10:20, delivered after that (events arrive out of order), belongs to the summarised
    window: it opens no second window (a second alert for 10:00-10:30) and no later summary re-counts it."""
    job = JobSummary("nightly")
    for n, minutes in enumerate((0, 10)):
        job = file_job_failure(job, f"t{n}", T0 + timedelta(minutes=minutes), "1", W).job
    closed = close_job_window(job, T0 + timedelta(minutes=45), W)
    assert closed is not None and closed.closed == (T0, 2, "1", T0 + timedelta(minutes=10))
    late = file_job_failure(closed.job, "t2", T0 + timedelta(minutes=20), "1", W)
    assert late is not None and not late.opened and late.closed is None
    assert file_job_failure(late.job, "t2", T0 + timedelta(minutes=20), "1", W) is None  # still deduplicated
    assert close_job_window(late.job, T0 + timedelta(minutes=50), W) is None  # summarised once
    later = file_job_failure(late.job, "t3", T0 + timedelta(minutes=60), "2", W)
    assert later is not None and later.opened and later.closed is None


# ---------------------------------------------------------------- issue 18: late, repeated, reordered delivery
def test_minute_counts_answer_any_window_exactly_at_its_edges():
    # 7 failures in one minute (more than 2 x edge: only the 2 smallest and 2 largest offsets are kept)
    s = ServiceSummary("api")
    for i, sec in enumerate([1, 5, 20, 30, 40, 50, 58]):
        s = add_failure(s, Failure("api", T0 + timedelta(seconds=sec), StopKind.CRASH, task_arn=f"t{i}"), KEEP)
    (mc,) = s.minutes
    assert mc.count == 7 and mc.seconds == (1.0, 5.0, 50.0, 58.0)
    at = T0 + timedelta(seconds=1)
    assert failures_between(s.minutes, at, at + W, 2) == 2  # whole minute inside: capped at 2
    # a window whose start cuts the minute: only 58 is at or after 55
    assert failures_between(s.minutes, T0 + timedelta(seconds=55), T0 + timedelta(minutes=40), 2) == 1
    # a window whose end cuts the minute: only 1 is at or before 3 (both ends included)
    assert failures_between(s.minutes, T0 - W, T0 + timedelta(seconds=3), 2) == 1
    assert failures_between(s.minutes, T0 - W, T0 + timedelta(seconds=1), 2) == 1
    assert failures_between(s.minutes, T0 - W, T0, 2) == 0


def test_minute_counts_are_bounded_by_the_horizon_not_the_loop():
    s = ServiceSummary("api")
    for i in range(600):  # one crash every 20 s for 200 minutes
        s = add_failure(s, crash(i, i / 3), KEEP, horizon=2 * W)
    assert len(s.minutes) == 61 and len(s.recent) == 32 and len(s.crashes) == KEEP
    assert s.minutes[0].minute == s.minutes[-1].minute - 2 * W


def test_a_redelivered_failure_older_than_the_rings_is_counted_once():
    s = ServiceSummary("api")
    for i in range(KEEP):
        s = add_failure(s, crash(i, 10 + i), KEEP)
    old = add_failure(s, crash(99, 1), KEEP)
    assert add_failure(old, crash(99, 1), KEEP) is None
    assert failures_between(old.minutes, T0, T0 + timedelta(minutes=2), 5) == 1


def test_a_notice_delivered_after_its_tasks_stop_takes_the_crash_back():
    # Fargate maintenance: the TerminationNotice (10:00) arrives after the task's STOPPED (10:00:40, exit 143)
    stop = Failure("api", T0 + timedelta(seconds=40), StopKind.CRASH, task_arn="arn:task/c/abc123")
    s = add_failure(ServiceSummary("api"), stop, KEEP)
    assert s.crashes and s.minutes
    marked = add_spot(s, "arn:task/c/abc123", T0)
    assert marked is not None and marked.crashes == () and marked.minutes == ()
    assert add_failure(marked, stop, KEEP) is None  # a redelivered STOPPED stays an infrastructure stop
    # a notice stamped after the task already failed changes nothing: the first verdict stands
    assert add_spot(s, "arn:task/c/abc123", T0 + timedelta(minutes=5)) is None


def test_a_steady_state_delivered_before_the_late_decision_still_ends_its_episode():
    from ecs_guardrail.core.summary import ended_by_steady, note_steady

    s = ServiceSummary("api", crashes=(crash(1, 0), crash(2, 1)))
    remembered = note_steady(s, T0 + timedelta(minutes=3))  # no episode yet: remembered
    assert remembered is not None and remembered.episode is None and remembered.steady_at == T0 + timedelta(minutes=3)
    decided = replace(remembered, episode=ep(last=1, decided=1))
    ended = ended_by_steady(decided)
    assert ended is not None and ended.episode_end is EpisodeEnd.STEADY_STATE
    assert ended.counted_after == T0 + timedelta(minutes=3)
    # a steady state before the decision's time never ends it
    assert ended_by_steady(replace(decided, episode=ep(last=5, decided=5))) is None
    # an episode still finishing (alert pending) is not ended under its invocation
    busy = replace(s, episode=ep(last=1, decided=1, alert_status=AlertStatus.PENDING))
    later = note_steady(busy, T0 + timedelta(minutes=3))
    assert later is not None and later.episode_end is None and later.steady_at is not None


def test_an_impaired_event_counts_like_a_failure_for_the_quiet_window():
    from ecs_guardrail.core.summary import note_activity

    s = ServiceSummary("api", crashes=(crash(1, 0),), episode=ep(last=0))
    moved = note_activity(s, T0 + timedelta(minutes=20), W)  # SERVICE_TASK_START_IMPAIRED at 20
    assert moved is not None and moved.episode.last_failure == T0 + timedelta(minutes=20)
    assert episode_is_open(moved, T0 + timedelta(minutes=45), W)  # open: 45 <= 20 + 30
    quiet = note_activity(s, T0 + timedelta(minutes=31), W)  # more than a window after the last failure
    assert quiet is not None and quiet.episode_end is EpisodeEnd.QUIET and quiet.counted_after == T0


def test_open_episode_remembers_a_replaced_scale_down():
    from ecs_guardrail.core.summary import open_episode, scale_down_times

    scaled = ep(last=0, decided=0, action=Action.SCALE_TO_ZERO, action_status=ActionStatus.DONE)
    s = replace(ServiceSummary("api"), episode=scaled)
    held = open_episode(s, ep(last=10, decided=10, action=Action.HOLD, reason=Reason.MASS_UNHEALTHY))
    assert scale_down_times(held) == (T0,)


def test_reevaluated_is_silent_only_for_the_same_outcome():
    from ecs_guardrail.core.summary import reevaluated

    s = replace(ServiceSummary("api"), episode=ep(last=10, decided=5, action=Action.HOLD,
                                                  reason=Reason.MASS_UNHEALTHY))
    same = reevaluated(s, T0 + timedelta(minutes=20), Action.HOLD, Reason.MASS_UNHEALTHY)
    assert same is not None and same.episode.last_evaluation == T0 + timedelta(minutes=20)
    assert reevaluated(s, T0 + timedelta(minutes=20), Action.SCALE_TO_ZERO, Reason.CRASH_LOOP) is None
    used = reevaluated(s, T0 + timedelta(minutes=20), Action.HOLD, Reason.MASS_UNHEALTHY, escalation=True)
    assert used.episode.escalated
