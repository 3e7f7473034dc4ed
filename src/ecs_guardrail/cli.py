"""The operator's command line: replay, capture, timeline, restore, audit.

Exit status: 0 when the command ran (whatever the watchdog decided), 2 for bad input (a scenario
that cannot be read, an unknown setting), 1 when AWS refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError, PartialCredentialsError

from ecs_guardrail import __version__
from ecs_guardrail.core.errors import GuardrailError, ScenarioError
from ecs_guardrail.replay.engine import DEFAULT_ENGINE, ENGINES

__all__ = ["main", "build_parser"]

DEFAULT_SCENARIO = "events/scenarios/bad-image-dev"


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _sweep(text: str) -> tuple[str, list[str]]:
    from ecs_guardrail.replay.sweep import parse_sweep

    try:
        return parse_sweep(text)
    except ScenarioError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DEFAULT_LOG_GROUP = "/aws/events/ecs-guardrail/ecs"  # template.yaml EcsEventsLogGroup, stack ecs-guardrail


def _check_output(path: Path | None, flag: str) -> None:
    """Fail before the replay, not after it: the folder of an output file must exist.

    Raises:
        ScenarioError: a missing folder, or a path that is a folder.
    """
    if path is None:
        return
    if path.is_dir():
        raise ScenarioError(f"{flag} {path}: is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ScenarioError(f"{flag} {path}: folder {parent} does not exist")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ecs-guardrail", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ecs-guardrail {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("replay", help="replay a scenario folder on an embedded AWS (in memory; moto with --engine "
                                      "moto) and report")
    r.add_argument("scenario", nargs="?", default=None,
                   help=f"scenario folder (default: the bundled {DEFAULT_SCENARIO})")
    r.add_argument("--json", action="store_true", help="JSON Lines on stdout: decisions, then one summary")
    r.add_argument("--set", dest="overrides", action="append", type=_kv, default=[], metavar="KEY=VALUE",
                   help="override a setting of settings.env (repeatable)")
    r.add_argument("--alerts-out", type=Path, metavar="FILE.jsonl",
                   help="write what each channel would have received (JSON Lines: one line per alert per channel, "
                        "SNS subject and message, Slack text and blocks, stamped with the event time)")
    r.add_argument("--timeline", action="store_true", help="print the incident timeline after the report")
    r.add_argument("--calls", action="store_true", help="print AWS calls by operation to stderr")
    r.add_argument("--plot", type=Path, metavar="FILE.png",
                   help="draw healthy hosts per service with stops and decisions, one file per cluster "
                        "(FILE.png, then FILE-CLUSTER.png; needs [plot])")
    r.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                   help="fast (default): an in-memory history table and AWS (replay/memory_aws.py), no moto; "
                        "moto: everything through moto in process (the reference); both print the same")
    r.add_argument("--sweep", action="append", type=_sweep, default=[], metavar="KEY=V1,V2",
                   help="replay once per combination of these settings' values (repeatable) and print one row "
                        "per combination: decisions by action, services scaled, held, watchdog service-minutes")

    c = sub.add_parser("capture", help="write a scenario folder from a real account: fleet.json, events.jsonl "
                                       "(the raw-event log group), healthy_hosts.csv")
    c.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="folder to write (created; files replaced)")
    c.add_argument("--cluster", dest="clusters", action="append", required=True, metavar="CLUSTER",
                   help="cluster name (repeatable)")
    c.add_argument("--since", required=True, type=_time, help="ISO 8601 start (UTC unless an offset is given)")
    c.add_argument("--until", required=True, type=_time, help="ISO 8601 end")
    c.add_argument("--log-group", default=None,
                   help=f"the stack's raw-event log group (default: {DEFAULT_LOG_GROUP})")
    c.add_argument("--region", default=None, help="AWS region (default: the environment's)")

    t = sub.add_parser("timeline", help="the incident timeline of a cluster, read from the history table")
    t.add_argument("--cluster", required=True, help="the ECS cluster's name")
    t.add_argument("--since", required=True, type=_time, help="ISO 8601 start (UTC unless an offset is given)")
    t.add_argument("--until", required=True, type=_time, help="ISO 8601 end")
    t.add_argument("--service", default=None, help="only this service's lines and availability")
    t.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text",
                   help="output format (default: text)")
    t.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw healthy hosts per service (needs [plot])")
    t.add_argument("--table", default=None, help="history table (default: $HISTORY_TABLE)")
    t.add_argument("--region", default=None, help="AWS region (default: the environment's)")

    s = sub.add_parser("restore", help="put back the desired count the watchdog replaced with 0")
    s.add_argument("--cluster", required=True, help="the ECS cluster's name")
    s.add_argument("--service", required=True, help="the ECS service's name")
    s.add_argument("--table", default=None, help="history table (default: $HISTORY_TABLE)")
    s.add_argument("--region", default=None, help="AWS region (default: the environment's)")
    s.add_argument("--count", type=int, default=None, metavar="N",
                   help="desired count to put back when the table lost the episode and the service's "
                        "previous-desired-count tag is above its bound (MaxCapacity, or the recorded history)")

    a = sub.add_parser("audit", help="who can stop each service's tasks, and how fast: health checks, deployment "
                                     "safety, watchdog scope (read-only)")
    where = a.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", dest="clusters", action="append", metavar="CLUSTER",
                       help="a cluster name or ARN of the account (repeatable)")
    where.add_argument("--scenario", type=Path, metavar="DIR", help="audit a scenario's fleet built in moto")
    a.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                   help="output format (default: text; json: one line per finding, then a summary)")
    a.add_argument("--fail-on", choices=("high", "medium", "never"), default="high",
                   help="exit 1 when a finding of this severity or higher exists (default: high)")
    a.add_argument("--set", dest="overrides", action="append", type=_kv, default=[], metavar="KEY=VALUE",
                   help="override a setting (ALERT_ONLY_CLUSTERS, MAX_ACTION_FRACTION, AUDIT_*; repeatable)")
    a.add_argument("--region", default=None,
                   help="AWS region (default: the environment's; --scenario uses fleet.json's)")
    return p


def _time(text: str) -> Any:
    from ecs_guardrail.incident import parse_time

    try:
        return parse_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO 8601 time, got {text!r}") from None


def _find_default() -> Path:
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = base / DEFAULT_SCENARIO
        if candidate.is_dir():
            return candidate
    raise ScenarioError(f"no scenario given and {DEFAULT_SCENARIO} not found (run from the repository)")


def cmd_replay(args: argparse.Namespace) -> int:
    from ecs_guardrail.local import load_scenario, replay

    folder = Path(args.scenario) if args.scenario else _find_default()
    _check_output(args.plot, "--plot")
    _check_output(args.alerts_out, "--alerts-out")
    if args.sweep:
        return cmd_sweep(args, folder)
    scenario = load_scenario(folder, dict(args.overrides))

    def on_reject(n: int, reason: str) -> None:
        print(f"{folder.name}/events.jsonl:{n}: rejected: {reason}", file=sys.stderr)

    timelines: list[Any] = []

    def keep_open(aws: Any, res: Any) -> None:
        from ecs_guardrail.incident import load_timelines, scenario_span

        span = scenario_span(scenario)
        if span is None:
            return
        store = res.history
        for c in scenario.fleet["clusters"]:
            timelines.extend(load_timelines(store, c["name"], span[0], span[1], account=scenario.account,
                                            region=scenario.region, config=scenario.settings.policy(),
                                            client_error_ratio=scenario.settings.CLIENT_ERROR_RATIO))
        res.timeline = timelines

    def on_warning(text: str) -> None:
        print(f"{folder.name}: warning: {text}", file=sys.stderr)

    result = replay(scenario, on_reject=on_reject, on_warning=on_warning,
                    keep_open=keep_open if args.timeline or args.plot else None, engine=args.engine)
    if args.plot:
        from ecs_guardrail.plot import PlotUnavailableError, plot_timeline

        n = 0
        used: set[Path] = set()
        for tl in timelines:  # one file per cluster: the first at FILE, the others at FILE-CLUSTER
            path = args.plot if n == 0 else args.plot.with_name(f"{args.plot.stem}-{tl.cluster}{args.plot.suffix}")
            if path in used:  # a cluster of the same name in another account or region: never overwrite
                path = args.plot.with_name(f"{args.plot.stem}-{tl.cluster}-{tl.account or 'own'}-"
                                           f"{tl.region or 'own'}{args.plot.suffix}")
            try:
                plot_timeline(tl, path)
            except PlotUnavailableError:
                raise
            except GuardrailError:
                print(f"--plot: cluster {tl.cluster}: nothing to draw (no samples, crashes, health-check kills "
                      "or decisions)", file=sys.stderr)
                continue
            n += 1
            used.add(path)
            home = f" of account {tl.account} in {tl.region}" if tl.account and tl.region else ""
            print(f"wrote {path} (cluster {tl.cluster}){home}", file=sys.stderr)
    if not args.timeline:
        timelines = []
    if args.alerts_out:
        with args.alerts_out.open("w") as fh:
            for a in result.alerts:
                fh.write(json.dumps(a, sort_keys=True) + "\n")
        channels = sorted({a.get("channel", "?") for a in result.alerts})
        print(f"wrote {args.alerts_out} ({len(result.alerts)} lines: one per alert per channel"
              + (f", {', '.join(channels)}" if channels else "") + ")", file=sys.stderr)
    if args.calls:
        for (svc, op), n in sorted(result.calls.items()):
            print(f"aws-calls {svc}.{op} {n}", file=sys.stderr)
    if args.json:
        out = sys.stdout
        for d in result.decisions:
            out.write(json.dumps(d, sort_keys=False) + "\n")
        for tl in timelines:
            out.write(json.dumps(tl.to_dict()) + "\n")
        out.write(json.dumps(result.summary) + "\n")
        return 0
    from ecs_guardrail.report import print_report

    print_report(folder.name, scenario, result)
    if timelines:
        from ecs_guardrail.core.timeline import render

        for tl in timelines:
            if tl.lines:
                print()
                sys.stdout.write(render(tl, "text"))
    return 0


def cmd_sweep(args: argparse.Namespace, folder: Path) -> int:
    from ecs_guardrail.replay.sweep import render_rows, run_sweep, summary

    if args.timeline or args.plot or args.alerts_out:
        raise ScenarioError("--sweep prints one row per combination; it takes no --timeline, --plot or --alerts-out")

    def on_warning(text: str) -> None:
        print(f"{folder.name}: warning: {text}", file=sys.stderr)

    rows = run_sweep(folder, dict(args.overrides), args.sweep, engine=args.engine, on_warning=on_warning)
    if args.json:
        for r in rows:
            sys.stdout.write(json.dumps(r.to_dict()) + "\n")
        sys.stdout.write(json.dumps(summary(rows)) + "\n")
        return 0
    from ecs_guardrail.report import make_console

    render_rows(rows, make_console())
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from ecs_guardrail.adapters.aws import make_client
    from ecs_guardrail.capture import capture

    if args.until <= args.since:
        raise ScenarioError("--until must be after --since")
    report = capture(lambda service: make_client(service, region=args.region), args.clusters, args.since,
                     args.until, args.out_dir, log_group=args.log_group or DEFAULT_LOG_GROUP)
    for line in report.problems:
        print(f"capture: {line}", file=sys.stderr)
    print(report.summary_line())
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    import os

    from ecs_guardrail.adapters.aws import make_client
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.core.timeline import render
    from ecs_guardrail.incident import load_timelines
    from ecs_guardrail.settings import load_settings

    table = args.table or os.environ.get("HISTORY_TABLE")
    if not table:
        raise ScenarioError("timeline needs --table or HISTORY_TABLE")
    if args.until <= args.since:
        raise ScenarioError("--until must be after --since")
    store = HistoryStore(make_client("dynamodb", region=args.region), table)
    settings = load_settings()
    timelines = load_timelines(store, args.cluster, args.since, args.until, service=args.service,
                               config=settings.policy(), client_error_ratio=settings.CLIENT_ERROR_RATIO)
    for n, tl in enumerate(timelines):  # one per account and region holding a cluster of that name
        if n:
            sys.stdout.write("\n")
        sys.stdout.write(render(tl, args.format))
    if args.plot:
        from ecs_guardrail.plot import plot_timeline

        for n, tl in enumerate(timelines):
            path = args.plot if n == 0 else args.plot.with_name(
                f"{args.plot.stem}-{tl.account or 'own'}-{tl.region or 'own'}{args.plot.suffix}")
            plot_timeline(tl, path)
            print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    import os

    from ecs_guardrail.restore import restore_service

    table = args.table or os.environ.get("HISTORY_TABLE")
    if not table:
        raise ScenarioError("restore needs --table or HISTORY_TABLE")
    outcome = restore_service(args.cluster, args.service, table=table, region=args.region, count=args.count)
    print(outcome.message)
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    """``audit``: 1 when a finding at or above ``--fail-on`` exists, 2 for bad input (unknown cluster,
    unreadable scenario, unknown setting), else 0."""
    from ecs_guardrail.audit import account_settings, audit_account, audit_scenario, render
    from ecs_guardrail.core.errors import ClusterNotFoundError

    overrides = dict(args.overrides)
    if args.scenario is not None:
        def on_warning(text: str) -> None:
            print(f"{args.scenario.name}: warning: {text}", file=sys.stderr)

        run = audit_scenario(args.scenario, overrides, args.fail_on, on_warning=on_warning)
    else:
        from ecs_guardrail.adapters.aws import make_client

        config = account_settings(overrides)
        try:
            run = audit_account(args.clusters, config, args.fail_on,
                                lambda service: make_client(service, region=args.region))
        except ClusterNotFoundError as exc:
            print(f"ecs-guardrail: {exc}", file=sys.stderr)
            return 2
    render(run, args.format, sys.stdout)
    return run.exit_status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "replay":
            return cmd_replay(args)
        if args.command == "timeline":
            return cmd_timeline(args)
        if args.command == "capture":
            return cmd_capture(args)
        if args.command == "restore":
            return cmd_restore(args)
        if args.command == "audit":
            return _cmd_audit(args)
    except ScenarioError as exc:
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return 2
    except GuardrailError as exc:
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f"ecs-guardrail: AWS refused: {exc}", file=sys.stderr)
        return 1
    except (NoRegionError, NoCredentialsError, PartialCredentialsError) as exc:
        print(f"ecs-guardrail: {exc} (set AWS_REGION or --region, and AWS credentials)", file=sys.stderr)
        return 2
    except BotoCoreError as exc:  # endpoint unreachable, bad profile, ...: one line, not a traceback
        print(f"ecs-guardrail: AWS unreachable: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
