"""Each function's role in template.yaml and in terraform/, as concrete IAM policy statements, and an IAM
policy evaluator over them.

Evaluation (IAM User Guide, "Policy evaluation logic", identity-based policies of one account): an
explicit Deny whose action, resource and condition match wins; otherwise an Allow that matches allows;
otherwise the request is implicitly denied. Action and resource matching is moto's
(``moto.iam.access_control.IAMPolicyStatement``, the engine of moto's IAM enforcement, run on the
statement without its Condition: ``*`` wildcards, Action/NotAction, Resource lists). moto 5 evaluates
only ``StringEquals`` conditions and passes every other operator (it fails open), so conditions are
evaluated here, for the operators the templates use, and an operator not listed is an error (fails
closed): :data:`OPERATORS`.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import iac
from iam_calls import Request
from moto.iam.access_control import IAMPolicyStatement, PermissionResult
from parity import TF, cfn_statements, tf_source_documents

Statement = dict[str, Any]


def _string_equals(want: list[str], have: list[str] | None) -> bool:
    return have is not None and len(have) == 1 and have[0] in want


def _string_like(want: list[str], have: list[str] | None) -> bool:
    return have is not None and len(have) == 1 and any(fnmatch.fnmatchcase(have[0], w) for w in want)


def _for_all_values_string_equals(want: list[str], have: list[str] | None) -> bool:
    return all(v in want for v in (have or []))  # true for a missing key: hence the templates' Null check


def _for_any_value_string_equals(want: list[str], have: list[str] | None) -> bool:
    return any(v in want for v in (have or []))


def _null(want: list[str], have: list[str] | None) -> bool:
    (flag,) = want
    return (have is None) == (flag.lower() == "true")


#: condition operator -> (policy values, request values or None when the key is absent) -> matches
OPERATORS: dict[str, Callable[[list[str], list[str] | None], bool]] = {
    "StringEquals": _string_equals,
    "StringLike": _string_like,
    "ArnLike": _string_like,
    "ForAllValues:StringEquals": _for_all_values_string_equals,
    "ForAnyValue:StringEquals": _for_any_value_string_equals,
    "Null": _null,
}


def _conditions_hold(statement: Statement, context: dict[str, list[str]]) -> bool:
    lowered = {k.lower(): v for k, v in context.items()}
    for operator, keys in (statement.get("Condition") or {}).items():
        if operator not in OPERATORS:
            raise ValueError(f"condition operator {operator!r} is not evaluated here (add it to OPERATORS)")
        for key, values in keys.items():
            if not OPERATORS[operator](iac.as_list(values), lowered.get(key.lower())):
                return False
    return True


_PATTERN = re.compile(r"[A-Za-z0-9:/*_.\-]+")


def _matches(statement: Statement, request: Request) -> bool:
    """Action (case-insensitive, as IAM compares actions) and resource, by moto's statement matching."""
    bare = {k: v for k, v in statement.items() if k != "Condition"}
    for key in ("Action", "NotAction"):
        if key in bare:
            bare[key] = [a.lower() for a in iac.as_list(bare[key])]
    for pattern in iac.as_list(bare.get("Resource", [])):
        # moto turns * into .* and leaves the rest a regular expression: anything else would mismatch
        assert _PATTERN.fullmatch(pattern) and "?" not in pattern, f"resource pattern moto cannot match: {pattern}"
    result = IAMPolicyStatement(bare).is_action_permitted(request.action.lower(), request.resource)
    return result != PermissionResult.NEUTRAL


def decide(statements: list[Statement], request: Request) -> str:
    """``allowed``, ``denied`` (an explicit Deny) or ``implicit`` (no Allow matched)."""
    context = request.context_dict()
    allowed = False
    for s in statements:
        if not _matches(s, request) or not _conditions_hold(s, context):
            continue
        if s["Effect"] == "Deny":
            return "denied"
        allowed = True
    return "allowed" if allowed else "implicit"


# ------------------------------------------------------------------------------ the templates' roles

SLACK_SECRET = "arn:aws:secretsmanager:{region}:{account}:secret:ecs-guardrail/slack-AbCdEf"


