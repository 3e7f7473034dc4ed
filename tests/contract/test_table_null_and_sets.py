"""NULL-typed and set-typed attributes against conditions, on both engines (round 10, tidy3: items 5 and 8).

DynamoDB counts a NULL-typed attribute as existing (``attribute_exists`` holds, ``attribute_not_exists``
fails: DynamoDB Developer Guide, "Condition expressions"; moto agrees, checked here). Neither engine of
the port ever stores one from this code: ``None`` is dropped on every write (``table.clean``, and
``MemoryTable``'s rows), so the in-memory table's ``None``-is-absent reads (``add_to_set``'s size bound,
``Cond``) never meet a NULL. A NULL only comes from a hand edit on DynamoDB, which the port reads back as
``None``: a set is read back as a sorted list, and a condition naming it fails on DynamoDB.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.adapters.store.table import Cond, ConditionFailedError
from ecs_guardrail.replay.embedded import create_history_table
from tests.contract.conftest import NAME, REGION


def test_none_is_never_stored_so_no_condition_meets_a_null(table: Any) -> None:
    table.put({"pk": "a", "sk": "1", "x": None, "y": "v"})
    assert table.get("a", "1") == {"pk": "a", "sk": "1", "y": "v"}
    assert table.add_to_set("a", "1", "x", ["m"], max_size=2) == 1  # x absent on both: the set is made
    table.put({"pk": "a", "sk": "1", "y": "w"}, Cond(any_of=({"y": "v"},)))
    with pytest.raises(ConditionFailedError):
        table.put({"pk": "a", "sk": "1", "y": "z"}, Cond(any_of=({"y": "v"},)))


@pytest.mark.usefixtures("aws_env")
def test_dynamodb_counts_a_null_attribute_as_existing_and_never_matches_a_set_to_a_list() -> None:
    """What a hand edit can leave (moto as DynamoDB): a NULL attribute exists; a string set read back
    through the port is a list, and a condition made from that list never holds (tests/unit/test_tidy10.py:
    no conditional write of this code names an attribute it writes as a set)."""
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=REGION)
        create_history_table(ddb, NAME)
        key = {"pk": {"S": "b"}, "sk": {"S": "1"}}
        ddb.put_item(TableName=NAME, Item={**key, "x": {"NULL": True}})
        ddb.put_item(TableName=NAME, Item={**key, "x": {"NULL": True}}, ConditionExpression="attribute_exists(x)")
        with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
            ddb.put_item(TableName=NAME, Item={**key, "x": {"NULL": True}},
                         ConditionExpression="attribute_not_exists(x)")
        port = DynamoTable(ddb, NAME)
        assert port.get("b", "1") == {"pk": "b", "sk": "1", "x": None}
        ddb.put_item(TableName=NAME, Item={**key, "seq": {"SS": ["x"]}})
        read = port.get("b", "1")
        assert read == {"pk": "b", "sk": "1", "seq": ["x"]}
        with pytest.raises(ConditionFailedError):
            port.put({"pk": "b", "sk": "1", "seq": 1}, Cond(any_of=({"seq": read["seq"]},)))
