"""The clusters of the watchdog's own account and region (ECS ListClusters), for the check of
``ALERT_ONLY_CLUSTERS`` entries that match no cluster (issue 17 item 11)."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["AccountClusters"]


class AccountClusters:
    """ECS ListClusters through a client passed in (``ecs:ListClusters`` has no resource-level
    permission: ``any``). API reference: ListClusters returns cluster ARNs, at most 100 a page."""

    IAM_ACTIONS: ClassVar[dict[str, frozenset[str]]] = {"any": frozenset({"ecs:ListClusters"})}

    def __init__(self, client: Any) -> None:
        self._ecs = client

    def arns(self) -> tuple[str, ...]:
        """Every cluster ARN of the client's account and region (all pages).

        Raises:
            botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError: ListClusters failed.
        """
        out: list[str] = []
        for page in self._ecs.get_paginator("list_clusters").paginate():
            out.extend(str(a) for a in page.get("clusterArns") or [])
        return tuple(out)
