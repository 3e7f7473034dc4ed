"""``ALERT_ROUTES``: which named channel a cluster's alerts go to (issue 35 item 4; pure).

ARCHITECTURE.md, "What on-call reads": ``ALERT_ROUTES`` maps cluster globs to named channels,
comma-separated ``GLOB=NAME`` entries (``prod-*=oncall,dev-*=dev-alerts``). The first entry whose glob
matches the cluster's name (without case, as ``ALERT_ONLY_CLUSTERS`` matches) names the channel; a
cluster that matches none uses the default channel (``ALERT_TOPIC_ARN`` and
``SLACK_WEBHOOK_SECRET_ARN``), whose route name is :data:`DEFAULT_ROUTE`.

A channel is named by the resource that carries it, so the stack's parameters list resources only
and IAM grants exactly those (both templates):

- ``ALERT_CHANNEL_TOPIC_ARNS``: SNS topic ARNs; the channel is the topic's name (the ARN's last part,
  ``arn:aws:sns:eu-west-1:111122223333:oncall`` is ``oncall``);
- ``ALERT_CHANNEL_SECRET_ARNS``: full ARNs of Secrets Manager secrets holding a Slack incoming-webhook
  URL; the channel is the secret's name without the 6 random characters Secrets Manager appends
  (``...:secret:dev-alerts-AbCdEf`` is ``dev-alerts``; Secrets Manager User Guide, "Secret ARN").

A topic and a secret of the same name are one channel with both sinks (as the default channel has
both). An entry that is not ``GLOB=NAME``, a name no channel has, two topics or two secrets of one
name, or a channel named ``default``: :class:`ValueError` at start (a :class:`SettingsError` from the
settings), never a route that sends nowhere.
"""

from __future__ import annotations

import fnmatch

from msgspec import Struct

from ecs_guardrail.core.lazy import lazy_pattern

__all__ = ["DEFAULT_ROUTE", "Route", "Channels", "parse_routes", "parse_channels", "route_of", "topic_channel",
           "secret_channel"]

#: the route name of the default channel (a cluster that matches no route)
DEFAULT_ROUTE = "default"

#: a cluster glob: a cluster name's characters (letters, digits, ``-``, ``_``) plus ``*`` and ``?``
_GLOB = lazy_pattern(r"[A-Za-z0-9_*?-]{1,255}")
#: a channel name: a topic's or a secret's name characters
_NAME = lazy_pattern(r"[A-Za-z0-9/_+=.@-]{1,512}")
_TOPIC_ARN = lazy_pattern(r"arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:([A-Za-z0-9_-]{1,256})")
_SECRET_ARN = lazy_pattern(
    r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:([A-Za-z0-9/_+=.@-]+)-[A-Za-z0-9]{6}")


class Route(Struct, frozen=True):
    """One ``ALERT_ROUTES`` entry: ``glob`` (a cluster glob) and ``channel`` (its name)."""

    glob: str
    channel: str

    def matches(self, cluster: str) -> bool:
        """True when cluster name ``cluster`` matches :attr:`glob` (without case)."""
        return fnmatch.fnmatchcase(cluster.lower(), self.glob.lower())


class Channels(Struct, frozen=True):
    """The named channels: name -> SNS topic ARN, and name -> Slack webhook secret ARN."""

    topics: dict[str, str]
    secrets: dict[str, str]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.topics) | frozenset(self.secrets)


