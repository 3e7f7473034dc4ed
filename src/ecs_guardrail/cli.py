"""The operator's command line: replay, capture, timeline, restore, audit.

Exit status (:data:`EXIT_CODES`, the README's "Exit status" table, docs/cli.md): 0 the command ran
and there is nothing to act on; 1 it ran and the answer is "no" (audit: a finding at or above
``--fail-on``; restore: the count could not be put back); 2 bad input (usage, a scenario that cannot
be read, an unknown setting, an unknown cluster, table or service, no accepted event); 3 AWS could
not be asked or refused (unreachable endpoint, no region or credentials, access denied): the command
never ran, so a CI job can tell it from "findings"; 130 interrupted (Ctrl-C); 141 the reader of
stdout went away (``| head``), as for a process killed by SIGPIPE. Both of the last two print one
line at most, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ecs_guardrail import __version__
from ecs_guardrail.core.errors import (
    ClusterNotFoundError,
    ConditionFailedError,
    GuardrailError,
    OutputWriteError,
    ScenarioError,
    ServiceAccessDeniedError,
    ServiceNotFoundError,
    SettingsError,
    StateConflictError,
)
from ecs_guardrail.core.lazy import lazy_callable
from ecs_guardrail.replay.engine import DEFAULT_ENGINE, ENGINES

# imported where used, not by ``import ecs_guardrail.cli`` (issue 33 item 2: a small replay's fixed cost):
# botocore's exceptions (a fast replay's in-memory AWS imports them itself; see _botocore_errors) and the
# output writer's module (its dataclass)
_writing = lazy_callable("ecs_guardrail.app.replay_output", "writing")

__all__ = ["main", "build_parser"]

DEFAULT_SCENARIO = "events/scenarios/bad-image-dev"

EXIT_OK = 0
EXIT_NO = 1
EXIT_BAD_INPUT = 2
EXIT_AWS = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process ended by Ctrl-C
EXIT_OUTPUT = 74  # sysexits.h EX_IOERR: an output could not be written
EXIT_PIPE = 141  # 128 + SIGPIPE, as a shell reports `yes | head -1`'s writer

#: every command's exit statuses, {command: {status: meaning}}: the source of the README's table and
#: docs/cli.md (tests/unit/test_cli_reference.py fails when either drifts from it)
EXIT_CODES: dict[str, dict[int, str]] = {
    "replay": {
        EXIT_OK: "the replay ran (whatever the watchdog decided); rejected lines are named on stderr",
        EXIT_BAD_INPUT: "bad input: a scenario that cannot be read, an unknown or invalid setting, a missing "
                        "output folder, an events.jsonl of which no line was accepted, --jobs 0 or a "
                        "--scheduler that does not answer",
    },
    "capture": {
        EXIT_OK: "the scenario folder was written (what could not be read is listed in its CAPTURE.md)",
        EXIT_BAD_INPUT: "bad input: --until not after --since, an OUT_DIR that cannot be created (checked before "
                        "any AWS call), or a cluster that does not exist in this account and region (the folder is "
                        "still written for the others)",
        EXIT_AWS: "AWS unreachable, no region or credentials, or AWS refused",
    },
    "timeline": {
        EXIT_OK: "the timeline was printed (an empty one too)",
        EXIT_BAD_INPUT: "bad input: no --table or HISTORY_TABLE, a table that does not exist in the region, "
                        "--until not after --since, a --plot folder that does not exist",
        EXIT_AWS: "AWS unreachable, no region or credentials, or AWS refused",
    },
    "restore": {
        EXIT_OK: "the count was put back, or the service already runs (a second run changes nothing)",
        EXIT_NO: "the count could not be put back: the service is at 0 and the watchdog recorded no previous "
                 "count, or the count was restored and its scalable target could not be resumed (run it again), "
                 "or its stored summary is unreadable (nothing changed; the message gives the repair, "
                 "docs/runbook.md)",
        EXIT_BAD_INPUT: "bad input: no --table or HISTORY_TABLE, a table, cluster or service that does not exist",
        EXIT_AWS: "AWS unreachable, no region or credentials, or AWS refused",
    },
    "audit": {
        EXIT_OK: "no finding at or above --fail-on",
        EXIT_NO: "a finding at or above --fail-on (default high; never: always 0)",
        EXIT_BAD_INPUT: "bad input: an unknown cluster, an unreadable scenario, an unknown or invalid setting, a "
                        "--health-json file in none of the formats",
        EXIT_AWS: "AWS unreachable, no region or credentials, or AWS refused: the audit never ran",
    },
}
#: statuses every command shares
EXIT_COMMON: dict[int, str] = {
    EXIT_BAD_INPUT: "usage error (argparse: an unknown option, a missing argument)",
    EXIT_OUTPUT: "an output could not be written (a full disk, an unwritable file or folder, a name too long; "
                 "replay checks its output files before it runs): one line on stderr",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C): one line on stderr, no traceback",
    EXIT_PIPE: "stdout was closed by its reader (`| head -1`): quiet, as a process ended by SIGPIPE",
}

_REGION_HINT = ("pass --region or set AWS_DEFAULT_REGION (the SDK reads AWS_DEFAULT_REGION or the profile's "
                "region in ~/.aws/config; AWS_REGION alone is not read)")
_CREDENTIALS_HINT = ("set AWS_PROFILE (after `aws sso login` where SSO is used) or AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY")


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _overrides(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``--set`` pairs as a dict; a key given twice is an error (a trailing ``--set ALERT_ONLY_CLUSTERS=none``
    must not silently take away an earlier ``--set ALERT_ONLY_CLUSTERS=production``).

    Raises:
        ScenarioError: a key given twice, both values named.
    """
    out: dict[str, str] = {}
    for key, value in pairs:
        if key in out:
            raise ScenarioError(f"--set: {key} is given twice ({out[key]!r} and {value!r}); give it once")
        out[key] = value
    return out


