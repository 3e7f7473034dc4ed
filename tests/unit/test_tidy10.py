"""Round 9's leftovers (round 10, lane tidy3), found by a new user and by a hostile tester: the replay report's
undo line, the help of ``--sweep``'s columns and of every exit status, ``{"exists": ...}`` on a JSON null,
enum values trimmed of ASCII whitespace only, a summary's ``seq`` read strictly, and a set-typed attribute
in a condition (a DynamoDB fact the in-memory table cannot show: documented here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail import cli, routing
from ecs_guardrail.adapters.store.watchdog_state import _job_from_item, _summary_from_item
from ecs_guardrail.core.classify import StopKind, classify_stop
from ecs_guardrail.core.enum_text import ascii_strip
from ecs_guardrail.core.errors import UnreadableSummaryError
from ecs_guardrail.core.events import TaskDetail

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


# ------------------------------------------------------------------ 1. the report's undo line
def test_the_report_undo_line_is_the_command_the_replay_alert_gives(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """It printed ``--table TABLE`` (a placeholder) beside the replay's own alert, whose Undo line (and the
    README's examples) name ``ecs-guardrail-history``: now the same, copy-pasteable command (on a terminal
    wide enough to hold it on one line: rich wraps the report to ``COLUMNS``)."""
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["replay", str(ROOT / "events/scenarios/bad-image-dev")]) == 0
    out = capsys.readouterr().out
    undo = [ln for ln in out.splitlines() if "undo: ecs-guardrail restore" in ln]
    assert undo and all("--table ecs-guardrail-history " in ln and "TABLE" not in ln for ln in undo), out
    command = undo[0].split("undo: ", 1)[1]
    assert command == ("ecs-guardrail restore --cluster development --service thumbnailer "
                       "--table ecs-guardrail-history --region us-west-1")
    # the README says where the name comes from, and its examples name the same table
    assert "`--table` is the stack's `HistoryTableName` output" in README
    assert "--table ecs-guardrail-history --region" in README


# ------------------------------------------------------------------ 2./3. help texts
def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_sweep_help_explains_both_service_minute_columns(capsys: pytest.CaptureFixture[str]) -> None:
    """The table's last column, "unavailable svc-min", was in no help; both columns are now, and the
    README says the same."""
    text = _help("replay", capsys)
    assert "watchdog svc-min (service-minutes at 0 by the watchdog's own scale-downs)" in text
    assert "unavailable svc-min (service-minutes with no healthy host, no datapoint or at 0 by the watchdog" in text
    readme = " ".join(README.split())
    assert "(`watchdog svc-min`)" in readme and "(`unavailable svc-min`: no healthy host, no datapoint" in readme


@pytest.mark.parametrize("command", sorted(cli.EXIT_CODES))
def test_each_command_help_lists_every_exit_status_it_can_return(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """141 (stdout closed, SIGPIPE) was missing from every ``--help`` though the README lists it: the
    epilog is now made from the same two tables as the README's "Exit status" table (one source)."""
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    epilog = capsys.readouterr().out.split("exit status:\n", 1)[1]
    listed = {int(m) for m in re.findall(r"^  (\d+) ", epilog, flags=re.M)}
    assert listed == set(cli.EXIT_CODES[command]) | set(cli.EXIT_COMMON), epilog
    assert cli.EXIT_PIPE in listed and "SIGPIPE" in epilog
    for code in listed:  # and the README's table has each of them for this command or for every command
        assert re.search(rf"^\| (`{command}`|every command) \| \*\*{code}\*\* \|", README, flags=re.M), code


# ------------------------------------------------------------------ 4. exists on a JSON null
EXISTS = {"source": ["aws.ecs"], "detail": {"x": [{"exists": True}]}}
MISSING = {"source": ["aws.ecs"], "detail": {"x": [{"exists": False}]}}


