"""Restart observations are the stack's own sampler's, and stamped in the present (issue 29 item 4, issue 30
item 6): another account's or another source's are refused by the bus rule and by the watchdog's code;
one dated more than 15 minutes after its delivery is refused as a task event is. Each refusal is kept,
with its reason, among the table's rejected events."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import ecsgen  # noqa: E402

from ecs_guardrail.adapters.store.memory import MemoryTable  # noqa: E402
from ecs_guardrail.core.restarts import RestartObservation  # noqa: E402
from ecs_guardrail.handlers import watchdog  # noqa: E402
from ecs_guardrail.handlers.runtime import Clients, LambdaContextStub, build_runtime  # noqa: E402
from ecs_guardrail.replay.embedded import InMemoryAws  # noqa: E402
from ecs_guardrail.replay.run import replay  # noqa: E402
from ecs_guardrail.replay.scenario import TABLE, load_scenario  # noqa: E402
from ecs_guardrail.routing import targets  # noqa: E402
from ecs_guardrail.settings import load_settings  # noqa: E402

T0 = ecsgen.T0
OTHER = "999988887777"
SERVICES = ("api", "cart", "mail", "auth", "jobs")
SETTINGS = {"CRASH_THRESHOLD": "3", "CRASH_WINDOW_MINUTES": "30", "MAX_ACTION_FRACTION": "0.2",
            "MIN_ACTIONS_ALLOWED": "1", "FLEET_SIGNAL_MIN_FAILURES": "2", "ALERT_ONLY_CLUSTERS": "production"}
CTX = LambdaContextStub(invoked_function_arn=f"arn:aws:lambda:{ecsgen.REGION}:{ecsgen.ACCOUNT}:function:wd")


def observation(service: str, minute: int, account: str = ecsgen.ACCOUNT, source: str | None = None,
                restarts: int = 3) -> dict[str, Any]:
    obs = RestartObservation(f"arn:aws:ecs:{ecsgen.REGION}:{ecsgen.ACCOUNT}:cluster/dev", service,
                             T0 + timedelta(minutes=minute), restarts, 10.0 + minute)
    event = obs.to_event(account, ecsgen.REGION)
    if source is not None:
        event["source"] = source
    return event


def crashes(service: str, first: int, n: int = 3) -> list[dict[str, Any]]:
    return [ecsgen.task_event("dev", service, f"{abs(hash((service, i))) % 16**32:032x}", "crash_exit",
                              T0 + timedelta(minutes=first + i)) for i in range(n)]


def _fleet() -> dict[str, Any]:
    return ecsgen.fleet({"dev": [(s, 2, {}) for s in SERVICES]})


def test_the_bus_rule_delivers_only_the_stacks_own_observations() -> None:
    # the sweep function's rule: the crash path's own lane (issue 32)
    assert targets(observation("cart", 0), ecsgen.ACCOUNT) == {"sweep"}
    assert targets(observation("cart", 0, account=OTHER), ecsgen.ACCOUNT) == set()
    assert targets(observation("cart", 0, source="someone-else"), ecsgen.ACCOUNT) == set()


@pytest.fixture
def runtime(tmp_path: Path) -> Any:
    folder = ecsgen.write_scenario(tmp_path / "s", _fleet(), [], SETTINGS)
    with InMemoryAws(load_scenario(folder)) as aws:
        settings = load_settings({**SETTINGS, "HISTORY_TABLE": TABLE, "ALERT_TOPIC_ARN": aws.topic_arn})
        yield build_runtime(settings, Clients(aws.client), watchdog=True, table=MemoryTable(TABLE, ecsgen.REGION),
                            home=(ecsgen.ACCOUNT, ecsgen.REGION))


@pytest.mark.parametrize(("event", "reason"), [
    (observation("cart", 0, account=OTHER), f"from account '{OTHER}', not the stack's own"),
    (observation("cart", 0, source="someone-else"), "source 'someone-else' is not the sampler's"),
])
def test_the_watchdog_refuses_a_forged_observation_and_keeps_it(runtime: Any, event: dict[str, Any],
                                                                 reason: str) -> None:
    """The code refuses what the rule would have dropped (a rule can be edited by hand, a pattern widened)."""
    out = watchdog.invoke(event, runtime, CTX, delivered_at=T0 + timedelta(minutes=1))
    assert out["status"] == "rejected" and reason in out["reason"]
    (kept,) = runtime.history.rejected(T0)
    assert reason in kept["reason"] and '"restarts": 3' in kept["raw"]
    assert runtime.history.state.load("dev", "cart").crashes == ()  # nothing was filed


def test_an_observation_stamped_in_2199_is_refused_and_kept(runtime: Any) -> None:
    """Issue 30 item 6: one observation dated 2199 hid the service's real crash loop (its window moved on)."""
    event = observation("cart", 0)
    event["detail"]["minute"] = event["time"] = "2199-01-01T00:00:00Z"
    out = watchdog.invoke(event, runtime, CTX, delivered_at=T0)
    assert out["status"] == "rejected" and "min after its delivery" in out["reason"]
    assert "min after its delivery" in runtime.history.rejected(T0)[0]["reason"]
    assert runtime.history.state.load("dev", "cart").crashes == ()
    # then the real crash loop is decided
    decisions = [d for e in crashes("cart", 2) for d in watchdog.invoke(e, runtime, CTX, delivered_at=T0)["decisions"]]
    assert [d["action"] for d in decisions] == ["scale_to_zero"]
    # 15 minutes ahead is clock skew, accepted; 16 is not
    assert watchdog.invoke(observation("mail", 15, restarts=1), runtime, CTX, delivered_at=T0)["status"] != "rejected"
    assert watchdog.invoke(observation("mail", 16, restarts=1), runtime, CTX, delivered_at=T0)["status"] == "rejected"


def test_three_forged_observations_do_not_turn_a_crash_loop_into_a_mass_hold(tmp_path: Path) -> None:
    """The issue's reproduction as a replay: three services "restarting" in another account's
    observations, then one genuine crash loop; the forged lines are refused and the loop acts alone."""
    events = [observation(s, 0, account=OTHER) for s in ("mail", "auth", "jobs")] + crashes("api", 1)
    folder = ecsgen.write_scenario(tmp_path / "forged", _fleet(), events, SETTINGS)
    res = replay(load_scenario(folder))
    assert [n for n, _ in res.rejected] == [1, 2, 3]
    assert [(d["action"], d["service"]) for d in res.decisions] == [("scale_to_zero", "api")]
    assert res.summary["scaled_to_zero"] == ["dev/api"]
