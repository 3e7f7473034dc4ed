"""TEST ORACLE, not product code: the pydantic models that ``src/ecs_guardrail/settings.py`` replaced (issue 23, cold
start), kept verbatim (as of a3b88e1) only so that ``tests/fuzz/test_parser_differential.py`` can check
the new parser against them: it must accept exactly what these accepted, with the same values, and
reject with the same first error's location. Nothing under ``src/`` imports this module.

The original docstring follows.

Runtime settings, read from the environment once per invocation into one validated pydantic model.

The same names are the SAM parameters' and Terraform variables' targets and the keys of a scenario's
``settings.env``. An invalid value raises :class:`~ecs_guardrail.core.errors.SettingsError` at start;
nothing falls back to acting.

The environment is read by name (case-sensitive, only the fields' names; an unset variable takes the
field's default) and validated by :class:`Settings`, a plain ``pydantic.BaseModel``: the same fields,
defaults, validators and error messages as the ``pydantic_settings.BaseSettings`` it replaces, without
pydantic-settings' import (about 130 ms of CPU per cold start with its environment provider and
``asyncio``, issue 23) for a read that is one dictionary lookup a field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ecs_guardrail.core.clusters import NO_CLUSTER, parse_alert_only_clusters
from ecs_guardrail.core.errors import SettingsError
from ecs_guardrail.core.routes import parse_channels, parse_routes, secret_channel, topic_channel

if TYPE_CHECKING:  # imported where they are built: the recorder needs neither
    from ecs_guardrail.core.audit import AuditConfig
    from ecs_guardrail.core.lifecycle import ProbeSettings
    from ecs_guardrail.core.policy import PolicyConfig

__all__ = ["Settings", "load_settings", "SETTING_NAMES"]


class Settings(BaseModel):
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
      targets answering 2xx under it are ``still_serving``.
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

    model_config = ConfigDict(extra="ignore", frozen=True)

    ALERT_ONLY_CLUSTERS: tuple[str, ...] = ()
    CRASH_THRESHOLD: int = Field(5, ge=1, le=1000)
    CRASH_WINDOW_MINUTES: int = Field(30, ge=1, le=1440)
    MAX_ACTION_FRACTION: float = Field(0.2, ge=0.0, le=1.0)
    MIN_ACTIONS_ALLOWED: int = Field(1, ge=0, le=1000)
    FLEET_SIGNAL_MIN_FAILURES: int = Field(2, ge=1, le=1000)
    CLIENT_ERROR_RATIO: float = Field(0.05, gt=0.0, le=1.0)
    DRY_RUN: bool = False
    RECOVERY: Literal["manual", "probe"] = "manual"
    PROBE_DELAY_MINUTES: int = Field(15, ge=1, le=1440)
    PROBE_MAX_DELAY_MINUTES: int = Field(240, ge=1, le=1440)
    PROBE_PASS_MINUTES: int = Field(10, ge=1, le=240)

    HISTORY_TABLE: str = Field("ecs-guardrail-history", min_length=3, max_length=255,
                               pattern=r"^[A-Za-z0-9_.-]+$")
    HISTORY_TTL_DAYS: int = Field(90, ge=1, le=3650)
    ALERT_TOPIC_ARN: str | None = Field(None, pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$")
    SLACK_WEBHOOK_SECRET_ARN: str | None = Field(None, min_length=1, max_length=2048)
    SAMPLE_LOOKBACK_MINUTES: int = Field(5, ge=1, le=180)
    RUNBOOK_URL: str | None = Field(None, max_length=1024, pattern=r"^https://[^\s]+$")
    SNS_FORMAT: Literal["chatbot", "text"] = "chatbot"
    # routes (issue 35 item 4)
    ALERT_CHANNEL_TOPIC_ARNS: tuple[str, ...] = ()
    ALERT_CHANNEL_SECRET_ARNS: tuple[str, ...] = ()
    ALERT_ROUTES: tuple[str, ...] = ()
    CENTRAL_ALERT_TOPIC_ARN: str | None = Field(None,
                                                pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$")
    ACCOUNT_NAME: str | None = Field(None, max_length=50, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$")

    # ``ecs-guardrail audit`` judgements (operator command; no function reads them; README, "Audit")
    AUDIT_MIN_EJECTION_SECONDS: int = Field(30, ge=0, le=3600)
    AUDIT_AGGREGATE_PATHS: tuple[str, ...] = ("/actuator/health", "/health", "/status", "/")
    AUDIT_PRODUCTION_PATTERNS: tuple[str, ...] = ("prod", "live")

    @field_validator("ALERT_ONLY_CLUSTERS", mode="before")
    @classmethod
    def _parse_clusters(cls, value: object) -> tuple[str, ...]:
        if value is not None and not isinstance(value, str | list | tuple):
            raise ValueError("expected a comma-separated list of cluster names, ARNs or globs")
        parsed = parse_alert_only_clusters(value)  # raises ValueError for an entry that is none of these
        return (NO_CLUSTER,) if parsed.none else tuple(e.text for e in parsed.entries)

    @field_validator("ALERT_TOPIC_ARN", "SLACK_WEBHOOK_SECRET_ARN", "RUNBOOK_URL", "CENTRAL_ALERT_TOPIC_ARN",
                     "ACCOUNT_NAME", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("AUDIT_AGGREGATE_PATHS", "AUDIT_PRODUCTION_PATTERNS", mode="before")
    @classmethod
    def _split_list(cls, value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        if isinstance(value, list | tuple):
            return tuple(str(v).strip() for v in value if str(v).strip())
        raise ValueError("expected a comma-separated list")

    @field_validator("AUDIT_AGGREGATE_PATHS")
    @classmethod
    def _paths_start_with_slash(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in value if not p.startswith("/")]
        if bad:
            raise ValueError(f"health-check paths start with '/': {bad[0]!r}")
        return value

    @field_validator("ALERT_CHANNEL_TOPIC_ARNS", "ALERT_CHANNEL_SECRET_ARNS", mode="before")
    @classmethod
    def _channel_arns(cls, value: object, info: Any) -> tuple[str, ...]:
        topics = info.field_name == "ALERT_CHANNEL_TOPIC_ARNS"
        what = "SNS topic ARNs" if topics else "secret ARNs"
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
            (topic_channel if topics else secret_channel)(arn)
        return out

    @field_validator("ALERT_ROUTES", mode="before")
    @classmethod
    def _routes(cls, value: object) -> tuple[str, ...]:
        return tuple(f"{r.glob}={r.channel}" for r in parse_routes(value, None))

    @model_validator(mode="after")
    def _probe_cap_not_below_delay(self) -> Settings:
        parse_routes(self.ALERT_ROUTES, parse_channels(self.ALERT_CHANNEL_TOPIC_ARNS,
                                                       self.ALERT_CHANNEL_SECRET_ARNS).names)
        if self.PROBE_MAX_DELAY_MINUTES < self.PROBE_DELAY_MINUTES:
            raise ValueError(f"PROBE_MAX_DELAY_MINUTES ({self.PROBE_MAX_DELAY_MINUTES}) is below "
                             f"PROBE_DELAY_MINUTES ({self.PROBE_DELAY_MINUTES}): the delay's cap cannot be "
                             "shorter than the first delay")
        return self

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


SETTING_NAMES: frozenset[str] = frozenset(Settings.model_fields)


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
                cached = _CACHE[key] = Settings.model_validate(
                    {name: value for name, value in zip(_ORDER, key, strict=True) if value is not None})
            return cached
        return Settings.model_validate({k: v for k, v in environ.items() if k in SETTING_NAMES})
    except ValidationError as exc:
        # the message's form follows load_settings' (issue 38: a rule across settings names only them)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}={err.get('input')!r}: {err['msg']}" if err["loc"]
            else err["msg"].removeprefix("Value error, ")
            for err in exc.errors()
        )
        raise SettingsError(f"invalid setting: {problems}") from exc
