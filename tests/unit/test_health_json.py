"""``audit --health-json FILE`` (issue 35 item 5): what in a saved health response can turn the load
balancer's check DOWN, on Spring Boot Actuator, MicroProfile Health and ASP.NET Core responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecs_guardrail.core.health_json import MAX_DEPTH, HealthJsonError, analyse, read_health_json
from tests.conftest import cli_in_process

ROOT = Path(__file__).resolve().parents[2]
OUTAGE = ROOT / "events" / "health" / "actuator-outage.json"

MICROPROFILE = {"status": "DOWN", "checks": [{"name": "redis-cache", "status": "DOWN", "data": {"host": "r1"}},
                                             {"name": "deadlock", "status": "UP"},
                                             {"name": "inventory", "status": "UP"}]}
ASPNET = {"status": "Unhealthy", "totalDuration": "00:00:00.1200000",
          "entries": {"npgsql": {"status": "Healthy", "tags": ["db"], "data": {}},
                      "rabbitmq": {"status": "Unhealthy", "description": "timeout", "data": {}},
                      "self": {"status": "Healthy", "data": {}}}}


def _by(report):
    return {c.path: c for c in report.components}


def test_the_outage_response_marks_elasticsearch_down_and_shared_and_the_database_up_and_shared():
    report = analyse(json.loads(OUTAGE.read_text()))
    assert report.format == "spring" and report.status == "DOWN"
    c = _by(report)
    assert (c["elasticsearch"].kind, c["elasticsearch"].shared, c["elasticsearch"].down) == ("search", True, True)
    assert (c["db"].kind, c["db"].shared, c["db"].down) == ("database", True, False)
    assert c["diskSpace"].shared is False and c["ping"].shared is False
    high = [f.component for f in report.findings if f.severity.value == "high"]
    assert high == ["db", "elasticsearch"]
    es = next(f for f in report.findings if f.component == "elasticsearch")
    assert "every task answers 503 now" in es.message and "/actuator/health/liveness" in es.message
    assert report.endpoints == ("/actuator/health/liveness", "/actuator/health/readiness")
    assert report.groups == ["liveness", "readiness"] and report.exit_status("high") == 1


def test_spring_composites_and_the_boot_2_0_details_shape_are_read_to_their_leaves():
    doc = {"status": "UP", "details": {"db": {"status": "UP", "details": {
        "primary": {"status": "UP", "details": {"database": "MySQL"}},
        "secondary": {"status": "UP", "details": {"database": "MySQL"}}}}, "diskSpace": {"status": "UP"}}}
    c = _by(analyse(doc))
    assert sorted(c) == ["db/primary", "db/secondary", "diskSpace"]
    assert c["db/primary"].kind == "database" and c["db/primary"].shared


def test_microprofile_checks_and_their_endpoints():
    report = analyse(MICROPROFILE)
    c = _by(report)
    assert report.format == "microprofile" and report.endpoints == ("/health/live", "/health/ready")
    assert c["redis-cache"].kind == "cache" and c["redis-cache"].down
    assert c["deadlock"].shared is False
    assert c["inventory"].kind == "unknown" and c["inventory"].shared is None
    assert {f.check for f in report.findings} == {"health_shared_dependency", "health_unknown_component",
                                                   "health_local_component"}


@pytest.mark.parametrize("key", ["entries", "results"])
def test_aspnet_core_health_reports_of_both_writers(key):
    doc = {"status": ASPNET["status"], key: ASPNET["entries"]}
    report = analyse(doc)
    c = _by(report)
    assert report.format == "aspnetcore" and report.endpoints == ("/healthz/live", "/healthz/ready")
    assert c["rabbitmq"].kind == "message broker" and c["rabbitmq"].down and c["rabbitmq"].shared
    assert c["npgsql"].kind == "database" and not c["npgsql"].down  # Healthy
    assert c["self"].shared is False
    assert "Predicate = _ => false" in report.how


def test_names_that_only_contain_a_short_word_are_not_that_kind():
    doc = {"status": "UP", "components": {"shipping": {"status": "UP"}, "feedback": {"status": "UP"},
                                          "ordersDb": {"status": "UP"}}}
    c = _by(analyse(doc))
    assert c["shipping"].kind == "unknown" and c["feedback"].kind == "unknown"  # not ping, not db
    assert c["ordersDb"].kind == "database"


@pytest.mark.parametrize(("data", "said"), [
    (b"[" * 1000 + b"]" * 1000, "nested too deeply"),
    (("{\"status\":\"UP\",\"components\":{\"c\":" * 1000 + "{\"status\":\"UP\"}" + "}}" * 1000).encode(),
     "nested too deeply"),
    (b"\x00\xff\xfe\x00 binary", "not UTF-8"),
    (b"not json", "not JSON"),
    (b'{"foo": 1}', "none of the formats read"),
    (b'{"status": "UP", "components": {"db": {"details": {}}}}', "component 'db' has no status"),
    (b'{"status": "DOWN", "checks": [1]}', "checks[0] has no status"),
])
def test_bad_input_is_one_clear_error(data, said):
    with pytest.raises(HealthJsonError) as info:
        analyse(read_health_json(data))
    assert said in str(info.value) and "\n" not in str(info.value)


def test_components_nested_past_the_limit_but_decodable_are_refused_without_recursion():
    node: dict[str, object] = {"status": "UP"}
    for i in range(MAX_DEPTH + 5):
        node = {"status": "UP", "components": {f"c{i}": node}}
    with pytest.raises(HealthJsonError, match=f"nested more than {MAX_DEPTH} deep"):
        analyse(node)


def test_a_file_larger_than_a_health_response_is_refused():
    with pytest.raises(HealthJsonError, match="a health response is kilobytes"):
        read_health_json(b" " * (10 * 1024 * 1024 + 1))


# -- the command: exit statuses as audit's, a file only ---------------------------------------------------

def test_the_command_reads_the_file_only_and_exits_1_on_a_high_finding(monkeypatch):
    import socket

    def no_network(*_a: object, **_k: object) -> None:
        raise AssertionError("audit --health-json must never call a service")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    proc = cli_in_process("audit", "--health-json", str(OUTAGE))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"health response (Spring Boot Actuator), status DOWN: {OUTAGE}"
    assert any(ln.split() == ["elasticsearch", "search", "DOWN", "yes:", "fails", "every", "task", "at", "once"]
               for ln in lines)
    assert any(ln.split()[:3] == ["db", "database", "UP"] for ln in lines)
    assert lines[-1] == "6 findings (2 high, 0 medium, 4 low) in 6 components; --fail-on high: exit 1"


def test_only_local_components_exit_0_and_json_lines_end_with_the_summary(tmp_path):
    path = tmp_path / "health.json"
    path.write_text(json.dumps({"status": "UP", "components": {"diskSpace": {"status": "UP"},
                                                               "ping": {"status": "UP"}}}))
    proc = cli_in_process("audit", "--health-json", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [r["check"] for r in rows[:-1]] == ["health_local_component"] * 2
    assert rows[-1]["type"] == "summary" and rows[-1]["exit_status"] == 0
    assert cli_in_process("audit", "--health-json", str(path), "--fail-on", "medium").returncode == 0
    md = cli_in_process("audit", "--health-json", str(OUTAGE), "--format", "markdown")
    assert md.returncode == 1 and "| elasticsearch | search | DOWN | yes: fails every task at once |" in md.stdout


@pytest.mark.parametrize("content", [b'{"foo": 1}', b"[" * 1000 + b"]" * 1000])
def test_a_file_in_none_of_the_formats_is_one_line_and_2(tmp_path, content):
    path = tmp_path / "health.json"
    path.write_bytes(content)
    proc = cli_in_process("audit", "--health-json", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"ecs-guardrail: --health-json {path}: ") and proc.stderr.count("\n") == 1


def test_a_missing_file_is_one_line_and_2(tmp_path):
    proc = cli_in_process("audit", "--health-json", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "cannot be read (No such file or directory)" in proc.stderr
