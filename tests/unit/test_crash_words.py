"""core/crash_words.py and adapters/logs.py (issue 35 items 1-2): selection, masking, cutting, the change
line; the reader's one-line answers for every way a log cannot be read, within its budget."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from ecs_guardrail.adapters.logs import BUDGET_S, MAX_CALLS, CrashLogs, Wanted
from ecs_guardrail.core.crash_words import (
    LINE_MAX,
    MAX_CHARS,
    MAX_LINES,
    CrashWords,
    Revision,
    change_line,
    clean,
    image_tag,
    mask,
    quote,
)

T = datetime(2026, 6, 2, 10, 2, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
ARN = "arn:aws:ecs:eu-west-1:111122223333:task-definition/checkout:{}"


@pytest.mark.parametrize(("line", "masked"), [
    ("password=hunter2 next", "password=**** next"),
    ("DB_PASSWORD: 'hunter2'", "DB_PASSWORD: '****'"),
    ('{"client_secret": "abc", "user": "bob"}', '{"client_secret": "****", "user": "bob"}'),
    ("token=eyJhbGciOi.x.y&x=1", "token=****&x=1"),
    ("api_token: abc123", "api_token: ****"),
    ("key AKIAIOSFODNN7EXAMPLE and ASIAABCDEFGHIJKLMNOP", "key **** and ****"),
    ("https://user:p4ss@host.example/path", "https://****@host.example/path"),
    ("redis://:p4ss@cache:6379", "redis://****@cache:6379"),
    ("Authorization: Bearer abcdefgh12345678", "Authorization: Bearer ****"),
    ("nothing secret here: https://host.example/a?b=c", "nothing secret here: https://host.example/a?b=c"),
])
def test_secret_looking_values_are_masked(line: str, masked: str) -> None:
    assert mask(line) == masked


def test_a_one_megabyte_line_is_cut_and_says_so() -> None:
    line = clean("E" * 1_000_000)
    assert len(line) == LINE_MAX and line.endswith("…")


def test_bytes_that_are_not_utf8_and_control_characters_become_printable() -> None:
    assert clean(b"ok \xff\xfe end") == "ok \ufffd\ufffd end"
    assert clean("a\x00b\x1b[31mc\u2028d\ud800") == "a\ufffdb\ufffd[31mc\ufffdd\ufffd"
    assert clean("tab\there\r\n") == "tab here"


def test_at_most_ten_lines_and_1500_characters_the_newest_kept() -> None:
    assert quote([f"line {n}" for n in range(25)]) == tuple(f"line {n}" for n in range(15, 25))
    long = quote([f"{n:03d}" + "x" * 290 for n in range(MAX_LINES)])
    assert sum(len(x) for x in long) <= MAX_CHARS and long[-1].startswith("009")
    assert quote(["", "   ", "\n"]) == ()


def test_crash_words_field() -> None:
    assert CrashWords().field() is None
    assert CrashWords(note="no permission").field() == ("Last log lines", "no permission")
    assert CrashWords(("a", "b"), "app", "0123abcd", "/ecs/x").field() == ("Last log lines (app, task 0123abcd)",
                                                                          "\na\nb")


def test_the_change_line_names_both_revisions_when_a_deployment_started_the_loop() -> None:
    now = Revision(ARN.format(14), "123.dkr.ecr.eu-west-1.amazonaws.com/checkout:2026.6.2")
    before = Revision(ARN.format(13), "123.dkr.ecr.eu-west-1.amazonaws.com/checkout:2026.6.1")
    assert change_line(now, before, T, T + timedelta(minutes=3), WINDOW) == (
        "started with checkout:14 (image :2026.6.2) at 10:02Z; checkout:13 (:2026.6.1) ran without crashes")
    assert change_line(now, before, T, T + timedelta(minutes=3), WINDOW, before_crashed=True).endswith(
        "checkout:13 (:2026.6.1) ran before (it crashed too)")
    assert change_line(now, Revision(before.arn, now.image), T, T, WINDOW).endswith("checkout:13 (same image) ran "
                                                                                    "without crashes")
    assert change_line(now, None, T, T, WINDOW, unknown_before="not known") == (
        "started with checkout:14 (image :2026.6.2) at 10:02Z; not known")
    assert change_line(now, before, T - timedelta(minutes=31), T, WINDOW) == (
        "runs checkout:14 (image :2026.6.2); no deployment in the 30 min before the first crash")
    assert change_line(None, before, T, T, WINDOW) is None


def test_image_tags() -> None:
    assert image_tag("repo/app:1.2") == ":1.2"
    assert image_tag("localhost:5000/app") == "localhost:5000/app"
    assert image_tag("repo/app@sha256:" + "a" * 64) == "@sha256:aaaaaaaaaaaa"
    assert image_tag(None) == "unknown"
    now = Revision(ARN.format(2))
    assert change_line(now, Revision(ARN.format(1)), T, T, WINDOW) == (
        "started with checkout:2 (image unknown) at 10:02Z; checkout:1 (image unknown) ran without crashes")


# ---------------------------------------------------------------------------- the reader

class _Logs:
    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def filter_log_events(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]


def _error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "FilterLogEvents")


def _wanted(n: int = 2) -> list[Wanted]:
    return [Wanted("/ecs/api", f"ecs/app/task{i}", "eu-west-1", "app", f"task{i}", T) for i in range(n)]


HOME = ("111122223333", "eu-west-1")


def test_the_newest_streams_lines_are_quoted_with_one_call() -> None:
    logs = _Logs({"events": [{"timestamp": 1, "message": "boom password=x"}]})
    words = CrashLogs(logs, HOME).last_words(_wanted(), "111122223333")
    assert words.lines == ("boom password=****",) and words.task_id == "task0"
    call = logs.calls[0]
    assert call["logGroupName"] == "/ecs/api" and call["logStreamNames"] == ["ecs/app/task0"]
    assert call["endTime"] - call["startTime"] == int(timedelta(minutes=5, seconds=30).total_seconds() * 1000)


def test_pages_are_followed_and_the_newest_lines_kept() -> None:
    logs = _Logs({"events": [{"message": "old"}], "nextToken": "t"}, {"events": [{"message": "new"}]})
    assert CrashLogs(logs, HOME).last_words(_wanted(1), None).lines == ("old", "new")
    assert logs.calls[1]["nextToken"] == "t"


@pytest.mark.parametrize(("answer", "says"), [
    (_error("AccessDeniedException"), "no permission for logs:FilterLogEvents on /ecs/api (the stack grants it "
                                      "on CrashLogGroupPattern, default /ecs/*)"),
    (_error("ThrottlingException"), "CloudWatch Logs throttled the read of /ecs/api"),
    (ReadTimeoutError(endpoint_url="https://logs"), "/ecs/api not read within the budget (ReadTimeoutError)"),
    (RuntimeError("surprise"), "/ecs/api not read (RuntimeError)"),
])
def test_an_unreadable_log_is_one_line_and_no_second_call(answer: Exception, says: str) -> None:
    logs = _Logs(answer, {"events": [{"message": "never read"}]})
    words = CrashLogs(logs, HOME).last_words(_wanted(), "111122223333")
    assert words.note == says and not words.lines and len(logs.calls) == 1
    assert "\n" not in says


def test_a_missing_stream_tries_the_task_before() -> None:
    logs = _Logs(_error("ResourceNotFoundException"), {"events": [{"message": "from the task before"}]})
    words = CrashLogs(logs, HOME).last_words(_wanted(3), None)
    assert words.lines == ("from the task before",) and words.task_id == "task1" and len(logs.calls) == 2


def test_no_lines_in_either_stream_says_so() -> None:
    logs = _Logs({"events": []}, {"events": [{"message": "  "}]})
    words = CrashLogs(logs, HOME).last_words(_wanted(5), None)
    assert len(logs.calls) == MAX_CALLS
    assert words.note == "no log lines in /ecs/api ecs/app/task1 in the 5 min before the stop"


def test_another_account_or_region_is_said_without_a_call() -> None:
    logs = _Logs()
    other = CrashLogs(logs, HOME).last_words(_wanted(), "222233334444")
    assert other.note == "log group /ecs/api is in account 222233334444: not readable from this account"
    far = [Wanted("/ecs/api", "ecs/app/t", "us-east-1", "app", "t", T)]
    assert CrashLogs(logs, HOME).last_words(far, "111122223333").note == (
        "log group /ecs/api is in region us-east-1: not read from this region")
    assert logs.calls == [] and CrashLogs(logs, HOME).last_words([], None) == CrashWords()


def test_no_call_starts_after_the_budget() -> None:
    ticks = iter([0.0, BUDGET_S + 0.1, BUDGET_S + 0.2, BUDGET_S + 0.3])
    logs = _Logs({"events": []}, {"events": [{"message": "too late"}]})
    words = CrashLogs(logs, HOME, clock=lambda: next(ticks)).last_words(_wanted(), None)
    assert len(logs.calls) == 1 and words.note and words.note.startswith("no log lines")


# ---------------------------------------------------------------------------- what ran before (DescribeServices)

class _Ecs:
    def __init__(self, deployments: list[dict[str, Any]] | Exception) -> None:
        self.deployments = deployments
        self.calls = 0

    def describe_services(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if isinstance(self.deployments, Exception):
            raise self.deployments
        return {"services": [{"serviceName": "checkout", "deployments": self.deployments}]}


def _episodes(ecs: _Ecs) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(rt=SimpleNamespace(clients=lambda service: ecs))


def test_the_revision_before_is_the_other_deployments_task_definition() -> None:
    from ecs_guardrail.core.records import Action, Decision, Reason
    from ecs_guardrail.handlers.crash_context import _before

    decision = Decision(cluster="prod", service="checkout", time=T, action=Action.ALERT_ONLY,
                        reason=Reason.CRASH_LOOP, message="m", crashes_in_window=5, health_check_kills_in_window=0)
    rolling = _Ecs([{"status": "PRIMARY", "taskDefinition": ARN.format(14), "createdAt": T},
                    {"status": "ACTIVE", "taskDefinition": ARN.format(13), "createdAt": T - timedelta(days=3)}])
    before, why = _before(_episodes(rolling), decision, ARN.format(14), T)
    assert before is not None and before.arn == ARN.format(13) and why is None and rolling.calls == 1
    alone = _Ecs([{"status": "PRIMARY", "taskDefinition": ARN.format(14), "createdAt": T}])
    assert _before(_episodes(alone), decision, ARN.format(14), T) == (
        None, "the revision before is not in DescribeServices' deployments any more")
    denied = _Ecs(_error("AccessDeniedException"))
    assert _before(_episodes(denied), decision, ARN.format(14), T) == (
        None, "the revision before is not known (DescribeServices: AccessDeniedException)")


@pytest.mark.parametrize(("line", "masked"), [
    ('"password": "hunter two"', '"password": "****"'),  # a quoted value is masked whole, spaces and all
    ("password='a b c' next", "password='****' next"),
    ('token="a\\"bc" next', 'token="****" next'),
    ('log={\\"password\\": \\"hunter2\\"}', 'log={\\"password\\": \\"****\\"}'),  # JSON inside a JSON string
    ('password:"x,y"', 'password:"****"'),
    ('"secret": "unclosed and cut', '"secret": "****'),
    ("secret => abc", "secret => ****"),
    ("PASSWORD%3Dhunter2&a=b", "PASSWORD%3D****&a=b"),
    ("api_key=abc123 apikey: def x-api-key: ghi", "api_key=**** apikey: **** x-api-key: ****"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ****"),
    ("<password>hunter2</password>", "<password>****</password>"),
    ("postgres://user:p@ss@db/orders", "postgres://****@db/orders"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789 xoxb-1234-5678-abcdef", "**** ****"),
    ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", "https://hooks.slack.com/services/****"),
    ("-----BEGIN RSA PRIVATE KEY----- MIIEabc -----END RSA PRIVATE KEY-----",
     "-----BEGIN RSA PRIVATE KEY-----****-----END RSA PRIVATE KEY-----"),
    ("X-Amz-Signature=abcdef0123&X-Amz-Security-Token=IQoJ", "X-Amz-Signature=****&X-Amz-Security-Token=****"),
])
def test_secret_variants_that_escaped_the_first_masking_are_masked(line: str, masked: str) -> None:
    assert mask(line) == masked


def test_a_secret_written_over_several_lines_is_masked() -> None:
    assert quote(["{", '  "password":', '    "hunter two",', '  "user": "bob"', "}"]) == (
        "{", '  "password":', "****", '  "user": "bob"', "}")
    assert quote(["-----BEGIN PRIVATE KEY-----", "MIIEabc", "def", "-----END PRIVATE KEY-----", "after"]) == (
        "-----BEGIN PRIVATE KEY-----", "****", "****", "-----END PRIVATE KEY-----", "after")
    assert quote(["MIIEabc", "def", "-----END PRIVATE KEY-----"]) == ("****", "****", "-----END PRIVATE KEY-----")
    assert quote(["x", "-----BEGIN PRIVATE KEY-----", "MIIEabc"]) == ("x", "-----BEGIN PRIVATE KEY-----", "****")


def test_masking_a_hostile_line_stays_cheap() -> None:
    """No pattern backtracks on a hostile line: the CPU of this thread (not the wall clock, which a loaded
    machine stretches) stays far under 2 s for 250 of them (a few milliseconds when it holds)."""
    start = time.thread_time()
    for text in ("token" * 240, "password" * 150, '"password":"' * 100, "a:" * 600, "x" * 80 + "=" * 200):
        quote([text] * 50)
    assert time.thread_time() - start < 2.0


def test_a_quoted_line_never_opens_a_code_block() -> None:
    assert quote(["a ```b``` c"]) == ("a '''b''' c",)


def test_masked_keeps_every_line_masked_and_quoting_it_again_changes_nothing() -> None:
    """capture's logs.jsonl: each line as an alert shows it, none dropped; a replay quotes it the same."""
    from ecs_guardrail.core.crash_words import masked, quote

    messages = ["INFO start", "db_password=hunter2 key AKIAIOSFODNN7EXAMPLE", "", "-----BEGIN RSA PRIVATE KEY-----",
                "MIIEow", "-----END RSA PRIVATE KEY-----", b"\xff bytes\x1b[31m", "url postgres://u:p@h/db"]
    out = masked(messages)
    assert len(out) == len(messages) and out[2] == "" and out[4] == "****"
    assert "hunter2" not in out[1] and "AKIA" not in out[1] and "u:p@" not in out[7]
    assert quote(out) == quote(messages)


