#!/usr/bin/env python3
"""Write the repeated alarms of template.yaml from one table: the ``# BEGIN GENERATED`` blocks.

template.yaml used ``Fn::ForEach`` (``AWS::LanguageExtensions``) for its 24 repeated alarms; the SAM CLI
(1.170.0 and earlier) stops on those loops before any AWS call (``'list' object has no attribute
'get'``, aws/aws-sam-cli#5647 and #6903), so ``sam build``/``package``/``deploy`` never ran. The loops
are now expanded here, into plain resources between marker comments:

- ``Conditions``: one ``HasSilenceAccountNN`` per silence slot (``SILENCE_SLOTS``);
- ``Resources``: per function ``Errors``/``Throttles``/``DestinationDeliveryFailures``/``AsyncEventsDropped``,
  per rule ``FailedInvocations``/``InvocationsFailedToBeSentToDlq``, and the optional per-account silence
  alarms (slot NN alarms on the NN-th id of ``SilenceAlarmAccountIds``; the parameter's pattern admits at
  most ``SILENCE_SLOTS`` ids, terraform/variables.tf the same).

terraform/alarms.tf builds the same alarms with ``for_each`` from its locals ``function_alarm_text`` and
``rule_alarm_text`` (tests/infra/test_parity_alarms.py checks they equal the tables below).

Usage: ``python3 scripts/gen_alarms.py`` rewrites template.yaml in place; ``--check`` exits 1 (and
writes nothing) when template.yaml's blocks differ from what the tables give. Only the text between the
markers is ever written, so hand edits elsewhere in template.yaml (IAM, functions) never conflict.
Standard library only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"

#: function label -> its AWS::Serverless::Function logical id
FUNCTIONS = {"Recorder": "RecorderFunction", "Watchdog": "WatchdogFunction", "Availability": "AvailabilityFunction",
             "Sweep": "SweepFunction"}
#: AWS/Lambda metric -> what it means (AlarmDescription).
#: Metrics: docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html
FUNCTION_METRICS = {
    "Errors": "invocations failed (retried twice, then kept in the function-failures queue)",
    "Throttles": "invocations were throttled (async retries keep the events up to the maximum event age)",
    "DestinationDeliveryFailures": (
        "a failed invocation could not be sent to the on-failure destination queue (the event is lost)"
    ),
    "AsyncEventsDropped": "async events were dropped without running (maximum event age or retries exhausted)",
}
#: the AWS::Events::Rule logical ids
RULES = ("RecorderRule", "WatchdogRule", "EcsEventsLogRule", "AvailabilityScheduleRule", "SweepRule")
#: AWS/Events metric -> what it means. Metrics: docs.aws.amazon.com/eventbridge/latest/userguide/eb-monitoring.html
RULE_METRICS = {
    "FailedInvocations": "EventBridge could not invoke the target (it retries, then dead-letters)",
    "InvocationsFailedToBeSentToDlq": (
        "EventBridge could not put a failed event in the dead-letter queue (the event is lost)"
    ),
}
#: most account ids SilenceAlarmAccountIds takes (one alarm slot each)
SILENCE_SLOTS = 20

BEGIN = "  # BEGIN GENERATED {part} by scripts/gen_alarms.py: do not edit, edit its tables and run it\n"
END = "  # END GENERATED {part}\n"
PARTS = ("conditions", "alarms")
#: the resource-name prefix: the Name parameter, else the stack's name (written out: the block is self-contained)
NAME = '!If [HasName, !Ref Name, !Ref "AWS::StackName"]'

_THRESHOLD_ZERO = """\
      Statistic: Sum
      Period: 300
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
      TreatMissingData: notBreaching
      AlarmActions: [!Ref AlertTopic]
