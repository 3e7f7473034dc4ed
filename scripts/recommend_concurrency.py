#!/usr/bin/env python3
"""Print the watchdog's recommended reserved concurrency for an account (issue 32 item 3).

Usage: ``python3 scripts/recommend_concurrency.py SERVICES [--per-service-minute 1] [--crash-threshold 5]
[--quota 1000]``; prints the value for ``WatchdogReservedConcurrency`` (SAM) /
``watchdog_reserved_concurrency`` (Terraform) and the formula's terms (ecs_guardrail.core.concurrency,
docs/deploy.md "Sizing the watchdog's reserved concurrency"). Count the account's services with
``aws ecs list-services --cluster C --query 'length(serviceArns)'`` per cluster.
"""

from __future__ import annotations

import argparse
import sys

from ecs_guardrail.core.concurrency import recommended_reserved_concurrency


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("services", type=int, help="ECS services in the account (every cluster the watchdog watches)")
    ap.add_argument("--per-service-minute", type=float, default=1.0,
                    help="stopped tasks a minute of one crash-looping service in a storm (default 1)")
    ap.add_argument("--crash-threshold", type=int, default=5, help="CRASH_THRESHOLD (default 5)")
    ap.add_argument("--quota", type=int, default=1000, help="the account's Lambda concurrent executions quota")
    args = ap.parse_args(argv)
    try:
        s = recommended_reserved_concurrency(args.services, stopped_per_service_minute=args.per_service_minute,
                                             crash_threshold=args.crash_threshold, quota=args.quota)
    except ValueError as exc:
        print(f"recommend_concurrency: {exc}", file=sys.stderr)
        return 2
    print(f"WatchdogReservedConcurrency / watchdog_reserved_concurrency: {s.reserved}")
    print(f"  {s.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
