"""The Chatbot message's text (issue 29 item 6): a code fence in a stop reason stays inert, a command is
never cut (255-character names: the text around it is shortened), and no console link is dropped silently."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from ecs_guardrail.core import links as L
from ecs_guardrail.core.alert import CHATBOT_LIMITS, LogStream, Where, alert_links, chatbot_message, decision_alert
from ecs_guardrail.core.classify import StopKind
from ecs_guardrail.core.records import Action, Decision, Failure, Reason

T0 = datetime(2025, 9, 2, 3, 0, tzinfo=UTC)
LONG_CLUSTER, LONG_SERVICE = "c" * 255, "s" * 255  # ECS allows 255 letters, digits, hyphens, underscores


def _decision(cluster: str, service: str, reason: str = "Essential container in task exited",
              message: str = "crash loop: 5 crashes in 30 min") -> Decision:
    failures = tuple(Failure(service, T0 + timedelta(minutes=n), StopKind.CRASH,
                             task_arn=f"arn:aws:ecs:eu-west-1:1:task/{cluster}/{n:032x}",
                             stop_code="EssentialContainerExited", reason=reason, exit_codes=(("app", 1),))
                     for n in range(5))
    return Decision(cluster=cluster, service=service, time=T0, action=Action.SCALE_TO_ZERO, reason=Reason.CRASH_LOOP,
                    crashes_in_window=5, health_check_kills_in_window=0, message=message,
                    failing_services=1, services_in_cluster=10, bound=2, last_failures=failures)


def _alert(cluster: str, service: str, reason: str = "Essential container in task exited", logs: int = 0,
           message: str = "crash loop: 5 crashes in 30 min"):
    where = Where(cluster=cluster, service=service, account="111122223333", region="eu-west-1")
    streams = tuple(LogStream(f"{n:032x}", "app", f"/ecs/{service}", f"ecs/app/{n:032x}", "eu-west-1")
                    for n in range(logs))
    return decision_alert(_decision(cluster, service, reason, message), previous_desired_count=3, where=where,
                          links=alert_links(where, logs=streams, runbook="https://wiki.example.com/rb"))


def test_a_code_fence_in_a_stop_reason_stays_inert() -> None:
    """``` in a reason turned the rest of Chatbot's description into code; the Slack blocks already made it '''."""
    msg = chatbot_message(_alert("dev", "api", reason="boom ```\n<!channel> everything below is code"))
    text = json.dumps(msg)
    assert "```" not in text
    assert "boom '''" in msg["content"]["description"] and "&lt;!channel&gt;" in msg["content"]["description"]


def test_the_undo_command_is_never_cut_with_255_character_names() -> None:
    alert = _alert(LONG_CLUSTER, LONG_SERVICE, reason="x" * 1500, logs=5, message="crash loop " + "m" * 2000)
    undo = alert.data["undo"]
    assert len(undo) > CHATBOT_LIMITS["next_step"]  # it cannot be a next step
    assert len(alert.text) > CHATBOT_LIMITS["description"]  # and the description must be shortened
    msg = chatbot_message(alert)
    steps, description = msg["content"]["nextSteps"], msg["content"]["description"]
    assert len(description) <= CHATBOT_LIMITS["description"]
    assert all(len(s) <= CHATBOT_LIMITS["next_step"] for s in steps) and len(steps) <= CHATBOT_LIMITS["next_steps"]
    # the command is whole somewhere, and nowhere cut
    assert undo in description
    assert steps[0].startswith("Undo: the restore command is in the description")
    for text in [*steps, *description.split("\n")]:
        if "ecs-guardrail restore" in text:
            assert undo in text, f"a cut command: {text[:120]}…"


def test_a_command_that_fits_a_step_loses_only_its_label() -> None:
    cluster, service = "c" * 200, "s" * 252  # "Undo: " + the command is just past 500 characters
    alert = _alert(cluster, service)
    undo = alert.data["undo"]
    assert len("Undo: " + undo) > CHATBOT_LIMITS["next_step"] >= len(undo)
    assert chatbot_message(alert)["content"]["nextSteps"][0] == undo


def test_no_console_link_is_dropped_silently() -> None:
    alert = _alert(LONG_CLUSTER, LONG_SERVICE, reason="y" * 1500, logs=5)
    msg = chatbot_message(alert)
    steps, description = msg["content"]["nextSteps"], msg["content"]["description"]
    for link in alert.links:
        as_step = f"{link.label}: {link.url}"
        assert as_step in steps or (link.url in description and any(link.label in s for s in steps)), link.label
    long = [link for link in alert.links if len(f"{link.label}: {link.url}") > CHATBOT_LIMITS["next_step"]]
    assert long  # 255-character names make console URLs too long for a step
    assert any(s.startswith(f"{len(long)} more link(s) in the description") for s in steps)


def test_short_names_keep_every_link_and_the_command_as_steps() -> None:
    alert = _alert("dev", "api", logs=2)
    msg = chatbot_message(alert)
    assert msg["content"]["nextSteps"][0] == "Undo: " + alert.data["undo"]
    assert msg["content"]["nextSteps"][1:] == [f"{link.label}: {link.url}" for link in alert.links]
    assert msg["content"]["description"] == alert.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert L  # the links module builds those URLs
