"""A scenario folder that cannot be read is a one-line ScenarioError (exit 2), never a traceback."""

from __future__ import annotations

import pytest

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.replay.scenario import load_scenario


@pytest.mark.parametrize("text", [
    '{"clusters": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError in json
    '{"clusters": [], "account": ' + "1" * 5000 + "}",  # ValueError: int_max_str_digits
])
def test_unparseable_fleet_json_is_a_scenario_error(tmp_path, text):
    (tmp_path / "fleet.json").write_text(text)
    (tmp_path / "events.jsonl").write_text("")
    with pytest.raises(ScenarioError, match="fleet.json: not JSON"):
        load_scenario(tmp_path)


def test_an_empty_service_group_names_no_missing_service():
    """``group: "service:"`` (no name) warned 'service development/ is not in fleet.json'."""
    from ecs_guardrail.replay.run import _unknown_to_fleet

    raw = {"detail": {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/development", "group": "service:"}}
    assert _unknown_to_fleet(raw, {"development"}, {("development", "api")}) is None
    raw["detail"]["group"] = "service:ghost"
    assert "development/ghost" in _unknown_to_fleet(raw, {"development"}, {("development", "api")})