def _split(value: object, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        value = ",".join(str(v) for v in value)
    if not isinstance(value, str):
        raise ValueError(f"expected a comma-separated list of {what}")
    if not value.strip():
        return []
    return value.split(",")


def topic_channel(arn: str) -> str:
    """The channel name of SNS topic ``arn`` (its topic name). Raises :class:`ValueError` for another ARN."""
    m = _TOPIC_ARN.fullmatch(arn)
    if m is None:
        raise ValueError(f"{arn!r} is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)")
    return m.group(1)


def secret_channel(arn: str) -> str:
    """The channel name of secret ``arn`` (its name without the ``-XXXXXX`` suffix). Raises
    :class:`ValueError` for a partial ARN (no suffix: IAM would match nothing) or another ARN."""
    m = _SECRET_ARN.fullmatch(arn)
    if m is None:
        raise ValueError(f"{arn!r} is not the full ARN of a Secrets Manager secret "
                         "(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-XXXXXX)")
    return m.group(1)


def parse_channels(topic_arns: object, secret_arns: object) -> Channels:
    """The channels of ``ALERT_CHANNEL_TOPIC_ARNS`` and ``ALERT_CHANNEL_SECRET_ARNS`` (comma-separated
    texts or lists). Raises :class:`ValueError` naming the bad entry."""
    topics: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for kind, value, name_of, into in (("ALERT_CHANNEL_TOPIC_ARNS", topic_arns, topic_channel, topics),
                                       ("ALERT_CHANNEL_SECRET_ARNS", secret_arns, secret_channel, secrets)):
        for raw in _split(value, "ARNs"):
            arn = raw.strip()
            try:
                name = name_of(arn)
            except ValueError as exc:
                raise ValueError(f"{kind}: {exc}") from None
            if name == DEFAULT_ROUTE:
                raise ValueError(f"{kind}: {arn!r}: the channel name {DEFAULT_ROUTE!r} is the default channel's "
                                 "(ALERT_TOPIC_ARN, SLACK_WEBHOOK_SECRET_ARN); name the resource otherwise")
            if name in into and into[name] != arn:
                raise ValueError(f"{kind}: two ARNs name channel {name!r} ({into[name]!r}, {arn!r})")
            into[name] = arn
    return Channels(topics, secrets)


def parse_routes(value: object, channels: frozenset[str] | None) -> tuple[Route, ...]:
    """The entries of ``ALERT_ROUTES`` in order; ``channels``: the configured channel names
    (:data:`DEFAULT_ROUTE` is always one; ``None``: the syntax only).

    Raises:
        ValueError: an entry that is not ``GLOB=NAME`` (an empty entry, a space, no ``=``, a glob with
            characters no cluster name has), that names a channel not configured, or whose glob an
            earlier entry already routes to another channel (without case: it could never apply).
    """
    routes: list[Route] = []
    seen: dict[str, Route] = {}
    for raw in _split(value, "GLOB=NAME entries"):
        glob, eq, name = raw.partition("=")
        if not eq or not _GLOB.fullmatch(glob) or not _NAME.fullmatch(name):
            raise ValueError(f"ALERT_ROUTES entry {raw!r} is not GLOB=NAME (a cluster name or glob of letters, "
                             "digits, -, _, * and ?; '='; a channel name; comma-separated, no spaces)")
        if channels is not None and name != DEFAULT_ROUTE and name not in channels:
            known = ", ".join(sorted(channels)) or "none"
            raise ValueError(f"ALERT_ROUTES entry {raw!r} names channel {name!r}, which is not configured "
                             f"(channels: {known}; a channel is an ALERT_CHANNEL_TOPIC_ARNS topic or an "
                             "ALERT_CHANNEL_SECRET_ARNS secret of that name, or 'default')")
        first = seen.setdefault(glob.lower(), Route(glob, name))
        if first.channel != name:
            raise ValueError(f"ALERT_ROUTES entry {raw!r} routes glob {glob!r} again, to another channel than "
                             f"{first.glob}={first.channel} (the first entry that matches applies: this one never "
                             "would); keep one")
        routes.append(Route(glob, name))
    return tuple(routes)


def route_of(routes: tuple[Route, ...], cluster: str | None) -> str:
    """The channel name for ``cluster``'s alerts: the first route that matches, else :data:`DEFAULT_ROUTE`
    (also for an alert without a cluster)."""
    if cluster:
        for r in routes:
            if r.matches(cluster):
                return r.channel
    return DEFAULT_ROUTE
