"""boto3 clients with botocore's retry modes, built on demand (never at import time)."""

from __future__ import annotations

from typing import Any

__all__ = ["client_config", "make_client"]


def client_config(retry_mode: str = "standard", max_attempts: int = 5, read_timeout_s: float = 10.0) -> Any:
    """botocore ``Config`` with a retry mode (``standard`` or ``adaptive``; botocore docs, "Retries").

    ``standard`` retries throttling and transient errors with exponential backoff and jitter;
    ``adaptive`` adds client-side rate limiting, used for ECS and CloudWatch (throttled under storms).
    botocore is imported here, not at module import: the fast replay engine never makes a client.
    """
    from botocore.config import Config

    return Config(
        retries={"mode": retry_mode, "max_attempts": max_attempts},
        connect_timeout=3,
        read_timeout=read_timeout_s,
        user_agent_extra="ecs-guardrail",
    )


def make_client(service: str, region: str | None = None, retry_mode: str = "standard", **kwargs: Any) -> Any:
    """``boto3.client(service)`` with :func:`client_config` (boto3 imported on the first client)."""
    import boto3

    return boto3.client(service, region_name=region, config=client_config(retry_mode), **kwargs)