def _sweep(text: str) -> tuple[str, list[str]]:
    from ecs_guardrail.replay.settings_sweep import parse_sweep

    try:
        return parse_sweep(text)
    except ScenarioError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DEFAULT_LOG_GROUP = "/aws/events/ecs-guardrail/ecs"  # template.yaml EcsEventsLogGroup, stack ecs-guardrail


#: what --plot writes (matplotlib's formats by file name; checked before the replay runs)
PLOT_FORMATS = (".png", ".svg", ".pdf")


def _check_output(path: Path | None, flag: str) -> None:
    """Fail before the replay, not after it: the folder of an output file must exist, and the file must
    be one this process can write (opened for writing without truncating it; a file that did not exist
    is created and removed again): a name too long, a folder the user cannot write, a read-only file
    system or a path under ``/sys`` is found before anything runs.

    Raises:
        ScenarioError: a missing folder, a path that is a folder, a --plot name of no chart format.
        OutputWriteError: the file cannot be written (exit 74, as the same error after the replay).
    """
    import os

    if path is None:
        return
    with _writing(str(path), flag):  # stat itself fails for a name too long (ENAMETOOLONG)
        if path.is_dir():
            raise ScenarioError(f"{flag} {path}: is a folder; give a file name")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise ScenarioError(f"{flag} {path}: folder {parent} does not exist")
        if flag == "--plot" and path.suffix.lower() not in PLOT_FORMATS:
            raise ScenarioError(f"{flag} {path}: a chart is written as {', '.join(PLOT_FORMATS)}; "
                                f"give such a file name (FILE.png)")
        if path.exists():  # a regular file, /dev/stdout, a FIFO: never opened here (a FIFO would block)
            if not os.access(path, os.W_OK):
                raise PermissionError(13, "Permission denied", str(path))
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        os.unlink(path)


