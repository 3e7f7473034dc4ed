"""template.yaml and terraform/ deploy the same system; this module checks
the state and the names: the history table, its index, retried and rebuilt deploys, names that fit.

Runs without AWS; see parity.py and conftest.py for what these modules share.
"""

from __future__ import annotations

from typing import Any

import iac
from parity import TEMPLATE, TF

from ecs_guardrail import iam


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
    from ecs_guardrail.local import create_history_table

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
    """Item 1: no fixed table name in the stack, and a failed create does not leave the table behind."""
    table = TEMPLATE["Resources"]["HistoryTable"]
    assert "TableName" not in table["Properties"]  # functions get it by Ref, the CLI from the output
    assert table["DeletionPolicy"] == "RetainExceptOnCreate"
    assert table["UpdateReplacePolicy"] == "Retain"
    # deletion protection would make the rollback of a failed create fail: PITR and the policy guard it
    assert "DeletionProtectionEnabled" not in table["Properties"]
    assert table["Properties"]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert iac.function_environment(TEMPLATE, "WatchdogFunction")["HISTORY_TABLE"] == {"Ref": "HistoryTable"}
    # Terraform has no rollback: a failed apply keeps the table in state and the retry goes on from there
    tf = TF["resource"]["aws_dynamodb_table"]["history"]
    assert tf["deletion_protection_enabled"] == "${var.deletion_protection}"  # default true (issue 24 item 18)
    assert "lifecycle" not in tf
    assert TF["locals"]["functions"]["watchdog"]["environment"]["HISTORY_TABLE"] == "${aws_dynamodb_table.history.name}"


NAMED = {  # resource type -> the name property CloudFormation would otherwise take from the stack name
    "AWS::IAM::Role": "RoleName",
    "AWS::Serverless::Function": "FunctionName",
    "AWS::Events::Rule": "Name",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Events::Archive": "ArchiveName",
    "AWS::DynamoDB::Table": "TableName",
}


def test_names_fit_and_do_not_collide_across_regions() -> None:
    """Item 2: IAM names are per account; names with a 64/80/48-character limit are generated."""
    for type_, prop in NAMED.items():
        for logical, resource in iac.resources_of_type(TEMPLATE, type_).items():
            assert prop not in resource["Properties"], f"{logical} has a fixed {prop}"
    statement_id = iac.Evaluator(TEMPLATE, iac.parameter_values(TEMPLATE, SourceAccountIds="111111111111"))(
        TEMPLATE["Resources"]["CrossAccountBusPolicy"]["Properties"]["StatementId"]
    )
    assert len(statement_id) <= 64 and "ecs-guardrail" in statement_id
    role = TF["resource"]["aws_iam_role"]["function"]
    assert "name" not in role and role["name_prefix"] == '${substr("${var.name}-${each.key}", 0, 37)}-'
    member_role = iac.load_terraform(iac.TERRAFORM / "examples" / "member-account")["resource"]["aws_iam_role"][
        "forward"
    ]
    assert "name" not in member_role and member_role["name_prefix"]
    assert (
        "RoleName"
        not in iac.load_template(iac.ROOT / "deploy" / "member-account.yaml")["Resources"]["ForwardRole"]["Properties"]
    )
    # Terraform's regional names: var.name is at most 40 characters, so "<name>-availability" fits 64
    assert "{0,39}" in TF["variable"]["name"]["validation"][0]["condition"]
    assert 40 + 1 + max(len(f) for f in iam.FUNCTIONS) <= 64


def test_terraform_deletion_protection_is_a_variable_defaulting_on() -> None:
    """Issue 24 item 18: after a partial destroy, a protected table blocks a fresh apply; the variable
    lets a rebuild turn it off, and terraform/README.md says how to import the kept table instead."""
    assert TF["variable"]["deletion_protection"]["default"] is True
    assert TF["variable"]["deletion_protection"]["type"] in ("bool", "${bool}")
    table = TF["resource"]["aws_dynamodb_table"]["history"]
    assert table["deletion_protection_enabled"] == "${var.deletion_protection}"
    readme = (iac.TERRAFORM / "README.md").read_text()
    assert "terraform import 'module.ecs_guardrail.aws_dynamodb_table.history'" in readme
