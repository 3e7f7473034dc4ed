"""A scenario folder that cannot be read is a one-line ScenarioError (exit 2), never a traceback."""

from __future__ import annotations

import pytest

from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.local import load_scenario


@pytest.mark.parametrize("text", [
    '{"clusters": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError in json
    '{"clusters": [], "account": ' + "1" * 5000 + "}",  # ValueError: int_max_str_digits
])
def test_unparseable_fleet_json_is_a_scenario_error(tmp_path, text):
    (tmp_path / "fleet.json").write_text(text)
    (tmp_path / "events.jsonl").write_text("")
    with pytest.raises(ScenarioError, match="fleet.json: not JSON"):
        load_scenario(tmp_path)
