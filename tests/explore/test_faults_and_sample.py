"""Faults at every call of two invocations, and a seeded sample of three invocations with faults
(see ``test_interleavings.py`` for what is explored and checked)."""

from __future__ import annotations

import pytest
from scheduler import FAULTS, Forced, Seeded
from situations import BUDGET, COUNTS, SAMPLE, SITUATIONS, THREE, Situation, run_schedule


@pytest.mark.parametrize("sit", SITUATIONS, ids=[s.name for s in SITUATIONS])
def test_every_single_fault_at_every_call(sit: Situation) -> None:
    _, trace = run_schedule(sit, Forced([]))
    points = len(trace)
    n = 0
    for at in range(points):
        for kind in FAULTS:
            def fault(task: str, op: str, step: int, at: int = at, kind: str = kind) -> str | None:
                return kind if step == at else None

            # each invocation first; make test's quick budget one of the two, alternating over the calls
            # and the faults (every fault at every call still, and each order for every fault)
            orders = ([], ["b"]) if BUDGET == "full" else (([], ["b"])[(at + FAULTS.index(kind)) % 2],)
            for order in orders:
                run_schedule(sit, Forced(order), fault, label=f"{kind} at step {at}")
                n += 1
    COUNTS[f"faults/{sit.name} ({BUDGET})"] = n
    assert n >= points * len(FAULTS)



@pytest.mark.parametrize("sit", THREE, ids=[s.name for s in THREE])
def test_seeded_sample_of_three_invocations_with_faults(sit: Situation) -> None:
    per = max(1, SAMPLE // len(THREE))
    for seed in range(per):
        plan = Seeded(seed)
        run_schedule(sit, plan.choose, plan.fault, label=f"seed={seed} faults={plan.faults}")
    COUNTS[f"sample/{sit.name}"] = per



def test_zz_report_sample_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """Print how many schedules were explored (the closing note quotes these)."""
    with capsys.disabled():
        for k, v in sorted(COUNTS.items()):
            print(f"explored {k}: {v} schedules")
