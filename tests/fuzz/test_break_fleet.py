"""fleet.json values the embedded AWS cannot build: exit 2 with one line, never a traceback or "AWS refused"."""

from __future__ import annotations

import copy

import pytest
from breakkit import FLEET, run, scenario


def _fleet(**changes):
    fleet = copy.deepcopy(FLEET)
    for key, value in changes.items():
        where, _, field = key.partition("__")
        target = {"fleet": fleet, "cluster": fleet["clusters"][0],
                  "service": fleet["clusters"][0]["services"][0]}[where]
        target[field] = value
    return fleet


def _dup_service():
    fleet = copy.deepcopy(FLEET)
    fleet["clusters"][0]["services"].append({"name": "api"})
    return fleet


def _dup_cluster():
    fleet = copy.deepcopy(FLEET)
    fleet["clusters"].append({"name": "development", "services": []})
    return fleet


BAD = {
    "region unknown": _fleet(fleet__region="mars-1"),          # moto: KeyError traceback
    "region not a string": _fleet(fleet__region=5),              # botocore: InvalidRegionError traceback
    "account not 12 digits": _fleet(fleet__account="abc"),       # exit 1, a Powertools log line, "invalid setting"
    "services null": _fleet(cluster__services=None),             # TypeError traceback
    "tag with an empty key": _fleet(service__tags={"": "v"}),    # ParamValidationError traceback
    "target group not a string": _fleet(service__targetGroups=[5]),  # TypeError traceback
    "target group name with a space": _fleet(service__targetGroups=["bad name"]),  # "AWS refused", exit 1
    "target group longer than 32": _fleet(service__targetGroups=["t" * 33]),  # silently cut to 32 (and collided)
    "cluster name with a slash": _fleet(cluster__name="a/b"),    # "AWS refused", exit 1
    "service name with a slash": _fleet(service__name="a/b"),    # "AWS refused", exit 1
    "service name with #": _fleet(service__name="a#b"),          # no event can ever name it
    "service name of 256": _fleet(service__name="s" * 256),
    "duplicate service": _dup_service(),
    "duplicate cluster": _dup_cluster(),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_fleet_exits_2_with_one_line(tmp_path, capsys, name):
    code, out, err = run(capsys, "replay", str(scenario(tmp_path, fleet=BAD[name])), "--json")
    assert code == 2, err
    assert out == [] and len(err) == 1 and err[0].startswith("ecs-guardrail: fleet.json: "), err


def test_good_edge_values_still_replay(tmp_path, capsys):
    fleet = _fleet(fleet__account=111122223333, fleet__region="us-gov-west-1", service__name="s" * 255,
                   service__targetGroups=["t" * 32], service__tags={"k": 1})
    code, out, err = run(capsys, "replay", str(scenario(tmp_path, fleet=fleet)), "--json")
    assert code == 0, err
