"""Alert sinks: a Slack incoming webhook (URL from Secrets Manager) and an SNS topic.

What each sink sends is rendered in :mod:`ecs_guardrail.core.alert` (pure): Slack gets
:func:`~ecs_guardrail.core.alert.slack_payload`; SNS gets AWS Chatbot's custom-notification JSON
(:func:`~ecs_guardrail.core.alert.chatbot_message`, ``SNS_FORMAT=chatbot``, the default) or the plain
text with the facts as JSON (``SNS_FORMAT=text``).

Delivery is retried (slack_sdk's retry handlers for 429 with Retry-After, 5xx and connection errors;
botocore's standard mode for SNS) and each sink's outcome is reported, never raised past the caller
that already recorded the decision.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, ClassVar

from msgspec import Struct

from ecs_guardrail.core.alert import (
    SNS_MESSAGE_MAX_BYTES,
    SNS_SUBJECT_MAX,
    Alert,
    chatbot_message,
    mrkdwn_escape,
    slack_payload,
)
from ecs_guardrail.core.errors import SecretUnreadableError
from ecs_guardrail.core.lazy import lazy_pattern
from ecs_guardrail.core.permissions import permissions

__all__ = ["Delivery", "SlackWebhook", "SnsTopic", "WebhookUrl", "SecretUnreadableError", "redact_webhook",
           "control_characters"]

#: a Slack webhook path anywhere in a text (incoming webhooks ``/services/...``, workflow triggers
#: ``/triggers/...``, ``/workflows/...``; slack.com and GovSlack's slack-gov.com)
_WEBHOOK_PATH = lazy_pattern(r"(hooks\.slack(?:-gov)?\.com)(?::\d+)?/[^\s'\"<>)\]]*", re.IGNORECASE)
_REDACTED = "***"
#: path segments of a webhook URL that are no secret (kept so a redacted line still says what it was)
_PUBLIC_SEGMENTS = frozenset({"services", "triggers", "workflows", "hooks", ""})


#: what an error text may show of a URL character by character: the unreserved characters of RFC 3986
#: (section 2.3) pass through every escape (``repr``, JSON, percent-encoding) unchanged, anything else
#: may come out rewritten (``\x00``, ``\u001b``, ``%7F``), so a secret is hidden piece by piece between them
_UNESCAPED_RUN = lazy_pattern(r"[A-Za-z0-9._~-]+")


def control_characters(text: str) -> list[int]:
    """Positions (0-based) of the control characters in ``text``: C0 (U+0000 to U+001F), DEL (U+007F) and
    C1 (U+0080 to U+009F), the characters that ``repr``, JSON and http.client escape or refuse."""
    return [i for i, c in enumerate(text) if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]


def _webhook_shaped(url: str) -> bool:
    """``url`` is a scheme, a host (and port) and a ``/path``, nothing else: the shape of an incoming
    webhook (Slack API, "Sending messages using incoming webhooks": ``https://hooks.slack.com/services/...``),
    so its secret is the path :func:`_secret_parts` hides. A backslash or ``;`` (which some clients read as
    separators), credentials, a query or a fragment would put the token where no redaction looks."""
    from urllib.parse import urlsplit

    if "\\" in url or ";" in url:
        return False
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    return bool(u.hostname) and u.path.startswith("/") and len(u.path) > 1 and not (
        u.username or u.password or u.query or u.fragment or "@" in u.netloc)


def _secret_parts(url: str) -> tuple[str, ...]:
    """The parts of ``url`` to hide, longest first: everything after the host (the path: the secret of
    an incoming webhook) as given and as each escape would write it (percent-encoded, ``repr``,
    ``unicode_escape``, JSON), and every run of unreserved characters in it (so an error that escapes a
    control character, a space or a quote between two pieces of the token still shows neither piece).

    Computed from the raw URL, before anything escapes or formats it (issue 30 item 7)."""
    from urllib.parse import quote

    scheme_end = url.find("://")
    rest = url[scheme_end + 3:] if scheme_end >= 0 else url
    slash = rest.find("/")
    path = rest[slash:] if slash >= 0 else ""
    forms = {path, path.strip()}
    for form in tuple(forms):
        forms.update({quote(form, safe="/"), repr(form)[1:-1], form.encode("unicode_escape").decode("ascii"),
                      json.dumps(form)[1:-1], json.dumps(form, ensure_ascii=False)[1:-1]})
    parts = set(forms)
    for piece in _UNESCAPED_RUN.findall(path):
        if piece.lower() not in _PUBLIC_SEGMENTS and len(piece) >= 3:
            parts.add(piece)
    return tuple(sorted((p for p in parts if p.strip("/ ")), key=len, reverse=True))


def redact_webhook(text: str, url: str | None = None) -> str:
    """``text`` with the path of every Slack webhook URL replaced by ``***``: any ``hooks.slack.com/...``
    in it, and, when ``url`` (the configured webhook) is given, every part of that URL's path wherever
    it appears (malformed URLs included: a space in it, quoted or percent-encoded in an error)."""
    out = _WEBHOOK_PATH.sub(lambda m: f"{m.group(1)}/{_REDACTED}", text)
    for part in _secret_parts(url) if url else ():
        out = out.replace(part, _REDACTED)
    return out


class _RedactingFilter(logging.Filter):
    """Redacts a webhook URL from every record of the logger it is on (slack_sdk logs the URL: at
    DEBUG ``Sending a request - url: ...``, at INFO ``Going to retry the same request: POST URL``)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_webhook(record.getMessage(), self._url)
        record.args = None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact_webhook(logging.Formatter().formatException(record.exc_info), self._url)
            record.exc_info = None
        return True


def _redacting_logger(url: str) -> logging.Logger:
    """A logger for slack_sdk's client: INFO and up (its DEBUG lines carry the URL and the body),
    every record redacted, then handed to the root logger's handlers (Lambda's log)."""
    log = logging.Logger("ecs_guardrail.slack_webhook", logging.INFO)
    log.parent = logging.getLogger()
    log.addFilter(_RedactingFilter(url))
    return log


class Delivery(Struct, frozen=True):
    """One sink's outcome: ``ok``, and ``error`` (one line) when not."""

    sink: str
    ok: bool
    error: str | None = None


def _server_error_handler(max_retry_count: int, interval_calculator: Any) -> Any:
    """A slack_sdk ``RetryHandler`` for HTTP 5xx (slack_sdk ships 429 and connection-error handlers).

    Built on first use: slack_sdk is imported only when a Slack alert is sent (120 ms of cold start).
    """
    from slack_sdk.http_retry.handler import RetryHandler

    class ServerErrorRetryHandler(RetryHandler):
        def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Exception | None = None) -> bool:
            return response is not None and 500 <= response.status_code < 600

    return ServerErrorRetryHandler(max_retry_count=max_retry_count, interval_calculator=interval_calculator)


