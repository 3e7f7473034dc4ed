"""The clusters of the watchdog's own account and region (ECS ListClusters), for the check of
``ALERT_ONLY_CLUSTERS`` entries that match no cluster (issue 17 item 11)."""

from __future__ import annotations

from typing import Any

from ecs_guardrail.core.permissions import permissions

__all__ = ["AccountClusters"]


class AccountClusters:
    """ECS ListClusters through a client passed in (``ecs:ListClusters`` has no resource-level
    permission: ``any``). API reference: ListClusters returns cluster ARNs, at most 100 a page."""


    def __init__(self, client: Any) -> None:
        self._ecs = client

    @permissions(any=["ecs:ListClusters"])
    def arns(self) -> tuple[str, ...]:
        """Every cluster ARN of the client's account and region (all pages).

        Raises:
            botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError: ListClusters failed.
        """
        out: list[str] = []
        for page in self._ecs.get_paginator("list_clusters").paginate():
            out.extend(str(a) for a in page.get("clusterArns") or [])
        return tuple(out)
