"""The replay report's one line for a cluster-wide hold (app/report.py's ``_why``)."""
from ecs_guardrail.app.report import _why


def _hold(service: str, message: str) -> dict[str, object]:
    return {"cluster": "staging", "service": service, "reason": "mass_unhealthy", "action": "hold",
            "message": message}


def test_a_cluster_hold_is_one_line_naming_whose_counts_it_quotes() -> None:
    decisions = [_hold("tax", "held: 1 crash"), _hold("search", "held: 2 crashes")]
    assert _why(decisions) == ["  1-2. 2 services of staging held together; the first, tax: held: 1 crash"]


def test_held_numbers_that_are_not_contiguous_are_listed() -> None:
    other = {"cluster": "dev", "service": "api", "reason": "crash_loop", "action": "alert_only",
             "message": "alert only"}
    lines = _why([_hold("tax", "held"), other, _hold("search", "held")])
    assert lines == ["  1,3. 2 services of staging held together; the first, tax: held", "  2. alert only"]