def _restore_count(text: str) -> int:
    """``restore --count``: a desired count of 1 to 10,000 (ECS ``UpdateService`` ``desiredCount``; 0 is no
    restore, and fleet.json's bound is the same), checked before AWS is asked anything."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    from ecs_guardrail.core.restore_count import MAX_RESTORE_COUNT

    if not 1 <= n <= MAX_RESTORE_COUNT:
        raise argparse.ArgumentTypeError(f"a desired count to put back is 1 to {MAX_RESTORE_COUNT:,}, got {n}")
    return n


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``ecs-guardrail`` command line: one subcommand per verb (each added by its ``_add_*`` step).

    ``command``: build only that subcommand's arguments (:func:`main` passes the one its command line
    names, :func:`_command_named`): every subcommand is still listed, with its one-line help, as
    ``--help`` and an invalid choice list them, but the others' arguments are not built (issue 33 item 2:
    about 3 ms of a small replay's CPU). ``None``: every subcommand's, as ``--help`` needs them.
    """
    p = _Parser(prog="ecs-guardrail", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"ecs-guardrail {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    for add in (_add_replay, _add_capture, _add_timeline, _add_restore, _add_audit):
        add(sub if command is None else _Listed(sub, command))
    _describe(sub, command)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse's parser (each subcommand's too: ``add_subparsers`` makes its own class), but ``--help`` and
    ``--version`` write stdout as any command's output does: argparse swallows an ``OSError`` of that write,
    so a full disk lost the help with status 0 (or 120 from the interpreter's flush at exit) and a closed
    pipe was not 141; :func:`_main` gives them the statuses every command has (74, 141)."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message and file is not None and file is sys.stdout:
            file.write(message)
            return
        super()._print_message(message, file)


class _Listed:
    """The subparsers action as an ``_add_*`` step sees it when only ``command`` is built: ``add_parser``
    adds every subcommand (its name and one-line help); the arguments of any other are dropped unbuilt."""

    def __init__(self, sub: Any, command: str) -> None:
        self._sub, self._command = sub, command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        parser = self._sub.add_parser(name, **kwargs)
        return parser if name == self._command else _Unbuilt()


class _Unbuilt:
    """A subcommand's parser not being built: its ``add_argument`` and argument groups do nothing."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_mutually_exclusive_group(self, *args: Any, **kwargs: Any) -> _Unbuilt:
        return self

    add_argument_group = add_mutually_exclusive_group


def _command_named(argv: list[str] | None) -> str | None:
    """The subcommand ``argv`` (``sys.argv[1:]`` when ``None``) runs: its first word that is not an option,
    when that names a subcommand (the top level's options, ``--version`` and ``-h``, take no value); else
    ``None`` (no subcommand, or not one: the whole parser, for its usage and help)."""
    words = sys.argv[1:] if argv is None else argv
    first = next((w for w in words if not w.startswith("-")), None)
    return first if first in EXIT_CODES else None


def _describe(sub: Any, command: str | None = None) -> None:
    """Each subcommand's ``--help`` opens with what it does (its one-line help) and ends with every exit
    status it can return: its own (:data:`EXIT_CODES`), then those every command shares (:data:`EXIT_COMMON`:
    usage, output, 130 interrupted, 141 stdout closed), both from the tables the README's "Exit status"
    table and docs/cli.md are generated from, so ``restore --help`` alone says what it does and what 1
    means. Wrapped here: the raw formatter keeps the status lines one per line. ``command``: only that
    subcommand's (the others are not built, :func:`build_parser`)."""
    import textwrap
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, parser in sub.choices.items():
        if command is not None and name != command:
            continue
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.description = textwrap.fill(f"{helps[name]}.", width=78)
        parser.epilog = "exit status:\n" + "\n".join(
            textwrap.fill(meaning, width=78, initial_indent=f"  {code:<3}  ", subsequent_indent="       ")
            for code, meaning in sorted(EXIT_CODES[name].items())
        ) + "\nevery command:\n" + "\n".join(
            textwrap.fill(meaning, width=78, initial_indent=f"  {code:<3}  ", subsequent_indent="       ")
            for code, meaning in sorted(EXIT_COMMON.items()))


def _add_replay(sub: Any) -> None:
    """``replay SCENARIO``: its arguments."""
    r = sub.add_parser("replay", help="replay a scenario folder on an embedded AWS (in memory; moto with --engine "
                                      "moto) and report")
    r.add_argument("scenario", nargs="?", default=None,
                   help=f"scenario folder (default: the bundled {DEFAULT_SCENARIO})")
    r.add_argument("--json", action="store_true", help="JSON Lines on stdout: decisions, then one summary")
    r.add_argument("--set", dest="overrides", action="append", type=_kv, default=[], metavar="KEY=VALUE",
                   help="override a setting of settings.env (repeatable)")
    r.add_argument("--alerts-out", type=Path, metavar="FILE.jsonl",
                   help="write what each channel would have received (JSON Lines: one line per alert per channel, "
                        "SNS subject and message, Slack text and blocks, stamped with the event time, each naming "
                        "its route: the ALERT_ROUTES channel, or default)")
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
                        "per combination: decisions by action, services scaled, held (services a hold left running: "
                        "none of their scale-downs followed it), watchdog svc-min (service-minutes at 0 by the "
                        "watchdog's own scale-downs), unavailable svc-min (service-minutes with no healthy host, no "
                        "datapoint or at 0 by the watchdog, as the report counts them); both n/a without "
                        "healthy_hosts.csv")
    r.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="replay the events' partitions by account and cluster (and --sweep's combinations) in N "
                        "processes; the output is the serial replay's, byte for byte (default 1)")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the same partitions on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://HOST:PORT; needs the [dist] extra; workers read the scenario at the same path)")


def _add_capture(sub: Any) -> None:
    """``capture OUT_DIR``: its arguments."""
    c = sub.add_parser("capture", help="write a scenario folder from a real account: fleet.json, events.jsonl "
                                       "(the raw-event log group), healthy_hosts.csv, container_restarts.csv, "
                                       "delivered.csv, logs.jsonl (masked) and CAPTURE.md")
    c.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="folder to write (created; files replaced)")
    c.add_argument("--cluster", dest="clusters", action="append", required=True, metavar="CLUSTER",
                   help="cluster name (repeatable)")
    c.add_argument("--since", required=True, type=_time, help="ISO 8601 start (UTC unless an offset is given)")
    c.add_argument("--until", required=True, type=_time, help="ISO 8601 end")
    c.add_argument("--log-group", default=None,
                   help=f"the stack's raw-event log group (default: {DEFAULT_LOG_GROUP})")
    c.add_argument("--region", default=None, help="AWS region (default: the environment's)")