@dataclass(frozen=True)
class Deployment:
    """What a role's policy depends on: the home account and region, the deploy's ``ALERT_ONLY_CLUSTERS``
    and the names a replay gives the table and topic."""

    account: str
    region: str
    alert_only: str
    table: str
    topic: str
    secret: str | None = None  # the Slack webhook secret's ARN (None: a made-up one)
    channel_topics: tuple[str, ...] = ()  # alert routes' named channels (issue 35 item 4): topic ARNs
    channel_secrets: tuple[str, ...] = ()  # ... and Slack webhook secret ARNs
    # org (issue 32 item 4): the name of the topic standing in for the organisation's (every role is
    # evaluated with it configured, as with the Slack secret, so removing its grant is a mutant too)
    central_topic: str = "org-alerts"

    def arns(self) -> dict[str, str]:
        a, r = self.account, self.region
        return {
            "table": f"arn:aws:dynamodb:{r}:{a}:table/{self.table}",
            "topic": f"arn:aws:sns:{r}:{a}:{self.topic}",
            "queue": f"arn:aws:sqs:{r}:{a}:ecs-guardrail-function-failures",
            "log": f"arn:aws:logs:{r}:{a}:log-group:/aws/lambda/ecs-guardrail",
            "secret": self.secret or SLACK_SECRET.format(region=r, account=a),
            "central_topic": f"arn:aws:sns:{r}:{a}:{self.central_topic}",
        }


def _concrete(value: str, arns: dict[str, str]) -> str:
    """A CloudFormation statement's symbolic resources (``{getatt:HistoryTable.Arn}``) made concrete."""
    value = value.replace("{getatt:HistoryTable.Arn}", arns["table"]).replace("{ref:AlertTopic}", arns["topic"])
    value = value.replace("{getatt:FunctionFailureQueue.Arn}", arns["queue"])
    value = re.sub(r"\{getatt:\w+LogGroup\.Arn\}", arns["log"] + ":*", value)
    assert "{" not in value, f"unresolved template reference in {value}"
    return value


def _normal(statement: Statement, concrete: Callable[[str], str]) -> Statement:
    out: Statement = {"Sid": statement.get("Sid", ""), "Effect": statement["Effect"],
                      "Action": iac.as_list(statement["Action"]),
                      "Resource": [concrete(r) for r in iac.as_list(statement["Resource"])]}
    if statement.get("Condition"):
        out["Condition"] = {op: {k: iac.as_list(v) for k, v in keys.items()}
                            for op, keys in statement["Condition"].items()}
    return out


def cfn_policy(function: str, d: Deployment) -> list[Statement]:
    """The function's role in template.yaml for deployment ``d`` (its inline policies' statements)."""
    saved = dict(iac.PSEUDO)
    iac.PSEUDO.update({"AWS::AccountId": d.account, "AWS::Region": d.region})
    try:
        raw = cfn_statements(function, AlertOnlyClusters=d.alert_only,
                             SlackWebhookSecretArn=d.arns()["secret"],
                             AlertChannelTopicArns=",".join(d.channel_topics),
                             AlertChannelSecretArns=",".join(d.channel_secrets),
                             CentralAlertTopicArn=d.arns()["central_topic"])
    finally:
        iac.PSEUDO.clear()
        iac.PSEUDO.update(saved)
    arns = d.arns()
    return [_normal(s, lambda v: _concrete(v, arns)) for s in raw]


_TF_DOCUMENTS = {"recorder": ["recorder"], "watchdog": ["watchdog", "watchdog_deny_alert_only"],
                 "availability": ["availability"], "sweep": ["sweep", "watchdog_deny_alert_only"]}


@cache
def _tf_alert_only(workdir: Path, alert_only: str) -> tuple[list[str], bool]:
    arns, every = iac.terraform_console(workdir, "[local.alert_only_service_arns, local.every_cluster_alert_only]",
                                        {"alert_only_clusters": alert_only})
    return list(arns), bool(every)


def _tf_document(name: str) -> list[tuple[Statement, str | None]]:
    """A document's statements with the ``for_each`` of the dynamic block each came from (or None)."""
    doc = TF["data"]["aws_iam_policy_document"][name]
    out: list[tuple[Statement, str | None]] = [(s, None) for s in iac.as_list(doc.get("statement", []))]
    for dynamic in iac.as_list(doc.get("dynamic", [])):
        block = dynamic["statement"]
        out += [(c, block["for_each"]) for c in iac.as_list(block["content"])]
    return out


