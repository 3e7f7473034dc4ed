"""The project's error hierarchy: one base, :class:`GuardrailError`; every class is defined here.

Each subclass is named for what went wrong (``...Error``) and says when it is raised. The modules that
raise one import it from here (and some re-export it under their old path, e.g.
``ecs_guardrail.adapters.store.table.ConditionFailedError``). ``except GuardrailError`` therefore
catches every error the project raises on purpose, lost races included: a catch-all that must let a
lost race through (:class:`ConditionFailedError`, :class:`StateConflictError`) re-raises those first.
The one exception: ``replay.memory_aws.UnsupportedOperationError`` is a ``NotImplementedError`` of the
in-memory fake AWS (an operation the fake does not model, a programming error), not a runtime error.
``tests/unit/test_errors.py`` checks all of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class GuardrailError(Exception):
    """Base of every error ecs-guardrail raises on purpose."""


class EventRejectedError(GuardrailError):
    """An event that cannot be used: malformed JSON, wrong source, a required field missing.

    ``reason`` is one line a human can act on; the raw event is kept by the caller (history table,
    log or dead-letter queue). A rejected event never counts as a crash. Raised by
    :mod:`ecs_guardrail.core.events` when an event is parsed.
    """

    def __init__(self, reason: str, raw: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


class EventFromTheFutureError(EventRejectedError):
    """An event stamped more than the allowed skew after its delivery (ARCHITECTURE.md, "Time-sane").

    Raised by :mod:`ecs_guardrail.core.delivery` when an event's time is checked against its delivery.
    """


class SettingsError(GuardrailError):
    """A setting (environment variable or ``settings.env`` line) is missing, unknown or invalid.

    Raised at start, before any event is handled: an invalid setting never falls back to acting.
    """


class FrozenSettingsError(GuardrailError, AttributeError, ValueError):
    """Code set or deleted an attribute of a ``Settings`` object.

    Raised by ``Settings.__setattr__`` / ``__delattr__``: settings are read once and shared (the Lambda
    path keys its runtimes by them); ``Settings.with_values`` makes a changed copy. An ``AttributeError``
    as a frozen dataclass's, and a ``ValueError`` as the pydantic model's was.
    """


class ScenarioError(GuardrailError):
    """A replay scenario folder cannot be read (missing ``fleet.json``, bad JSON, unknown setting).

    Raised by the operator commands (``replay``, ``capture``, ``audit``, the replay readers) on bad input.
    """


class ClusterNotFoundError(GuardrailError):
    """ECS answered ``ClusterNotFoundException``: the cluster named does not exist in this account and region.

    Raised by :mod:`ecs_guardrail.adapters.ecs` (ListServices) and :mod:`ecs_guardrail.adapters.audit_facts`.
    """


class ServiceNotFoundError(GuardrailError):
    """ECS answered ``ServiceNotFoundException`` (or the service is INACTIVE / draining).

    Raised by :meth:`ecs_guardrail.adapters.ecs.EcsService.describe`.
    """


class RestoreError(GuardrailError):
    """``restore`` cannot put a service back: no recorded previous desired count, or ECS refused.

    Raised by :mod:`ecs_guardrail.app.restore` and :mod:`ecs_guardrail.core.restore_count`.
    """


class NothingToRestoreError(RestoreError):
    """``restore`` found no recorded previous desired count for a service.

    ``desired_count``: the service's desired count now (ECS ``DescribeServices`` ``desiredCount``). Above
    0 the service runs already (a second ``restore``, or a count set by hand): nothing to do, exit 0.
    At 0 there is nothing to put back from: exit 1. Raised by :func:`ecs_guardrail.app.restore.restore`.
    """

    def __init__(self, message: str, desired_count: int) -> None:
        super().__init__(message)
        self.desired_count = desired_count


class ServiceAccessDeniedError(GuardrailError):
    """ECS answered ``AccessDeniedException`` for a service: this role may not read it.

    Distinct from :class:`ServiceNotFoundError`: the service may well exist (another account's service in
    cross-account mode, or a missing ``ecs:DescribeServices`` grant). The watchdog never acts on it.
    Raised by :mod:`ecs_guardrail.adapters.ecs` (DescribeServices, ListServices).
    """


class ScalingSuspendError(GuardrailError):
    """Application Auto Scaling refused to suspend a scalable target (``RegisterScalableTarget`` failed).

    ``reason`` is one line (the AWS error code and message). The caller must not scale the service to 0:
    the scalable target would put the tasks back; it alerts instead and says why. Raised by
    :mod:`ecs_guardrail.adapters.autoscaling` (DescribeScalableTargets, RegisterScalableTarget).
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
    decision becomes ``alert_only`` with reason ``action_failed``, and its alert goes out. Raised by
    :class:`ecs_guardrail.adapters.ecs.EcsService` (``scale_to_zero``, ``probe``).
    """

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class LeaseLostError(GuardrailError):
    """This invocation no longer holds the episode's lease (it expired and another invocation took the
    episode over). The holder stops at once: the new holder resumes from the recorded phase.

    Raised by :mod:`ecs_guardrail.handlers.episode` (the claim, and the last check before UpdateService).
    """


class DecisionInProgressError(GuardrailError):
    """Another invocation holds the lease of this service's unfinished episode. Raised by the Lambda
    entry point so that Lambda retries the event later and resumes the work if that invocation died
    (Powertools idempotency's ``IdempotencyAlreadyInProgressError`` plays the same part).

    Raised by :mod:`ecs_guardrail.handlers.watchdog` and :mod:`ecs_guardrail.handlers.episode`.
    """


class AlertDeliveryError(GuardrailError):
    """Every alert sink failed. Raised after the decision is recorded, so Lambda retries the alert.

    ``outcome`` is what the invocation decided (the decision is already in the history table). Raised
    by :mod:`ecs_guardrail.handlers.watchdog`.
    """

    def __init__(self, message: str, outcome: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.outcome = outcome or {}



class AlertOnlyClusterError(ScalingSuspendError):
    """A call that could change the capacity of an alert-only cluster's service was refused *before* it
    was made (``RegisterScalableTarget``: Application Auto Scaling ARNs do not carry the cluster name, so
    IAM cannot deny it per cluster; the code does). A :class:`ScalingSuspendError`, so the watchdog
    alerts and never scales the service. Raised by :mod:`ecs_guardrail.adapters.autoscaling`."""


class IllegalTransitionError(GuardrailError):
    """An outcome that the episode's phase does not allow (a raise seen while an action is in flight,
    a second scale-down, an alert for a finished episode...). Nothing is written; the caller stops
    working on this episode and says why.

    Raised by :mod:`ecs_guardrail.core.lifecycle` (also importable from there).
    """


class ConditionFailedError(GuardrailError):
    """A conditional write's condition did not hold: another writer won the race for the item.

    Raised by the table port (:mod:`ecs_guardrail.adapters.store.table`, both implementations) on
    ``PutItem``/``TransactWriteItems``. ``old`` is the item as it was (DynamoDB's
    ``ReturnValuesOnConditionCheckFailure=ALL_OLD``), ``None`` when absent or not returned (a
    transaction's cancellation). ``failed``: for a transaction, the positions (0-based) of the writes whose
    condition failed (TransactionCanceledException ``CancellationReasons`` code ``ConditionalCheckFailed``);
    ``None`` when not known. A lost race: a catch-all ``except GuardrailError`` must let it through.

    ``old`` may be given as a callable of no arguments returning it: called on the first read of
    :attr:`old`, once (the in-memory table's stored item is decoded only when a reader asks for it: the
    recorder drops the error of a redelivered event unread).
    """

    def __init__(self, old: dict[str, Any] | Callable[[], dict[str, Any] | None] | None = None,
                 failed: tuple[int, ...] | None = None) -> None:
        super().__init__("condition failed")
        self._old = old
        self.failed = failed

    @property
    def old(self) -> dict[str, Any] | None:
        """The item as it was before the write (``None``: absent or not returned)."""
        old = self._old
        if callable(old):
            old = self._old = old()
        return old

    @old.setter
    def old(self, value: dict[str, Any] | None) -> None:
        self._old = value


class StateConflictError(GuardrailError):
    """Another writer kept winning the summary's conditional write (more than a few times in a row).

    Raised by :class:`~ecs_guardrail.adapters.store.watchdog_state.WatchdogState` after repeated
    :class:`ConditionFailedError`. A lost race: the invocation fails (Lambda retries it); a catch-all
    ``except GuardrailError`` must let it through.
    """


class UnreadableSummaryError(GuardrailError):
    """A stored service summary this code cannot read (an unknown status, a missing field: an item
    written by hand, or by a newer version); the message names the item and what is wrong.

    Raised by :class:`~ecs_guardrail.adapters.store.watchdog_state.WatchdogState` when it reads that
    service's own summary; another service's in the cluster's view is skipped (logged) instead.
    ``pk`` and ``sk``: the item's key (``WD#<cluster key>``, ``S#<service>``) when known. Nothing repairs
    the item on its own (the watchdog decides nothing for that service, never on a guess): an operator
    does, as :meth:`repair` says (docs/runbook.md, "A corrupt service summary").
    """

    def __init__(self, message: str, pk: str | None = None, sk: str | None = None) -> None:
        super().__init__(message)
        self.pk, self.sk = pk, sk

    def repair(self, table: str, region: str | None = None) -> str:
        """The operator's repair as one line: save the item (GetItem), delete it (DeleteItem: the service's
        next event starts a new summary), and when the saved episode held the service at zero, ``restore``
        it with the saved previous desired count (``"pd"`` of its ``"e"``): that frees its held-at-zero
        slot. ``table``: the history table; ``region`` when known."""
        if not self.pk or not self.sk:
            return f"repair: docs/runbook.md, 'A corrupt service summary' (table {table})"
        import json

        where = f"--table-name {table}" + (f" --region {region}" if region else "")
        key = json.dumps({"pk": {"S": self.pk}, "sk": {"S": self.sk}}, separators=(",", ":"))
        if not self.sk.startswith("S#"):  # a job family's window (J#): nothing is held, nothing to restore
            return (f"repair: save the item (aws dynamodb get-item {where} --key '{key}'), then delete it "
                    f"(aws dynamodb delete-item {where} --key '{key}'): the family's next failure opens a new window")
        # the cluster key is ``cluster@account@region`` for another account's cluster: restore takes the name
        cluster, service = self.pk.removeprefix("WD#").split("@")[0], self.sk.removeprefix("S#")
        return (f"repair (docs/runbook.md, 'A corrupt service summary'): save the item "
                f"(aws dynamodb get-item {where} --key '{key}'), delete it (aws dynamodb delete-item {where} "
                f"--key '{key}'), then, if its episode held the service at zero, ecs-guardrail restore --cluster "
                f"{cluster} --service {service} --table {table}" + (f" --region {region}" if region else "")
                + " --count N (N: the saved item's previous desired count, \"pd\" in its \"e\")")


class SecretUnreadableError(GuardrailError):
    """Secrets Manager did not return the Slack webhook secret.

    Raised by :meth:`ecs_guardrail.adapters.alerts.WebhookUrl.get`. ``code`` is its error code when it
    gave one (``AccessDeniedException`` for a partial ARN or a missing grant,
    ``ResourceNotFoundException``, ...).
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def access_denied(self) -> bool:
        """The secret exists, or may, but this role may not read it."""
        return self.code in ("AccessDeniedException", "AccessDenied")


