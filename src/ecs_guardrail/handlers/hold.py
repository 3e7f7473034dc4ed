"""Rule 2 over a service the watchdog holds at zero (its own scale-down): its failures open no new
decision. With ``RECOVERY=probe`` a failure of a probing service is the probe's verdict; an operator's
raise (DescribeServices ``desiredCount`` above 0) ends the hold (ARCHITECTURE.md, "Recovery").
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ecs_guardrail.core.errors import ServiceAccessDeniedError, ServiceNotFoundError
from ecs_guardrail.core.lazy import lazy_module
from ecs_guardrail.core.policy import Failure
from ecs_guardrail.core.summary import ServiceSummary, file_service_failure
from ecs_guardrail.handlers import slots
from ecs_guardrail.handlers.probe import ProbingEpisodes
from ecs_guardrail.handlers.runtime import logger, metrics

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc
else:  # the episode machine: loaded on the first trigger or resume, not by a call that only counts (issue 33.7)
    lc = lazy_module("ecs_guardrail.core.lifecycle")

__all__ = ["held_for_probes", "held_at_zero"]


def held_for_probes(episodes: ProbingEpisodes, ck: str, cluster: str, service: str, at: datetime,
                    failure: Failure | None = None) -> dict[str, Any] | None:
    """``RECOVERY=probe``: a failure of a service the watchdog holds at zero is the probe's verdict
    (a running probe failed) or, with no probe running, a straggler of the scale-down; neither
    opens a new decision. ``None``: not held (or ``RECOVERY=manual``): the recipe goes on.

    A genuine crash or health-check kill (``failure``) of a *probing* service is its verdict whatever
    state a previous step left the lease or the episode in (ARCHITECTURE.md, "Recovery"): it is
    counted in the summary first (so a pass that comes before the verdict is stored sees it and
    fails), then stored as :class:`~ecs_guardrail.core.lifecycle.ProbeFailed` under the lease
    (:class:`DecisionInProgressError` while another invocation's lease runs: Lambda retries)."""
    if episodes.probes is None:
        return None
    state = episodes.state
    ep = state.load(ck, service, fresh=True).episode
    if ep is None or not ep.held_at_zero:
        return None
    if ep.probing:
        if failure is not None:
            config = episodes.config
            state.update(ck, service, lambda s: file_service_failure(
                s, failure, config.keep, config.window, edge=config.fleet_signal_min_failures,
                horizon=config.horizon))
        if episodes.probe_failed(ck, cluster, service, at) is not None:
            return {"status": "probe_failed", "cluster": cluster, "service": service}
    elif ep.unfinished:  # an unfinished scale-down or alert is resumed first
        return None
    return {"status": "held_at_zero", "why": "the service is held at zero; only a probe's failures count"}


def held_at_zero(episodes: ProbingEpisodes, ck: str, cluster: str, service: str, s: ServiceSummary,
                 at: datetime) -> dict[str, Any] | None:
    """Rule 2 over a trigger of a service held at zero (:func:`~ecs_guardrail.core.lifecycle.holds_decisions`):
    its failures are counted and nothing else is done, unless ECS says an operator raised it since
    (DescribeServices ``desiredCount`` above 0 over a finished scale-down: the episode ends as an
    operator's raise, slot freed, recovery owed; ``None`` is returned and the trigger is decided anew).
    """
    desired = None
    ecs = episodes.rt.ecs
    if ecs is not None:
        try:
            desired = ecs.describe(cluster, service).desired_count
        except (ServiceNotFoundError, ServiceAccessDeniedError):
            desired = None  # unreadable: still held (fail safe: nothing new to decide over a stopped service)
    if lc.raise_seen(s, desired) and slots.end_raised(episodes, ck, cluster, service, at):
        episodes.state.release_slot(ck, service)
        logger.info("held service raised by someone else: its hold ended, slot freed", extra={"service": service})
        return None
    metrics.add_metric(name="HeldAtZeroFailures", unit="Count", value=1)
    return {"status": "held_at_zero", "cluster": cluster, "service": service,
            "why": "the service is held at zero by the watchdog's own scale-down: its failures are counted, "
                   "no new decision until it is restored or raised"}
