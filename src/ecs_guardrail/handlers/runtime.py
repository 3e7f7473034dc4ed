"""What a handler needs: settings and adapters over AWS clients, built in one place for both paths.

- **Lambda**: :func:`lambda_runtime` builds a :class:`Runtime` from the environment on first use
  (never at import time) and keeps it for the life of the execution environment while the settings
  are unchanged: clients, the task-definition cache and the watchdog's summary cache are reused
  across invocations, as Lambda intends.
- **replay** and tests: :func:`build_runtime` with their own settings, client factory and table;
  nothing they build is visible to the Lambda path, and nothing reads or changes ``os.environ``.

:func:`set_client_factory` lets a test hand the Lambda path Stubber-wrapped or fault-injecting clients.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ecs_guardrail.adapters.aws import make_client
from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.core.errors import SettingsError
from ecs_guardrail.core.records import iso
from ecs_guardrail.handlers.channels import Channel, build_channels, route_alert
from ecs_guardrail.settings import Settings, load_settings

if TYPE_CHECKING:  # the watchdog's adapters, imported where it builds them: the recorder never alerts
    from ecs_guardrail.adapters.alerts import Delivery, SnsTopic, WebhookUrl
    from ecs_guardrail.adapters.ecs import EcsService
    from ecs_guardrail.adapters.store.table import Table
    from ecs_guardrail.core.alert import Alert

__all__ = [
    "Runtime", "Clients", "build_runtime", "lambda_runtime", "runtime", "load_settings_or_fail", "reset",
    "report_unmatched_alert_only",
    "set_client_factory", "logger", "metrics", "metrics_enabled", "LambdaContextStub",
]


#: :meth:`Runtime.preview_of`'s "the default channel's topic"
_DEFAULT_SNS = object()


class _LazyLogger:
    """Powertools ``Logger(service="ecs-guardrail")``, built on first use, not at import.

    Importing Powertools and building its logger costs about 15 ms of CPU (``python -X importtime``), which
    a replay that only ever logs at ERROR need not pay; a Lambda pays it on its first invocation instead of
    at import. ``inject_lambda_context(...)`` applied as a decorator at import defers the same way: the
    Powertools decorator wraps the function on its first call. Everything else (``info``, ``warning``,
    ``error``, ``append_keys``...) is the Powertools logger's own attribute."""

    _LEVELS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})

    def __init__(self) -> None:
        self._real: Any = None
        self._stand_in: logging.Logger | None = None

    @property
    def built(self) -> bool:
        """Whether the Powertools logger exists yet."""
        return self._real is not None

    def _get(self) -> Any:
        if self._real is None:
            from aws_lambda_powertools import Logger

            self._real = Logger(service="ecs-guardrail")
        return self._real

    def __getattr__(self, name: str) -> Any:
        if name in self._LEVELS and self._real is None and self._stand_in is not None:
            return getattr(self._stand_in, name)
        return getattr(self._get(), name)

    @contextlib.contextmanager
    def standing_in(self, log: logging.Logger) -> Iterator[None]:
        """While Powertools is not built, ``debug`` ... ``critical`` go to the standard ``log`` instead (the
        replay's quiet stderr logging); everything else still builds Powertools. Restored after."""
        before = self._stand_in
        self._stand_in = log
        try:
            yield
        finally:
            self._stand_in = before

    def inject_lambda_context(self, lambda_handler: Callable[..., Any] | None = None,
                              **options: Any) -> Any:
        """Powertools' ``Logger.inject_lambda_context`` (with or without arguments), applied on first call."""
        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            return _deferred(fn, lambda: self._get().inject_lambda_context(**options)(fn))

        return decorate(lambda_handler) if lambda_handler is not None else decorate


