"""The interleaving and fault explorer (issue 17): two or three watchdog invocations (and ``restore``)
over the in-memory AWS and table, switching at every AWS and table call under a scheduler this test
owns (``scheduler.py``), with throttles, deaths and expired leases injected at any call.

What is explored, for each situation:

- every schedule of two invocations with up to :data:`PREEMPTIONS` preemptions (exhaustive at that
  bound: CHESS's result is that almost every concurrency bug needs at most two) at ``EXPLORE_BUDGET=full``
  (``make explore``, CI's own step, and ``make mutate``); by default (``make test``) every schedule within
  one preemption and a fixed, seeded sample of :data:`QUICK_SAMPLE` of the two-preemption ones;
- every single fault (throttle, death, expired lease) at every switch point of either invocation, with
  each invocation first (at the quick budget one of the two, alternating over the calls and faults);
- a seeded sample of schedules of three invocations with random switches and up to two faults
  (:data:`SAMPLE` by default, ``EXPLORE_SCHEDULES=10000`` for the long run; a failure prints its seed).

After each schedule and Lambda's retries, the invariants of ``world.World.check_after`` and
``check_restore`` must hold: services held at zero never exceed the bound (checked at every switch
point too), nobody at zero is invisible to the cap, at most one scale-down per episode, every
decision alerted at least once, no lease left behind, ``restore`` gives back exactly the pre-decision
desired count and suspended state, no capacity-changing call on the alert-only cluster, an operator's
count never changed by a probe step that read it (``World.check_operator``: only the race between a
read and UpdateService that the README names), and a held service decided once.
"""

from __future__ import annotations

import pytest
from scheduler import Forced, Step, bounded_schedules
from situations import BUDGET, COUNTS, PREEMPTIONS, QUICK_SAMPLE, SITUATIONS, Situation, run_schedule


@pytest.mark.parametrize("sit", SITUATIONS, ids=[s.name for s in SITUATIONS])
def test_every_interleaving_of_two_invocations_within_two_preemptions(sit: Situation) -> None:
    def run(chooser: Forced) -> list[Step]:
        return run_schedule(sit, chooser, label=f"prefix={chooser.prefix}")[1]

    sample = None if BUDGET == "full" else QUICK_SAMPLE
    n = sum(1 for _ in bounded_schedules(run, PREEMPTIONS, sample=sample))
    COUNTS[f"interleavings/{sit.name} ({BUDGET})"] = n
    assert n > 10  # the situation really interleaves (both invocations reach AWS)


def test_explorer_finds_the_cap_race_of_the_old_rule() -> None:
    """The explorer is not vacuous: with the pre-issue-17 rule ("a held service whose desired count is
    above 0 was raised by an operator", in flight or not), it finds two services at 0 with bound 1."""
    from ecs_guardrail.core.summary import ActionStatus
    from ecs_guardrail.handlers import slots as slots_module

    real = slots_module.free_raised

    def old_rule(self, ck, cluster, service, view, bound, at):  # type: ignore[no-untyped-def]  # self: Episodes
        held = tuple(h for h in view.held() if h != service)
        if len(held) + 1 <= bound:
            return held
        still = []
        for other in held:
            facts = self.rt.ecs.describe(cluster, other)
            if facts.desired_count > 0:
                self.state.release_slot(ck, other, view)
            else:
                still.append(other)
        return tuple(still)

    sit = SITUATIONS[2]
    found = []
    try:
        slots_module.free_raised = old_rule

        def run(chooser: Forced) -> list[Step]:
            try:
                return run_schedule(sit, chooser)[1]
            except pytest.fail.Exception as exc:
                found.append(str(exc))
                return []

        for _ in bounded_schedules(run, PREEMPTIONS):
            if found:
                break
    finally:
        slots_module.free_raised = real
    assert ActionStatus.DONE  # (imported for the reader: the new rule frees only DONE scale-downs)
    assert found and ("exceeds the bound" in found[0] or "services at 0" in found[0]), found[:1]


def test_zz_report_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """Print how many schedules were explored (the closing note quotes these)."""
    with capsys.disabled():
        for k, v in sorted(COUNTS.items()):
            print(f"explored {k}: {v} schedules")
