"""Two observers side by side (ARCHITECTURE.md, "Availability"): the health checker's healthy hosts and
the clients' request metrics, per minute, their disagreements, still_serving on 2xx, and the CSV columns."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ecs_guardrail.app.timeline import render
from ecs_guardrail.core.availability import (
    ClientsState,
    Disagreement,
    MinuteState,
    Sample,
    SampleBlock,
    ServiceCounts,
    availability_report,
    clients_state,
)
from ecs_guardrail.core.entitlement import EntitlementFacts, EntitlementReason, ServingSample, entitlement
from ecs_guardrail.core.errors import ScenarioError
from ecs_guardrail.core.timeline import build_timeline, observers_verdict, samples_from_items
from ecs_guardrail.handlers.availability import block_start
from ecs_guardrail.replay.healthy_hosts import has_request_columns, read_healthy_hosts_csv

T0 = datetime(2025, 9, 14, 9, 30, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def sample(svc: str, m: int, hosts: float | None, requests: float | None = None, ok: float | None = None,
           bad: float | None = None, elb: float | None = None, tg: str | None = None, metrics: bool = True) -> Sample:
    return Sample("production", svc, tg or f"{svc}-tg", at(m), hosts, request_count=requests, target_2xx=ok,
                  target_5xx=bad, elb_5xx=elb, request_metrics=metrics)


# ---------------------------------------------------------------------------------------- the clients' view
def test_clients_state_served_failing_idle_and_not_read():
    assert clients_state([sample("a", 0, 2, 100, 96, 4)]) is ClientsState.SERVED  # 4 % < 5 %
    assert clients_state([sample("a", 0, 2, 100, 95, 5)]) is ClientsState.FAILING  # 5 %: at the ratio fails
    assert clients_state([sample("a", 0, 2)]) is ClientsState.IDLE  # no request published: no request
    assert clients_state([sample("a", 0, 2, metrics=False)]) is None  # NLB, or not read
    # the load balancer's own 5xx (503 with no target) are not in RequestCount: they count as requests too
    assert clients_state([sample("a", 0, 0, None, None, None, 40)]) is ClientsState.FAILING
    assert clients_state([sample("a", 0, 2, 1000, 990, 0, 10)], client_error_ratio=0.01) is ClientsState.SERVED
    # a service's target groups add up: 10 failing of 300 requests is served
    assert clients_state([sample("a", 0, 2, 100, 90, 10, tg="x"), sample("a", 0, 2, 200, 200, 0, tg="y")]) \
        is ClientsState.SERVED


def test_disagreements_both_ways_and_the_checkers_figure_stays_the_checkers():
    samples = [sample("front", m, 0, 600, 597, 3) for m in range(10)]  # fail-open: checker down, served
    samples += [sample("cart", m, 2, 100, 70, 30) for m in range(10)]  # gray failure
    samples += [sample("tcp", m, 0, metrics=False) for m in range(10)]  # NLB: healthy hosts only
    r = availability_report(samples, at(0), at(9))
    per = {s.service: s for s in r.services}
    assert per["front"].disagreements[Disagreement.CHECKER_DOWN_CLIENTS_SERVED] == 10
    assert per["cart"].disagreements[Disagreement.CHECKER_UP_CLIENTS_FAILING] == 10
    assert r.checker_disagreement_minutes == {"checker_down_clients_served": 10, "checker_up_clients_failing": 10}
    assert r.served_service_minutes == 10 and r.idle_service_minutes == 0
    assert r.unavailable_service_minutes == 20  # front and tcp down for the checker; cart up
    assert r.healthy_hosts_only == ["production/tcp"]
    assert per["tcp"].to_dict()["clients_view"] is None
    assert r.to_dict()["checker_disagreement_minutes"]["checker_up_clients_failing"] == 10
    # no request metrics anywhere: no clients' figures at all (the summary leaves them out)
    only = availability_report([sample("a", 0, 1, metrics=False)], at(0), at(0))
    assert only.served_service_minutes is None and only.checker_disagreement_minutes is None


def test_a_minute_without_healthy_host_datapoint_is_no_data_not_a_disagreement():
    minute = availability_report([sample("a", 0, None, 100, 100, 0)], at(0), at(0)).minutes[0]
    assert minute.state is MinuteState.NO_DATA and minute.clients is ClientsState.SERVED
    assert minute.disagreement is None


def test_blocks_expand_minute_by_minute_and_counts_hold_until_they_change():
    block = SampleBlock("production", "front", "front-tg", at(0),
                        {"healthy_host_count": (2.0, None, 0.0), "request_count": (10.0, None, 5.0),
                         "target_2xx": (10.0, None, 5.0), "target_5xx": (None, None, None),
                         "elb_5xx": (None, None, None)}, request_metrics=True, sampled_at=at(35))
    got = block.samples()
    assert [s.minute for s in got] == [at(0), at(1), at(2)]
    assert [s.healthy_host_count for s in got] == [2.0, None, 0.0]
    assert got[2].request_count == 5.0 and got[2].request_metrics
    # the operator's zero is read from the counts in force, though no sample carries a desired count
    counts = [ServiceCounts("production", "front", at(0), 2, 2), ServiceCounts("production", "front", at(1) +
                                                                              timedelta(seconds=30), 0, 0)]
    states = [m.state for m in availability_report(got, at(0), at(2), counts=counts).minutes]
    assert states == [MinuteState.UP, MinuteState.ZERO_BY_OPERATOR, MinuteState.ZERO_BY_OPERATOR]


def test_block_items_and_counts_items_read_back_from_the_timeline_index():
    items = [{"type": "healthy_hosts", "cluster": "production", "service": "front", "target_group": "front-tg",
              "time": "2025-09-14T09:30:00Z", "sampled_at": "2025-09-14T10:04:00Z",
              "per_minute": {"healthy_host_count": [0, 0], "request_count": [600, 600], "target_2xx": [600, 600],
                             "target_5xx": [None, None], "elb_5xx": [None, None]}},
             {"type": "service_counts", "cluster": "production", "service": "front", "time": "2025-09-14T09:30:10Z",
              "desired_count": 3, "running_count": 3}]
    samples, counts = samples_from_items(items)
    assert len(samples) == 2 and samples[1].minute == at(1) and samples[1].target_2xx == 600
    assert counts == [ServiceCounts("production", "front", at(0) + timedelta(seconds=10), 3, 3)]


def test_blocks_are_utc_aligned_half_hours():
    assert block_start(datetime(2025, 9, 14, 9, 59, tzinfo=UTC)) == datetime(2025, 9, 14, 9, 30, tzinfo=UTC)
    assert block_start(datetime(2025, 9, 14, 10, 0, 30, tzinfo=UTC)) == datetime(2025, 9, 14, 10, 0, tzinfo=UTC)


# ------------------------------------------------------------------------------------------ the timeline
def _items_of_outage(n_services: int = 3) -> list[dict]:
    items = []
    for k in range(n_services):
        svc = f"svc{k}"
        items.append({"type": "healthy_hosts", "cluster": "production", "service": svc, "target_group": f"{svc}-tg",
                      "time": "2025-09-14T09:30:00Z",
                      "per_minute": {"healthy_host_count": [2] * 5 + [0] * 10 + [2] * 5,
                                     "request_count": [600] * 20, "target_2xx": [597] * 20,
                                     "target_5xx": [3] * 20, "elb_5xx": [None] * 20}})
    return items


def test_the_timeline_says_the_checker_not_the_fleet():
    tl = build_timeline(_items_of_outage(), "production", at(0), at(19))
    assert tl.observers == "health checks failed on 3 of 3 services while clients were served: the checker, " \
                           "not the fleet"
    lines = [ln for ln in tl.lines if ln.category == "observers"]
    assert [(ln.start, ln.end, ln.count) for ln in lines] == [(at(5), at(14), 30)]
    text = render(tl, "text")
    assert "two observers: health checks failed on 3 of 3 services" in text
    assert "checker down while clients served 30" in text
    assert "**Two observers**" in render(tl, "markdown")
    rows = list(csv.DictReader(io.StringIO(render(tl, "csv"))))
    totals = {r["title"]: r["count"] for r in rows if r["category"] == "totals"}
    assert totals["unavailable_service_minutes"] == "30" and totals["served_service_minutes"] == "60"
    assert totals["checker_down_clients_served"] == "30" and totals["checker_up_clients_failing"] == "0"
    doc = json.loads(render(tl, "json"))
    assert doc["observers"] == tl.observers
    assert doc["availability"]["checker_disagreement_minutes"]["checker_down_clients_served"] == 30


def test_a_block_that_starts_before_the_window_still_counts_its_minutes_inside():
    tl = build_timeline(_items_of_outage(1), "production", at(10), at(19))
    assert tl.availability is not None and tl.availability.start == at(10)
    assert tl.availability.unavailable_service_minutes == 5


def test_the_gray_failure_sentence():
    r = availability_report([sample("cart", m, 2, 100, 70, 30) for m in range(3)], at(0), at(2))
    assert observers_verdict(r) == ("clients got 5xx from 1 service the health check called healthy (cart): "
                                    "a gray failure the checker cannot see")
    assert observers_verdict(availability_report([sample("a", 0, 2, metrics=False)], at(0), at(0))) is None


# ----------------------------------------------------------------------------------------- still_serving
def _loop_facts(*serving: ServingSample) -> EntitlementFacts:
    return EntitlementFacts(cluster="staging", service="front", serving=serving)


def test_still_serving_when_the_checker_fails_but_targets_answer_2xx():
    now = at(10) + timedelta(seconds=20)
    v = entitlement("crash_loop", _loop_facts(ServingSample("front-stg", at(9), 0.0, 300.0, 299.0, 1.0, 0.0)), now)
    assert not v.entitled and v.reason is EntitlementReason.STILL_SERVING
    assert "answered 299 request(s) with 2xx" in v.message and v.evidence["target_2xx"] == 299.0


@pytest.mark.parametrize("share", [0.7, 0.6, 0.01])
def test_still_serving_on_any_2xx_whatever_the_5xx_share(share: float):
    # ARCHITECTURE.md rule 4: "HTTPCode_Target_2XX_Count > 0, whatever the share of 5xx" (issue 31 item 9:
    # the README's "2xx under the error ratio" scaled a service that still answered 60 % of its requests)
    ok = 100.0 * share
    v = entitlement("crash_loop", _loop_facts(ServingSample("front-stg", at(9), 0.0, 100.0, ok, 100.0 - ok, 0.0)),
                    at(10) + timedelta(seconds=20))
    assert not v.entitled and v.reason is EntitlementReason.STILL_SERVING, share


@pytest.mark.parametrize("why, sample_", [
    ("every request a 5xx is not serving", ServingSample("front-stg", at(9), 0.0, 100.0, 0.0, 100.0, 0.0)),
    ("older than 3 minutes is no evidence", ServingSample("front-stg", at(6), 0.0, 300.0, 300.0, 0.0, 0.0)),
    ("no request is no evidence", ServingSample("front-stg", at(9), 0.0, 0.0, 0.0, 0.0, 0.0)),
    ("the checker alone, without the clients' view", ServingSample("front-stg", at(9), 0.0)),
])
def test_not_still_serving(why: str, sample_: ServingSample):
    v = entitlement("crash_loop", _loop_facts(sample_), at(10) + timedelta(seconds=20))
    assert v.reason is not EntitlementReason.STILL_SERVING, why


def test_the_error_ratio_is_a_setting():
    s = ServingSample("front-stg", at(9), 0.0, 100.0, 92.0, 8.0, 0.0)
    assert not s.answering(0.05) and s.answering(0.1)


# ------------------------------------------------------------------------------------- healthy_hosts.csv
def _csv(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "healthy_hosts.csv"
    p.write_text(text)
    return p


def test_csv_request_columns_are_optional_and_empty_cells_are_no_datapoint(tmp_path: Path):
    p = _csv(tmp_path, "time,target_group,healthy_host_count,request_count,target_2xx,target_5xx,elb_5xx\n"
                       "2025-09-14T09:30:00Z,web,0,600,597,3,\n2025-09-14T09:31:00Z,web,2,,,,\n")
    rows = read_healthy_hosts_csv(p)
    assert rows[0][3] == {"request_count": 600.0, "target_2xx": 597.0, "target_5xx": 3.0}
    assert rows[1][3] == {}
    assert has_request_columns(p)
    plain = _csv(tmp_path, "time,target_group,healthy_host_count\n2025-09-14T09:30:00Z,web,1\n")
    assert read_healthy_hosts_csv(plain)[0][3] == {} and not has_request_columns(plain)


@pytest.mark.parametrize("header, row, says", [
    ("time,target_group,healthy_host_count,requests", "2025-09-14T09:30:00Z,web,1,5", "unknown column 'requests'"),
    ("time,target_group,healthy_host_count,request_count", "2025-09-14T09:30:00Z,web,1,many",
     "column request_count: 'many' is not a count"),
    ("time,target_group,healthy_host_count,target_5xx", "2025-09-14T09:30:00Z,web,1,-3",
     "column target_5xx: '-3' is not a count"),
    ("time,target_group,healthy_host_count,request_count,target_2xx,target_5xx",
     "2025-09-14T09:30:00Z,web,1,10,8,5", "exceed request_count (10)"),
])
def test_csv_errors_name_the_line_and_column(tmp_path: Path, header: str, row: str, says: str):
    with pytest.raises(ScenarioError, match="healthy_hosts.csv") as exc:
        read_healthy_hosts_csv(_csv(tmp_path, f"{header}\n{row}\n"))
    assert says in str(exc.value)
