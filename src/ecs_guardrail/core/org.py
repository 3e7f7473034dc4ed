"""One stack per account of an organisation: the account named in every alert (issue 32 item 4).

Every alert already names its account in its context line (``account 111122223333 · region ...``,
:meth:`ecs_guardrail.core.alert.Where.context_line`), in its Chatbot keywords and ``additionalContext``,
and in its facts (``data["account"]``). When the alerts of many accounts meet in one organisation topic
or channel, :func:`label_alert` adds what a reader of a short notification needs as well:

- ``ACCOUNT_NAME`` (an alias such as ``payments-prod``) beside the id wherever the context line
  appears (Slack blocks and fallback text, the SNS text and e-mail bodies, Chatbot's description), as a
  Chatbot keyword, and as ``data["account_name"]``;
- the account in the SNS subject (which is all an SMS subscriber or a mail list's subject line shows):
  ``ecs-guardrail [payments-prod 111122223333] scaled to 0: prod/api``, whenever the stack sends to a
  central topic (``CENTRAL_ALERT_TOPIC_ARN``) or has a name.

A stack with neither (one account, its own topic) sends exactly what it sent before: every bundled
scenario's output is unchanged. Pure: no I/O; applied by the runtime to each alert before delivery
(:meth:`ecs_guardrail.handlers.runtime.Runtime.send`), so the replay's ``--alerts-out`` shows it too.
"""

from __future__ import annotations

from typing import Any

from msgspec import structs

from ecs_guardrail.core.alert import SNS_SUBJECT_MAX, Alert

__all__ = ["label_alert", "account_tag"]

_PREFIX = "ecs-guardrail "


def account_tag(account: str | None, name: str | None) -> str:
    """``payments-prod 111122223333``, ``111122223333``, ``payments-prod`` or ``account unknown``."""
    return " ".join(p for p in (name, account) if p) or "account unknown"


def _renamed(value: Any, old: str, new: str) -> Any:
    """``value`` (Slack blocks: dicts, lists, strings) with ``old`` replaced by ``new`` in every string."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    return value


def label_alert(alert: Alert, *, account_name: str | None, central: bool) -> Alert:
    """``alert`` with its account named for an organisation's channel (module docstring).

    ``account_name``: ``ACCOUNT_NAME`` (validated by the settings: letters, digits, ``.``, ``_``, ``-``,
    so nothing in it needs escaping for Slack's mrkdwn); ``central``: the alert goes to the
    organisation's topic (``CENTRAL_ALERT_TOPIC_ARN`` is set). Returns ``alert`` itself when both are
    unset. The account is the alert's own (:attr:`Alert.where`; the event's account in a forwarding
    deployment, the stack's own in a per-account one).
    """
    if not account_name and not central:
        return alert
    account = alert.where.account if alert.where is not None else alert.data.get("account")
    text, blocks, data, keywords = alert.text, alert.blocks, dict(alert.data), alert.keywords
    if account_name:
        old = f"account {account or 'unknown'} · "
        new = f"account {account or 'unknown'} ({account_name}) · "
        text, blocks = text.replace(old, new), _renamed(blocks, old, new)
        data["account_name"] = account_name
        keywords = (*keywords, account_name)
    rest = alert.subject[len(_PREFIX):] if alert.subject.startswith(_PREFIX) else alert.subject
    subject = f"{_PREFIX}[{account_tag(account, account_name)}] {rest}"
    subject = subject.encode("ascii", "replace").decode()[:SNS_SUBJECT_MAX]
    return structs.replace(alert, subject=subject, text=text, blocks=blocks, data=data, keywords=keywords)
