"""A service whose own stored summary is corrupt (round 7's leftover): its events fail naming the item and
the operator's repair (Lambda retries them, then the function failure queue keeps them), the sweep goes on
with the rest of its index, ``restore`` says the repair too, and the repair in docs/runbook.md works."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest

from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store.dynamodb import DynamoTable
from ecs_guardrail.app.restore import restore
from ecs_guardrail.core.errors import UnreadableSummaryError
from ecs_guardrail.handlers import unreadable
from ecs_guardrail.handlers.sweep import run_sweep
from tests.functional.test_watchdog_state import (  # noqa: F401 (moto_env: the fixture)
    REGION,
    T0,
    TABLE,
    Aws,
    crash,
    deliver,
    make_aws,
    moto_env,
)

KEY = {"pk": {"S": "WD#dev"}, "sk": {"S": "S#api"}}
REPAIR = ("aws dynamodb delete-item --table-name wd-history --region eu-west-1 "
          "--key '{\"pk\":{\"S\":\"WD#dev\"},\"sk\":{\"S\":\"S#api\"}}'")
RESTORE = "ecs-guardrail restore --cluster dev --service api --table wd-history --region eu-west-1 --count N"


def _corrupt_held_api(aws: Aws) -> None:
    rt = aws.runtime()
    for i in range(3):
        deliver(crash(i, T0 + timedelta(minutes=i), service="api"), rt)
    assert aws.desired("api") == 0
    ddb = boto3.client("dynamodb", region_name=REGION)
    item = ddb.get_item(TableName=TABLE, Key=KEY)["Item"]
    doc = json.loads(item["doc"]["S"])
    doc["e"]["as"] = "bogus"
    item["doc"] = {"S": json.dumps(doc)}
    ddb.put_item(TableName=TABLE, Item=item)


@pytest.mark.usefixtures("moto_env")
def test_a_corrupt_summary_names_its_repair_the_sweep_goes_on_and_the_repair_works(
        monkeypatch: pytest.MonkeyPatch) -> None:
    aws = make_aws({"dev": ["api", "web"]})
    _corrupt_held_api(aws)
    logged: list[dict[str, Any]] = []
    monkeypatch.setattr(unreadable.logger, "error", lambda msg, extra: logged.append(extra))
    # its own event fails (Lambda retries it, then keeps it in the failure queue), the message says the repair
    with pytest.raises(UnreadableSummaryError) as failed:
        deliver(crash(20, T0 + timedelta(minutes=20), service="api"), aws.runtime())
    said = str(failed.value)
    assert "S#api is unreadable" in said and REPAIR in said and RESTORE in said, said
    assert (failed.value.pk, failed.value.sk) == ("WD#dev", "S#api")
    assert logged[-1]["item"] == "WD#dev S#api" and REPAIR in logged[-1]["repair"] and logged[-1]["by"] == "watchdog"
    # a second service alerted beside it: the sweep looks at both and raises nothing (it raised before)
    web = aws.runtime(ALERT_ONLY_CLUSTERS="dev")
    for i in range(3):
        deliver(crash(30 + i, T0 + timedelta(minutes=30 + i), service="web"), web)
    out = run_sweep(aws.runtime(), T0 + timedelta(hours=3))
    assert out["status"] == "swept" and out["services"] == 2 and out["recoveries"] == 1, out
    assert logged[-1]["by"] == "sweep"
    # restore refuses before any change, saying the repair
    history = HistoryStore.on(DynamoTable(boto3.client("dynamodb", region_name=REGION), TABLE))
    ecs = EcsService(boto3.client("ecs", region_name=REGION))
    with pytest.raises(UnreadableSummaryError, match="delete-item"):
        restore(history, ecs, "dev", "api")
    assert aws.desired("api") == 0
    # the runbook's repair: save the item, delete it, restore with the saved previous desired count
    ddb = boto3.client("dynamodb", region_name=REGION)
    saved = json.loads(ddb.get_item(TableName=TABLE, Key=KEY)["Item"]["doc"]["S"])
    ddb.delete_item(TableName=TABLE, Key=KEY)
    done = restore(history, ecs, "dev", "api", count=saved["e"]["pd"])
    assert done.changed and aws.desired("api") == 2 and history.state.cluster("dev").held() == ()
    # and the service's events are decided again, from a new summary
    assert deliver(crash(40, T0 + timedelta(hours=4), service="api"), aws.runtime())["status"] == "counted"
