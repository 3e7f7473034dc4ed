"""Where a cluster is: the watchdog's cluster key for an event's cluster ARN, and the account, region and
partition its alerts name (:class:`~ecs_guardrail.core.alert.Where`).

A cluster of the watchdog's own account and region is keyed by its name; one of another account or region
(an organization's events forwarded to this bus) by ``NAME@ACCOUNT@REGION``
(:func:`~ecs_guardrail.adapters.store.keys.cluster_key`), so two clusters of one name never share state.
"""

from __future__ import annotations

from ecs_guardrail.adapters.store import keys
from ecs_guardrail.core.alert import Where, where_of
from ecs_guardrail.core.links import parse_arn

__all__ = ["Placement"]

#: ``(home, cluster, ARN)`` -> what :meth:`Placement.where` makes of them (:func:`_placed`); cleared past
#: :data:`_PLACED_KEPT` entries
_PLACED: dict[tuple[tuple[str, str] | None, str, str], tuple[str, str | None, bool]] = {}
_PLACED_KEPT = 4096


def _placed(home: tuple[str, str] | None, cluster: str, arn: str) -> tuple[str, str | None, bool]:
    """``(cluster key, "account A, region R" or None at home, whether arn is an ARN)`` of :meth:`Placement.where`."""
    a = parse_arn(arn)
    if home is None or a is None or (a.account, a.region) == home:
        return cluster, None, a is not None
    return keys.cluster_key(cluster, a.account, a.region), f"account {a.account}, region {a.region}", True


class Placement:
    """Cluster keys and alert places of one invocation.

    ``home``: the function's ``(account, region)`` (``None``: unknown, every cluster is home);
    ``region``: the table's region, the last resort of :meth:`place`. ``arns`` remembers one ARN of each
    cluster key seen (account, region, partition), for :meth:`place` and the alert-only check by ARN.
    """

    def __init__(self, home: tuple[str, str] | None, region: str | None) -> None:
        self.home = home
        self.region = region
        self.arns: dict[str, str] = {}

    def where(self, cluster: str, arn: str) -> tuple[str, str | None]:
        """The cluster key of the watchdog's state for ``cluster`` (``arn``: the event's cluster ARN), and
        ``"account A, region R"`` when it is not home (``None`` at home). Worked out once per home, cluster and
        ARN in an execution environment (:data:`_PLACED`; every event of a fleet names one of a few clusters)."""
        key = (self.home, cluster, arn)
        got = _PLACED.get(key)
        if got is None:
            got = _placed(self.home, cluster, arn)
            if len(_PLACED) >= _PLACED_KEPT:
                _PLACED.clear()
            _PLACED[key] = got
        ck, foreign, parsed = got
        if parsed:
            self.arns.setdefault(ck, arn)
        return ck, foreign

    def place(self, ck: str, cluster: str, service: str | None = None, family: str | None = None) -> Where:
        """Account, region and partition of cluster key ``ck`` (:func:`~ecs_guardrail.core.alert.where_of`):
        from an ARN of the cluster seen in this invocation, else the cluster key, else home."""
        return where_of(ck, cluster, arn=self.arns.get(ck), home=self.home, region=self.region,
                        service=service, family=family)
