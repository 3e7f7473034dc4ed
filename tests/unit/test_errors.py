"""One error hierarchy: every ``...Error`` of the package is defined in ``core/errors.py`` and derives
from ``GuardrailError``; a catch-all ``except GuardrailError`` never swallows a lost race."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import ecs_guardrail
from ecs_guardrail import cli
from ecs_guardrail.core import errors
from ecs_guardrail.core.errors import (
    ConditionFailedError,
    GuardrailError,
    RestoreError,
    StateConflictError,
)

#: the documented exception (core/errors.py's docstring): the in-memory fake AWS's "operation not
#: modelled", a NotImplementedError (a programming error of the fake), not an error the project raises
_NOT_GUARDRAIL = {"ecs_guardrail.replay.memory_aws.UnsupportedOperationError"}


def _error_classes() -> dict[str, type[BaseException]]:
    """Every class named ``*Error`` defined in a module of the package, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ecs_guardrail.__path__, "ecs_guardrail."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and name.endswith("Error") and issubclass(obj, BaseException)
                    and obj.__module__.startswith("ecs_guardrail")):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_the_walk_finds_the_errors():
    names = set(_error_classes())
    assert "ecs_guardrail.core.errors.ConditionFailedError" in names
    assert names >= _NOT_GUARDRAIL


def test_every_error_derives_from_guardrail_error_and_lives_in_core_errors():
    wrong = {name: [c.__name__ for c in cls.__mro__]
             for name, cls in _error_classes().items()
             if name not in _NOT_GUARDRAIL
             and (not issubclass(cls, GuardrailError) or cls.__module__ != "ecs_guardrail.core.errors")}
    assert wrong == {}


def test_every_error_says_when_it_is_raised():
    undocumented = [name for name, obj in vars(errors).items()
                    if inspect.isclass(obj) and issubclass(obj, GuardrailError) and obj is not GuardrailError
                    and "Raised" not in (obj.__doc__ or "")]
    assert undocumented == []


@pytest.mark.parametrize(("old_path", "name"), [
    ("ecs_guardrail.adapters.store.table", "ConditionFailedError"),
    ("ecs_guardrail.adapters.store.watchdog_state", "StateConflictError"),
    ("ecs_guardrail.adapters.alerts", "SecretUnreadableError"),
    ("ecs_guardrail.adapters.bus", "ObservationsNotSentError"),
    ("ecs_guardrail.core.lifecycle", "IllegalTransitionError"),
    ("ecs_guardrail.app.plot", "PlotUnavailableError"),
])
def test_the_old_import_paths_still_work(old_path, name):
    assert getattr(importlib.import_module(old_path), name) is getattr(errors, name)


@pytest.mark.parametrize("lost_race", [ConditionFailedError({"seq": 3}), StateConflictError("kept changing")])
def test_a_lost_race_propagates_through_the_cli_catch_all(monkeypatch, lost_race):
    # cli._dispatch turns any other GuardrailError into one line and exit 1; a lost race is no answer
    import ecs_guardrail.app.restore

    def raced(*args, **kwargs):
        raise lost_race

    monkeypatch.setattr(ecs_guardrail.app.restore, "restore_service", raced)
    with pytest.raises(type(lost_race)):
        cli.main(["restore", "--cluster", "c", "--service", "s", "--table", "t"])


def test_other_guardrail_errors_still_end_in_one_line(monkeypatch, capsys):
    import ecs_guardrail.app.restore

    def refused(*args, **kwargs):
        raise RestoreError("c/s: a scale-down is in flight")

    monkeypatch.setattr(ecs_guardrail.app.restore, "restore_service", refused)
    assert cli.main(["restore", "--cluster", "c", "--service", "s", "--table", "t"]) == cli.EXIT_NO
    assert capsys.readouterr().err == "ecs-guardrail: c/s: a scale-down is in flight\n"


def test_restore_of_an_unreadable_summary_is_exit_1_with_its_repair(monkeypatch, capsys):
    # docs/runbook.md: restore changes nothing and prints the repair; EXIT_CODES says so for status 1
    import ecs_guardrail.app.restore
    from ecs_guardrail.core.errors import UnreadableSummaryError

    def unreadable(*args, **kwargs):
        exc = UnreadableSummaryError("WD#dev S#api is unreadable", "WD#dev", "S#api")
        raise UnreadableSummaryError(f"{exc}; {exc.repair('t', 'eu-west-1')}", exc.pk, exc.sk)

    monkeypatch.setattr(ecs_guardrail.app.restore, "restore_service", unreadable)
    assert cli.main(["restore", "--cluster", "dev", "--service", "api", "--table", "t"]) == cli.EXIT_NO
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "aws dynamodb delete-item" in err and "--count N" in err
    assert "summary is unreadable" in cli.EXIT_CODES["restore"][cli.EXIT_NO]


def test_the_repair_of_another_accounts_cluster_names_the_cluster_not_its_key():
    from ecs_guardrail.core.errors import UnreadableSummaryError

    repair = UnreadableSummaryError("x", "WD#dev@444455556666@eu-west-1", "S#api").repair("t", "eu-west-1")
    assert "restore --cluster dev --service api --table t" in repair
    assert '"WD#dev@444455556666@eu-west-1"' in repair  # the item's key stays the key


def test_a_condition_failures_old_item_given_as_a_callable_is_read_once_on_first_use():
    calls = []

    def load() -> dict[str, int]:
        calls.append(1)
        return {"seq": 3}

    exc = ConditionFailedError(load)
    assert calls == []  # nothing decoded until a reader asks
    assert exc.old == {"seq": 3} and exc.old is exc.old and calls == [1]
    assert ConditionFailedError({"seq": 1}).old == {"seq": 1} and ConditionFailedError().old is None


def test_the_in_memory_tables_condition_failure_decodes_the_old_item_only_when_read():
    from ecs_guardrail.adapters.store.memory import MemoryTable
    from ecs_guardrail.adapters.store.table import Cond

    table = MemoryTable()
    table.put({"pk": "P", "sk": "S", "raw": "x" * 100, "n": 1})
    with pytest.raises(ConditionFailedError) as info:
        table.put({"pk": "P", "sk": "S", "n": 2}, Cond(absent=True))
    table.put({"pk": "P", "sk": "S", "n": 3})  # a later write does not change the item as it was
    assert info.value.old == {"pk": "P", "sk": "S", "raw": "x" * 100, "n": 1}
