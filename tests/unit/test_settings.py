"""Settings read from the environment by name into one validated, frozen object (issue 23: neither
pydantic-settings nor pydantic).

The messages are msgspec's (issue 36), after the setting's name and its value; ``tests/fuzz/
test_parser_differential.py`` keeps comparing what is accepted, and where the first problem is, with the
pydantic model.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from ecs_guardrail.core.errors import SettingsError
from ecs_guardrail.settings import SETTING_NAMES, Settings, load_settings


@pytest.mark.parametrize("env,message", [
    ({"CRASH_THRESHOLD": "0"}, "CRASH_THRESHOLD='0': Expected `int` >= 1"),
    ({"CRASH_THRESHOLD": ""},
     "CRASH_THRESHOLD='': expected a whole number written in digits (5 or 5.0; not 5.5, five, 007 or 1_000)"),
    ({"CRASH_THRESHOLD": "5.5"},  # the message names what is taken: 5.0 is (it is 5), 5.5 is not
     "CRASH_THRESHOLD='5.5': expected a whole number written in digits (5 or 5.0; not 5.5, five, 007 or 1_000)"),
    ({"DRY_RUN": "maybe"}, "DRY_RUN='maybe': expected true or false (or 1 or 0, any case)"),
    ({"SNS_FORMAT": "TEXT"}, "SNS_FORMAT='TEXT': Invalid enum value 'TEXT'"),
    ({"AUDIT_AGGREGATE_PATHS": "health"},
     "AUDIT_AGGREGATE_PATHS='health': health-check paths start with '/': 'health'"),
    ({"RUNBOOK_URL": "http://x"}, "RUNBOOK_URL='http://x': Expected `str` matching regex '^https://[^\\\\s]+\\\\Z'"),
    ({"CRASH_THRESHOLD": "0", "HISTORY_TTL_DAYS": "x"}, "CRASH_THRESHOLD='0': Expected `int` >= 1"),  # the first
    ({"CENTRAL_ALERT_TOPIC_ARN": "arn:aws:sns:eu-west-1:١١١١٢٢٢٢٣٣٣٣:central"},  # Unicode digits: no account
     "CENTRAL_ALERT_TOPIC_ARN='arn:aws:sns:eu-west-1:١١١١٢٢٢٢٣٣٣٣:central': Expected `str` matching regex "
     "'^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+\\\\Z'"),
])
def test_an_invalid_value_names_the_variable_and_what_it_accepts(env, message, monkeypatch):
    with pytest.raises(SettingsError) as given:
        load_settings(env)
    assert str(given.value) == f"invalid setting: {message}"
    for name, value in env.items():  # the same from the process environment
        monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as read:
        load_settings()
    assert str(read.value) == str(given.value)


def test_the_environment_is_read_by_name_case_sensitive_defaults_for_the_unset(monkeypatch):
    for name in SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("crash_threshold", "9")  # not the variable's name
    monkeypatch.setenv("CRASH_WINDOW_MINUTES", "10")
    monkeypatch.setenv("ALERT_ONLY_CLUSTERS", " prod, prod-* ,,")
    monkeypatch.setenv("ALERT_TOPIC_ARN", "  ")  # set but blank: unset
    monkeypatch.setenv("UNRELATED", "x")
    s = load_settings()
    assert s.CRASH_THRESHOLD == 5 and s.CRASH_WINDOW_MINUTES == 10
    assert s.ALERT_ONLY_CLUSTERS == ("prod", "prod-*") and s.ALERT_TOPIC_ARN is None
    assert s.AUDIT_AGGREGATE_PATHS == ("/actuator/health", "/health", "/status", "/")
    assert load_settings() is s  # unchanged variables: the same object
    monkeypatch.setenv("CRASH_THRESHOLD", "3")
    assert load_settings().CRASH_THRESHOLD == 3


def test_settings_are_frozen_and_hashable():
    s = Settings()
    with pytest.raises(ValueError):
        s.CRASH_THRESHOLD = 2  # type: ignore[misc]
    assert {s: 1}[Settings()] == 1  # the Lambda path keys its runtimes by settings


def test_reading_settings_imports_neither_pydantic_nor_the_policy_modules():
    code = ("import sys; from ecs_guardrail.settings import load_settings; load_settings({})\n"
            "print(sorted(m for m in ('pydantic_settings', 'pydantic',"
            " 'ecs_guardrail.core.policy', 'ecs_guardrail.core.audit')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_with_values_copies_without_validating_and_keeps_the_rest():
    """What ``model_copy(update=...)`` did for the replay: the table and the topic pointed elsewhere."""
    import copy
    import pickle

    s = load_settings({"CRASH_THRESHOLD": "3", "DRY_RUN": "TRUE"})
    t = s.with_values(HISTORY_TABLE="replay-table", ALERT_TOPIC_ARN="arn:aws:sns:eu-west-1:111122223333:t")
    assert (t.HISTORY_TABLE, t.ALERT_TOPIC_ARN, t.CRASH_THRESHOLD, t.DRY_RUN) == (
        "replay-table", "arn:aws:sns:eu-west-1:111122223333:t", 3, True)
    assert s.HISTORY_TABLE == "ecs-guardrail-history" and t != s
    assert copy.deepcopy(t) == t and pickle.loads(pickle.dumps(t)) == t and hash(copy.copy(t)) == hash(t)
    with pytest.raises(TypeError, match="not a setting: NOPE"):
        s.with_values(NOPE=1)


def test_settings_built_directly_are_validated_like_the_environment():
    from ecs_guardrail.validation.fields import Invalid

    assert Settings.of(CRASH_THRESHOLD="7").CRASH_THRESHOLD == 7 == Settings.of(CRASH_THRESHOLD=7).CRASH_THRESHOLD
    with pytest.raises(Invalid, match="CRASH_THRESHOLD: Expected `int` >= 1"):
        Settings.of(CRASH_THRESHOLD=0)
    assert Settings.of(__deepcopy__=1, NOPE=2) == Settings()  # a name that is not a setting is ignored


@pytest.mark.parametrize("name", ["SLACK_WEBHOOK_SECRET_ARN", "RUNBOOK_URL", "HISTORY_TABLE", "CRASH_THRESHOLD",
                                  "MAX_ACTION_FRACTION", "DRY_RUN", "RECOVERY"])
def test_a_value_with_bytes_that_are_not_utf8_is_rejected(name):
    """breakit: os.environ decodes bytes that are not UTF-8 into lone surrogates (``\\udcff``); pydantic
    rejected them before any other check; SLACK_WEBHOOK_SECRET_ARN and RUNBOOK_URL were accepted, to fail
    later in boto3 or the alert; msgspec raised UnicodeEncodeError reading a number from one."""
    value = {"RUNBOOK_URL": "https://x\udcff", "HISTORY_TABLE": "abc\udcff"}.get(name, "1\udcff")
    with pytest.raises(SettingsError, match=f"{name}=.*text that is not valid Unicode \\(a lone surrogate"):
        load_settings({name: value})
