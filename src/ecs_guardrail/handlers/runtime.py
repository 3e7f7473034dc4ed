"""What a handler needs per invocation: settings and AWS clients, built lazily and reused.

Clients are created on first use (never at import time) and cached for the life of the Lambda
execution environment; :func:`reset` drops them (tests and ``replay`` call it when the embedded AWS
changes). :func:`set_client_factory` lets a test hand in Stubber-wrapped or fault-injecting clients.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from ecs_guardrail.adapters.alerts import Delivery, SecretUnreadableError, SlackWebhook, SnsTopic, WebhookUrl
from ecs_guardrail.adapters.aws import make_client
from ecs_guardrail.adapters.ecs import EcsService
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.alert import Alert
from ecs_guardrail.core.errors import SettingsError
from ecs_guardrail.settings import Settings, load_settings

__all__ = [
    "Runtime", "runtime", "load_settings_or_fail", "reset", "set_client_factory", "logger", "metrics",
    "LambdaContextStub",
]

logger = Logger(service="ecs-guardrail")
metrics = Metrics(namespace="EcsGuardrail", service="ecs-guardrail")

# ECS and CloudWatch get botocore's adaptive mode (client-side rate limiting under event storms)
_RETRY_MODE = {"ecs": "adaptive", "cloudwatch": "adaptive"}
_factory: Callable[[str], Any] = lambda service: make_client(service, retry_mode=_RETRY_MODE.get(service, "standard"))  # noqa: E731
_clients: dict[str, Any] = {}


def set_client_factory(factory: Callable[[str], Any] | None) -> None:
    """Use ``factory(service_name) -> client`` for new clients (``None``: boto3 with retry modes)."""
    global _factory
    _factory = factory or (lambda service: make_client(service, retry_mode=_RETRY_MODE.get(service, "standard")))
    reset()


def reset() -> None:
    """Forget cached clients and the webhook URL cache."""
    _clients.clear()


def client(service: str) -> Any:
    if service not in _clients:
        _clients[service] = _factory(service)
    return _clients[service]


@dataclass
class Runtime:
    """Settings plus adapters for one invocation."""

    settings: Settings
    history: HistoryStore
    ecs: EcsService | None = None
    sns: SnsTopic | None = None
    webhook: WebhookUrl | None = None
    deliveries: list[Delivery] = field(default_factory=list)

    def send(self, alert: Alert) -> list[Delivery]:
        """Deliver to every configured sink. Each failure is logged and counted (metric), not raised."""
        out: list[Delivery] = []
        if self.sns is not None:
            out.append(self.sns.send(alert))
        if self.webhook is not None:
            try:
                url = self.webhook.get()
            except Exception as exc:  # noqa: BLE001 - Secrets Manager down must not lose the decision
                self._secret_unreadable(exc, alert)
                out.append(Delivery("slack", False, f"webhook secret unreadable: {type(exc).__name__}: {exc}"[:300]))
            else:
                out.append(SlackWebhook(url).send(alert))
        if not out:
            logger.warning("no alert sink configured (ALERT_TOPIC_ARN, SLACK_WEBHOOK_SECRET_ARN)",
                           extra={"alert_subject": alert.subject})
        for d in out:
            if d.ok:
                metrics.add_metric(name="AlertsDelivered", unit="Count", value=1)
            else:
                metrics.add_metric(name="AlertDeliveryFailed", unit="Count", value=1)
                logger.error("alert delivery failed", extra={"sink": d.sink, "error": d.error,
                                                             "alert_subject": alert.subject})
        self.deliveries.extend(out)
        return out

    def _secret_unreadable(self, exc: Exception, alert: Alert) -> None:
        """An unreadable Slack secret is an error (metric ``SlackSecretUnreadable`` and a log line), never a
        silent "no Slack": AccessDenied usually means a partial ARN (no ``-XXXXXX`` suffix) or no grant."""
        code = exc.code if isinstance(exc, SecretUnreadableError) else None
        metrics.add_metric(name="SlackSecretUnreadable", unit="Count", value=1)
        hint = ("AccessDenied: SLACK_WEBHOOK_SECRET_ARN must be the secret's full ARN (ending in -XXXXXX) "
                "and the function's role must be granted it" if isinstance(exc, SecretUnreadableError)
                and exc.access_denied else "Secrets Manager did not return the Slack webhook secret")
        logger.error("Slack webhook secret unreadable: " + hint,
                     extra={"secret_arn": self.webhook.secret_id if self.webhook else None, "error_code": code,
                            "error": str(exc)[:300], "alert_subject": alert.subject})


def load_settings_or_fail() -> Settings:
    """Read the settings once per invocation; an invalid one is logged, counted and raised.

    Raises:
        SettingsError: the invocation fails (Lambda retries, then the on-failure destination keeps
            the event); nothing is decided on a guessed value.
    """
    try:
        return load_settings()
    except SettingsError as exc:
        metrics.add_metric(name="SettingsInvalid", unit="Count", value=1)
        logger.error("invalid settings: refusing to run", extra={"error": str(exc)})
        raise


def runtime(settings: Settings, *, watchdog: bool = False) -> Runtime:
    """Adapters over the cached clients; the watchdog also gets ECS and the alert sinks."""
    rt = Runtime(settings=settings, history=HistoryStore(client("dynamodb"), settings.HISTORY_TABLE,
                                                         settings.HISTORY_TTL_DAYS))
    if watchdog:
        rt.ecs = EcsService(client("ecs"))
        if settings.ALERT_TOPIC_ARN:
            rt.sns = SnsTopic(client("sns"), settings.ALERT_TOPIC_ARN)
        if settings.SLACK_WEBHOOK_SECRET_ARN:
            rt.webhook = WebhookUrl(client("secretsmanager"), settings.SLACK_WEBHOOK_SECRET_ARN)
    return rt


@dataclass
class LambdaContextStub:
    """The attributes of a Lambda context object that Powertools reads (used by ``replay`` and tests)."""

    function_name: str = "ecs-guardrail-local"
    memory_limit_in_mb: int = 256
    #: ``replay`` sets the scenario's region and account (the watchdog acts only there); empty: unchecked
    invoked_function_arn: str = ""
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/ecs-guardrail-local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000
