"""The table port's two engines, side by side: ``MemoryTable`` and ``DynamoTable`` on moto."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.replay.embedded import create_history_table

REGION = "eu-west-1"
NAME = "contract-history"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(params=["memory", "dynamodb"])
def table(request: pytest.FixtureRequest, aws_env: None) -> Iterator[Any]:
    """One engine per parametrization (``request.param``)."""
    if request.param == "memory":
        yield MemoryTable(NAME, REGION)
        return
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_history_table(ddb, NAME)
        yield DynamoTable(ddb, NAME)


@pytest.fixture
def both(aws_env: None) -> Iterator[tuple[Any, Any]]:
    """Both engines at once (results compared item by item)."""
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_history_table(ddb, NAME)
        yield MemoryTable(NAME, REGION), DynamoTable(ddb, NAME)
