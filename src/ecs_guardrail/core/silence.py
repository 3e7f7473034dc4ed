"""Which member account went silent (issue 32 item 4's fault: a member deletes its stack mid-storm).

Each member stack's ``<name>-heartbeat`` rule puts a scheduled event on the central account's default bus
every 5 minutes; the central account counts them per account (metric ``Heartbeats``, namespace
``EcsGuardrail/Org``, dimension ``Account``: deploy/central.yaml, terraform/examples/organisation) and
alarms per account. This is the same decision in code, for the accounts no alarm lists yet (a StackSet's
automatic deployment adds accounts the central stack has not heard of) and for tests: pure, time and
heartbeats come in as arguments.

A member's alerts stop with its stack, so a silent account is also one whose alerts stopped: the
decision names it, with its last heartbeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

__all__ = ["HEARTBEAT_MINUTES", "Silent", "silent_accounts"]

#: a member stack's heartbeat interval (the rule's ``rate(5 minutes)``), minutes
HEARTBEAT_MINUTES = 5


@dataclass(frozen=True, slots=True)
class Silent:
    """An account that sent no heartbeat for ``silent_minutes``: ``account`` (12 digits), ``last`` (its
    newest heartbeat within the lookback, ``None``: none at all) and ``minutes`` since it (``None``)."""

    account: str
    last: datetime | None
    minutes: int | None

    def line(self) -> str:
        """``account 333333333333 silent for 35 min (last heartbeat 2026-12-04T10:00:00Z)``."""
        if self.last is None:
            return f"account {self.account} silent: no heartbeat in the lookback"
        return (f"account {self.account} silent for {self.minutes} min "
                f"(last heartbeat {self.last.strftime('%Y-%m-%dT%H:%M:%SZ')})")


def silent_accounts(expected: Iterable[str], last: Mapping[str, datetime | None], now: datetime,
                    silent_minutes: int = 15) -> list[Silent]:
    """The accounts of ``expected`` whose newest heartbeat (``last``; missing or ``None``: none seen) is
    more than ``silent_minutes`` before ``now`` (aware datetimes), sorted by account id.

    Raises:
        ValueError: ``silent_minutes`` under twice the heartbeat interval (10): one lost heartbeat would
            name a healthy account.
    """
    if silent_minutes < 2 * HEARTBEAT_MINUTES:
        raise ValueError(f"silent_minutes {silent_minutes}: at least {2 * HEARTBEAT_MINUTES} (two heartbeats), "
                         "so one lost heartbeat never names an account")
    out = []
    for account in sorted(set(expected)):
        seen = last.get(account)
        if seen is None:
            out.append(Silent(account, None, None))
            continue
        minutes = int((now - seen).total_seconds() // 60)
        if minutes > silent_minutes:
            out.append(Silent(account, seen, minutes))
    return out
