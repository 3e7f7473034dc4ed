"""A scenario folder that cannot be read is a one-line ScenarioError (exit 2), never a traceback."""

from __future__ import annotations

import sys

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


def test_settings_env_parser_is_dotenvs_own_without_the_package_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """replay/scenario loads python-dotenv's parser module from its file (not ``dotenv``'s ``__init__``, whose
    file writer imports tempfile/shutil/bz2/lzma): the same parser, the same bindings on tricky lines."""
    import io

    import dotenv.parser as real

    from ecs_guardrail.replay import scenario

    for name in ("dotenv.parser", scenario._DOTENV_PARSER):
        monkeypatch.delitem(sys.modules, name, raising=False)
    light = scenario._dotenv_parser()
    assert light is not real and light.__name__ == scenario._DOTENV_PARSER
    cases = ["A=1\nexport B='x # y'\n#c\n\nC=\"q\\\"z\" # cmt\nD = spaced \n", "export  E=1", "F",
             "G='unterminated\n", "\ufeffH=1\r\nI=2\r\n", "J=\"multi\nline\"\nK=v#no\nL=v #comment",
             "=x\n  M  =  'a'  \nN=${O}\n", "P=\\'esc\\'\nQ='a\\'b'\n", "export\nexport=1\n"]
    for text in cases:
        got = [tuple(b) for b in light.parse_stream(io.StringIO(text))]
        assert got == [tuple(b) for b in real.parse_stream(io.StringIO(text))], text
