"""The project's error hierarchy: one base, subclasses named ``...Error``."""

from __future__ import annotations


class GuardrailError(Exception):
    """Base of every error ecs-guardrail raises on purpose."""


class EventRejectedError(GuardrailError):
    """An event that cannot be used: malformed JSON, wrong source, a required field missing.

    ``reason`` is one line a human can act on; the raw event is kept by the caller (history table,
    log or dead-letter queue). A rejected event never counts as a crash.
    """

    def __init__(self, reason: str, raw: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


class SettingsError(GuardrailError):
    """A setting (environment variable or ``settings.env`` line) is missing, unknown or invalid.

    Raised at start, before any event is handled: an invalid setting never falls back to acting.
    """


class ScenarioError(GuardrailError):
    """A replay scenario folder cannot be read (missing ``fleet.json``, bad JSON, unknown setting)."""


class ClusterNotFoundError(GuardrailError):
    """ECS answered ``ClusterNotFoundException``: the cluster named does not exist in this account and region."""


class ServiceNotFoundError(GuardrailError):
    """ECS answered ``ServiceNotFoundException`` (or the service is INACTIVE / draining)."""


class RestoreError(GuardrailError):
    """``restore`` cannot put a service back: no recorded previous desired count, or ECS refused."""


class NothingToRestoreError(RestoreError):
    """``restore`` found no recorded previous desired count for a service.

    ``desired_count``: the service's desired count now (ECS ``DescribeServices`` ``desiredCount``). Above
    0 the service runs already (a second ``restore``, or a count set by hand): nothing to do, exit 0.
    At 0 there is nothing to put back from: exit 1.
    """

    def __init__(self, message: str, desired_count: int) -> None:
        super().__init__(message)
        self.desired_count = desired_count


class ServiceAccessDeniedError(GuardrailError):
    """ECS answered ``AccessDeniedException`` for a service: this role may not read it.

    Distinct from :class:`ServiceNotFoundError`: the service may well exist (another account's service in
    cross-account mode, or a missing ``ecs:DescribeServices`` grant). The watchdog never acts on it.
    """


class ScalingSuspendError(GuardrailError):
    """Application Auto Scaling refused to suspend a scalable target (``RegisterScalableTarget`` failed).

    ``reason`` is one line (the AWS error code and message). The caller must not scale the service to 0:
    the scalable target would put the tasks back; it alerts instead and says why.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