@pytest.mark.parametrize(("detail", "exists"), [
    ({}, False), ({"x": None}, True), ({"x": "a"}, True), ({"x": 0}, True), ({"x": ""}, True),
    ({"x": [None]}, True), ({"x": ["a"]}, True),
])
def test_a_null_field_exists_for_eventbridge(detail: dict[str, Any], exists: bool) -> None:
    """EventBridge's "Exists matching" is on the presence or absence of a field in the event's JSON (User
    Guide, "Content filtering in Amazon EventBridge event patterns", eb-event-patterns-content-based-
    filtering.html#eb-filtering-exists-matching), and a field whose value is ``null`` is present: it is
    matched by ``[null]`` ("Matching events on null values and empty strings in Amazon EventBridge",
    eb-event-patterns-null-values.html). Routing read ``null`` as absent, so an event with
    ``"replay-name": null`` reached the watchdog here, where EventBridge's rule would not deliver it.
    Both matchers (the reference and the compiled one the replay routes with) agree."""
    event = {"source": "aws.ecs", "detail": detail}
    assert routing.matches(EXISTS, event) is exists
    assert routing.matches(MISSING, event) is not exists
    assert routing.compile_pattern(EXISTS)(event) is exists
    assert routing.compile_pattern(MISSING)(event) is not exists
    assert routing.compile_targets({"e": EXISTS, "m": MISSING})(event) == ({"e"} if exists else {"m"})


@pytest.mark.parametrize(("detail", "matched"), [({}, False), ({"x": None}, True), ({"x": [None]}, True),
                                                ({"x": "null"}, False), ({"x": ""}, False)])
def test_a_null_value_matches_null_only(detail: dict[str, Any], matched: bool) -> None:
    """``[null]`` matches a field whose value is ``null``, not a missing one (eb-event-patterns-null-values.html);
    the compiled matchers read such a field with the missing-field default too, as for ``exists``."""
    pattern = {"detail": {"x": [None]}}
    event = {"detail": detail}
    assert routing.matches(pattern, event) is matched
    assert routing.compile_pattern(pattern)(event) is matched
    assert routing.compile_targets({"n": pattern, "e": EXISTS})(event) == ({"n"} if matched else set())


def test_an_event_with_a_null_replay_name_does_not_reach_the_watchdog() -> None:
    """The watchdog's rule requires ``replay-name`` absent (archive replays carry it): ``null`` is not
    absent, so EventBridge does not deliver such an event, and neither does the replay's routing."""
    event = {"source": "aws.ecs", "detail-type": "ECS Task State Change", "detail": {"lastStatus": "STOPPED"}}
    assert "watchdog" in routing.compile_targets(routing.PATTERNS)(event)
    nulled = {**event, "replay-name": None}
    assert routing.matches(routing.PATTERNS["watchdog"], nulled) is False
    assert "watchdog" not in routing.compile_targets(routing.PATTERNS)(nulled)
    assert "recorder" in routing.compile_targets(routing.PATTERNS)(nulled)  # kept as evidence all the same


# ------------------------------------------------------------------ 6. enum values: ASCII whitespace only
_TASK = {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
         "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
         "lastStatus": "STOPPED", "desiredStatus": "STOPPED", "group": "service:api"}


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000", "\u180e", "\u2028", "\x85"])
def test_a_stop_code_padded_with_unicode_space_is_an_unknown_code(space: str) -> None:
    """``.strip()`` dropped Unicode spaces too, so ``"\\u00a0EssentialContainerExited"`` read as ECS's enum,
    while a look-alike letter did not (core.enum_text). AWS writes its enums unpadded (API Reference;
    ECS-EVENTS.md names no padding): only ASCII whitespace, what a hand-made file adds, is trimmed now."""
    padded = TaskDetail.validate({**_TASK, "stopCode": f"{space}EssentialContainerExited{space}"})
    assert classify_stop(padded).kind is not StopKind.CRASH
    ascii_padded = TaskDetail.validate({**_TASK, "stopCode": " \tEssentialContainerExited\r\n"})
    assert classify_stop(ascii_padded).kind is StopKind.CRASH
    assert ascii_strip(f"{space}ECS{space}") == f"{space}ECS{space}"


def test_ascii_strip_is_str_strip_on_ascii_text() -> None:
    for c in range(128):
        text = f"{chr(c)}A{chr(c)}"
        assert ascii_strip(text) == text.strip(), c
    assert ascii_strip(" \u00e9 ") == "\u00e9" and ascii_strip("\u00a0 x \u00a0") == "\u00a0 x \u00a0"