@pytest.mark.parametrize("secret", ["ghp_" + "A" * 36, "sk_live_" + "B" * 24, "AKIA" + "C" * 16])
def test_a_secret_split_by_the_line_cut_is_masked_not_shown_in_part(secret: str) -> None:
    from ecs_guardrail.core.crash_words import LINE_MAX, masked, quote

    for pad in range(LINE_MAX - len(secret) - 2, LINE_MAX):
        line = "x" * pad + " " + secret
        for shown in (masked([line])[0], quote([line])[0]):
            assert secret[:5] not in shown
            assert len(shown) <= LINE_MAX


def test_a_line_cut_unmasked_still_ends_with_an_ellipsis() -> None:
    from ecs_guardrail.core.crash_words import LINE_MAX, masked

    assert masked(["x" * 400]) == ["x" * (LINE_MAX - 1) + "…"]
    assert masked(["password=" + "a" * 5000]) == ["password=****…"]  # its end was never read
    assert masked(["y" * 280 + " ghp_" + "A" * 36]) == ["y" * 280 + " ****"]  # nothing lost: no ellipsis


@pytest.mark.parametrize("secret", ["ghp_" + "A" * 36, "https://deploy:" + "h" * 190 + "@git.example/x",
                                    "xoxb-" + "1" * 40, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"])
def test_a_secret_split_by_the_read_cut_is_masked_or_not_shown(secret: str) -> None:
    """The message is read to a bound before masking (a 1 MB line is not masked whole): a secret that bound
    splits, placed after another secret whose masking shortens the line so the split one would fit the
    first :data:`LINE_MAX` characters, is masked or dropped, never shown in part, bytes or text."""
    from ecs_guardrail.core.crash_words import masked, quote

    for n in range(1000, 1700, 11):
        line = 'password="' + "A" * n + '" ' + secret + " " + "z" * 3000
        for message in (line, line.encode()):
            for shown in (masked([message])[0], quote([message])[0]):
                assert shown.startswith('password="****') and shown.endswith("…"), (n, shown)
                assert secret[4:12] not in shown and "hhhh" not in shown and "AAAA" not in shown, (n, shown)


def test_a_message_up_to_the_read_and_its_tail_is_masked_whole() -> None:
    from ecs_guardrail.core.crash_words import masked

    assert masked(['password="' + "A" * 1300 + '" ok ' + "z" * 20]) == ['password="****" ok ' + "z" * 20]
    assert masked(["q" * 1500]) == ["q" * (LINE_MAX - 1) + "…"]


@pytest.mark.parametrize(("line", "masked"), [
    ("exec app --password hunter2 --port 80", "exec app --password **** --port 80"),
    ("java -jar app.jar --spring.datasource.password s3cr3t", "java -jar app.jar --spring.datasource.password ****"),
    ("cmd --api-token 'a b c' next", "cmd --api-token **** next"),
    ('cmd --client-secret "a b" next', "cmd --client-secret **** next"),
    ("mysql -u root -p s3cr3t -h db", "mysql -u root -p **** -h db"),
    ("forwarded header Basic dXNlcjpodW50ZXIy sent", "forwarded header Basic **** sent"),
    ("x-auth: Basic YWRtaW46aHVudGVyMg==", "x-auth: Basic ****"),
    ("proxy said: bearer abcdefgh12345678.x", "proxy said: bearer ****"),
])
def test_cli_arguments_basic_credentials_and_bearer_tokens_anywhere_are_masked(line: str, masked: str) -> None:
    assert mask(line) == masked


@pytest.mark.parametrize("line", [
    'psql: FATAL: password authentication failed for user "app"',
    "Basic auth disabled",
    "Basic authentication disabled for /health",
    "\tat org.springframework.security.web.authentication.www.BasicAuthenticationFilter.doFilterInternal",
    "- token expired, refreshing",
    "refresh-token rotated --verbose",
])
def test_ordinary_crash_text_stays_readable(line: str) -> None:
    assert mask(line) == line


def test_a_yaml_block_value_under_a_secrets_key_is_masked() -> None:
    assert quote(["db:", "  password: |", "    first-secret-line", "", "    second", "  user: app", "next"]) == (
        "db:", "  password: ****", "****", "****", "  user: app", "next")
    assert quote(["private_key: >-", "  MIIEabc", "  def", "host: db"]) == (
        "private_key: ****", "****", "****", "host: db")
    assert quote(["style: |", "  plain text", "password: hunter2", "  not a block"]) == (
        "style: |", "  plain text", "password: ****", "  not a block")