class SlackWebhook:
    """POST an alert to a Slack incoming webhook with retries; ``timeout_s`` bounds each attempt.

    The webhook URL is a secret (anyone holding it can post to the channel): no error, log line or
    :class:`Delivery` from here carries its path (:func:`redact_webhook`), a malformed URL included.
    """


    def __init__(self, url: str, *, timeout_s: float = 5.0, max_retries: int = 2,
                 backoff_factor_s: float = 0.5) -> None:
        from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler
        from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
        from slack_sdk.webhook import WebhookClient

        calc = BackoffRetryIntervalCalculator(backoff_factor=backoff_factor_s)
        self._url = url
        self._client = WebhookClient(
            url,
            timeout=int(max(1, timeout_s)),
            logger=_redacting_logger(url),
            retry_handlers=[
                ConnectionErrorRetryHandler(max_retry_count=max_retries, interval_calculator=calc),
                RateLimitErrorRetryHandler(max_retry_count=max_retries),
                _server_error_handler(max_retries, calc),
            ],
        )

    def send(self, alert: Alert) -> Delivery:
        """POST the alert; the outcome, never an exception (its ``error`` redacted).

        A URL with a control character (:func:`control_characters`) is refused before the client sees
        it: http.client would quote it, escaped, in its error (issue 30 item 7); the refusal names the
        character's code point and position only."""
        bad = control_characters(self._url)
        if bad:
            return Delivery("slack", False, f"malformed webhook URL: control character U+{ord(self._url[bad[0]]):04X} "
                                            f"at position {bad[0]} ({len(bad)} in all); store the URL exactly "
                                            "as Slack shows it")
        try:
            resp = self._client.send(**slack_payload(alert))
        except Exception as exc:  # noqa: BLE001 - any transport failure is reported, not raised
            return Delivery("slack", False, redact_webhook(f"{type(exc).__name__}: {exc}", self._url)[:300])
        if resp.status_code == 200:
            return Delivery("slack", True)
        return Delivery("slack", False, redact_webhook(f"HTTP {resp.status_code}: {str(resp.body)[:200]}", self._url))