def test_deployment_enums_keep_unicode_padding_unknown() -> None:
    """The deployment controller, strategy and scheduling strategy are enums too (entitlement,
    deployment_protection): an em-space-padded ``DAEMON`` is not ECS's ``DAEMON``."""
    from ecs_guardrail.core import deployment_protection, entitlement

    for module in (deployment_protection, entitlement):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert ".strip())" not in source, module.__name__  # every enum is trimmed by ascii_strip
    assert ascii_strip("\u2003DAEMON").upper() != "DAEMON" and ascii_strip(" DAEMON\t") == "DAEMON"


# ------------------------------------------------------------------ 7. a summary's seq
_ITEM = {"pk": "WD#dev", "sk": "S#api", "service": "api", "seq": 3, "doc": "{}"}


@pytest.mark.parametrize("seq", ["3", " 3", 2.5, True, -1, ["3"], {"n": 3}, None])
def test_a_summary_whose_seq_is_not_a_whole_number_is_unreadable_naming_it(seq: object) -> None:
    """``int(item["seq"])`` read ``"3"`` and ``2.5`` as 3 and 2 (every conditional write on it then failed:
    ``seq = 2`` never holds of a stored 2.5) and raised a bare ValueError/TypeError for the rest: now each is
    :class:`UnreadableSummaryError` naming the item's key and ``seq`` (its repair: docs/runbook.md)."""
    assert _summary_from_item(_ITEM).seq == 3 and _job_from_item("nightly", {**_ITEM, "sk": "J#n"}).seq == 3
    for read, item in ((_summary_from_item, {**_ITEM, "seq": seq}),
                       (lambda i: _job_from_item("nightly", i), {**_ITEM, "sk": "J#nightly", "seq": seq})):
        with pytest.raises(UnreadableSummaryError) as failed:
            read(item)
        assert "WD#dev" in str(failed.value) and "seq" in str(failed.value), failed.value


@pytest.mark.parametrize("read", [_summary_from_item, lambda i: _job_from_item("nightly", i)])
def test_a_summary_without_seq_names_the_missing_field(read: Any) -> None:
    item = {k: v for k, v in _ITEM.items() if k != "seq"}
    with pytest.raises(UnreadableSummaryError, match=r"WD#dev .* unreadable: missing field 'seq'"):
        read(item)


# ------------------------------------------------------------------ 8. a set-typed attribute in a condition
def test_no_conditional_write_reads_an_attribute_this_code_writes_as_a_set() -> None:
    """On DynamoDB a string set never equals a list (``seq = :v`` with ``:v`` a list fails against an SS:
    checked on moto, tests/contract/test_table_null_and_sets.py), while the port reads a set back as a sorted list
    and the in-memory table compares lists: a condition on a set-typed attribute holds in a replay and
    never in production. Not reachable from this project's own items: sets are written only by
    ``add_to_set`` (the FM# fleet-minute items and their ``#o``/``#2``/``#z`` companions), and no
    conditional write names one of their attributes; ``seq``, ``services`` and ``jobs`` of the sweep's
    index are written as a number and two maps. A hand-edited set there is logged as not an integer and
    its write conflicts until the item is repaired (StateConflictError after the retries)."""
    source = (ROOT / "src/ecs_guardrail/adapters/store/watchdog_state.py").read_text(encoding="utf-8")
    # the attribute argument (the third) of every add_to_set call: its literal text, or an f-string's literal head
    set_attrs = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_to_set":
            attr = node.args[2]
            if isinstance(attr, ast.JoinedStr):
                attr = attr.values[0]
            assert isinstance(attr, ast.Constant) and isinstance(attr.value, str), ast.dump(node)
            set_attrs.append(attr.value)
    assert set_attrs, "the fleet-minute writes moved: check this again"
    conditioned = set(re.findall(r"Cond\(any_of=\(\{\"(\w+)\"", source))
    assert conditioned <= {"seq", "released", "service", "last"}, conditioned
    assert not any(attr.startswith(tuple(conditioned)) or attr in conditioned for attr in set_attrs), set_attrs