def _add_timeline(sub: Any) -> None:
    """``timeline``: its arguments."""
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


def _add_restore(sub: Any) -> None:
    """``restore``: its arguments."""
    s = sub.add_parser("restore", help="put back the desired count the watchdog replaced with 0")
    s.add_argument("--cluster", required=True, help="the ECS cluster's name")
    s.add_argument("--service", required=True, help="the ECS service's name")
    s.add_argument("--table", default=None, help="history table (default: $HISTORY_TABLE)")
    s.add_argument("--region", default=None, help="AWS region (default: the environment's)")
    s.add_argument("--count", type=_restore_count, default=None, metavar="N",
                   help="desired count to put back, the operator's word over the table and the tag: needed "
                        "when the table lost the episode (a corrupt summary deleted, docs/runbook.md) and the "
                        "service's previous-desired-count tag is missing or above its bound (MaxCapacity, or "
                        "the recorded history)")


def _add_audit(sub: Any) -> None:
    """``audit``: its arguments."""
    a = sub.add_parser("audit", help="who can stop each service's tasks, and how fast: health checks, deployment "
                                     "safety, watchdog scope (read-only)")
    where = a.add_mutually_exclusive_group(required=True)
    where.add_argument("--cluster", dest="clusters", action="append", metavar="CLUSTER",
                       help="a cluster name or ARN of the account (repeatable)")
    where.add_argument("--scenario", type=Path, metavar="DIR", help="audit a scenario's fleet built in moto")
    where.add_argument("--health-json", type=Path, metavar="FILE",
                       help="read a saved health response (Spring Boot Actuator, MicroProfile Health, ASP.NET "
                            "Core) and list what can turn the load balancer's check DOWN; reads the file only")
    a.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                   help="output format (default: text; json: one line per finding, then a summary)")
    a.add_argument("--fail-on", choices=("high", "medium", "never"), default="high",
                   help="exit 1 when a finding of this severity or higher exists (default: high)")
    a.add_argument("--set", dest="overrides", action="append", type=_kv, default=[], metavar="KEY=VALUE",
                   help="override a setting (ALERT_ONLY_CLUSTERS, MAX_ACTION_FRACTION, AUDIT_*; repeatable)")
    a.add_argument("--region", default=None,
                   help="AWS region (default: the environment's; --scenario uses fleet.json's)")


def _time(text: str) -> Any:
    from ecs_guardrail.app.timeline import parse_time

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


#: the cyclic GC's first-generation threshold in a ``replay`` process (CPython's default is 700): a replay
#: allocates many short-lived containers (items read back from the store), and with the default most of
#: them were traversed by a collection before they died (a 800-service storm: 3,663 collections, about a
#: quarter of its CPU; bench/storm.py). Cycles are still collected, 20,000 allocations apart.
REPLAY_GC_THRESHOLD = 20_000


def cmd_replay(args: argparse.Namespace) -> int:
    """``replay``, with the GC's first threshold at :data:`REPLAY_GC_THRESHOLD` while it runs (put back
    after: a replay run in process, as the tests run it, leaves the caller's collector as it was)."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(max(REPLAY_GC_THRESHOLD, before[0]), *before[1:])
    try:
        return _cmd_replay(args)
    finally:
        gc.set_threshold(*before)


def _jobs(text: str) -> int:
    """``--jobs``: an integer (its range is checked with the command, as one line and exit 2)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of processes") from None