"""


def _account(slot: int) -> str:
    """The ``slot``-th (0-based) id of SilenceAlarmAccountIds, "" past the end (padded with commas)."""
    return f'!Select [{slot}, !Split [",", !Sub "${{SilenceAlarmAccountIds}}{"," * SILENCE_SLOTS}"]]'


def render_conditions() -> str:
    """The Conditions block: ``HasSilenceAccountNN`` is true when the list has an NN-th id."""
    slots = range(1, SILENCE_SLOTS + 1)
    return "".join(f'  HasSilenceAccount{n:02d}: !Not [!Equals [{_account(n - 1)}, ""]]\n' for n in slots)


def render_alarms() -> str:
    """The Resources block: every function, rule and silence-slot alarm, in table order."""
    out = ["  # Per function: errors, throttles, and the async failure paths failing themselves.\n"]
    for label, function in FUNCTIONS.items():
        for metric, text in FUNCTION_METRICS.items():
            out.append(
                f"  {label}{metric}Alarm:\n"
                "    Type: AWS::CloudWatch::Alarm\n"
                "    Properties:\n"
                f'      AlarmName: !Sub "${{{function}}}-{metric}"\n'
                f'      AlarmDescription: "{label} function (AWS/Lambda {metric}): {text}"\n'
                "      Namespace: AWS/Lambda\n"
                f"      MetricName: {metric}\n"
                f"      Dimensions: [{{Name: FunctionName, Value: !Ref {function}}}]\n" + _THRESHOLD_ZERO
            )
    out.append("  # Per rule: the target could not be invoked, or its dead letter could not be kept.\n")
    for rule in RULES:
        for metric, text in RULE_METRICS.items():
            out.append(
                f"  {rule}{metric}Alarm:\n"
                "    Type: AWS::CloudWatch::Alarm\n"
                "    Properties:\n"
                f'      AlarmName: !Sub "${{{rule}}}-{metric}"\n'
                f'      AlarmDescription: "{rule} (AWS/Events {metric}): {text}"\n'
                "      Namespace: AWS/Events\n"
                f"      MetricName: {metric}\n"
                f"      Dimensions: [{{Name: RuleName, Value: !Ref {rule}}}]\n" + _THRESHOLD_ZERO
            )
    out.append(
        "  # Optional: one alarm per listed account that sent no ECS event for SilenceAlarmMinutes (a dead\n"
        "  # forwarder, a lost bus permission). Off by default: a quiet account at night is normal for some\n"
        "  # fleets. Slot NN watches the NN-th id of SilenceAlarmAccountIds.\n"
    )
    for n in range(1, SILENCE_SLOTS + 1):
        account = _account(n - 1)
        out.append(
            f"  AccountSilence{n:02d}Alarm:\n"
            "    Type: AWS::CloudWatch::Alarm\n"
            f"    Condition: HasSilenceAccount{n:02d}\n"
            "    Properties:\n"
            f"      AlarmName: !Sub [\"${{N}}-no-ecs-events-from-${{Account}}\", {{N: {NAME}, Account: {account}}}]\n"
            "      AlarmDescription: !Sub\n"
            '        - "No ECS event from account ${Account} reached the raw event log for SilenceAlarmMinutes."\n'
            f"        - {{Account: {account}}}\n"
            "      Namespace: EcsGuardrail/Events\n"
            "      MetricName: EcsEvents\n"
            f"      Dimensions: [{{Name: Account, Value: {account}}}]\n"
            "      Statistic: Sum\n"
            "      Period: 60\n"
            "      EvaluationPeriods: !Ref SilenceAlarmMinutes\n"
            "      DatapointsToAlarm: !Ref SilenceAlarmMinutes\n"
            "      Threshold: 1\n"
            "      ComparisonOperator: LessThanThreshold\n"
            "      TreatMissingData: breaching\n"
            "      AlarmActions: [!Ref AlertTopic]\n"
            "      OKActions: [!Ref AlertTopic]\n"
        )
    return "".join(out)


RENDER = {"conditions": render_conditions, "alarms": render_alarms}


def update(text: str) -> str:
    """``text`` (template.yaml) with each generated block replaced by its rendering.

    Raises ValueError when a block's BEGIN or END marker is missing, repeated, or out of order.
    """
    for part in PARTS:
        begin, end = BEGIN.format(part=part), END.format(part=part)
        if text.count(begin) != 1 or text.count(end) != 1:
            raise ValueError(f"template.yaml needs exactly one {begin.strip()!r} and one {end.strip()!r} line")
        head, rest = text.split(begin)
        _, tail = rest.split(end)
        if end in head:
            raise ValueError(f"{end.strip()!r} comes before its BEGIN marker")
        text = head + begin + RENDER[part]() + end + tail
    return text


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only compare) the generated blocks of ``--template``; 0 when current."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the blocks are not current; write nothing")
    parser.add_argument("--template", type=Path, default=TEMPLATE)
    args = parser.parse_args(argv)
    current = args.template.read_text()
    try:
        wanted = update(current)
    except ValueError as exc:
        print(f"gen_alarms: {exc}", file=sys.stderr)
        return 2
    if wanted == current:
        print(f"gen_alarms: {args.template.name} is current")
        return 0
    if args.check:
        print(f"gen_alarms: {args.template.name} is not current: run python3 scripts/gen_alarms.py", file=sys.stderr)
        return 1
    args.template.write_text(wanted)
    print(f"gen_alarms: wrote {args.template.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
