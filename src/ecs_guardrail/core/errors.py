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


class ActionRefusedError(GuardrailError):
    """AWS refused the watchdog's action for good: ``AccessDenied`` (the explicit deny on an alert-only
    cluster, an SCP, a missing grant), the service or cluster deleted meanwhile (``ServiceNotFoundException``,
    ``ServiceNotActiveException``, ``ClusterNotFoundException``), or the code's own refusal before the call
    (an alert-only cluster). Not raised for throttling or a 5xx: those are retried.

    ``code`` is the AWS error code (or ``"Refused"``); ``reason`` one line with code and message. The
    decision becomes ``alert_only`` with reason ``action_failed``, and its alert goes out.
    """

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class LeaseLostError(GuardrailError):
    """This invocation no longer holds the episode's lease (it expired and another invocation took the
    episode over). The holder stops at once: the new holder resumes from the recorded phase."""


class DecisionInProgressError(GuardrailError):
    """Another invocation holds the lease of this service's unfinished episode. Raised by the Lambda
    entry point so that Lambda retries the event later and resumes the work if that invocation died
    (Powertools idempotency's ``IdempotencyAlreadyInProgressError`` plays the same part)."""


class AlertDeliveryError(GuardrailError):
    """Every alert sink failed. Raised after the decision is recorded, so Lambda retries the alert.

    ``outcome`` is what the invocation decided (the decision is already in the history table).
    """

    def __init__(self, message: str, outcome: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome or {}


class EventFromTheFutureError(EventRejectedError):
    """An event stamped more than the allowed skew after its delivery (ARCHITECTURE.md, "Time-sane")."""
class AlertOnlyClusterError(ScalingSuspendError):
    """A call that could change the capacity of an alert-only cluster's service was refused *before* it
    was made (``RegisterScalableTarget``: Application Auto Scaling ARNs do not carry the cluster name, so
    IAM cannot deny it per cluster; the code does). A :class:`ScalingSuspendError`, so the watchdog
    alerts and never scales the service."""
