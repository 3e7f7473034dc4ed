"""What the episode interpreter (:mod:`ecs_guardrail.handlers.episode`) carries through one run: the
decision as claimed (:class:`Claim`), what the decision already read (:class:`Known`) and the run itself
(:class:`Job`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ecs_guardrail.adapters.ecs import ServiceFacts
from ecs_guardrail.adapters.store.watchdog_state import ClusterView
from ecs_guardrail.core.entitlement import ScalableTargetFacts
from ecs_guardrail.core.records import Decision, decision_from_record, decision_record

if TYPE_CHECKING:
    from ecs_guardrail.core import lifecycle as lc

__all__ = ["Claim", "Job", "Known"]

class Known(Struct, frozen=True):
    """What a decision read that its action can reuse in the same invocation (no second read):
    DescribeServices' answer and the scalable target, both read before any change."""

    facts: ServiceFacts | None
    scalable: ScalableTargetFacts | None
    view: ClusterView
    #: why the scalable target could not be read (then the service must not be scaled: it may have one)
    scalable_error: str | None = None


class Claim(Struct, frozen=True):
    """A decision as the episode carries it: the typed :class:`Decision` and what its record adds
    (``previous_desired_count``: tasks, recorded with the claim before any call changes the service)."""

    decision: Decision
    previous_desired_count: int | None = None
    dry_run: bool = False
    escalation: bool = False

    def record(self) -> dict[str, Any]:
        """The decision's public JSON shape (SCENARIOS.md)."""
        return decision_record(self.decision, previous_desired_count=self.previous_desired_count,
                               dry_run=self.dry_run, escalation=self.escalation)

    @classmethod
    def of(cls, record: dict[str, Any]) -> Claim:
        """Read back :meth:`record`'s output."""
        return cls(decision_from_record(record), record.get("previous_desired_count"),
                   bool(record.get("dry_run")), bool(record.get("escalation")))


class Job(Struct, frozen=True):
    """One run of the interpreter (:meth:`Episodes.run`) over one episode: where it is (cluster key
    ``ck``, ``cluster``, ``service``), the decision it carries (``claim``, ``None`` for a probe's steps),
    what the decision already read (``known``), a probe's time (``probe_at``: set, the job performs a
    probe's steps; ``None``, it releases the lease over them), the service as a probe's pass read it
    (``facts``), and the last outcome stored (``last``)."""

    ck: str
    cluster: str
    service: str
    claim: Claim | None = None
    known: Known | None = None
    probe_at: datetime | None = None
    facts: ServiceFacts | None = None
    last: lc.Outcome | None = None
