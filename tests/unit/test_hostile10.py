"""Round 10's hostile tester (hostile10): defects found in what round 10 changed (routing's exists on null,
ASCII-only trimming of enums, the FM# fleet-minute layout, the lazy ``ConditionFailedError.old``, the CLI
parser built per subcommand, the replay driver's quiet minutes)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ecs_guardrail.adapters.history import HistoryStore
from ecs_guardrail.adapters.store import keys
from ecs_guardrail.adapters.store.memory import MemoryTable
from ecs_guardrail.core.classify import StopKind, classify_stop
from ecs_guardrail.core.events import TaskDetail
from ecs_guardrail.core.fleet_minutes import member, minute_of, shard_of
from ecs_guardrail.core.records import Failure

_TASK = {"clusterArn": "arn:aws:ecs:eu-west-1:111122223333:cluster/dev",
         "taskArn": "arn:aws:ecs:eu-west-1:111122223333:task/dev/0123456789abcdef0123456789abcdef",
         "lastStatus": "STOPPED", "desiredStatus": "STOPPED", "group": "service:api"}


# ------------------------------------------------------------------ 1. a Spot stop code padded with ASCII space
@pytest.mark.parametrize("pad", [" ", "\t", "\r\n", " \x0b"])
@pytest.mark.parametrize("status", ["STOPPED", "RUNNING"])
def test_an_ascii_padded_spot_stop_code_is_spot_as_every_other_padded_code(pad: str, status: str) -> None:
    """classify_stop trims a stop code of ASCII whitespace (``" EssentialContainerExited "`` is a crash), but
    ``_is_spot`` read the code untrimmed: ``" SpotInterruption "`` was no Spot marker, the notice classified
    UNKNOWN (not final, not remembered), so its task's later STOPPED event (EssentialContainerExited, exit
    143 after SIGTERM) counted as a crash."""
    detail = TaskDetail.validate({**_TASK, "lastStatus": status, "stopCode": f"{pad}SpotInterruption{pad}"})
    assert classify_stop(detail).kind is StopKind.SPOT
    spot_capacity = TaskDetail.validate({**_TASK, "lastStatus": status, "stopCode": f"{pad}TerminationNotice{pad}",
                                         "capacityProviderName": "FARGATE_SPOT"})
    assert classify_stop(spot_capacity).kind is StopKind.SPOT


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000"])
def test_a_unicode_padded_spot_stop_code_stays_unknown(space: str) -> None:
    detail = TaskDetail.validate({**_TASK, "stopCode": f"{space}SpotInterruption{space}"})
    assert classify_stop(detail).kind is StopKind.UNKNOWN


# ------------------------------------------------------------------ 2. a reason-only crash padded with Unicode space
@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000", "\u2028"])
def test_a_reason_only_crash_padded_with_unicode_space_is_no_crash(space: str) -> None:
    """Without a stop code (events from before ECS set one) the reason decides, ASCII case only so that a
    look-alike letter is no crash (core.enum_text); but the reason was trimmed by ``str.strip()``, which drops
    Unicode spaces: ``"\\u2003Essential container in task exited"`` counted as a crash while
    ``"Essential container in task e\\u0445ited"`` (Cyrillic x) did not. ASCII padding still reads as the text."""
    padded = TaskDetail.validate({**_TASK, "stoppedReason": f"{space}Essential container in task exited"})
    assert classify_stop(padded).kind is not StopKind.CRASH
    ascii_padded = TaskDetail.validate({**_TASK, "stoppedReason": " \tEssential container in task exited"})
    assert classify_stop(ascii_padded).kind is StopKind.CRASH


# ------------------------------------------------------------------ 3. a hand-edited names item of a fleet minute
_T0 = datetime(2030, 1, 2, 3, 0, tzinfo=UTC)
_W = timedelta(minutes=30)


def _crash(n: int, minutes: float, service: str) -> Failure:
    return Failure(service, _T0 + timedelta(minutes=minutes), StopKind.CRASH, task_arn=f"arn:task/{n}")


@pytest.mark.parametrize("edit", [{"n": "api"}, {"n": ["api"], "t": "api"}, {"n": 5}, {"n": ["api", 7]},
                                  {"n": {"api": 1}}])
def test_a_hand_edited_names_item_counts_no_phantom_service_and_raises_nothing(
        edit: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    """The FM# names item's ``n`` and ``t`` are string sets (a list in the in-memory table). One edited in the
    console into a String (``"api"``) was iterated as one: every character a failing "service" (``a``, ``p``,
    ``i`` in rule 3's count, the real ``api`` not); a Number raised TypeError out of the decision's read.
    Now such a value is logged and skipped (the member items still say who failed: a cut minute reads them)."""
    table = MemoryTable()
    state = HistoryStore.on(table, cache={}).state
    at = _T0 + timedelta(minutes=10)
    for n, minute in ((1, 1), (2, 3)):
        state.count_failures("c", "api", [_crash(n, minute, "api")])
        pk, sk = keys.fleet_minute("c", shard_of("api"), minute_of(_T0 + timedelta(minutes=minute)))
        table.put({**(table.get(pk, f"{sk}#n") or {}), **edit})
    with caplog.at_level(logging.ERROR):
        got = state.fleet("c", at - _W, at, 2)
    assert got.failing == {"api"}, got  # its member items of minutes 1 and 3
    assert any("unreadable" in r.getMessage() for r in caplog.records), caplog.text


# ------------------------------------------------------------------ 4. --help and --version to an unwritable stdout
def _cli(args: list[str], stdout: Any, *, unbuffered: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, "-m", "ecs_guardrail.cli", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=60, check=False)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["replay", "--help"]])
def test_help_and_version_to_a_full_disk_exit_74_with_one_line(args: list[str], unbuffered: bool) -> None:
    """Every command's "74: an output could not be written: one line on stderr" (docs/cli.md) held for a
    command's output but not for argparse's: ``--help > /dev/full`` exited 120 with the interpreter's
    "Exception ignored ... OSError" (buffered stdout), or 0 with the help silently lost (PYTHONUNBUFFERED:
    argparse's _print_message swallows OSError)."""
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = _cli(args, full, unbuffered=unbuffered)
    assert done.returncode == 74, (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines() == ["ecs-guardrail: cannot write stdout: No space left on device"]


@pytest.mark.parametrize("unbuffered", [False, True])
def test_help_to_a_closed_pipe_exits_141_quietly(unbuffered: bool) -> None:
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as closed:
        done = _cli(["replay", "--help"], closed, unbuffered=unbuffered)
    assert (done.returncode, done.stderr) == (141, "")


# ------------------------------------------------------------------ 5. a member item emptied by a take-back
def _count_as_the_release_before(table: MemoryTable, service: str, failure: Failure) -> None:
    """What the release before's count_failures wrote: the member in the minute's own item (``f#<service>``)."""
    pk, sk = keys.fleet_minute("c", shard_of(service), minute_of(failure.time))
    table.add_to_set(pk, sk, f"f#{service}", [member(failure.time, failure.task_arn)], max_size=64, expires_at=1)


def test_a_taken_back_member_in_a_minute_both_releases_wrote_is_no_failure() -> None:
    """A minute both layouts wrote (a failure filed by the release before, redelivered to this one) has its
    members read whole (_merged_members), and every service with a member item counted as failed in it. A
    notice taking that failure back deletes the member from both: the member item stays, its set ``f`` gone
    (DynamoDB removes an emptied set), and was read as the service failing in the minute with no member:
    one more crash in another minute made the service "failing twice" in rule 3's fleet count."""
    table = MemoryTable()
    state = HistoryStore.on(table, cache={}).state
    taken_back, other = _crash(1, 5.5, "e"), _crash(2, 3.5, "e")
    _count_as_the_release_before(table, "e", taken_back)
    state.count_failures("c", "e", [taken_back])  # the redelivery, filed by this release
    state.uncount_failures("c", "e", [taken_back])
    state.count_failures("c", "e", [other])
    start, end = _T0, _T0 + timedelta(minutes=10)
    assert state.fleet("c", start, end, 2).failing == frozenset()
    assert state.fleet("c", start, end, 1).failing == {"e"}


# ------------------------------------------------------------------ 6. a health-check reason with a look-alike letter
@pytest.mark.parametrize("reason", ["Tas\u212a failed ELB health checks",  # Kelvin sign: str.lower() gives k
                                    "Task failed ELB health chec\u212as",
                                    "\u2003Task failed ELB health checks",
                                    "\u00a0Task failed container health checks"])
def test_a_health_check_reason_with_a_look_alike_or_unicode_space_is_no_kill(reason: str) -> None:
    """A health-check kill is a failure (it counts toward the decision, as a crash does); its reason was read
    with ``str.strip().lower()``, so a Kelvin sign or an em space turned a scheduler stop (no failure) into a
    kill: the direction core.enum_text says free text may not take (a look-alike turning a non-crash into
    a crash). ASCII case and ASCII padding still read as ECS's words."""
    stop = {**_TASK, "stopCode": "ServiceSchedulerInitiated"}
    assert classify_stop(TaskDetail.validate({**stop, "stoppedReason": reason})).kind is StopKind.SCHEDULER
    padded = TaskDetail.validate({**stop, "stoppedReason": " \tTASK FAILED ELB HEALTH CHECKS in target-group x"})
    assert classify_stop(padded).kind is StopKind.HEALTH_CHECK_KILL
