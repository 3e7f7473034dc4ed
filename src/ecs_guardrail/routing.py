"""Which events reach which function: the EventBridge rule patterns, as data.

``template.yaml`` and ``terraform/`` carry the same patterns (a test checks it), and ``replay`` routes
the scenario's events with :func:`matches`, so the watchdog sees in a replay exactly what the bus would
deliver to it. Pattern syntax: EventBridge's exact-value lists and nested objects (EventBridge User
Guide, "Event patterns": exact values, ``prefix``, nested objects, ``$or``); that subset is all these
patterns use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PATTERNS", "matches", "targets"]

ECS_DETAIL_TYPES = ["ECS Task State Change", "ECS Service Action", "ECS Deployment State Change"]

PATTERNS: dict[str, dict[str, Any]] = {
    # every ECS event, of every detail-type: the evidence (ECS adds event types, e.g. lifecycle-hook state
    # changes; the recorder keeps one it does not read with a note, never drops it at the bus)
    "recorder": {"source": ["aws.ecs"]},
    # only what the watchdog reads: stopped tasks (Spot notices included), two service actions (impaired
    # starts; steady state closes an episode) and every deployment state change
    "watchdog": {
        "source": ["aws.ecs", "ecs-guardrail"],
        "$or": [
            # stopped tasks (one event per task reaches the watchdog, not the notice and DEPROVISIONING too)
            {"detail-type": ["ECS Task State Change"], "detail": {"lastStatus": ["STOPPED"]}},
            # Spot notices: their verdict is remembered so the task's STOPPED event never counts as a crash
            {"detail-type": ["ECS Task State Change"],
             "detail": {"stopCode": ["SpotInterruption", "TerminationNotice"]}},
            {"detail-type": ["ECS Task State Change"], "detail": {"stoppedReason": [{"prefix": "Your Spot Task"}]}},
            {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_TASK_START_IMPAIRED"]}},
            # steady state: the watchdog closes the service's episode
            {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_STEADY_STATE"]}},
            # every deployment state change (in progress, completed, failed)
            {"detail-type": ["ECS Deployment State Change"]},
            # the sampler's container-restart observations (restart-policy loops emit no ECS event)
            {"source": ["ecs-guardrail"], "detail-type": ["Container Restarts"]},
        ],
    },
}


def matches(pattern: dict[str, Any], event: Any) -> bool:
    """True when ``event`` matches ``pattern`` (value lists, ``prefix``, nested objects and ``$or``)."""
    if not isinstance(event, dict):
        return False
    for key, want in pattern.items():
        if key == "$or":
            if not any(matches(alternative, event) for alternative in want):
                return False
            continue
        got = event.get(key)
        if isinstance(want, dict):
            if not matches(want, got):
                return False
        elif isinstance(got, list):
            if not any(_value_matches(want, g) for g in got):
                return False
        elif not _value_matches(want, got):
            return False
    return True


def _value_matches(want: list[Any], got: Any) -> bool:
    """One value against a pattern's list: exact values, or ``{"prefix": "..."}`` (case-sensitive)."""
    for w in want:
        if isinstance(w, dict):
            if "prefix" in w and isinstance(got, str) and got.startswith(w["prefix"]):
                return True
        elif isinstance(got, str | int | float | bool | None) and w == got and type(w) is type(got):
            return True
    return False


def targets(event: Any) -> set[str]:
    """The functions (``recorder``, ``watchdog``) the bus would invoke for ``event``."""
    return {name for name, pattern in PATTERNS.items() if matches(pattern, event)}