class _LazyMetrics:
    """Powertools ``Metrics(namespace="EcsGuardrail", service="ecs-guardrail")`` (CloudWatch EMF), built
    on first use, and switchable off (:func:`metrics_enabled`): a replay discards EMF output, so it
    turns metrics off and ``add_metric`` costs one attribute test. In Lambda they are always on."""

    def __init__(self) -> None:
        self._real: Any = None
        self.enabled = True

    def _get(self) -> Any:
        if self._real is None:
            from aws_lambda_powertools import Metrics

            self._real = Metrics(namespace="EcsGuardrail", service="ecs-guardrail")
        return self._real

    def add_metric(self, **metric: Any) -> None:
        """Powertools' ``Metrics.add_metric(name=, unit=, value=)``; nothing while metrics are off."""
        if self.enabled:
            self._get().add_metric(**metric)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)

    def log_metrics(self, lambda_handler: Callable[..., Any] | None = None, **options: Any) -> Any:
        """Powertools' ``Metrics.log_metrics`` (flushes EMF after the handler), applied on first call."""
        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            return _deferred(fn, lambda: self._get().log_metrics(fn, **options))

        return decorate(lambda_handler) if lambda_handler is not None else decorate


def _deferred(fn: Callable[..., Any], build: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    """``fn``'s stand-in that builds the real wrapper (``build()``) on its first call and then delegates."""
    import functools

    made: list[Callable[..., Any]] = []

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not made:
            made.append(build())
        return made[0](*args, **kwargs)

    return call


logger: Any = _LazyLogger()
metrics: Any = _LazyMetrics()


@contextlib.contextmanager
def metrics_enabled(enabled: bool) -> Iterator[None]:
    """Within the block, :data:`metrics` records (``True``) or drops (``False``) every ``add_metric``; the
    previous state is restored after. ``replay`` runs with metrics off unless it reports them."""
    before = metrics.enabled
    metrics.enabled = enabled
    try:
        yield
    finally:
        metrics.enabled = before

# ECS and CloudWatch get botocore's adaptive mode (client-side rate limiting under event storms)
_RETRY_MODE = {"ecs": "adaptive", "cloudwatch": "adaptive", "application-autoscaling": "adaptive"}


def default_client(service: str) -> Any:
    """boto3 client with botocore's retry modes (:mod:`ecs_guardrail.adapters.aws`)."""
    if service == "logs":  # the crash's words: a short, documented budget (adapters/logs.py)
        from ecs_guardrail.adapters.logs import logs_client

        return logs_client()
    return make_client(service, retry_mode=_RETRY_MODE.get(service, "standard"))


class Clients:
    """One client per AWS service, created on first use by ``factory(service_name)`` and owned by one
    runtime."""

    def __init__(self, factory: Callable[[str], Any] = default_client) -> None:
        self._factory = factory
        self._made: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        if service not in self._made:
            self._made[service] = self._factory(service)
        return self._made[service]


class Runtime:
    """Settings plus adapters for one execution environment (or one replay).

    ``clients`` makes the clients adapters need later (Application Auto Scaling, CloudWatch...);
    ``cache`` holds per-environment caches (task definitions by ARN); ``home`` is the
    ``(account, region)`` this watchdog may act in (``None``: not known, not checked).

    A plain class with the ``@dataclass`` one's constructor, ``repr`` and field equality: the decorator
    writes those methods with ``exec`` at import, about 0.7 ms of every cold start (issue 33 item 7).
    """

    #: the fields, in constructor order (what ``repr`` and ``==`` compare)
    _FIELDS = ("settings", "history", "clients", "ecs", "sns", "webhook", "home", "deliveries", "cache", "previews",
               "clock", "channels")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by its fields (as the dataclass was)

    def __init__(self, settings: Settings, history: HistoryStore, clients: Clients, ecs: EcsService | None = None,
                 sns: SnsTopic | None = None, webhook: WebhookUrl | None = None, home: tuple[str, str] | None = None,
                 deliveries: list[Delivery] | None = None, cache: dict[str, Any] | None = None,
                 previews: list[dict[str, Any]] | None = None, clock: Callable[[], float] = time.time,
                 channels: dict[str, Channel] | None = None) -> None:
        self.settings = settings
        self.history = history
        self.clients = clients
        self.ecs = ecs
        self.sns = sns
        self.webhook = webhook
        self.home = home
        self.deliveries: list[Delivery] = [] if deliveries is None else deliveries
        #: per-environment caches (task definitions by ARN...)
        self.cache: dict[str, Any] = {} if cache is None else cache
        #: ``replay`` only: every alert sent, as each channel received it (:meth:`preview_of`); ``None``: off
        self.previews = previews
        #: the invocation's clock, Unix seconds (leases, the future-stamp check); tests inject their own
        self.clock = clock
        #: ``ALERT_ROUTES``' named channels (:mod:`ecs_guardrail.handlers.channels`); empty: every alert goes
        #: to the default channel (``sns`` and ``webhook``)
        self.channels: dict[str, Channel] = {} if channels is None else channels

    def __repr__(self) -> str:
        return f"Runtime({', '.join(f'{f}={getattr(self, f)!r}' for f in self._FIELDS)})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, f) for f in self._FIELDS) == tuple(getattr(other, f) for f in self._FIELDS)

    def send(self, alert: Alert) -> list[Delivery]:
        """Deliver to every configured sink. Each failure is logged and counted (metric), not raised."""
        from ecs_guardrail.adapters.alerts import Delivery, SlackWebhook, redact_webhook
        from ecs_guardrail.core.org import label_alert

        if self.settings is not None:  # the account named for an organisation's channel (core/org.py)
            alert = label_alert(alert, account_name=self.settings.ACCOUNT_NAME,
                                central=self.settings.CENTRAL_ALERT_TOPIC_ARN is not None)
        out: list[Delivery] = []
        route, sns, webhook = route_alert(self, alert)
        if self.previews is not None:
            self.previews.extend(dict(p, route=route) for p in self.preview_of(alert, sns))
        if sns is not None:
            out.append(sns.send(alert))
        if webhook is not None:
            try:
                url = webhook.get()
            except Exception as exc:  # noqa: BLE001 - Secrets Manager down must not lose the decision
                self._secret_unreadable(exc, alert, webhook)
                out.append(Delivery("slack", False, f"webhook secret unreadable: {type(exc).__name__}: {exc}"[:300]))
            else:
                try:
                    out.append(SlackWebhook(url).send(alert))
                except Exception as exc:  # noqa: BLE001 - a URL the client refuses must not lose the decision
                    out.append(Delivery("slack", False, redact_webhook(f"{type(exc).__name__}: {exc}", url)[:300]))
        if not out:
            logger.warning("no alert sink configured (ALERT_TOPIC_ARN, SLACK_WEBHOOK_SECRET_ARN)",
                           extra={"alert_subject": alert.subject, "route": route})
        for d in out:
            if d.ok:
                metrics.add_metric(name="AlertsDelivered", unit="Count", value=1)
            else:
                metrics.add_metric(name="AlertDeliveryFailed", unit="Count", value=1)
                logger.error("alert delivery failed", extra={"sink": d.sink, "error": d.error,
                                                             "alert_subject": alert.subject})
        self.deliveries.extend(out)
        return out

    def preview_of(self, alert: Alert, sns: SnsTopic | None | object = _DEFAULT_SNS) -> list[dict[str, Any]]:
        """What each channel receives for ``alert``, one dict a channel: ``{"time": event time (ISO),
        "kind", "channel": "sns", "subject", "message", "format"}`` when an SNS topic is configured and
        ``{"time", "kind", "channel": "slack", "text", "blocks"}`` always (Slack's payload does not
        depend on the webhook). ``sns``: the routed channel's topic, ``None`` for a channel without one
        (default: the default channel's)."""
        from ecs_guardrail.adapters.alerts import SnsTopic
        from ecs_guardrail.core.alert import slack_payload

        t = iso(alert.time) if alert.time is not None else None
        out: list[dict[str, Any]] = []
        sns = self.sns if sns is _DEFAULT_SNS else sns
        if isinstance(sns, SnsTopic):
            subject, message = sns.render(alert)
            out.append({"time": t, "kind": alert.kind, "channel": "sns", "format": sns.fmt,
                        "subject": subject, "message": message})
        out.append({"time": t, "kind": alert.kind, "channel": "slack", **slack_payload(alert)})
        return out

    def _secret_unreadable(self, exc: Exception, alert: Alert, webhook: WebhookUrl | None = None) -> None:
        """An unreadable Slack secret is an error (metric ``SlackSecretUnreadable`` and a log line), never a
        silent "no Slack": AccessDenied usually means a partial ARN (no ``-XXXXXX`` suffix) or no grant."""
        from ecs_guardrail.adapters.alerts import SecretUnreadableError

        code = exc.code if isinstance(exc, SecretUnreadableError) else None
        secret = webhook or self.webhook
        metrics.add_metric(name="SlackSecretUnreadable", unit="Count", value=1)
        hint = ("AccessDenied: SLACK_WEBHOOK_SECRET_ARN must be the secret's full ARN (ending in -XXXXXX) "
                "and the function's role must be granted it" if isinstance(exc, SecretUnreadableError)
                and exc.access_denied else "Secrets Manager did not return the Slack webhook secret")
        logger.error("Slack webhook secret unreadable: " + hint,
                     extra={"secret_arn": secret.secret_id if secret is not None else None, "error_code": code,
                            "error": str(exc)[:300], "alert_subject": alert.subject})


def build_runtime(settings: Settings, clients: Clients, *, watchdog: bool = False, table: Table | None = None,
                  home: tuple[str, str] | None = None) -> Runtime:
    """Adapters over ``clients``; the history table is ``table`` (default: DynamoDB ``HISTORY_TABLE``).
    The watchdog also gets ECS and the alert sinks."""
    if table is None:
        from ecs_guardrail.adapters.store.dynamodb import DynamoTable

        table = DynamoTable(clients("dynamodb"), settings.HISTORY_TABLE)
    rt = Runtime(settings=settings, history=HistoryStore.on(table, settings.HISTORY_TTL_DAYS, cache={}),
                 clients=clients, home=home)
    if watchdog:
        from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
        from ecs_guardrail.adapters.ecs import EcsService

        rt.ecs = EcsService(clients("ecs"))
        topic = settings.CENTRAL_ALERT_TOPIC_ARN or settings.ALERT_TOPIC_ARN  # the organisation's, when set
        if topic:
            rt.sns = SnsTopic(clients("sns"), topic, settings.SNS_FORMAT)
        if settings.SLACK_WEBHOOK_SECRET_ARN:
            rt.webhook = WebhookUrl(clients("secretsmanager"), settings.SLACK_WEBHOOK_SECRET_ARN)
        rt.channels = build_channels(settings, clients)
    return rt


def report_unmatched_alert_only(rt: Runtime) -> tuple[str, ...]:
    """Metric ``AlertOnlyEntriesUnmatched`` (count, every invocation; both stacks alarm above 0): the
    ``ALERT_ONLY_CLUSTERS`` entries that match no cluster of this account and region, a typo such as
    ``prodution`` that protects nothing (:func:`~ecs_guardrail.core.clusters.unmatched_in_account`); and
    ``AlertOnlyEntriesCaseOnly`` (count): the clusters an entry matches only without case, alert-only to
    the code but not covered by the IAM deny (each logged once, with its entry).

    The clusters are read once per runtime (ECS ListClusters at a cold start or a settings change; a new
    cluster is seen at the next cold start), and the entries are logged once then. A failed ListClusters
    is logged and retried by the next invocation; it never stops a decision.

    Returns:
        the unmatched entries (texts as configured); ``()`` when all match or nothing could be read.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from ecs_guardrail.adapters.clusters import AccountClusters
    from ecs_guardrail.core.clusters import case_only_warning, cluster_name_of, unmatched_in_account

    unmatched = rt.cache.get("alert_only_unmatched")
    if unmatched is None:
        scope = rt.settings.policy().alert_only
        if scope.every or scope.none:
            unmatched = ()
        else:
            try:
                arns = AccountClusters(rt.clients("ecs")).arns()
            except (ClientError, BotoCoreError) as exc:
                logger.warning("ListClusters failed: ALERT_ONLY_CLUSTERS entries not checked this time",
                               extra={"error": str(exc)[:300]})
                return ()
            account, region = rt.home or (None, None)
            unmatched = tuple(e.text for e in unmatched_in_account(scope, arns, account, region))
            if unmatched:
                logger.warning("ALERT_ONLY_CLUSTERS entries match no cluster of this account and region: they "
                               "make nothing alert-only (a typo?)",
                               extra={"unmatched": list(unmatched), "clusters_listed": len(arns)})
            case_only = scope.case_only((cluster_name_of(a), a) for a in arns)
            for entry, cluster in case_only:
                logger.warning(case_only_warning(entry, cluster), extra={"entry": entry.text, "cluster": cluster})
            rt.cache["alert_only_case_only"] = len(case_only)
        rt.cache["alert_only_unmatched"] = unmatched
    metrics.add_metric(name="AlertOnlyEntriesUnmatched", unit="Count", value=len(unmatched))
    # clusters an entry matches only without case: alert-only in the code, not denied by IAM
    metrics.add_metric(name="AlertOnlyEntriesCaseOnly", unit="Count", value=rt.cache.get("alert_only_case_only", 0))
    return unmatched


def load_settings_or_fail() -> Settings:
    """Read the settings from the environment; an invalid one is logged, counted and raised.

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


# ------------------------------------------------------------------ the Lambda path's own state
_factory: Callable[[str], Any] = default_client
_lambda: dict[tuple[str, Settings], Runtime] = {}


def set_client_factory(factory: Callable[[str], Any] | None) -> None:
    """Lambda path: use ``factory(service_name) -> client`` for new clients (``None``: boto3 with retry modes)."""
    global _factory
    _factory = factory or default_client
    reset()


def reset() -> None:
    """Lambda path: forget the runtimes (and their clients and caches)."""
    _lambda.clear()


def lambda_runtime(kind: str, home: tuple[str, str] | None = None) -> Runtime:
    """The execution environment's runtime for function ``kind`` (``record``, ``watchdog``,
    ``availability``), rebuilt when the settings change.

    Raises:
        SettingsError: see :func:`load_settings_or_fail`.
    """
    settings = load_settings_or_fail()
    key = (kind, settings)
    rt = _lambda.get(key)
    if rt is None:
        if len(_lambda) > 8:
            _lambda.clear()
        rt = _lambda[key] = build_runtime(settings, Clients(_factory), watchdog=kind == "watchdog", home=home)
    rt.home = home or rt.home
    rt.deliveries = []
    return rt


def runtime(settings: Settings, *, watchdog: bool = False) -> Runtime:
    """A fresh runtime over the Lambda path's client factory (tests)."""
    return build_runtime(settings, Clients(_factory), watchdog=watchdog)


class LambdaContextStub(Struct):
    """The attributes of a Lambda context object that Powertools reads (used by ``replay`` and tests)."""

    function_name: str = "ecs-guardrail-local"
    memory_limit_in_mb: int = 256
    #: ``replay`` sets the scenario's region and account (the watchdog acts only there); empty: unchecked
    invoked_function_arn: str = ""
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/ecs-guardrail-local"
    log_stream_name: str = "local"
    remaining_ms: int = 60_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms
