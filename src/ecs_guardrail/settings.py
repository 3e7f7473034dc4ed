"""Runtime settings, read from the environment once per invocation into one validated, frozen object.

The same names are the SAM parameters' and Terraform variables' targets and the keys of a scenario's
``settings.env``. An invalid value raises :class:`~ecs_guardrail.core.errors.SettingsError` at start;
nothing falls back to acting.

The environment is read by name (case-sensitive, only the fields' names; an unset variable takes the
field's default) and validated by :class:`Settings`, a plain class with ``__slots__`` read by its field
table (:mod:`ecs_guardrail.core.fields`): the same fields, defaults, checks and error messages (pydantic's
words, ``Input should be greater than or equal to 1``) as the pydantic model and, before it, the
``pydantic_settings.BaseSettings`` it replaces, without importing either (issue 23: pydantic-settings
was about 130 ms of CPU per cold start, pydantic itself about 100 ms with the event models). The old
model is kept in ``tests/oracle/pydantic_settings.py`` for a differential test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Literal

from ecs_guardrail.core.clusters import NO_CLUSTER, parse_alert_only_clusters
from ecs_guardrail.core.errors import FrozenSettingsError, SettingsError
from ecs_guardrail.core.fields import Checked, Invalid, Spec

if TYPE_CHECKING:  # imported where they are built: the recorder needs neither
    from ecs_guardrail.core.audit import AuditConfig
    from ecs_guardrail.core.lifecycle import ProbeSettings
    from ecs_guardrail.core.policy import PolicyConfig

__all__ = ["Settings", "load_settings", "SETTING_NAMES"]


def _parse_clusters(value: object) -> tuple[str, ...]:
    if value is not None and not isinstance(value, str | list | tuple):
        raise ValueError("expected a comma-separated list of cluster names, ARNs or globs")
    parsed = parse_alert_only_clusters(value)  # raises ValueError for an entry that is none of these
    return (NO_CLUSTER,) if parsed.none else tuple(e.text for e in parsed.entries)


def _empty_is_unset(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


def _split_list(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if str(v).strip())
    raise ValueError("expected a comma-separated list")


def _paths_start_with_slash(value: tuple[str, ...]) -> tuple[str, ...]:
    bad = [p for p in value if not p.startswith("/")]
    if bad:
        raise ValueError(f"health-check paths start with '/': {bad[0]!r}")
    return value


class Settings(Checked):
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

    Alerts (README, "Alerts"): ``RUNBOOK_URL`` (optional https URL template; ``{cluster}`` and
    ``{service}`` are replaced, URL-quoted, and the alert gets a "Runbook" link), ``SNS_FORMAT``
    (``chatbot``, the default: the SNS message is AWS Chatbot's custom-notification JSON with the
    plain text as its description; ``text``: the plain text and the facts as JSON).

    ``ecs-guardrail audit`` only (README, "Audit"): ``AUDIT_MIN_EJECTION_SECONDS`` (seconds, default
    30: ``fast_ejection`` below ``UnhealthyThresholdCount x HealthCheckIntervalSeconds``),
    ``AUDIT_AGGREGATE_PATHS`` (comma-separated health-check paths that aggregate dependencies, default
    ``/actuator/health,/health,/status,/``), ``AUDIT_PRODUCTION_PATTERNS`` (comma-separated,
    case-insensitive substrings of a production cluster's name, default ``prod,live``).
    """

    __slots__ = ("ALERT_ONLY_CLUSTERS", "CRASH_THRESHOLD", "CRASH_WINDOW_MINUTES", "MAX_ACTION_FRACTION",
                 "MIN_ACTIONS_ALLOWED", "FLEET_SIGNAL_MIN_FAILURES", "CLIENT_ERROR_RATIO", "DRY_RUN", "RECOVERY",
                 "PROBE_DELAY_MINUTES", "PROBE_MAX_DELAY_MINUTES", "PROBE_PASS_MINUTES", "HISTORY_TABLE",
                 "HISTORY_TTL_DAYS", "ALERT_TOPIC_ARN", "SLACK_WEBHOOK_SECRET_ARN", "SAMPLE_LOOKBACK_MINUTES",
                 "RUNBOOK_URL", "SNS_FORMAT", "AUDIT_MIN_EJECTION_SECONDS", "AUDIT_AGGREGATE_PATHS",
                 "AUDIT_PRODUCTION_PATTERNS")
    FIELDS: ClassVar[tuple[Spec, ...]] = (
        Spec("ALERT_ONLY_CLUSTERS", "any", default=(), before=_parse_clusters),
        Spec("CRASH_THRESHOLD", "int", default=5, ge=1, le=1000),
        Spec("CRASH_WINDOW_MINUTES", "int", default=30, ge=1, le=1440),
        Spec("MAX_ACTION_FRACTION", "float", default=0.2, ge=0.0, le=1.0),
        Spec("MIN_ACTIONS_ALLOWED", "int", default=1, ge=0, le=1000),
        Spec("FLEET_SIGNAL_MIN_FAILURES", "int", default=2, ge=1, le=1000),
        Spec("CLIENT_ERROR_RATIO", "float", default=0.05, gt=0.0, le=1.0),
        Spec("DRY_RUN", "bool", default=False),
        Spec("RECOVERY", "literal", default="manual", choices=("manual", "probe")),
        Spec("PROBE_DELAY_MINUTES", "int", default=15, ge=1, le=1440),
        Spec("PROBE_MAX_DELAY_MINUTES", "int", default=240, ge=1, le=1440),
        Spec("PROBE_PASS_MINUTES", "int", default=10, ge=1, le=240),
        Spec("HISTORY_TABLE", "str", default="ecs-guardrail-history", min_length=3, max_length=255,
             pattern=r"^[A-Za-z0-9_.-]+$"),
        Spec("HISTORY_TTL_DAYS", "int", default=90, ge=1, le=3650),
        Spec("ALERT_TOPIC_ARN", "str", default=None, nullable=True, before=_empty_is_unset,
             pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+$"),
        Spec("SLACK_WEBHOOK_SECRET_ARN", "str", default=None, nullable=True, before=_empty_is_unset,
             min_length=1, max_length=2048),
        Spec("SAMPLE_LOOKBACK_MINUTES", "int", default=5, ge=1, le=180),
        Spec("RUNBOOK_URL", "str", default=None, nullable=True, before=_empty_is_unset, max_length=1024,
             pattern=r"^https://[^\s]+$"),
        Spec("SNS_FORMAT", "literal", default="chatbot", choices=("chatbot", "text")),
        # ``ecs-guardrail audit`` judgements (operator command; no function reads them; README, "Audit")
        Spec("AUDIT_MIN_EJECTION_SECONDS", "int", default=30, ge=0, le=3600),
        Spec("AUDIT_AGGREGATE_PATHS", "any", default=("/actuator/health", "/health", "/status", "/"),
             before=_split_list, after=_paths_start_with_slash),
        Spec("AUDIT_PRODUCTION_PATTERNS", "any", default=("prod", "live"), before=_split_list),
    )

    ALERT_ONLY_CLUSTERS: tuple[str, ...]
    CRASH_THRESHOLD: int
    CRASH_WINDOW_MINUTES: int
    MAX_ACTION_FRACTION: float
    MIN_ACTIONS_ALLOWED: int
    FLEET_SIGNAL_MIN_FAILURES: int
    CLIENT_ERROR_RATIO: float
    DRY_RUN: bool
    RECOVERY: Literal["manual", "probe"]
    PROBE_DELAY_MINUTES: int
    PROBE_MAX_DELAY_MINUTES: int
    PROBE_PASS_MINUTES: int
    HISTORY_TABLE: str
    HISTORY_TTL_DAYS: int
    ALERT_TOPIC_ARN: str | None
    SLACK_WEBHOOK_SECRET_ARN: str | None
    SAMPLE_LOOKBACK_MINUTES: int
    RUNBOOK_URL: str | None
    SNS_FORMAT: Literal["chatbot", "text"]
    AUDIT_MIN_EJECTION_SECONDS: int
    AUDIT_AGGREGATE_PATHS: tuple[str, ...]
    AUDIT_PRODUCTION_PATTERNS: tuple[str, ...]

    def __new__(cls, **values: object) -> Settings:
        """``Settings(NAME=value, ...)``: validated as :func:`load_settings` does (unknown names ignored).

        Raises:
            Invalid: a value is invalid (:func:`load_settings` turns it into a ``SettingsError``).
        """
        return cls.validate(values)

    def check(self) -> None:
        if self.PROBE_MAX_DELAY_MINUTES < self.PROBE_DELAY_MINUTES:
            raise ValueError(f"PROBE_MAX_DELAY_MINUTES ({self.PROBE_MAX_DELAY_MINUTES}) is below "
                             f"PROBE_DELAY_MINUTES ({self.PROBE_DELAY_MINUTES}): the delay's cap cannot be "
                             "shorter than the first delay")

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenSettingsError(f"Settings are frozen: {name} cannot be set (use with_values)")

    def __delattr__(self, name: str) -> None:
        raise FrozenSettingsError(f"Settings are frozen: {name} cannot be deleted")

    def __hash__(self) -> int:  # type: ignore[override]  # the Lambda path keys its runtimes by settings
        return hash(tuple(self.fields().values()))

    def with_values(self, **changes: object) -> Settings:
        """A copy with ``changes`` (field names) set, not validated again (as pydantic's ``model_copy``):
        the replay points the table and the topic at its embedded AWS.

        Raises:
            TypeError: a name that is not a setting.
        """
        unknown = sorted(set(changes) - SETTING_NAMES)
        if unknown:
            raise TypeError(f"not a setting: {', '.join(unknown)}")
        copy = object.__new__(Settings)
        for name, value in {**self.fields(), **changes}.items():
            object.__setattr__(copy, name, value)
        object.__setattr__(copy, "model_extra", None)
        return copy

    def probes(self) -> ProbeSettings | None:
        """The probe schedule when ``RECOVERY=probe``, else ``None`` (``manual``: no probe ever runs)."""
        if self.RECOVERY != "probe":
            return None
        from ecs_guardrail.core.lifecycle import ProbeSettings

        return ProbeSettings(self.PROBE_DELAY_MINUTES, self.PROBE_MAX_DELAY_MINUTES, self.PROBE_PASS_MINUTES)

    def policy(self) -> PolicyConfig:
        """The core's view of these settings (no environment, no I/O)."""
        from ecs_guardrail.core.policy import PolicyConfig

        return PolicyConfig(
            alert_only_clusters=self.ALERT_ONLY_CLUSTERS,
            crash_threshold=self.CRASH_THRESHOLD,
            window_minutes=self.CRASH_WINDOW_MINUTES,
            max_action_fraction=self.MAX_ACTION_FRACTION,
            min_actions_allowed=self.MIN_ACTIONS_ALLOWED,
            fleet_signal_min_failures=self.FLEET_SIGNAL_MIN_FAILURES,
            dry_run=self.DRY_RUN,
        )

    def audit(self) -> AuditConfig:
        """The audit rules' view of these settings (``AUDIT_*`` and the policy's bound and scope)."""
        from ecs_guardrail.core.audit import AuditConfig

        return AuditConfig(
            policy=self.policy(),
            min_ejection_seconds=self.AUDIT_MIN_EJECTION_SECONDS,
            aggregate_paths=self.AUDIT_AGGREGATE_PATHS,
            production_patterns=self.AUDIT_PRODUCTION_PATTERNS,
        )


SETTING_NAMES: frozenset[str] = frozenset(spec.name for spec in Settings.FIELDS)


_CACHE: dict[tuple[str | None, ...], Settings] = {}
_ORDER = tuple(sorted(SETTING_NAMES))


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``environ`` (default: the process environment).

    Only the variables named like a field are read (case-sensitive); one that is unset takes the
    field's default, one that is set, even to an empty string, is validated. The environment is read
    on every call; the validated object is reused while the variables it reads are unchanged. An
    invalid value is never cached: it raises every time.

    Raises:
        SettingsError: one line per invalid value, naming the variable and what it accepts.
    """
    try:
        if environ is None:
            key = tuple(os.environ.get(name) for name in _ORDER)
            cached = _CACHE.get(key)
            if cached is None:
                if len(_CACHE) > 16:
                    _CACHE.clear()
                cached = _CACHE[key] = Settings.validate(
                    {name: value for name, value in zip(_ORDER, key, strict=True) if value is not None})
            return cached
        return Settings.validate({k: v for k, v in environ.items() if k in SETTING_NAMES})
    except Invalid as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in loc) or 'settings'}={value!r}: {msg}"
                             for loc, msg, value in exc.problems)
        raise SettingsError(f"invalid setting: {problems}") from exc
