"""Issue 17 item 9: the Slack webhook URL is a secret; no part of its path reaches a log line, an
exception or a delivery error, a malformed URL (a space in it) included. Slack is a real HTTP server on
127.0.0.1; every logger is captured at DEBUG, and Powertools' stdout too."""

from __future__ import annotations

import logging

import pytest

from ecs_guardrail.adapters.alerts import SlackWebhook, redact_webhook
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.handlers.runtime import Clients, Runtime
from tests.functional.test_handlers import _Hook, slack_server  # noqa: F401 - the 127.0.0.1 Slack fixture

SECRET = ("T0SECRETA1", "B0SECRETB2", "XSECRETTOKEN3", "TOKENTAIL4")
ALERT = Alert(subject="s", text="scaled dev/api")


class _Secret:
    """A stand-in for WebhookUrl: the secret's value, as Secrets Manager would return it."""

    secret_id = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:slack-AbCdEf"

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self) -> str:
        return self.url


def _leaks(text: str) -> list[str]:
    return [part for part in SECRET if part in text]


def _send(url: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> str:
    """Everything the send produced: the delivery errors, every log record (message and traceback) and
    stdout/stderr."""
    rt = Runtime(settings=None, history=None, clients=Clients(), webhook=_Secret(url))  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG):
        deliveries = rt.send(ALERT)
    assert deliveries and not deliveries[0].ok
    out = capsys.readouterr()
    logged = "\n".join(f"{r.getMessage()}\n{r.exc_text or ''}" for r in caplog.records)
    return "\n".join([*(d.error or "" for d in deliveries), logged, out.out, out.err])


@pytest.mark.parametrize("path", [
    f"/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}{SECRET[3]}",
    f"/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]} {SECRET[3]}",  # mis-pasted: a space in it
    f"/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}\t{SECRET[3]}\n",
])
def test_no_part_of_the_webhook_path_reaches_logs_or_errors(slack_server, caplog, capsys, path):  # noqa: F811
    _Hook.answers = [(500, {})] * 5  # slack_sdk retries (and logs "Going to retry ... POST URL" at INFO)
    base = slack_server.rsplit("/services/", 1)[0]
    everything = _send(base + path, caplog, capsys)
    assert everything.strip(), "nothing was reported"
    assert _leaks(everything) == [], everything


def test_a_failing_client_is_redacted_at_the_source(slack_server, caplog):  # noqa: F811
    """SlackWebhook itself: the error of a URL with a space (http.client's InvalidURL quotes the path)."""
    base = slack_server.rsplit("/services/", 1)[0]
    url = f"{base}/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]} {SECRET[3]}"
    with caplog.at_level(logging.DEBUG):
        result = SlackWebhook(url, backoff_factor_s=0.01, max_retries=1).send(ALERT)
    assert not result.ok and result.error and "***" in result.error
    assert _leaks(result.error) == [] and _leaks(caplog.text) == []


def test_redact_webhook_hides_any_slack_webhook_path_and_keeps_the_rest():
    text = ("POST https://hooks.slack.com/services/T1/B2/abc failed; "
            "see https://hooks.slack-gov.com/triggers/E1/2/3 and https://example.com/services/x")
    out = redact_webhook(text)
    assert out == ("POST https://hooks.slack.com/*** failed; see https://hooks.slack-gov.com/*** "
                   "and https://example.com/services/x")
    url = f"https://hooks.slack.com/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]} {SECRET[3]}"
    quoted = f"InvalidURL: '/services/{SECRET[0]}/{SECRET[1]}/{SECRET[2]}%20{SECRET[3]}' and {SECRET[3]!r}"
    assert _leaks(redact_webhook(quoted, url)) == []