class ObservationsNotSentError(GuardrailError):
    """EventBridge refused some entries (``FailedEntryCount`` > 0): the run fails and is retried.

    Raised by :meth:`ecs_guardrail.adapters.bus.ObservationBus.put` (the sampler's restart observations).
    """


class PlotUnavailableError(GuardrailError):
    """matplotlib is not installed (``pip install ecs-guardrail[plot]``).

    Raised by :func:`ecs_guardrail.app.plot.plot_timeline` before anything is drawn.
    """


class OutputWriteError(GuardrailError):
    """An output (``--alerts-out``, ``--plot``, the report on stdout) could not be written: the CLI prints
    one line naming ``target`` (a file, or ``stdout``) and the OS's reason, and exits 74.

    Raised by :func:`ecs_guardrail.cli._writing` around every write and by the check of an output file
    before a replay (:func:`ecs_guardrail.cli._check_output`).
    """

    def __init__(self, target: str, exc: OSError, flag: str | None = None) -> None:
        super().__init__(f"{flag + ': ' if flag else ''}cannot write {target}: {exc.strerror or exc}")
        self.target = target


class HealthJsonError(GuardrailError):
    """A ``--health-json`` file is no health response this tool reads: too large, not UTF-8, not JSON,
    nested too deeply, or in none of the formats (one line).

    Raised by :mod:`ecs_guardrail.core.health_json`; ``audit`` turns it into exit 2.
    """