def _tf_with_sources(name: str) -> list[tuple[Statement, str | None]]:
    """A document's statements after those of its ``source_policy_documents`` (as Terraform merges them):
    the per-function platform document, and the crash_path document the watchdog and the sweep share."""
    out: list[tuple[Statement, str | None]] = []
    for source, _key in tf_source_documents(name):
        out += _tf_with_sources(source)
    return out + _tf_document(name)


def tf_policy(function: str, d: Deployment, workdir: Path) -> list[Statement]:
    """The function's role in terraform/ for deployment ``d``: its documents' statements (the platform
    document included), locals and references made concrete, dynamic blocks kept where their
    ``for_each`` is not empty (``terraform console`` evaluates the alert-only locals)."""
    deny_arns, every = _tf_alert_only(workdir, d.alert_only)
    arns = d.arns()
    base = {"partition": "aws", "region": d.region, "account_id": d.account}
    ref = {
        "${local.history_table_arn}": arns["table"],
        "${aws_sns_topic.alerts.arn}": arns["topic"],
        "${aws_sqs_queue.function_failures.arn}": arns["queue"],
        "${aws_cloudwatch_log_group.function[each.key].arn}:*": arns["log"] + ":*",
    }
    dynamic_values = {
        "${local.has_slack_webhook ? [var.slack_webhook_secret_arn] : []}": [arns["secret"]],
        '${local.every_cluster_alert_only ? ["ecs"] : []}': ["ecs"] if every else [],
        '${length(local.alert_channel_topic_arns) > 0 ? ["sns"] : []}': ["sns"] if d.channel_topics else [],
        '${length(local.alert_channel_secret_arns) > 0 ? ["secretsmanager"] : []}':
            ["secretsmanager"] if d.channel_secrets else [],
        "${local.has_central_alert_topic ? [var.central_alert_topic_arn] : []}": [arns["central_topic"]],
    }
    ref["${var.central_alert_topic_arn}"] = arns["central_topic"]
    channels = {"${local.alert_channel_topic_arns}": list(d.channel_topics),
                "${local.alert_channel_secret_arns}": list(d.channel_secrets)}

    def concrete(value: str, each: str | None) -> list[str]:
        if value == "${local.alert_only_service_arns}":
            return deny_arns
        if value in channels:
            return channels[value]
        if value == "${statement.value}":
            assert each is not None
            return [each]
        if value in ref:
            return [ref[value]]

        def local(m: re.Match[str]) -> str:
            name = m.group(1)
            if name in base:
                return base[name]
            text = TF["locals"][name]
            assert isinstance(text, str) and "?" not in text, f"local.{name} is not a plain string"
            return re.sub(r"\$\{local\.(\w+)\}", local, text)

        out = re.sub(r"\$\{local\.(\w+)\}", local, value)
        out = re.sub(r"\$\{var\.(\w+)\}", lambda m: str(TF["variable"][m.group(1)]["default"]), out)
        assert "${" not in out, f"unresolved Terraform reference in {value}"
        return [out]

    docs = [pair for name in _TF_DOCUMENTS[function] for pair in _tf_with_sources(name)]
    out: list[Statement] = []
    for s, for_each in docs:
        values: list[str | None] = [None] if for_each is None else list(dynamic_values[for_each])
        for each in values:
            stmt: Statement = {"Sid": s.get("sid", ""), "Effect": s.get("effect", "Allow"),
                               "Action": iac.as_list(s["actions"]),
                               "Resource": [r for v in iac.as_list(s["resources"]) for r in concrete(v, each)]}
            conditions: dict[str, dict[str, list[str]]] = {}
            for c in iac.as_list(s.get("condition", [])):
                vals = [x for v in iac.as_list(c["values"]) for x in concrete(v, each)]
                conditions.setdefault(c["test"], {})[c["variable"]] = vals
            if conditions:
                stmt["Condition"] = conditions
            out.append(stmt)
    return out


def without(statements: list[Statement], sid: str, action: str) -> list[Statement]:
    """A copy of ``statements`` with ``action`` removed from statement ``sid`` (the statement dropped when
    it had no other action): one mutant of a role."""
    out = []
    for s in copy.deepcopy(statements):
        if s["Sid"] == sid and s["Effect"] == "Allow" and action in s["Action"]:
            s["Action"] = [a for a in s["Action"] if a != action]
            if not s["Action"]:
                continue
        out.append(s)
    assert out != statements, f"{sid}/{action}: nothing removed"
    return out


def describe(statements: list[Statement]) -> str:
    return json.dumps(statements, indent=1, sort_keys=True)

