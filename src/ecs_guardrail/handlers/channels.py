"""The named alert channels of ``ALERT_ROUTES`` over AWS clients, and the route of each alert (issue 35 item 4).

:mod:`ecs_guardrail.core.routes` parses the settings and picks a route (pure); this module builds each
channel's sinks (an :class:`~ecs_guardrail.adapters.alerts.SnsTopic` and/or a
:class:`~ecs_guardrail.adapters.alerts.WebhookUrl`, the same adapters as the default channel's, so an
alert reads the same on every channel and its IAM is the same kinds, granted on exactly the
configured ARNs in both templates) and gives :meth:`~ecs_guardrail.handlers.runtime.Runtime.send`
the sinks of an alert's route. ``replay`` simulates the channels as it does the default one
(:func:`simulate_channels`): every channel's topic is the embedded AWS's topic and no Slack webhook is
called (the Slack payload is previewed), each ``--alerts-out`` line naming its ``route``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ecs_guardrail.core.routes import DEFAULT_ROUTE, route_of

if TYPE_CHECKING:
    from ecs_guardrail.adapters.alerts import SnsTopic, WebhookUrl
    from ecs_guardrail.core.alert import Alert
    from ecs_guardrail.handlers.runtime import Runtime
    from ecs_guardrail.settings import Settings

__all__ = ["Channel", "build_channels", "route_alert", "simulate_channels", "cluster_of"]


class Channel:
    """One named channel: ``name``, its SNS topic (``sns``) and/or Slack webhook secret (``webhook``).

    The secret's client is made on first use (a cold start that sends no alert to the channel pays for no
    Secrets Manager client; the replay's fast engine has none)."""

    __slots__ = ("name", "sns", "_secret_arn", "_clients", "_webhook")

    def __init__(self, name: str, sns: SnsTopic | None = None, webhook: WebhookUrl | None = None, *,
                 secret_arn: str | None = None, clients: Any = None) -> None:
        self.name = name
        self.sns = sns
        self._webhook = webhook
        self._secret_arn = secret_arn
        self._clients = clients

    @property
    def webhook(self) -> WebhookUrl | None:
        """The channel's Slack webhook secret (``None``: the channel has none)."""
        if self._webhook is None and self._secret_arn is not None:
            from ecs_guardrail.adapters.alerts import WebhookUrl

            self._webhook = WebhookUrl(self._clients("secretsmanager"), self._secret_arn)
        return self._webhook


def build_channels(settings: Settings, clients: Any) -> dict[str, Channel]:
    """Name -> :class:`Channel` for every channel the settings configure (``{}`` when none)."""
    parsed = settings.channels()
    if not parsed.names:
        return {}
    from ecs_guardrail.adapters.alerts import SnsTopic

    out: dict[str, Channel] = {}
    for name in sorted(parsed.names):
        topic = parsed.topics.get(name)
        out[name] = Channel(name, SnsTopic(clients("sns"), topic, settings.SNS_FORMAT) if topic else None,
                            secret_arn=parsed.secrets.get(name), clients=clients)
    return out


def cluster_of(alert: Alert) -> str | None:
    """The cluster name an alert is about (its ``where``, else its data's ``cluster``)."""
    if alert.where is not None:
        return alert.where.cluster
    cluster = alert.data.get("cluster")
    return cluster if isinstance(cluster, str) else None


def route_alert(rt: Runtime, alert: Alert) -> tuple[str, SnsTopic | None, WebhookUrl | None]:
    """``(route name, SNS topic, Slack webhook secret)`` for ``alert``: its cluster's route
    (:func:`~ecs_guardrail.core.routes.route_of`), whose channel's sinks, or the default channel's
    (``rt.sns``, ``rt.webhook``) for route ``default``."""
    if not rt.channels:  # no named channel: every route is the default one (nothing to read)
        return DEFAULT_ROUTE, rt.sns, rt.webhook
    route = route_of(rt.settings.routes(), cluster_of(alert))
    channel = rt.channels.get(route)
    if channel is None:  # "default" (the settings refuse a route to a channel not configured)
        return DEFAULT_ROUTE, rt.sns, rt.webhook
    return route, channel.sns, channel.webhook


def simulate_channels(rt: Runtime, topic_arn: str) -> None:
    """``replay``: every named channel publishes to the embedded AWS's topic ``topic_arn`` (as the default
    channel does) and calls no Slack webhook; its lines still name their route."""
    from ecs_guardrail.adapters.alerts import SnsTopic

    rt.channels = {name: Channel(name, SnsTopic(rt.clients("sns"), topic_arn, rt.settings.SNS_FORMAT)
                                 if c.sns is not None else None)
                   for name, c in rt.channels.items()}
