"""template.yaml and terraform/ deploy the same system; this module checks
the state and the names: the history table, its index, retried and rebuilt deploys, names that fit.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

from typing import Any

import iac
import pytest
from parity import CFN_FUNCTION, TEMPLATE, TF, cfn_statements, tf_function_environment


def test_history_table_is_the_same() -> None:
    cfn = TEMPLATE["Resources"]["HistoryTable"]["Properties"]
    tf = TF["resource"]["aws_dynamodb_table"]["history"]
    assert cfn["BillingMode"] == tf["billing_mode"] == "PAY_PER_REQUEST"
    assert {(k["AttributeName"], k["KeyType"]) for k in cfn["KeySchema"]} == {("pk", "HASH"), ("sk", "RANGE")}
    assert (tf["hash_key"], tf["range_key"]) == ("pk", "sk")
    assert (
        {(a["AttributeName"], a["AttributeType"]) for a in cfn["AttributeDefinitions"]}
        == {(a["name"], a["type"]) for a in tf["attribute"]}
        == {("pk", "S"), ("sk", "S"), ("gsi1pk", "S"), ("gsi1sk", "S")}
    )
    (gsi,) = cfn["GlobalSecondaryIndexes"]
    (tf_gsi,) = tf["global_secondary_index"]
    assert gsi["IndexName"] == tf_gsi["name"] == "gsi1"
    assert (tf_gsi["hash_key"], tf_gsi["range_key"]) == ("gsi1pk", "gsi1sk")
    assert cfn["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert tf["ttl"][0] == {"attribute_name": "expires_at", "enabled": True}
    assert cfn["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert tf["point_in_time_recovery"][0]["enabled"] is True
    assert cfn["SSESpecification"]["SSEEnabled"] is True and tf["server_side_encryption"][0]["enabled"] is True


def _timeline_fields() -> list[str]:
    from ecs_guardrail.adapters.history import HistoryStore  # the lead re-points this on merge

    keys = {"pk", "sk", "gsi1pk", "gsi1sk"}
    return [f for f in HistoryStore.TIMELINE_FIELDS if f not in keys]


def test_index_projects_exactly_the_timeline_fields() -> None:
    """Item 10: gsi1 projects INCLUDE with exactly HistoryStore.TIMELINE_FIELDS (never the raw event)."""
    (gsi,) = TEMPLATE["Resources"]["HistoryTable"]["Properties"]["GlobalSecondaryIndexes"]
    (tf_gsi,) = TF["resource"]["aws_dynamodb_table"]["history"]["global_secondary_index"]
    assert gsi["Projection"]["ProjectionType"] == tf_gsi["projection_type"] == "INCLUDE"
    assert gsi["Projection"]["NonKeyAttributes"] == _timeline_fields()
    assert tf_gsi["non_key_attributes"] == _timeline_fields()
    assert "raw" not in _timeline_fields()
    # the embedded AWS (replay, tests) builds the same index
    from ecs_guardrail.replay.embedded import create_history_table

    class Recorder:
        def create_table(self, **kwargs: Any) -> None:
            self.table = kwargs

        def update_time_to_live(self, **kwargs: Any) -> None:
            pass

    ddb = Recorder()
    create_history_table(ddb, "t")
    (local_gsi,) = ddb.table["GlobalSecondaryIndexes"]
    assert local_gsi["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": _timeline_fields()}


def test_a_failed_first_deploy_can_be_retried() -> None:
    """Item 1: no fixed table name in the stack (functions get it by Ref, the CLI from the output; an
    upgrade never replaces it: test_parity_names.py), and a failed create does not leave the table behind."""
    table = TEMPLATE["Resources"]["HistoryTable"]
    assert "TableName" not in table["Properties"]
    assert table["DeletionPolicy"] == "RetainExceptOnCreate"
    assert table["UpdateReplacePolicy"] == "Retain"
    # deletion protection would make the rollback of a failed create fail: PITR and the policy guard it
    assert "DeletionProtectionEnabled" not in table["Properties"]
    assert table["Properties"]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert iac.function_environment(TEMPLATE, "WatchdogFunction")["HISTORY_TABLE"] == {
        "Fn::If": ["CreateHistoryTable", {"Ref": "HistoryTable"}, {"Ref": "ExistingHistoryTableName"}]}
    # Terraform has no rollback: a failed apply keeps the table in state and the retry goes on from there
    tf = TF["resource"]["aws_dynamodb_table"]["history"]
    assert tf["deletion_protection_enabled"] == "${var.deletion_protection}"  # default true (issue 24 item 18)
    assert "lifecycle" not in tf
    assert tf_function_environment("watchdog")["HISTORY_TABLE"] == "${local.history_table_name}"


KEPT = "ecs-guardrail-history"


@pytest.mark.parametrize("existing", ["", KEPT])
def test_an_existing_history_table_is_used_instead_of_a_new_one(existing: str) -> None:
    """Issue 24 item 18: the table a deleted stack retained (or a partial destroy kept) holds the history
    `restore` needs; ExistingHistoryTableName / existing_history_table_name point a new deployment at it:
    no table is created, every function reads and writes that one, its IAM grants that table's ARN."""
    params = {"ExistingHistoryTableName": existing}
    template = iac.load_template(**params)
    evaluate = iac.Evaluator(template, iac.parameter_values(template, **params))
    assert template["Resources"]["HistoryTable"]["Condition"] == "CreateHistoryTable"
    assert evaluate.condition("CreateHistoryTable") is (existing == "")
    name = existing or "{ref:HistoryTable}"
    arn = f"arn:aws:dynamodb:eu-west-1:111122223333:table/{existing}" if existing else "{getatt:HistoryTable.Arn}"
    for function, logical in CFN_FUNCTION.items():
        assert evaluate(iac.function_environment(template, logical)["HISTORY_TABLE"]) == name
        table_resources = {r for s in cfn_statements(function, **params) if s.get("Sid") == "HistoryTable"
                           for r in iac.as_list(s["Resource"])}
        assert table_resources == {arn}, function
    assert evaluate(template["Outputs"]["HistoryTableName"]["Value"]) == name
    # Terraform: the same input, the same two branches (created table, or the existing name and its ARN)
    variable = TF["variable"]["existing_history_table_name"]
    assert variable["default"] == "" and variable["type"] in ("string", "${string}")
    assert TF["resource"]["aws_dynamodb_table"]["history"]["count"] == "${local.create_history_table ? 1 : 0}"
    assert TF["locals"]["create_history_table"] == '${var.existing_history_table_name == ""}'
    assert TF["locals"]["history_table_name"] == (
        "${local.create_history_table ? aws_dynamodb_table.history[0].name : var.existing_history_table_name}")
    assert "table/${var.existing_history_table_name}" in TF["locals"]["history_table_arn"]
    assert "aws_dynamodb_table.history[0].arn" in TF["locals"]["history_table_arn"]
    assert TF["output"]["history_table_name"]["value"] == "${local.history_table_name}"
    # the table's address moved to history[0]: an existing deployment keeps its table
    main_tf = (iac.TERRAFORM / "main.tf").read_text()
    assert "moved {\n  from = aws_dynamodb_table.history\n  to   = aws_dynamodb_table.history[0]\n}" in main_tf


def test_terraform_deletion_protection_is_a_variable_defaulting_on() -> None:
    """Issue 24 item 18: after a partial destroy, a protected table blocks a fresh apply; the variable
    lets a rebuild turn it off, and terraform/README.md says how to import the kept table instead."""
    assert TF["variable"]["deletion_protection"]["default"] is True
    assert TF["variable"]["deletion_protection"]["type"] in ("bool", "${bool}")
    table = TF["resource"]["aws_dynamodb_table"]["history"]
    assert table["deletion_protection_enabled"] == "${var.deletion_protection}"
    readme = (iac.TERRAFORM / "README.md").read_text()
    assert "terraform import 'module.ecs_guardrail.aws_dynamodb_table.history[0]'" in readme
