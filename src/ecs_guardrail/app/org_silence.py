"""``python -m ecs_guardrail.app.org_silence``: the member accounts whose ecs-guardrail heartbeat stopped.

Run in the central account (its credentials, read only: ``cloudwatch:GetMetricData``, and
``cloudformation:ListStackInstances`` with ``--stack-set``). The accounts to expect are ``--accounts``
and/or every account the StackSet ``--stack-set`` deploys to (the automatic deployment's new accounts
included, which no alarm of deploy/central.yaml lists yet). Prints one line per silent account; exit 1
when any is silent, 0 when none, 2 for bad arguments, 3 (one line, as the CLI's commands) when AWS is
unreachable, no region or credentials are set, or AWS refused. docs/deploy.md, "An organisation".
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime
from typing import Any

from ecs_guardrail.adapters.heartbeats import last_heartbeats, stack_set_accounts
from ecs_guardrail.core.silence import HEARTBEAT_MINUTES, silent_accounts

__all__ = ["main", "silent_report", "MAX_SILENT_MINUTES"]

#: the longest silence asked about (a week): the lookback is four times it, within CloudWatch's retention
MAX_SILENT_MINUTES = 7 * 24 * 60
_ACCOUNT = re.compile(r"[0-9]{12}")


def silent_report(cloudwatch: Any, accounts: list[str], now: datetime, silent_minutes: int = 15,
                  cloudformation: Any = None, stack_set: str | None = None) -> list[str]:
    """One line per silent account (:meth:`ecs_guardrail.core.silence.Silent.line`), sorted by account."""
    expected = set(accounts)
    if stack_set:
        expected |= set(stack_set_accounts(cloudformation, stack_set))
    ordered = sorted(expected)
    last = last_heartbeats(cloudwatch, ordered, now, lookback_minutes=max(180, 4 * silent_minutes))
    return [s.line() for s in silent_accounts(ordered, last, now, silent_minutes)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ecs_guardrail.app.org_silence",
                                description=__doc__.split("\n")[0].replace("``", ""))  # no RST quotes in --help
    p.add_argument("--accounts", default="", help="comma-separated 12-digit member account ids")
    p.add_argument("--stack-set", help="also every account this StackSet deploys to")
    p.add_argument("--silent-minutes", type=int, default=15, help="minutes without a heartbeat (default 15)")
    p.add_argument("--region", help="the central account's region (default: your AWS configuration's)")
    args = p.parse_args(argv)
    accounts = [a.strip() for a in args.accounts.split(",") if a.strip()]
    bad = [a for a in accounts if not _ACCOUNT.fullmatch(a)]  # ASCII digits only (str.isdigit takes '١')
    stack_set = (args.stack_set or "").strip() or None
    if bad:
        print(f"org_silence: --accounts takes comma-separated 12-digit account ids, not {', '.join(bad)}",
              file=sys.stderr)
        return 2
    if not (accounts or stack_set):
        print("org_silence: give --accounts (comma-separated 12-digit ids), --stack-set NAME, or both",
              file=sys.stderr)
        return 2
    if not 2 * HEARTBEAT_MINUTES <= args.silent_minutes <= MAX_SILENT_MINUTES:
        print(f"org_silence: --silent-minutes {args.silent_minutes}: from {2 * HEARTBEAT_MINUTES} (two heartbeats) to "
              f"{MAX_SILENT_MINUTES} (a week)", file=sys.stderr)
        return 2
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

    try:
        session = boto3.session.Session(region_name=args.region)
        lines = silent_report(session.client("cloudwatch"), accounts, datetime.now(UTC), args.silent_minutes,
                              session.client("cloudformation") if stack_set else None, stack_set)
    except ValueError as exc:
        print(f"org_silence: {exc}", file=sys.stderr)
        return 2
    except NoRegionError:
        print("org_silence: no AWS region: pass --region or set AWS_DEFAULT_REGION", file=sys.stderr)
        return 3
    except NoCredentialsError as exc:
        print(f"org_silence: {exc}: set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the central "
              "account's)", file=sys.stderr)
        return 3
    except ClientError as exc:
        print(f"org_silence: AWS refused: {exc}", file=sys.stderr)
        return 3
    except BotoCoreError as exc:
        print(f"org_silence: AWS unreachable: {exc}", file=sys.stderr)
        return 3
    for line in lines:
        print(line)
    if not lines:
        print("every member account sent a heartbeat")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