def _cmd_replay(args: argparse.Namespace) -> int:
    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import check_events_file, load_scenario

    if args.scenario is not None and not args.scenario.strip():
        # `replay ""` (an unset shell variable) is not "no scenario": never the bundled one in its place
        raise ScenarioError("replay: the scenario folder is an empty string (an unset variable?); give a folder, "
                            f"or none for the bundled {DEFAULT_SCENARIO}")
    folder = Path(args.scenario) if args.scenario else _find_default()
    if folder.name in ("", ".."):  # `replay .` or `replay ..`: the folder's own name titles the report
        folder = folder.resolve()
    _check_output(args.plot, "--plot")
    _check_output(args.alerts_out, "--alerts-out")
    if getattr(args, "jobs", 1) != 1 or getattr(args, "scheduler", None) is not None:  # the serial replay: nothing
        from ecs_guardrail.replay.parallel import check_jobs  # to check, and no parallel machinery to import

        check_jobs(getattr(args, "jobs", 1), getattr(args, "scheduler", None))  # --jobs/--scheduler (issue 32.6)
    if args.sweep:
        return cmd_sweep(args, folder)
    scenario = load_scenario(folder, _overrides(args.overrides))
    check_events_file(scenario.events_path, has_samples=scenario.healthy_hosts_path is not None)

    hinted: set[str] = set()

    def on_reject(n: int, reason: str) -> None:
        hint = ""
        if reason.startswith("event is a list,") and "array" not in hinted:  # `[{...},{...}]` on a line
            hinted.add("array")
            hint = " (a JSON array of events? one event per line: `jq -c '.[]'` prints each on its own line)"
        print(f"{folder.name}/events.jsonl:{n}: rejected: {reason}{hint}", file=sys.stderr)

    timelines: list[Any] = []

    def keep_open(aws: Any, res: Any) -> None:
        from ecs_guardrail.app.timeline import load_timelines, scenario_span

        span = scenario_span(scenario, res.clock_span, read_events=False)  # accepted events only
        if span is None:
            return
        from datetime import timedelta

        from ecs_guardrail.replay.healthy_hosts import MAX_REPLAY_MINUTES

        most = timedelta(minutes=MAX_REPLAY_MINUTES)  # an accepted wrong clock (2190): a Query per cluster-hour
        if span[1] - span[0] > most:
            print(f"{folder.name}: warning: the accepted events span {(span[1] - span[0]).days} days; --timeline "
                  f"shows the first {most.days} ({span[0]:%Y-%m-%d} to {span[0] + most:%Y-%m-%d})", file=sys.stderr)
            span = (span[0], span[0] + most)
        store = res.history
        for c in scenario.fleet["clusters"]:
            timelines.extend(load_timelines(store, c["name"], span[0], span[1], account=scenario.account,
                                            region=scenario.region, config=scenario.settings.policy(),
                                            client_error_ratio=scenario.settings.CLIENT_ERROR_RATIO))
        res.timeline = timelines

    def on_warning(text: str) -> None:
        print(f"{folder.name}: warning: {text}", file=sys.stderr)

    from ecs_guardrail.app.progress import progress, progress_enabled

    shown = progress_enabled(json_output=args.json)
    lines = _count_lines(scenario.events_path) if shown else None
    with progress(f"replay {folder.name} ({args.engine})", lines, enabled=shown) as advance:
        def serial() -> Any:
            return replay(scenario, on_reject=on_reject, on_warning=on_warning,
                          keep_open=keep_open if args.timeline or args.plot else None, engine=args.engine,
                          on_progress=advance if shown else None)

        result = _replay_jobs(args, scenario, serial, on_reject, on_warning)
    _pretty_printed_hint(folder, scenario.events_path, result.rejected)
    refused = _none_accepted(folder, result.summary)
    if refused:  # a refused run prints no report, as every other exit-2 case: stdout stays empty
        return refused
    from ecs_guardrail.app.replay_output import ReplayOutputs, write_replay_outputs

    write_replay_outputs(folder.name, scenario, result, timelines,
                         ReplayOutputs(plot=args.plot, alerts_out=args.alerts_out, calls=args.calls,
                                       timeline=args.timeline, json=args.json))
    return EXIT_OK


def _replay_jobs(args: argparse.Namespace, scenario: Any, serial: Callable[[], Any],
                 on_reject: Callable[[int, str], None], on_warning: Callable[[str], None]) -> Any:
    """``serial()``, or with ``--jobs`` > 1 or ``--scheduler`` the same result from partitions by account and
    cluster (:mod:`ecs_guardrail.replay.parallel`)."""
    jobs, scheduler = getattr(args, "jobs", 1), getattr(args, "scheduler", None)
    if jobs <= 1 and scheduler is None:
        return serial()
    from ecs_guardrail.replay.parallel import replay_parallel

    single = [flag for flag, on in (("--calls", args.calls), ("--timeline", args.timeline), ("--plot", args.plot))
              if on]
    return replay_parallel(scenario, _overrides(args.overrides), jobs=jobs, scheduler=scheduler, engine=args.engine,
                           single_process_outputs=single, on_reject=on_reject, on_warning=on_warning, serial=serial)


def _pretty_printed_hint(folder: Path, path: Path, rejected: list[tuple[int, str]]) -> None:
    """One line, once, when rejected lines in a row are together one JSON object or array (a
    pretty-printed event among good lines): the first such run, and how many there are."""
    from ecs_guardrail.replay.scenario import pretty_printed_runs

    runs = pretty_printed_runs(path, [n for n, _ in rejected])
    if not runs:
        return
    first, last = runs[0]
    more = f" ({len(runs) - 1} more such run(s) below it)" if len(runs) > 1 else ""
    print(f"{folder.name}/events.jsonl:{first}-{last}: these {last - first + 1} rejected lines are one "
          f"pretty-printed JSON event{more}: one event per line, as AWS delivers them (`jq -c . FILE` "
          "prints each event on one line)", file=sys.stderr)


