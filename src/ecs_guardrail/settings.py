"""Runtime settings, read from the environment once per invocation into one validated, frozen object.

The same names are the SAM parameters' and Terraform variables' targets and the keys of a scenario's
``settings.env``. An invalid value raises :class:`~ecs_guardrail.core.errors.SettingsError` at start;
nothing falls back to acting.

The environment is read by name (case-sensitive, only the fields' names; an unset variable takes the
field's default) and converted by :class:`Settings`, a msgspec ``Struct``
(:mod:`ecs_guardrail.validation.fields`; issue 36) in msgspec's lax mode: numbers and booleans from their text
as msgspec reads it (``5``, ``0.2``, ``true``/``false``/``1``/``0`` in any case; a number as JSON writes
it: no whitespace around it, no ``_`` in it, no leading zero), bounds by ``Meta``. Beside msgspec's
rules, the settings keep their own: a value holding a lone surrogate (``os.environ`` decodes bytes that
are not UTF-8 into them) is refused, a blank optional ARN or URL is unset, and a name that is not a
setting is ignored. The pydantic model these replaced is kept in
``tests/oracle/pydantic_settings.py`` for a differential test (issue 23: pydantic-settings was about
130 ms of CPU per cold start, pydantic itself about 100 ms with the event models).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from ecs_guardrail.core.clusters import NO_CLUSTER, parse_alert_only_clusters
from ecs_guardrail.core.errors import FrozenSettingsError, SettingsError
from ecs_guardrail.core.routes import Channels, Route, parse_channels, parse_routes, secret_channel, topic_channel
from ecs_guardrail.validation.fields import Invalid, Model, validate

if TYPE_CHECKING:  # imported where they are built: the recorder needs neither
    from ecs_guardrail.core.audit import AuditConfig
    from ecs_guardrail.core.lifecycle import ProbeSettings
    from ecs_guardrail.core.policy import PolicyConfig

__all__ = ["Settings", "load_settings", "SETTING_NAMES"]

#: id of a settings object -> (that object, its :meth:`Settings.policy`); cleared past :data:`_POLICIES_KEPT`
_POLICIES: dict[int, tuple[Any, PolicyConfig]] = {}
_POLICIES_KEPT = 64


def _parse_clusters(value: object) -> tuple[str, ...]:
    if value is not None and not isinstance(value, str | list | tuple):
        raise ValueError("expected a comma-separated list of cluster names, ARNs or globs")
    parsed = parse_alert_only_clusters(value)  # raises ValueError for an entry that is none of these
    return (NO_CLUSTER,) if parsed.none else tuple(e.text for e in parsed.entries)


def _split_list(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if str(v).strip())
    raise ValueError("expected a comma-separated list")


def _arns_of(name_of: Any, what: str) -> Any:
    """A check: comma-separated ARNs, each one ``name_of`` accepts (:mod:`ecs_guardrail.core.routes`)."""
    def check(value: object) -> tuple[str, ...]:
        if isinstance(value, list | tuple):
            items = [str(v) for v in value]
        elif isinstance(value, str):
            items = value.split(",") if value.strip() else []
        else:
            raise ValueError(f"expected a comma-separated list of {what}")
        out = tuple(item.strip() for item in items)
        for arn in out:
            if not arn:
                raise ValueError(f"an empty entry in a comma-separated list of {what}")
            name_of(arn)  # ValueError naming the ARN
        return out
    return check


def _routes_syntax(value: object) -> tuple[str, ...]:
    """``ALERT_ROUTES`` entries as ``GLOB=NAME`` texts (each channel name is checked by ``Settings.check``)."""
    return tuple(f"{r.glob}={r.channel}" for r in parse_routes(value, None))


def _paths_start_with_slash(value: object) -> tuple[str, ...]:
    value = _split_list(value)
    bad = [p for p in value if not p.startswith("/")]
    if bad:
        raise ValueError(f"health-check paths start with '/': {bad[0]!r}")
    return value


class Settings(Model, kw_only=True):
    """Every environment variable the functions read (:func:`load_settings` reads them).

    Policy (see ARCHITECTURE.md, "Decision policy"):

    - ``ALERT_ONLY_CLUSTERS``: comma-separated cluster names, ARNs or globs that only ever get alerts
      (:mod:`ecs_guardrail.core.clusters`; any other entry is a :class:`SettingsError`). Unset or empty
      means *every* cluster is alert-only: acting must be asked for; ``none`` means no cluster is.
    - ``CRASH_THRESHOLD`` (count, default 5) genuine crashes within ``CRASH_WINDOW_MINUTES`` (minutes,
      default 30) of event time make a crash loop.
    - ``MAX_ACTION_FRACTION`` (0..1, default 0.2) and ``MIN_ACTIONS_ALLOWED`` (count, default 1) bound
      the blast radius: ``max(MIN_ACTIONS_ALLOWED, floor(MAX_ACTION_FRACTION * services_in_cluster))``.
    - ``FLEET_SIGNAL_MIN_FAILURES`` (count, default 2): failures in the window that make a service
      count as failing in the fleet test.
    - ``CLIENT_ERROR_RATIO`` (0..1, default 0.05): the share of 5xx (targets' and the load balancer's)
      at or above which a minute's clients failed (the clients' view, ARCHITECTURE.md "Two observers");
      ``still_serving`` does not read it (any 2xx is serving, whatever the 5xx share: rule 4).
    - ``DRY_RUN`` (bool): decide and alert, change nothing.

    Recovery (ARCHITECTURE.md, "Recovery"): ``RECOVERY`` (``manual``, the default: a service held at
    zero waits for ``restore`` or an operator; ``probe``: it is probed on the schedule below and
    restored by a probe that passes), ``PROBE_DELAY_MINUTES`` (minutes, default 15: the first probe
    after the scale-down; doubles per failed probe), ``PROBE_MAX_DELAY_MINUTES`` (minutes, default 240:
    the cap of that delay, where one "still failing" alert goes out), ``PROBE_PASS_MINUTES`` (minutes,
    default 10: how long a probe must stay free of failures to pass).

    Plumbing: ``HISTORY_TABLE`` (DynamoDB table name), ``HISTORY_TTL_DAYS`` (days, default 90),
    ``ALERT_TOPIC_ARN`` (SNS topic, optional), ``SLACK_WEBHOOK_SECRET_ARN`` (Secrets Manager secret
    holding the webhook URL, optional), ``SAMPLE_LOOKBACK_MINUTES`` (minutes the availability sampler
    reads back, default 5: CloudWatch publishes ALB metrics with a delay).

    Routes (README, "Alerts: routes"; :mod:`ecs_guardrail.core.routes`): ``ALERT_ROUTES`` (comma-separated
    ``GLOB=NAME``: the first glob that matches a cluster's name sends its alerts to channel ``NAME``; no
    match: the default channel), ``ALERT_CHANNEL_TOPIC_ARNS`` (comma-separated SNS topic ARNs, each a
    channel named by its topic name) and ``ALERT_CHANNEL_SECRET_ARNS`` (comma-separated full ARNs of
    secrets holding a Slack webhook URL, each a channel named by its secret name). An entry that is not
    ``GLOB=NAME``, or names a channel not configured, is a :class:`SettingsError` at start.

    Alerts (README, "Alerts"): ``RUNBOOK_URL`` (optional https URL template; ``{cluster}`` and
    ``{service}`` are replaced, URL-quoted, and the alert gets a "Runbook" link), ``SNS_FORMAT``
    (``chatbot``, the default: the SNS message is AWS Chatbot's custom-notification JSON with the
    plain text as its description; ``text``: the plain text and the facts as JSON).

    One stack per account (docs/deploy.md, "An organisation"): ``CENTRAL_ALERT_TOPIC_ARN`` (the
    organisation's SNS topic in the central account, optional; when set, alerts go there instead of
    ``ALERT_TOPIC_ARN``), ``ACCOUNT_NAME`` (optional, 1-50 letters, digits, ``.``, ``_``, ``-``: this
    account's name, shown beside its id in every alert; :mod:`ecs_guardrail.core.org`).

    ``ecs-guardrail audit`` only (README, "Audit"): ``AUDIT_MIN_EJECTION_SECONDS`` (seconds, default
    30: ``fast_ejection`` below ``UnhealthyThresholdCount x HealthCheckIntervalSeconds``),
    ``AUDIT_AGGREGATE_PATHS`` (comma-separated health-check paths that aggregate dependencies, default
    ``/actuator/health,/health,/status,/``), ``AUDIT_PRODUCTION_PATTERNS`` (comma-separated,
    case-insensitive substrings of a production cluster's name, default ``prod,live``).
    """

    CHECKS: ClassVar[dict[str, Any]] = {"ALERT_ONLY_CLUSTERS": _parse_clusters,
                                        "AUDIT_AGGREGATE_PATHS": _paths_start_with_slash,
                                        "AUDIT_PRODUCTION_PATTERNS": _split_list,
                                        "ALERT_CHANNEL_TOPIC_ARNS": _arns_of(topic_channel, "SNS topic ARNs"),
                                        "ALERT_CHANNEL_SECRET_ARNS": _arns_of(secret_channel, "secret ARNs"),
                                        "ALERT_ROUTES": _routes_syntax}
    # a comma-separated text (or a list) in, a tuple[str, ...] out: its check (CHECKS) converts it
    ALERT_ONLY_CLUSTERS: Any = ()
    CRASH_THRESHOLD: Annotated[int, Meta(ge=1, le=1000)] = 5
    CRASH_WINDOW_MINUTES: Annotated[int, Meta(ge=1, le=1440)] = 30
    MAX_ACTION_FRACTION: Annotated[float, Meta(ge=0.0, le=1.0)] = 0.2
    MIN_ACTIONS_ALLOWED: Annotated[int, Meta(ge=0, le=1000)] = 1
    FLEET_SIGNAL_MIN_FAILURES: Annotated[int, Meta(ge=1, le=1000)] = 2
    CLIENT_ERROR_RATIO: Annotated[float, Meta(gt=0.0, le=1.0)] = 0.05
    DRY_RUN: bool = False
    RECOVERY: Literal["manual", "probe"] = "manual"
    PROBE_DELAY_MINUTES: Annotated[int, Meta(ge=1, le=1440)] = 15
    PROBE_MAX_DELAY_MINUTES: Annotated[int, Meta(ge=1, le=1440)] = 240
    PROBE_PASS_MINUTES: Annotated[int, Meta(ge=1, le=240)] = 10
    # \Z, not $: msgspec's patterns are Python's re.search, whose $ also matches before a final newline
    HISTORY_TABLE: Annotated[str, Meta(min_length=3, max_length=255, pattern=r"^[A-Za-z0-9_.-]+\Z")] = \
        "ecs-guardrail-history"
    HISTORY_TTL_DAYS: Annotated[int, Meta(ge=1, le=3650)] = 90
    ALERT_TOPIC_ARN: Annotated[str, Meta(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+\Z")] \
        | None = None
    SLACK_WEBHOOK_SECRET_ARN: Annotated[str, Meta(min_length=1, max_length=2048)] | None = None
    SAMPLE_LOOKBACK_MINUTES: Annotated[int, Meta(ge=1, le=180)] = 5
    RUNBOOK_URL: Annotated[str, Meta(max_length=1024, pattern=r"^https://[^\s]+\Z")] | None = None
    SNS_FORMAT: Literal["chatbot", "text"] = "chatbot"
    # routes (issue 35 item 4): comma-separated texts (or lists) in, tuple[str, ...] out (CHECKS)
    ALERT_CHANNEL_TOPIC_ARNS: Any = ()
    ALERT_CHANNEL_SECRET_ARNS: Any = ()
    ALERT_ROUTES: Any = ()
    # one stack per account of an organisation (issue 32 item 4; core/org.py): the organisation's SNS
    # topic (another account's) that takes this stack's alerts instead of ALERT_TOPIC_ARN, and a name
    # for this account that every alert shows beside its id
    CENTRAL_ALERT_TOPIC_ARN: Annotated[
        str, Meta(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+\Z")] | None = None
    ACCOUNT_NAME: Annotated[str, Meta(max_length=50, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}\Z")] | None = None
    # ``ecs-guardrail audit`` judgements (operator command; no function reads them; README, "Audit")
    AUDIT_MIN_EJECTION_SECONDS: Annotated[int, Meta(ge=0, le=3600)] = 30
    AUDIT_AGGREGATE_PATHS: Any = ("/actuator/health", "/health", "/status", "/")
    AUDIT_PRODUCTION_PATTERNS: Any = ("prod", "live")

    @classmethod
    def of(cls, **values: object) -> Settings:
        """``Settings.of(NAME=value, ...)``: validated as :func:`load_settings` does (unknown names
        ignored); ``Settings()`` is the defaults.

        Raises:
            Invalid: the first invalid value (:func:`load_settings` turns it into a ``SettingsError``).
        """
        return _read(values)

    def check(self) -> None:
        self.routes()  # ValueError: a route names a channel not configured, or two ARNs name one channel
        if self.PROBE_MAX_DELAY_MINUTES < self.PROBE_DELAY_MINUTES:
            raise ValueError(f"PROBE_MAX_DELAY_MINUTES ({self.PROBE_MAX_DELAY_MINUTES}) is below "
                             f"PROBE_DELAY_MINUTES ({self.PROBE_DELAY_MINUTES}): the delay's cap cannot be "
                             "shorter than the first delay")

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenSettingsError(f"Settings are frozen: {name} cannot be set (use with_values)")

    def __delattr__(self, name: str) -> None:
        raise FrozenSettingsError(f"Settings are frozen: {name} cannot be deleted")

    def __hash__(self) -> int:  # the Lambda path keys its runtimes by settings
        return hash(msgspec.structs.astuple(self))

    def with_values(self, **changes: object) -> Settings:
        """A copy with ``changes`` (field names) set, not validated again (as pydantic's ``model_copy``):
        the replay points the table and the topic at its embedded AWS.

        Raises:
            TypeError: a name that is not a setting.
        """
        unknown = sorted(set(changes) - SETTING_NAMES)
        if unknown:
            raise TypeError(f"not a setting: {', '.join(unknown)}")
        return msgspec.structs.replace(self, **changes)

    def channels(self) -> Channels:
        """The named alert channels (``ALERT_CHANNEL_TOPIC_ARNS``, ``ALERT_CHANNEL_SECRET_ARNS``).

        Raises:
            ValueError: two topics (or two secrets) of one name, or a channel named ``default``."""
        return parse_channels(self.ALERT_CHANNEL_TOPIC_ARNS, self.ALERT_CHANNEL_SECRET_ARNS)

    def routes(self) -> tuple[Route, ...]:
        """``ALERT_ROUTES`` in order, each naming a configured channel (or ``default``).

        Raises:
            ValueError: as :meth:`channels`, or a route naming a channel not configured."""
        return parse_routes(self.ALERT_ROUTES, self.channels().names)

    def probes(self) -> ProbeSettings | None:
        """The probe schedule when ``RECOVERY=probe``, else ``None`` (``manual``: no probe ever runs)."""
        if self.RECOVERY != "probe":
            return None
        from ecs_guardrail.core.lifecycle import ProbeSettings

        return ProbeSettings(self.PROBE_DELAY_MINUTES, self.PROBE_MAX_DELAY_MINUTES, self.PROBE_PASS_MINUTES)

    def policy(self) -> PolicyConfig:
        """The core's view of these settings (no environment, no I/O): one object per settings object, made on
        the first call (a watchdog invocation reads it once; issue 33.2). Settings are frozen, so it never
        goes stale."""
        got = _POLICIES.get(id(self))
        if got is not None and got[0] is self:
            return got[1]
        from ecs_guardrail.core.policy import PolicyConfig

        if len(_POLICIES) >= _POLICIES_KEPT:
            _POLICIES.clear()
        made = PolicyConfig(
            alert_only_clusters=self.ALERT_ONLY_CLUSTERS,
            crash_threshold=self.CRASH_THRESHOLD,
            window_minutes=self.CRASH_WINDOW_MINUTES,
            max_action_fraction=self.MAX_ACTION_FRACTION,
            min_actions_allowed=self.MIN_ACTIONS_ALLOWED,
            fleet_signal_min_failures=self.FLEET_SIGNAL_MIN_FAILURES,
            dry_run=self.DRY_RUN,
        )
        _POLICIES[id(self)] = (self, made)  # the settings kept alive with it: its id is never another's
        return made

    def audit(self) -> AuditConfig:
        """The audit rules' view of these settings (``AUDIT_*`` and the policy's bound and scope)."""
        from ecs_guardrail.core.audit import AuditConfig

        return AuditConfig(
            policy=self.policy(),
            min_ejection_seconds=self.AUDIT_MIN_EJECTION_SECONDS,
            aggregate_paths=self.AUDIT_AGGREGATE_PATHS,
            production_patterns=self.AUDIT_PRODUCTION_PATTERNS,
        )


_FIELD_ORDER: tuple[str, ...] = Settings.__struct_fields__
SETTING_NAMES: frozenset[str] = frozenset(_FIELD_ORDER)


def unknown_setting(key: str) -> str:
    """``unknown setting 'CRASH_TRESHOLD' (did you mean CRASH_THRESHOLD?); known: ...``: the list alone left
    a new user reading 27 names for the one letter a typo dropped. Case-insensitive close matches."""
    import difflib

    names = sorted(SETTING_NAMES)
    close = [n for n in difflib.get_close_matches(key.upper(), names, n=1, cutoff=0.75)]
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown setting {key!r}{hint}; known: {', '.join(names)}"
#: the settings whose value is text, a number, a boolean or a choice (not a list parsed by a check)
# the field names as declared (``__struct_fields__``: no type hints resolved, unlike msgspec.structs.fields)
_SCALAR = tuple(f for f in Settings.__struct_fields__ if f not in Settings.CHECKS)
_BLANK_IS_UNSET = ("ALERT_TOPIC_ARN", "SLACK_WEBHOOK_SECRET_ARN", "RUNBOOK_URL", "CENTRAL_ALERT_TOPIC_ARN",
                   "ACCOUNT_NAME")
_NOT_UNICODE = "text that is not valid Unicode (a lone surrogate: bytes that are not UTF-8)"


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read(values: Mapping[str, object]) -> Settings:
    """``values`` (setting names; others ignored) as :class:`Settings`, by msgspec's lax mode and the
    settings' own rules (module docstring); the first problem in field order.

    Raises:
        Invalid: that problem.
    """
    given = {k: v for k, v in values.items() if k in SETTING_NAMES
             and not (k in _BLANK_IS_UNSET and isinstance(v, str) and not v.strip())}
    # msgspec reads a number from text by its UTF-8 bytes: a lone surrogate is taken out first, and
    # reported unless a setting before it in field order has a problem of its own
    surrogate = next((k for k in _FIELD_ORDER if k in _SCALAR and isinstance(given.get(k), str)
                      and not _unicode(str(given[k]))), None)
    if surrogate is not None:
        bad = Invalid((surrogate,), _NOT_UNICODE, given[surrogate])
        given = {k: v for k, v in given.items() if _FIELD_ORDER.index(k) < _FIELD_ORDER.index(surrogate)}
    try:
        settings = validate(Settings, given, strict=False)
    except Invalid as exc:
        if surrogate is None or exc.loc:
            raise
        raise bad from None  # only the class-wide check failed: the field's problem comes first
    if surrogate is not None:
        raise bad
    return settings


#: msgspec's words for a value of the wrong type, which read oddly for an environment variable (always text):
#: what the setting accepts instead
_TYPE_WORDS = {"Expected `int`, got `str`":
                   "expected a whole number written in digits (5 or 5.0; not 5.5, five, 007 or 1_000)",
               "Expected `bool`, got `str`": "expected true or false (or 1 or 0, any case)",
               "Expected `float`, got `str`": "expected a number written in digits (0.5)"}


def _accepts(msg: str) -> str:
    """``msg`` (msgspec's reason) in words that say what the setting accepts, where msgspec names only the
    types (every environment variable is text, so "got `str`" says nothing)."""
    return _TYPE_WORDS.get(msg, msg)


_CACHE: dict[tuple[str | None, ...], Settings] = {}
_ORDER = tuple(sorted(SETTING_NAMES))


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``environ`` (default: the process environment).

    Only the variables named like a field are read (case-sensitive); one that is unset takes the
    field's default, one that is set, even to an empty string, is validated. The environment is read
    on every call; the validated object is reused while the variables it reads are unchanged. An
    invalid value is never cached: it raises every time.

    Raises:
        SettingsError: the first invalid value in field order, naming the variable, its value (cut to 200
            characters) and what it accepts.
    """
    try:
        if environ is None:
            key = tuple(os.environ.get(name) for name in _ORDER)
            cached = _CACHE.get(key)
            if cached is None:
                if len(_CACHE) > 16:
                    _CACHE.clear()
                cached = _CACHE[key] = _read(
                    {name: value for name, value in zip(_ORDER, key, strict=True) if value is not None})
            return cached
        return _read(environ)
    except Invalid as exc:
        if not exc.loc:  # a rule across settings names its settings itself: never dump every value, defaults too
            raise SettingsError(f"invalid setting: {exc.msg.removeprefix('Value error, ')}") from exc
        shown = ".".join(str(p) for p in exc.loc)
        value = repr(exc.input)
        value = value if len(value) <= 200 else f"{value[:200]}... ({len(value)} characters)"
        raise SettingsError(f"invalid setting: {shown}={value}: {_accepts(exc.msg)}") from exc
