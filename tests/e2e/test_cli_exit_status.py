"""Exit statuses and one-line errors of every command (issue 24 items 1, 2, 3, 7, 10).

AWS is moto in process or a closed port on 127.0.0.1; nothing reaches the internet.
"""

from __future__ import annotations

import copy
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from ecs_guardrail import cli
from ecs_guardrail.handlers import watchdog
from ecs_guardrail.handlers.runtime import LambdaContextStub
from tests.conftest import EVENTS, SCENARIOS, cli_in_process, dev_account, load_event

REGION = "eu-west-1"
CLI = [sys.executable, "-m", "ecs_guardrail.cli"]


def _folder(tmp_path: Path, events: str | bytes) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(SCENARIOS / "bad-image-dev" / "fleet.json", folder / "fleet.json")
    data = events.encode() if isinstance(events, str) else events
    (folder / "events.jsonl").write_bytes(data)
    return folder


def test_a_pretty_printed_event_exits_2_with_the_jq_fix(tmp_path, capsys):
    pretty = (EVENTS / "ecs" / "task-fargate-stopped-essential-oom-exit137.derived.json").read_text()
    assert pretty.startswith("{\n")
    assert cli.main(["replay", str(_folder(tmp_path, pretty))]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pretty-printed JSON object" in err
    # the fix names the real file and moves the one-per-line copy back (a new user pasted it as printed)
    assert "jq -c . " in err and "events.one-per-line.jsonl && mv " in err


def test_an_empty_events_file_exits_2_unless_samples_make_it_an_availability_replay(tmp_path, capsys):
    folder = _folder(tmp_path, "\n\n")
    assert cli.main(["replay", str(folder), "--json"]) == cli.EXIT_BAD_INPUT
    assert "no events: one EventBridge event per line" in capsys.readouterr().err
    brownout = tmp_path / "brownout"
    shutil.copytree(SCENARIOS / "shared-cache-brownout", brownout)
    (brownout / "events.jsonl").write_text("")
    assert cli.main(["replay", str(brownout), "--json"]) == cli.EXIT_OK


def test_lines_none_of_which_is_accepted_exit_2_with_nothing_on_stdout(tmp_path, capsys):
    """Issue 38 item 2: a refused run prints no report (it printed an ordinary "nothing happened" one)."""
    folder = _folder(tmp_path, "not json\n{\"source\": \"aws.ecs\"}\n")
    assert cli.main(["replay", str(folder), "--json"]) == cli.EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("rejected:") == 2 and "none of its 2 lines was accepted" in err.splitlines()[-1]


@pytest.mark.parametrize("args", [["--json"], []], ids=["json", "the rich report"])
def test_a_closed_stdout_ends_quietly_with_141(args):
    """The rich report too: rich answers a broken pipe with SystemExit(1), the status of a finding."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write is EPIPE, deterministically
    try:
        proc = subprocess.run([*CLI, "replay", str(SCENARIOS / "bad-image-dev"), *args], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    finally:
        os.close(write_end)
    assert proc.returncode == cli.EXIT_PIPE
    assert proc.stderr == ""


def test_ctrl_c_ends_with_one_line_and_130(monkeypatch, capsys):
    import ecs_guardrail.replay.run as run

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "replay", interrupted)
    assert cli.main(["replay", str(SCENARIOS / "bad-image-dev")]) == cli.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err.strip() == "ecs-guardrail: interrupted" and "Traceback" not in err


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_audit_of_an_unreachable_aws_is_3_not_the_findings_status(monkeypatch, capsys):
    from botocore.config import Config

    import ecs_guardrail.adapters.aws as aws

    port = _closed_port()
    monkeypatch.setattr(aws, "make_client", lambda service, region=None, **_: boto3.client(
        service, region_name=REGION, endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=2)))
    assert cli.main(["audit", "--cluster", "prod"]) == cli.EXIT_AWS
    err = capsys.readouterr().err
    assert err.startswith("ecs-guardrail: AWS unreachable") and err.count("\n") == 1


def test_no_region_names_what_the_sdk_reads(monkeypatch, capsys):
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert cli.main(["audit", "--cluster", "prod"]) == cli.EXIT_AWS
    err = capsys.readouterr().err
    assert "AWS_DEFAULT_REGION" in err and "--region" in err and "set AWS_REGION" not in err


@pytest.fixture
def account(monkeypatch):
    with dev_account(monkeypatch, REGION) as aws:
        yield aws["ecs"]


def _crash(n: int) -> dict:
    e = copy.deepcopy(load_event("task-fargate-stopped-essential-oom-exit137.derived"))
    task = f"arn:aws:ecs:{REGION}:123456789012:task/dev/{n:032x}"
    e["id"], e["time"], e["region"] = f"00000000-0000-0000-0000-{n:012d}", f"2025-08-21T10:0{n}:00Z", REGION
    e["detail"].update(clusterArn=f"arn:aws:ecs:{REGION}:123456789012:cluster/dev", taskArn=task, group="service:api",
                       lastStatus="STOPPED", version=5)
    for c in e["detail"]["containers"]:
        c["taskArn"] = task
    return e


def _desired(ecs, service: str = "api") -> int:
    return int(ecs.describe_services(cluster="dev", services=[service])["services"][0]["desiredCount"])


def test_restore_twice_is_0_both_times_and_changes_nothing_the_second(account, capsys):
    for i in range(5):
        watchdog.handler(_crash(i), LambdaContextStub())
    assert _desired(account) == 0
    capsys.readouterr()  # the handlers' own log lines
    assert cli.main(["restore", "--cluster", "dev", "--service", "api"]) == cli.EXIT_OK
    assert _desired(account) == 3
    assert cli.main(["restore", "--cluster", "dev", "--service", "api"]) == cli.EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("restored dev/api") and "nothing changed" in out[1]
    assert _desired(account) == 3


def test_restore_of_a_running_service_without_a_record_is_0(account, capsys):
    assert cli.main(["restore", "--cluster", "dev", "--service", "web"]) == cli.EXIT_OK
    assert "runs with desired count 3" in capsys.readouterr().out and _desired(account, "web") == 3


def test_restore_of_a_service_at_0_without_a_record_is_1(account, capsys):
    account.update_service(cluster="dev", service="web", desiredCount=0)
    assert cli.main(["restore", "--cluster", "dev", "--service", "web"]) == cli.EXIT_NO
    assert "recorded no previous desired count" in capsys.readouterr().err


def test_restore_of_an_unknown_service_or_table_names_it_and_the_region(account, capsys):
    assert cli.main(["restore", "--cluster", "dev", "--service", "nope"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "dev/nope" in err and f"region {REGION}" in err and err.count("\n") == 1
    assert f"ecs-guardrail: dev/nope: no such service in region {REGION}" in err and "MISSING" not in err  # issue 38
    assert cli.main(["restore", "--cluster", "dev", "--service", "api", "--table", "typo"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "history table 'typo' not found in region eu-west-1" in err and "ResourceNotFoundException" not in err
    assert cli.main(["timeline", "--cluster", "dev", "--since", "2025-08-21", "--until", "2025-08-22",
                     "--table", "typo"]) == cli.EXIT_BAD_INPUT
    assert "history table 'typo' not found" in capsys.readouterr().err


def test_timeline_plot_to_a_missing_folder_fails_before_aws(monkeypatch, tmp_path, capsys):
    import ecs_guardrail.adapters.aws as aws

    def never(*_a, **_k):
        raise AssertionError("AWS asked before the --plot folder was checked")

    monkeypatch.setattr(aws, "make_client", never)
    assert cli.main(["timeline", "--cluster", "dev", "--since", "2025-08-21", "--until", "2025-08-22", "--table", "t",
                     "--plot", str(tmp_path / "missing" / "x.png")]) == cli.EXIT_BAD_INPUT
    assert "does not exist" in capsys.readouterr().err


def test_capture_of_a_cluster_that_does_not_exist_is_2(account, tmp_path, capsys):
    rc = cli.main(["capture", str(tmp_path / "out"), "--cluster", "dev", "--cluster", "nosuch",
                   "--since", "2025-08-21T10:00:00Z", "--until", "2025-08-21T11:00:00Z"])
    assert rc == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cluster(s) nosuch not found in region eu-west-1" in err
    assert (tmp_path / "out" / "fleet.json").exists()  # the other cluster is still captured


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [["replay", str(SCENARIOS / "bad-image-dev")],
                                  ["replay", str(SCENARIOS / "bad-image-dev"), "--json"],
                                  ["audit", "--scenario", str(SCENARIOS / "aggregate-health-outage"),
                                   "--fail-on", "never"]], ids=["report", "json", "audit"])
def test_a_full_disk_is_one_line_and_74_never_a_traceback_or_a_finding(args):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*CLI, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                              check=False)
    assert proc.returncode == cli.EXIT_OUTPUT, proc.stderr
    assert "Traceback" not in proc.stderr and "cannot write stdout: No space left on device" in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_alerts_file_that_cannot_be_written_is_named_not_stdout(tmp_path):
    """A new user's finding: ``--alerts-out /dev/full`` said "cannot write stdout" while stdout was fine."""
    with open(tmp_path / "report.txt", "w") as out:
        proc = subprocess.run([*CLI, "replay", str(SCENARIOS / "bad-image-dev"), "--alerts-out", "/dev/full"],
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert proc.returncode == cli.EXIT_OUTPUT, proc.stderr
    assert "--alerts-out: cannot write /dev/full: No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("argv", "setting"), [
    (["timeline", "--cluster", "c", "--since", "2025-08-21", "--until", "2025-08-22", "--table", "t",
      "--region", "eu-west-1"], {"CRASH_THRESHOLD": "0"}),
    # restore reads only ALERT_ONLY_CLUSTERS (its refusal of alert-only clusters), before AWS is asked
    (["restore", "--cluster", "c", "--service", "s", "--table", "t", "--region", "eu-west-1"],
     {"ALERT_ONLY_CLUSTERS": "prod # production"}),
])
def test_an_invalid_setting_exits_2_on_every_command(argv, setting):
    """A new user's finding: timeline and restore exited 1 on an invalid setting (restore's 1 means "the
    count could not be put back"); the exit table says bad input is 2, and it is, before AWS is asked."""
    proc = cli_in_process(*argv, env={**setting, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("ecs-guardrail: invalid setting: ") and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("count", ["-1", "0", "10001", "two"])
def test_restore_checks_its_count_before_aws(count):
    """A new user's finding: ``restore --count -1`` went to AWS (exit 3 offline) before being refused."""
    proc = cli_in_process("restore", "--cluster", "c", "--service", "s", "--table", "t", "--region", "eu-west-1",
                          "--count", count)
    assert proc.returncode == 2 and "argument --count" in proc.stderr, (proc.returncode, proc.stderr)
