"""healthy_hosts.csv values that crashed, hung or were taken silently: exit 2 with one line naming the row."""

from __future__ import annotations

import copy

import pytest
from breakkit import FLEET, run, scenario

HEADER = "time,target_group,healthy_host_count\n"
FLEET_TG = copy.deepcopy(FLEET)
FLEET_TG["clusters"][0]["services"][0]["targetGroups"] = ["api-dev"]

BAD = {
    "nan": "2025-08-21T12:00:00Z,api-dev,nan\n",                       # PutMetricData refused: exit 1
    "inf": "2025-08-21T12:00:00Z,api-dev,inf\n",                       # TypeError traceback (DynamoDB)
    "1e308": "2025-08-21T12:00:00Z,api-dev,1e308\n",                   # decimal.Overflow traceback
    "negative": "2025-08-21T12:00:00Z,api-dev,-3\n",                   # taken as a count
    "year 9999": "9999-12-31T23:59:00Z,api-dev,1\n",                   # OverflowError traceback
    "year 1 to 2025": "0001-01-01T00:00:00Z,api-dev,1\n2025-08-21T12:00:00Z,api-dev,1\n",  # one sampler run a minute
    "a year apart": "2025-08-21T12:00:00Z,api-dev,1\n2026-08-21T12:00:00Z,api-dev,1\n",    # ... for 525,600 minutes
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_healthy_hosts_exits_2_with_one_line(tmp_path, capsys, case):
    folder = scenario(tmp_path, fleet=FLEET_TG, healthy_hosts=(HEADER + BAD[case]).encode())
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 2, err
    assert out == [] and len(err) == 1 and "healthy_hosts.csv" in err[0], err


def test_naive_time_is_utc_and_offsets_convert(tmp_path, capsys):
    # a naive time beside an aware one raised TypeError (min() of the two)
    rows = "2025-08-21T12:00:00,api-dev,1\n2025-08-21T14:01:00+02:00,api-dev,0\n"
    folder = scenario(tmp_path, fleet=FLEET_TG, healthy_hosts=(HEADER + rows).encode())
    code, out, err = run(capsys, "replay", str(folder), "--json")
    assert code == 0, err
