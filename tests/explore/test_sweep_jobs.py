"""Standalone job windows closed by the scheduled sweep (issue 21): a window's summary goes out on
time, from the sweep's bounded index, not with the family's next event (which may never come)."""

from __future__ import annotations

from datetime import timedelta

import ecsgen
from world import CONTEXT, T0, World

from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.sweep import run_sweep


def job_crash(n: int, minute: float, family: str = "nightly") -> dict:
    return ecsgen.task_event("dev", None, f"{n:032x}", "crash_exit", T0 + timedelta(minutes=minute),
                             group=f"family:{family}")


def _sweep(w: World, minute: float) -> dict:
    return run_sweep(w.runtime(), T0 + timedelta(minutes=minute), CONTEXT)


def test_the_sweep_sends_a_closed_job_windows_summary_on_time_and_once():
    w = World.new()
    for n, m in ((1, 0), (2, 5), (3, 9)):
        assert watchdog.invoke(job_crash(n, m), w.runtime(), CONTEXT)["status"] == "job_failed"
    before = len(w.alerts())  # the window's one opening alert
    assert w.store().state.open_job_items() == [("dev", "dev", "nightly", T0 + timedelta(minutes=30))]
    assert _sweep(w, 30)["summaries"] == 0 and len(w.alerts()) == before  # the window is still open
    out = _sweep(w, 31)
    assert out["summaries"] == 1 and len(w.alerts()) == before + 1
    assert "failed 3 times in 30 min" in str(w.alerts()[-1]) and "window closed at" in str(w.alerts()[-1])
    assert w.store().state.open_job_items() == []
    assert _sweep(w, 32)["summaries"] == 0 and len(w.alerts()) == before + 1  # once


def test_a_window_of_one_failure_is_dropped_from_the_index_without_a_message():
    w = World.new()
    watchdog.invoke(job_crash(1, 0), w.runtime(), CONTEXT)
    before = len(w.alerts())
    assert _sweep(w, 31)["summaries"] == 0 and len(w.alerts()) == before
    assert w.store().state.open_job_items() == []


def test_a_window_opened_after_the_due_one_keeps_its_entry():
    w = World.new()
    for n, m in ((1, 0), (2, 5)):
        watchdog.invoke(job_crash(n, m), w.runtime(), CONTEXT)
    watchdog.invoke(job_crash(3, 40), w.runtime(), CONTEXT)  # summary of the first window + a new one
    assert w.store().state.open_job_items() == [("dev", "dev", "nightly", T0 + timedelta(minutes=70))]
    n = len(w.alerts())
    assert _sweep(w, 45)["summaries"] == 0 and len(w.alerts()) == n  # the first window was summarised already
    assert w.store().state.open_job_items() == [("dev", "dev", "nightly", T0 + timedelta(minutes=70))]


def test_a_summary_no_sink_took_is_sent_by_the_next_sweep():
    from types import SimpleNamespace

    from ecs_guardrail.handlers.sweep import Sweep

    w = World.new()
    for n, m in ((1, 0), (2, 5)):
        watchdog.invoke(job_crash(n, m), w.runtime(), CONTEXT)
    rt = w.runtime()
    rt.send = lambda alert: [SimpleNamespace(ok=False)]  # every sink down at the window's end
    assert Sweep(rt, CONTEXT).run(T0 + timedelta(minutes=31))["summaries"] == 0
    assert w.store().state.open_job_items()  # still owed
    assert _sweep(w, 32)["summaries"] == 1 and "failed 2 times in 30 min" in str(w.alerts()[-1])
    assert w.store().state.open_job_items() == []


def test_a_corrupt_job_summary_is_reported_and_the_sweep_goes_on():
    """Hostile round 8: a job family's stored window hand-edited into something unreadable raised KeyError
    or ValueError out of the sweep: every other family's window summary after it stopped with it."""
    from ecs_guardrail.adapters.store import keys

    w = World.new()
    for n, m in ((1, 0), (2, 5)):
        watchdog.invoke(job_crash(n, m, "aaa"), w.runtime(), CONTEXT)
        watchdog.invoke(job_crash(10 + n, m, "zzz"), w.runtime(), CONTEXT)
    table = w.store().state.table
    item = table.get(*keys.job("dev", "aaa"))
    table.put({**item, "doc": '{"t":[],"l":"not a time","n":1}'})
    out = _sweep(w, 31)
    assert out["status"] == "swept" and out["summaries"] == 1
    assert ("dev", "dev", "aaa", T0 + timedelta(minutes=30)) in w.store().state.open_job_items()  # looked at again
    assert "zzz" in str(w.alerts()[-1]) and "failed 2 times in 30 min" in str(w.alerts()[-1])