class SnsTopic:
    """Publish an alert to an SNS topic, one body per protocol (``MessageStructure="json"``).

    ``fmt``: ``chatbot`` (AWS Chatbot's custom-notification JSON, which Chatbot renders in Slack,
    Teams and Chime) or ``text`` (the plain text, then the facts as JSON). Both carry the alert's
    ``decision_id``/``alert_id`` and are escaped as Slack's text is (``&amp;``, ``&lt;``, ``&gt;``).
    Subject at most 100 ASCII characters and message at most 256 KB (SNS Publish API).

    SNS sends one message to every subscription unless the message is a JSON object of one body per
    protocol (SNS API Reference, Publish, ``MessageStructure``: ``default`` is required and serves every
    protocol without its own key). So (:meth:`structure`): ``default`` is the ``fmt`` body, for the
    machines (Chatbot subscribes with ``https``; ``lambda``, ``sqs``, ``http``, ``firehose``, and
    ``email-json``, which SNS documents as JSON for applications to process); ``email`` is readable
    text (the alert's text and its facts, not escaped for Slack: a mail client shows ``&amp;`` as it
    is); ``sms`` is the subject (an SMS carries at most 1,600 bytes).
    """

    FORMATS: ClassVar[tuple[str, ...]] = ("chatbot", "text")

    def __init__(self, client: Any, topic_arn: str, fmt: str = "chatbot") -> None:
        if fmt not in self.FORMATS:
            raise ValueError(f"SNS format {fmt!r}: expected one of {', '.join(self.FORMATS)}")
        self._sns = client
        self.topic_arn = topic_arn
        self.fmt = fmt

    def render(self, alert: Alert, max_bytes: int = SNS_MESSAGE_MAX_BYTES, *, quoted: bool = False) -> tuple[str, str]:
        """``(subject, message)`` of the ``fmt`` body, the message within ``max_bytes`` of UTF-8 (``quoted``:
        as a JSON string, the way :meth:`structure` carries it). A Chatbot message is shortened in its
        description (it stays JSON), a text message at its end."""
        def size(text: str) -> int:
            return len((json.dumps(text, ensure_ascii=False) if quoted else text).encode())

        if self.fmt == "chatbot":
            msg = chatbot_message(alert)
            body = json.dumps(msg, ensure_ascii=False)
            while size(body) > max_bytes and msg["content"]["description"]:
                d = msg["content"]["description"]
                msg["content"]["description"] = d[: len(d) // 2]
                body = json.dumps(msg, ensure_ascii=False)
        else:
            # escaped as Slack's text is (a subscriber may post it to Slack); the JSON stays JSON
            body = mrkdwn_escape(alert.text + "\n\ndecision (JSON): "
                                 + json.dumps(alert.data, sort_keys=True, default=str))
            body = body.encode()[:max_bytes].decode(errors="ignore")
            while size(body) > max_bytes:
                body = body[: len(body) * 9 // 10]
        return alert.subject[:SNS_SUBJECT_MAX], body

    def structure(self, alert: Alert) -> tuple[str, str]:
        """``(subject, message)`` to publish with ``MessageStructure="json"``: ``message`` is the JSON
        object ``{"default": the fmt body (:meth:`render`), "email": readable text, "sms": the subject}``,
        within :data:`SNS_MESSAGE_MAX_BYTES` as a whole (the e-mail text is cut first)."""
        # room for the e-mail's first lines and the SMS beside the machines' body
        subject, body = self.render(alert, SNS_MESSAGE_MAX_BYTES - 4096, quoted=True)
        facts = json.dumps(alert.data, sort_keys=True, default=str, indent=1)
        email = f"{alert.text}\n\nDecision facts (JSON):\n{facts}"
        room = SNS_MESSAGE_MAX_BYTES - len(json.dumps({"default": body, "email": "", "sms": subject},
                                                      ensure_ascii=False).encode())
        cut = False
        while email and len(json.dumps(email + "…" * cut, ensure_ascii=False).encode()) - 2 > room:
            email, cut = email[: len(email) * 9 // 10], True  # the e-mail is cut, never the machines' body
        email += "…" * cut
        message = json.dumps({"default": body, "email": email, "sms": subject}, ensure_ascii=False)
        return subject, message

    @permissions(alert_topic=["sns:Publish"])
    def send(self, alert: Alert) -> Delivery:
        subject, message = self.structure(alert)
        try:
            self._sns.publish(TopicArn=self.topic_arn, Subject=subject, Message=message, MessageStructure="json")
        except Exception as exc:  # noqa: BLE001 - reported to the caller, which records and re-raises
            return Delivery("sns", False, f"{type(exc).__name__}: {exc}"[:300])
        return Delivery("sns", True)


def _client_error_code(exc: BaseException | None) -> str | None:
    """The AWS error code of ``exc`` or of what it wraps (Powertools re-raises a ``GetParameterError``)."""
    seen = 0
    while exc is not None and seen < 5:
        response = getattr(exc, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code"):
            return str(response["Error"]["Code"])
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


class WebhookUrl:
    """The Slack webhook URL, read from Secrets Manager with Powertools' parameters (cached 5 min).

    The secret is either the URL itself or JSON ``{"url": "https://hooks.slack.com/..."}``.
    """

    def __init__(self, client: Any, secret_id: str, max_age_s: int = 300) -> None:
        from aws_lambda_powertools.utilities.parameters import SecretsProvider

        self._provider = SecretsProvider(boto3_client=client)
        self.secret_id = secret_id
        self.max_age_s = max_age_s

    @permissions(webhook_secret=["secretsmanager:GetSecretValue"])
    def get(self) -> str:
        """Raises :class:`SecretUnreadableError` when Secrets Manager cannot be read, ``ValueError`` when
        the secret holds no URL or a URL with whitespace in it (neither message quotes the secret)."""
        try:
            value = self._provider.get(self.secret_id, max_age=self.max_age_s)
        except Exception as exc:  # noqa: BLE001 - Powertools wraps every SDK error in GetParameterError
            raise SecretUnreadableError(f"{type(exc).__name__}: {exc}"[:300], _client_error_code(exc)) from exc
        text = value.decode() if isinstance(value, bytes) else str(value)
        text = text.strip()
        if text.startswith("{"):
            text = str(json.loads(text).get("url", "")).strip()
        if not text.startswith("https://") and not text.startswith("http://127.0.0.1"):
            raise ValueError("the Slack webhook secret holds no https URL")
        if any(c.isspace() for c in text) or control_characters(text):  # a mis-paste: said without quoting it
            raise ValueError("the Slack webhook URL in the secret contains whitespace or a control character "
                             "(a mis-pasted URL?); "
                             "store the URL exactly as Slack shows it")
        if not _webhook_shaped(text):  # the redaction hides what follows the host: nothing may hide elsewhere
            raise ValueError("the Slack webhook URL in the secret is not a host and a /path (a backslash, ';', "
                             "credentials, a query or a fragment in it); store the URL exactly as Slack shows it")
        return text
