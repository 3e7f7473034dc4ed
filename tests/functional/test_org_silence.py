"""Issue 32 item 4's fault on moto: a member account deletes its stack mid-storm; its heartbeats (and
its alerts) stop, and the central side names that account, not the one still beating."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from ecs_guardrail.adapters.heartbeats import METRIC, NAMESPACE, last_heartbeats
from ecs_guardrail.app.org_silence import main, silent_report
from ecs_guardrail.core.silence import silent_accounts

A, B, C = "222222222222", "333333333333", "444444444444"
NOW = datetime.now(UTC).replace(second=0, microsecond=0)


def _beat(cw, account: str, at: datetime) -> None:
    cw.put_metric_data(Namespace=NAMESPACE, MetricData=[{
        "MetricName": METRIC, "Dimensions": [{"Name": "Account", "Value": account}],
        "Timestamp": at, "Value": 1, "Unit": "Count"}])


@pytest.fixture
def cloudwatch(monkeypatch: pytest.MonkeyPatch):
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "eu-west-1"}.items():
        monkeypatch.setenv(k, v)
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="eu-west-1")


def test_the_account_whose_stack_was_deleted_is_named(cloudwatch) -> None:
    # both members beat every 5 minutes for an hour; B's stack is deleted 40 minutes ago (mid-storm)
    for m in range(60, 0, -5):
        _beat(cloudwatch, A, NOW - timedelta(minutes=m))
        if m > 40:
            _beat(cloudwatch, B, NOW - timedelta(minutes=m))
    last = last_heartbeats(cloudwatch, [A, B, C], NOW)
    assert last[A] is not None and last[B] is not None and last[C] is None
    assert (NOW - last[B]) >= timedelta(minutes=40)
    lines = silent_report(cloudwatch, [A, B, C], NOW)
    assert [line.split()[1] for line in lines] == [B, C]  # A still beats: never named
    assert lines[0].startswith(f"account {B} silent for ") and "last heartbeat" in lines[0]
    assert lines[1] == f"account {C} silent: no heartbeat in the lookback"


def test_one_lost_heartbeat_names_nobody() -> None:
    last = {A: NOW - timedelta(minutes=9), B: NOW - timedelta(minutes=16)}
    assert [s.account for s in silent_accounts([A, B], last, NOW, silent_minutes=15)] == [B]
    with pytest.raises(ValueError, match="at least 10"):
        silent_accounts([A], last, NOW, silent_minutes=5)


class _AtNow(datetime):
    """``datetime`` whose ``now()`` is :data:`NOW`: the command judges silence at the test's own instant,
    not at the wall clock's (NOW is taken at import; a loaded ``make test`` reached this test more than
    15 minutes later, when A's beat 2 minutes before NOW had itself gone silent)."""

    @classmethod
    def now(cls, tz=None):  # type: ignore[no-untyped-def,override]
        return NOW if tz is not None else NOW.replace(tzinfo=None)


def test_the_command_exits_1_naming_the_silent_account(cloudwatch, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from ecs_guardrail.app import org_silence

    monkeypatch.setattr(org_silence, "datetime", _AtNow)
    _beat(cloudwatch, A, NOW - timedelta(minutes=2))
    assert main(["--accounts", f"{A},{B}", "--region", "eu-west-1"]) == 1
    assert capsys.readouterr().out.splitlines() == [f"account {B} silent: no heartbeat in the lookback"]
    assert main(["--accounts", "12"]) == 2


def test_no_region_or_credentials_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    # was a botocore traceback; the CLI's commands say it in one line with exit 3
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION",
              "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["--stack-set", "ecs-guardrail"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no AWS region" in err
    assert main(["--stack-set", "ecs-guardrail", "--region", "eu-west-1"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unable to locate credentials" in err


def test_bad_arguments_are_named_before_any_aws_call(capsys: pytest.CaptureFixture[str]) -> None:
    # no moto and no credentials: each is refused (exit 2) before a client is made
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "give --accounts" in err and "bad: []" not in err
    assert main(["--accounts", "123"]) == 2
    assert "not 123" in capsys.readouterr().err
    assert main(["--accounts", A, "--silent-minutes", "5"]) == 2
    assert "--silent-minutes 5: from 10" in capsys.readouterr().err
@pytest.mark.parametrize("argv", [
    ["--accounts", "١١١١٢٢٢٢٣٣٣٣"],  # digits, but not ASCII ones
    ["--stack-set", " "],
    ["--accounts", A, "--silent-minutes", "-5"],
    ["--accounts", A, "--silent-minutes", "99999999999999"],
])
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("org_silence: ") and err.count("\n") == 1


def test_an_aws_call_that_fails_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    for k in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert main(["--accounts", f" {A}, {B}"]) == 3  # no region: botocore's NoRegionError
    err = capsys.readouterr().err
    assert err.startswith("org_silence: no AWS region") and err.count("\n") == 1
