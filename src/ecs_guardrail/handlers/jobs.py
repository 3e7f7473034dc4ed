"""Standalone jobs (a task with no service, ``group`` ``family:NAME``): a failed run opens its family's
alert window and alerts once; later failures in the window are counted and summarised when it closes
(a normal run, the next failure after it, or the scheduled sweep). Judged by
:func:`~ecs_guardrail.core.classify.judge_job_stop`; composed by :mod:`ecs_guardrail.core.alert`.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from ecs_guardrail.adapters.store.watchdog_state import WatchdogState
from ecs_guardrail.core.alert import job_failure_alert, job_summary_alert
from ecs_guardrail.core.classify import StopKind, judge_job_stop
from ecs_guardrail.core.decision_facts import failure_of
from ecs_guardrail.core.events import TaskStateChange
from ecs_guardrail.core.policy import PolicyConfig
from ecs_guardrail.handlers.outbox import Outbox
from ecs_guardrail.handlers.runtime import metrics

__all__ = ["on_job"]


def on_job(out: Outbox, state: WatchdogState, config: PolicyConfig, event: TaskStateChange, ck: str, family: str,
           kind: StopKind, cause: str | None, exit_codes: tuple[tuple[str, int | None], ...]) -> dict[str, Any]:
    """A stop of a standalone job of ``family`` in cluster key ``ck``: the handler's outcome
    (``job_failed`` with ``alerted`` and, when a window closed, ``summarised``; ``duplicate``;
    ``ignored`` with why). Whether a container that matters failed is read from the task definition
    (DescribeTaskDefinition ``essential``, cached per ARN)."""
    d = event.detail
    arn = d.task_definition_arn
    run = judge_job_stop(d.last_status, kind, exit_codes,
                         lambda: out.taskdefs().essential_containers(arn) if arn else None)
    if run.outcome == "ok":
        return _job_ok(out, state, config, event, ck, family, run.why)
    if run.outcome != "failed":
        return {"status": "ignored", "why": run.why}
    failure = replace(failure_of(event, kind, cause, exit_codes, f"family:{family}"),
                      reason=f"{run.why}; {d.stopped_reason or 'no reason'}")
    window = config.window
    filing = state.job_failure(ck, family, d.task_arn, event.time, window, run.exit_text)
    if filing is None:
        return {"status": "duplicate"}
    metrics.add_metric(name="JobFailures", unit="Count", value=1)
    if filing.opened:
        # the sweep closes the window on time (its summary needs no further run of the job)
        state.open_job(ck, d.cluster, family, event.time + window)
        where = out.place(ck, d.cluster, family=family)
        links = out.links(where, (failure,))
        minutes = config.window_minutes
        if filing.closed is not None:
            start, count, last_exit, last_time = filing.closed
            alert = job_summary_alert(d.cluster, family, failures=count, window_minutes=minutes,
                                      window_start=start, last_exit=last_exit, last_time=last_time,
                                      next_failure=failure, where=where, links=links)
        else:
            alert = job_failure_alert(d.cluster, family, failure, where=where, links=links,
                                      window_minutes=minutes, window_end=event.time + window)
        out.deliver(alert)
    return {"status": "job_failed", "cluster": d.cluster, "family": family, "alerted": filing.opened,
            **({"summarised": filing.closed[1]} if filing.closed else {})}


def _job_ok(out: Outbox, state: WatchdogState, config: PolicyConfig, event: TaskStateChange, ck: str, family: str,
            why: str) -> dict[str, Any]:
    """A run of ``family`` finished normally: if it closes a window that counted several failures,
    send that window's summary now (a job that stops failing sends no further failure to do it)."""
    d = event.detail
    filing = state.job_run_ok(ck, family, event.time, config.window)
    if filing is None or filing.closed is None:
        return {"status": "ignored", "why": why}
    start, count, last_exit, last_time = filing.closed
    where = out.place(ck, d.cluster, family=family)
    out.deliver(job_summary_alert(d.cluster, family, failures=count, window_minutes=config.window_minutes,
                                  window_start=start, last_exit=last_exit, last_time=last_time, ok_run_at=event.time,
                                  where=where, links=out.links(where, ())))
    return {"status": "ignored", "why": why, "cluster": d.cluster, "family": family, "summarised": count}
