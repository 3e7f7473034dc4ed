"""What each entry point imports (issue 23): a module a path does not need is a cold-start cost.

Each check runs in a fresh interpreter (``sys.modules`` of this test process holds everything).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import SCENARIOS

#: what the recorder never needs: the watchdog's adapters and state, the sampler's, the alert text
NOT_FOR_THE_RECORDER = [
    "ecs_guardrail.adapters.alerts", "ecs_guardrail.adapters.ecs", "ecs_guardrail.adapters.store.watchdog_state",
    "ecs_guardrail.adapters.store.samples", "ecs_guardrail.core.alert", "ecs_guardrail.core.availability",
    "ecs_guardrail.core.timeline", "ecs_guardrail.core.entitlement", "ecs_guardrail.core.policy",
    "ecs_guardrail.core.audit", "ecs_guardrail.core.summary",
]
#: built or imported on first use, never at import: boto3's session machinery and Powertools
LAZY = ["boto3", "botocore.client", "aws_lambda_powertools", "pydantic_settings"]


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


#: no handler imports them at all (issue 23: about 100 ms of each cold start; the models are plain classes)
NEVER = ["pydantic", "pydantic_core", "annotated_types", "pydantic_settings"]


@pytest.mark.parametrize("handler", ["record", "watchdog", "availability", "episode", "sweep"])
def test_no_handler_imports_pydantic(handler):
    loaded = _loaded_after(f"import ecs_guardrail.handlers.{handler}")
    assert loaded.isdisjoint(NEVER), sorted(loaded & set(NEVER))


def test_the_recorder_imports_only_its_path():
    loaded = _loaded_after("import ecs_guardrail.handlers.record")
    assert {"ecs_guardrail.core.events", "ecs_guardrail.adapters.store.event_log"} <= loaded
    assert loaded.isdisjoint(NOT_FOR_THE_RECORDER + LAZY), sorted(loaded & set(NOT_FOR_THE_RECORDER + LAZY))


def test_the_watchdog_imports_neither_timeline_nor_availability_nor_powertools():
    loaded = _loaded_after("import ecs_guardrail.handlers.watchdog")
    assert "ecs_guardrail.core.policy" in loaded
    unneeded = {"ecs_guardrail.core.timeline", "ecs_guardrail.core.availability", *LAZY}
    assert loaded.isdisjoint(unneeded), sorted(loaded & unneeded)


def test_the_watchdog_loads_the_episode_machine_on_a_trigger_not_at_import():
    """Issue 33 item 7: a first call that only counts a stopped task never needs the episode machine
    (about a third of the watchdog's own import CPU); a replay that decides loads it."""
    assert "ecs_guardrail.core.lifecycle" not in _loaded_after("import ecs_guardrail.handlers.watchdog")
    code = ("import contextlib, io, sys\n"
            "from ecs_guardrail import cli\n"
            f"sys.argv = ['ecs-guardrail', 'replay', {str(SCENARIOS / 'bad-image-dev')!r}, '--json']\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    code = cli.main()\n"
            "assert '\"action\": \"scale_to_zero\"' in out.getvalue(), out.getvalue()[-300:]")
    assert "ecs_guardrail.core.lifecycle" in _loaded_after(code)


def test_a_lazy_module_imports_on_its_first_attribute_read():
    from ecs_guardrail.core.lazy import lazy_module

    lc = lazy_module("ecs_guardrail.core.lifecycle")
    from ecs_guardrail.core import lifecycle

    assert lc.Phase is lifecycle.Phase and lc.loaded and "loaded" in repr(lc)
    missing = lazy_module("ecs_guardrail.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        _ = missing.anything


def test_a_fast_replay_imports_neither_boto3_nor_powertools_nor_moto():
    code = ("import contextlib, io, sys\n"
            "from ecs_guardrail import cli\n"
            f"sys.argv = ['ecs-guardrail', 'replay', {str(SCENARIOS / 'bad-image-dev')!r}, '--json']\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    code = cli.main()\n"
            "assert code in (0, None) and '\"type\": \"summary\"' in out.getvalue(), out.getvalue()[-300:]")
    loaded = _loaded_after(code)
    assert "ecs_guardrail.handlers.watchdog" in loaded  # the replay ran the handlers
    assert loaded.isdisjoint([*LAZY, "moto"]), sorted(loaded & {*LAZY, "moto"})


def test_the_lambda_entry_points_build_powertools_on_first_call(monkeypatch):
    from ecs_guardrail.handlers import runtime

    fresh_logger, fresh_metrics = runtime._LazyLogger(), runtime._LazyMetrics()
    calls = []

    @fresh_metrics.log_metrics
    @fresh_logger.inject_lambda_context(clear_state=True)
    def handler(event, context):
        calls.append(event)
        fresh_metrics.add_metric(name="Probe", unit="Count", value=1)
        return {"ok": True}

    assert not fresh_logger.built and fresh_metrics._real is None  # decorating built nothing
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as emf:
        assert handler({"n": 1}, runtime.LambdaContextStub()) == {"ok": True}
    assert calls == [{"n": 1}] and fresh_logger.built
    assert "Probe" in emf.getvalue()  # Powertools flushed the metric as EMF after the handler


def test_metrics_off_drops_every_metric():
    from ecs_guardrail.handlers.runtime import metrics, metrics_enabled

    metrics.clear_metrics()
    with metrics_enabled(False):
        metrics.add_metric(name="Dropped", unit="Count", value=1)
    assert "Dropped" not in metrics.metric_set and metrics.enabled
    metrics.add_metric(name="Kept", unit="Count", value=1)
    assert metrics.metric_set["Kept"]["Value"] == [1.0]
    metrics.clear_metrics()


def test_the_region_list_is_boto3s():
    boto3 = pytest.importorskip("boto3")
    from ecs_guardrail.replay.fleet import _regions

    session = boto3.session.Session()
    assert set(_regions()) == {r for p in session.get_available_partitions()
                               for r in session.get_available_regions("ecs", p)}


def test_importing_the_handlers_leaves_the_stdlib_dataclasses_alone():
    """No import-time patch of ``dataclasses`` (its ``exec`` stays the builtin): the package has no global
    side effect at import."""
    import dataclasses
    import importlib

    for name in ("record", "watchdog", "availability", "episode", "sweep"):
        importlib.import_module(f"ecs_guardrail.handlers.{name}")
    assert "exec" not in vars(dataclasses)


#: what an invocation that ignores its event (a running task, a deployment's or a user's stop) or notes a Spot
#: notice never reaches: the counted failure's episodes, hold and decider, and the adapters a decision gathers with
THE_DECISION_PATH = ["ecs_guardrail.handlers.decision", "ecs_guardrail.handlers.episode",
                     "ecs_guardrail.handlers.probe", "ecs_guardrail.handlers.hold",
                     "ecs_guardrail.adapters.autoscaling",
                     "ecs_guardrail.adapters.cloudwatch", "ecs_guardrail.adapters.taskdef",
                     "ecs_guardrail.core.crash_words"]


def test_the_watchdog_loads_its_decision_path_on_first_use_not_at_import():
    """Issue 33 item 7: the watchdog's import leaves the counted failure's path to the first event that needs it;
    ``USES`` (the IAM check's units) and ``CLAIM_ATTEMPTS`` are still there, read on demand."""
    loaded = _loaded_after("import ecs_guardrail.handlers.watchdog")
    assert loaded.isdisjoint(THE_DECISION_PATH), sorted(loaded & set(THE_DECISION_PATH))
    from ecs_guardrail.adapters.autoscaling import ScalableTargets
    from ecs_guardrail.handlers import decision, watchdog

    assert watchdog.USES["autoscaling"] is ScalableTargets and len(watchdog.USES) == 13
    assert watchdog.CLAIM_ATTEMPTS == decision.CLAIM_ATTEMPTS
    with pytest.raises(AttributeError):
        _ = watchdog.NO_SUCH_NAME


def test_a_lazy_callable_imports_on_its_first_call():
    from ecs_guardrail.core.lazy import lazy_callable

    parse = lazy_callable("ecs_guardrail.core.links", "parse_arn")
    assert "loaded" not in repr(parse)
    from ecs_guardrail.core.links import parse_arn

    assert parse("arn:aws:ecs:eu-west-1:123456789012:cluster/prod") == parse_arn(
        "arn:aws:ecs:eu-west-1:123456789012:cluster/prod")
    assert "loaded" in repr(parse) and parse.__name__ == "parse_arn"
    with pytest.raises(AttributeError):
        lazy_callable("ecs_guardrail.core.links", "no_such_function")()
    space: dict[str, object] = {}
    space["parse_arn"] = bound = lazy_callable("ecs_guardrail.core.links", "parse_arn", space)
    assert bound("not an arn") is None and space["parse_arn"] is parse_arn  # the real one in its place


def test_the_cli_imports_neither_botocore_nor_the_replay_engines():
    """Issue 33 item 2: ``import ecs_guardrail.cli`` (every command's first step) leaves botocore and the replay's
    engines to the command that uses them."""
    loaded = _loaded_after("import ecs_guardrail.cli")
    unneeded = {"botocore", "botocore.exceptions", "ecs_guardrail.replay.embedded", "ecs_guardrail.adapters.ecs"}
    assert loaded.isdisjoint(unneeded), sorted(loaded & unneeded)