def _count_lines(path: Path) -> int:
    """Lines of a file (the progress bar's total), read in 1 MiB blocks."""
    n = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            n += block.count(b"\n")
    return n


def _none_accepted(folder: Path, summary: dict[str, Any]) -> int:
    """2 with one line when lines were read and every one was rejected (nothing is printed on stdout then)."""
    read, rejected = summary.get("events_read", 0), summary.get("events_rejected", 0)
    if read and rejected >= read:
        print(f"ecs-guardrail: {folder.name}/events.jsonl: none of its {read} lines was accepted (reasons above): "
              "one EventBridge event per line, as AWS delivers them", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace, folder: Path) -> int:
    from ecs_guardrail.replay.settings_sweep import render_rows, run_sweep, summary

    if args.timeline or args.plot or args.alerts_out or args.calls:
        raise ScenarioError("--sweep prints one row per combination; it takes no --timeline, --plot, --alerts-out "
                            "or --calls")
    keys = [key for key, _ in args.sweep]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:  # the last one would win silently: give every value of a setting in one --sweep
        raise ScenarioError(f"--sweep {twice[0]} is given twice; give all its values once: "
                            f"--sweep {twice[0]}=V1,V2,...")

    both = sorted(set(keys) & {key for key, _ in args.overrides})
    if both:  # the sweep's values would silently replace the --set one
        raise ScenarioError(f"{both[0]} is given to both --sweep and --set; the sweep replaces the --set value: "
                            f"give it once (--sweep {both[0]}=V1,V2,... or --set {both[0]}=V)")

    def on_warning(text: str) -> None:
        print(f"{folder.name}: warning: {text}", file=sys.stderr)

    from ecs_guardrail.app.progress import progress, progress_enabled
    from ecs_guardrail.replay.settings_sweep import grid

    shown = progress_enabled(json_output=args.json)
    with progress(f"sweep {folder.name} ({args.engine})", len(grid(args.sweep)), enabled=shown) as advance:
        fan = None
        if getattr(args, "jobs", 1) > 1 or getattr(args, "scheduler", None) is not None:
            from ecs_guardrail.replay.parallel import sweep_replays

            fan = sweep_replays(args.jobs, args.scheduler)  # the combinations in parallel (issue 32.6)
        rows = run_sweep(folder, _overrides(args.overrides), args.sweep, engine=args.engine, on_warning=on_warning,
                         on_row=lambda _done, _total: advance(1), fan_out=fan)
    if args.json:
        for r in rows:
            sys.stdout.write(json.dumps(r.to_dict()) + "\n")
        sys.stdout.write(json.dumps(summary(rows)) + "\n")
        return 0
    from ecs_guardrail.app.report import make_console

    render_rows(rows, make_console())
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    from ecs_guardrail.adapters.aws import make_client
    from ecs_guardrail.app.capture import capture

    if args.until <= args.since:
        raise ScenarioError("--until must be after --since")
    report = capture(lambda service: make_client(service, region=args.region), args.clusters, args.since,
                     args.until, args.out_dir, log_group=args.log_group or DEFAULT_LOG_GROUP)
    for line in report.problems:
        print(f"capture: {line}", file=sys.stderr)
    print(report.summary_line())
    if report.missing_clusters:
        print(f"ecs-guardrail: cluster(s) {', '.join(report.missing_clusters)} not found in region {_region(args)}: "
              "check --cluster and --region (the folder holds the others)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def cmd_timeline(args: argparse.Namespace) -> int:
    import os

    from ecs_guardrail.adapters.aws import make_client
    from ecs_guardrail.adapters.history import HistoryStore
    from ecs_guardrail.app.timeline import load_timelines, render
    from ecs_guardrail.settings import load_settings

    table = args.table or os.environ.get("HISTORY_TABLE")
    if not table:
        raise ScenarioError("timeline needs --table or HISTORY_TABLE (the stack's output HistoryTableName)")
    if args.until <= args.since:
        raise ScenarioError("--until must be after --since")
    _check_output(args.plot, "--plot")  # before AWS is asked anything
    store = HistoryStore(make_client("dynamodb", region=args.region), table)
    settings = load_settings()
    timelines = load_timelines(store, args.cluster, args.since, args.until, service=args.service,
                               config=settings.policy(), client_error_ratio=settings.CLIENT_ERROR_RATIO)
    for n, tl in enumerate(timelines):  # one per account and region holding a cluster of that name
        if n:
            sys.stdout.write("\n")
        sys.stdout.write(render(tl, args.format))
    if args.plot:
        from ecs_guardrail.app.plot import plot_timeline

        for n, tl in enumerate(timelines):
            path = args.plot if n == 0 else args.plot.with_name(
                f"{args.plot.stem}-{tl.account or 'own'}-{tl.region or 'own'}{args.plot.suffix}")
            with _writing(str(path), "--plot"):
                plot_timeline(tl, path)
            print(f"wrote {path}", file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """``restore``: 0 put back or already running, 1 nothing recorded for a service at 0 (EXIT_CODES)."""
    from ecs_guardrail.app.restore import restore_service
    from ecs_guardrail.core.errors import NothingToRestoreError

    table = args.table or _env("HISTORY_TABLE")
    if not table:
        raise ScenarioError("restore needs --table or HISTORY_TABLE (the stack's output HistoryTableName)")
    try:
        outcome = restore_service(args.cluster, args.service, table=table, region=args.region, count=args.count)
    except NothingToRestoreError as exc:
        if exc.desired_count > 0:  # restored before (or by hand): running it twice changes nothing
            print(f"{args.cluster}/{args.service} runs with desired count {exc.desired_count} and has no scale-down "
                  "of the watchdog to undo; nothing changed")
            return EXIT_OK
        raise
    print(outcome.message)
    return EXIT_OK


def _cmd_audit(args: argparse.Namespace) -> int:
    """``audit``: 1 when a finding at or above ``--fail-on`` exists, 2 for bad input (unknown cluster,
    unreadable scenario, unknown setting), else 0."""
    from ecs_guardrail.app.audit import account_settings, audit_account, audit_scenario, render
    from ecs_guardrail.core.errors import ClusterNotFoundError

    overrides = _overrides(args.overrides)
    if args.health_json is not None:  # a file, never a service or AWS
        from ecs_guardrail.app.health_json import audit_health_json
        from ecs_guardrail.app.health_json import render as render_health

        report = audit_health_json(args.health_json)
        render_health(report, args.format, sys.stdout, args.fail_on, str(args.health_json))
        return report.exit_status(args.fail_on)
    if args.scenario is not None:
        def on_warning(text: str) -> None:
            print(f"{args.scenario.name}: warning: {text}", file=sys.stderr)

        from ecs_guardrail.app.progress import progress, progress_enabled

        shown = progress_enabled(json_output=args.format == "json")
        with progress(f"audit: building {args.scenario.name}'s fleet in moto", None, enabled=shown):
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


#: ECS's words for a service that cannot be acted on (DescribeServices ``failures[].reason``, a service's
#: ``status``, the error codes of the ECS API reference), in words for the operator
_NOT_FOUND = {
    "MISSING": "no such service",
    "ServiceNotFoundException": "no such service",
    "ClusterNotFoundException": "no such cluster",
    "INACTIVE": "the service was deleted (ECS lists it INACTIVE for a while)",
    "DRAINING": "the service is being deleted (DRAINING)",
}


def _not_found(text: str) -> str:
    """``"dev/api: MISSING"`` -> ``"dev/api: no such service"``; a text without a known token is kept."""
    where, _, token = text.rpartition(": ")
    said = _NOT_FOUND.get(token)
    if where and said:
        return f"{where}: {said}"
    return f"{text}: no such active cluster or service"


def _aws_failure(exc: Exception, args: argparse.Namespace) -> tuple[int, str]:
    """The exit status and one line for an AWS error escaping a command.

    A DynamoDB ``ResourceNotFoundException`` names the table and region (bad input, 2); other
    refusals, an unreachable endpoint and missing region or credentials are 3 (the command never
    ran). Source of the error codes: the DynamoDB API reference, "Common Errors" and each action's
    "Errors" section; botocore's ``NoRegionError`` and ``NoCredentialsError``.
    """
    from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError, PartialCredentialsError

    if isinstance(exc, NoRegionError):
        return EXIT_AWS, f"no AWS region: {_REGION_HINT}"
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return EXIT_AWS, f"{exc}: {_CREDENTIALS_HINT}"
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        code = err.get("Code", "")
        table = getattr(args, "table", None) or _env("HISTORY_TABLE")
        if code == "ResourceNotFoundException" and table and args.command in ("timeline", "restore"):
            return EXIT_BAD_INPUT, (f"history table {table!r} not found in region {_region(args)}: pass --table "
                                    "(the stack's output HistoryTableName) and --region")
        return EXIT_AWS, f"AWS refused: {exc}"
    return EXIT_AWS, f"AWS unreachable: {exc}"


def _env(name: str) -> str | None:
    import os

    return os.environ.get(name) or None


def _region(args: argparse.Namespace) -> str:
    """The region a command's clients use: ``--region``, else the SDK's default (env or profile)."""
    if getattr(args, "region", None):
        return str(args.region)
    import boto3

    return boto3.session.Session().region_name or "(none)"


def _botocore_errors() -> tuple[type[Exception], ...]:
    """botocore's ``(ClientError, BotoCoreError)`` when botocore is imported, else ``()``: an exception of
    theirs exists only once their module is, so a command that never imported botocore never imports it
    to look at an exception."""
    errors = sys.modules.get("botocore.exceptions")
    return (errors.ClientError, errors.BotoCoreError) if errors is not None else ()


def _dispatch(args: argparse.Namespace) -> int:
    commands = {"replay": cmd_replay, "timeline": cmd_timeline, "capture": cmd_capture, "restore": cmd_restore,
                "audit": _cmd_audit}
    try:
        return commands[args.command](args)
    except (ScenarioError, SettingsError) as exc:  # an invalid setting is bad input on every command
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ClusterNotFoundError, ServiceNotFoundError) as exc:
        print(f"ecs-guardrail: {_not_found(str(exc))} in region {_region(args)} (check --cluster, --service and "
              "--region)", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ServiceAccessDeniedError as exc:
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return EXIT_AWS
    except (ConditionFailedError, StateConflictError, OutputWriteError):  # a lost race is no answer; an
        raise  # output that cannot be written is main()'s one line and 74
    except GuardrailError as exc:
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return EXIT_NO
    except Exception as exc:  # botocore's ClientError, BotoCoreError (endpoint unreachable, bad profile, ...): one
        if not isinstance(exc, _botocore_errors()):  # line, not a traceback; anything else propagates as it was
            raise
        status, line = _aws_failure(exc, args)
        print(f"ecs-guardrail: {line}", file=sys.stderr)
        return status


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args``, but an unknown option is reported by its command's parser (``replay``'s
    usage for ``replay X --jsno``, not the top-level one), with the closest option it has.

    Raises:
        SystemExit: 2, argparse's usage error.
    """
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    import difflib  # only for a mistyped option

    command = next((a.choices[args.command] for a in parser._actions  # noqa: SLF001 - argparse has no public way
                    if isinstance(a, argparse._SubParsersAction) and args.command in a.choices), parser)  # noqa: SLF001
    known = [o for a in command._actions for o in a.option_strings]  # noqa: SLF001
    close = difflib.get_close_matches(extra[0], known, n=1)
    command.error(f"unrecognized arguments: {' '.join(extra)}" + (f" (did you mean {close[0]}?)" if close else ""))
    raise AssertionError("unreachable: ArgumentParser.error exits")  # pragma: no cover


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (:data:`EXIT_CODES`, :data:`EXIT_COMMON`).

    Ctrl-C ends with one line and 130; a closed stdout (``| head``) ends quietly with 141: stdout is
    pointed at /dev/null first, so the interpreter's own flush at exit cannot raise again.

    ``argv`` ``None`` (the process's own command line: the console script, ``python -m``): the process
    ends after the command, so what it leaves is frozen for the collector (:func:`gc.freeze`): the
    interpreter's exit collections pass over it instead of traversing it all (a replay leaves its whole
    in-memory AWS: about 6 ms of a small replay's CPU, issue 33 item 2). Exit handlers, flushes and
    module teardown run as before.
    """
    try:
        return _main(argv)
    finally:
        if argv is None:
            import gc

            gc.freeze()


def _main(argv: list[str] | None) -> int:
    """:func:`main`'s command and its exit status."""
    try:
        try:
            args = _parse(build_parser(_command_named(argv)), argv)
        except SystemExit as done:
            if not done.code:  # --help, --version: their text flushed inside the guard, as a command's output
                sys.stdout.flush()
            raise
        status = _dispatch(args)
        sys.stdout.flush()  # inside the guard: a reader gone away surfaces here, not at interpreter exit
        return status
    except KeyboardInterrupt:
        print("\necs-guardrail: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _stdout_gone()
    except OutputWriteError as exc:
        if exc.target == "stdout":
            _stdout_gone()
        print(f"ecs-guardrail: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except OSError as exc:  # stdout or an output file on a full disk (ENOSPC), a device error (EIO)
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS):
            raise
        _stdout_gone()
        name = f" {exc.filename}" if exc.filename else " stdout"
        print(f"ecs-guardrail: cannot write{name}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_OUTPUT


def _stdout_gone() -> int:
    """Point stdout at /dev/null, so the interpreter's own flush at exit cannot raise again: 141."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test's StringIO): nothing left to flush
        pass
    return EXIT_PIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
