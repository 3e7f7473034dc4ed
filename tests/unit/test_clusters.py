"""ALERT_ONLY_CLUSTERS (issue 17, item 11): an entry that is not a cluster name, glob or cluster ARN is
an error at start (functions and replay, one message); settings.env is read as dotenv files are; replay
warns for an entry that matches no cluster of fleet.json; ``none`` means no cluster is alert-only."""

from __future__ import annotations

import json

import pytest

from ecs_guardrail.core.clusters import EntryKind, parse_alert_only_clusters
from ecs_guardrail.core.errors import ScenarioError, SettingsError
from ecs_guardrail.core.policy import PolicyConfig, is_alert_only_cluster
from ecs_guardrail.replay.scenario import alert_only_warnings, load_scenario, read_settings_env
from ecs_guardrail.settings import load_settings

ARN = "arn:aws:ecs:eu-west-1:111122223333:cluster/production"


@pytest.mark.parametrize(("text", "kind"), [
    ("production", EntryKind.NAME),
    ("Prod_EU-1", EntryKind.NAME),
    ("x" * 255, EntryKind.NAME),
    ("prod-*", EntryKind.GLOB),
    ("team?", EntryKind.GLOB),
    ("*", EntryKind.GLOB),
    (ARN, EntryKind.ARN),
    ("arn:aws-us-gov:ecs:us-gov-west-1:111122223333:cluster/live", EntryKind.ARN),
])
def test_names_globs_and_cluster_arns_are_entries(text, kind):
    (entry,) = parse_alert_only_clusters(text).entries
    assert entry.kind is kind and entry.text == text


@pytest.mark.parametrize("bad", [
    "production   # never act on prod",  # a comment kept as part of the value
    "prod uction",
    "'production'",
    "prod[12]",  # IAM has no character classes: the deny could not cover what fnmatch would match
    "x" * 256,
    "arn:aws:ecs:eu-west-1:1111:cluster/production",  # not a 12-digit account
    "arn:aws:ecs:eu-west-1:111122223333:service/production/web",  # a service, not a cluster
    "arn:aws:ecs:*:111122223333:cluster/production",  # ARNs are exact; globs are for names
    "prod\tuction",
    "none,production",
])
def test_anything_else_is_an_error_at_start_with_one_message(tmp_path, bad):
    with pytest.raises(ValueError, match="ALERT_ONLY_CLUSTERS"):
        parse_alert_only_clusters(bad)
    with pytest.raises(SettingsError) as lambda_side:  # the functions' settings
        load_settings({"ALERT_ONLY_CLUSTERS": bad})
    (tmp_path / "fleet.json").write_text(json.dumps({"clusters": [{"name": "production", "services": []}]}))
    (tmp_path / "events.jsonl").write_text("")
    with pytest.raises(ScenarioError) as replay_side:  # replay --set
        load_scenario(tmp_path, {"ALERT_ONLY_CLUSTERS": bad})
    assert str(replay_side.value) == str(lambda_side.value)
    assert "ALERT_ONLY_CLUSTERS" in str(lambda_side.value)


def test_empty_is_every_cluster_and_none_is_no_cluster():
    for unset in (None, "", " , ,"):
        scope = parse_alert_only_clusters(unset)
        assert scope.every and scope.matches("anything")
    for none in ("none", "NONE", " None "):
        scope = parse_alert_only_clusters(none)
        assert scope.none and not scope.matches("production") and not scope.matches("none")
    assert load_settings({"ALERT_ONLY_CLUSTERS": "none"}).ALERT_ONLY_CLUSTERS == ("none",)
    policy = load_settings({"ALERT_ONLY_CLUSTERS": "none"}).policy()
    assert not is_alert_only_cluster(policy, "production", ARN)
    assert is_alert_only_cluster(PolicyConfig(alert_only_clusters=()), "production", ARN)


def test_matching_ignores_case_and_an_arn_entry_fails_safe_on_a_name():
    scope = parse_alert_only_clusters(f"PROD-*,{ARN}")
    assert scope.matches("prod-eu") and scope.matches("Prod-EU")
    assert scope.matches("production")  # ARN entry, ARN unknown (an autoscaling ResourceId): by its name
    assert scope.matches("production", ARN.upper().replace("ARN:AWS:ECS", "arn:aws:ecs"))
    assert not scope.matches("production", ARN.replace("111122223333", "444455556666"))
    assert scope.matches(ARN)  # the cluster given as its ARN
    assert not scope.matches("staging", ARN.replace("production", "staging"))


def test_unmatched_names_each_entry_that_matches_no_known_cluster():
    scope = parse_alert_only_clusters(f"prodution,prod-*,{ARN},staging")
    known = [("production", ARN), ("dev", ARN.replace("production", "dev"))]
    assert [e.text for e in scope.unmatched(known)] == ["prodution", "prod-*", "staging"]
    assert parse_alert_only_clusters("").unmatched(known) == ()
    assert parse_alert_only_clusters("none").unmatched(known) == ()


# ---------------------------------------------------------------------------------------------- settings.env


def _folder(tmp_path, settings: bytes, clusters=("production", "billing")):
    fleet = {"account": "111122223333", "region": "eu-west-1",
             "clusters": [{"name": c, "services": [{"name": "web", "desiredCount": 2}]} for c in clusters]}
    (tmp_path / "fleet.json").write_text(json.dumps(fleet))
    (tmp_path / "events.jsonl").write_text("")
    (tmp_path / "settings.env").write_bytes(settings)
    return tmp_path


def test_a_comment_after_a_value_is_a_comment_not_part_of_it(tmp_path):
    """The issue's case: the comment made production's protection a pattern that matched nothing."""
    folder = _folder(tmp_path, b"ALERT_ONLY_CLUSTERS=production   # never act on prod\n")
    scenario = load_scenario(folder)
    assert scenario.settings.ALERT_ONLY_CLUSTERS == ("production",)
    assert is_alert_only_cluster(scenario.settings.policy(), "production")


def test_settings_env_reads_quotes_export_and_a_byte_order_mark(tmp_path):
    text = ("\ufeff# the day's wiring\n\nexport ALERT_ONLY_CLUSTERS='production,prod-*'  # quoted\n"
            'CRASH_THRESHOLD="3"\nMAX_ACTION_FRACTION = 0.5\n')
    env = read_settings_env(_folder(tmp_path, text.encode()) / "settings.env")
    assert env == {"ALERT_ONLY_CLUSTERS": "production,prod-*", "CRASH_THRESHOLD": "3", "MAX_ACTION_FRACTION": "0.5"}


@pytest.mark.parametrize(("text", "where"), [
    (b"ALERT_ONLY_CLUSTERS=production\n\n\nnot a line\n", "settings.env:4: expected KEY=VALUE"),
    (b"CRASH_THRESHOLD\n", "settings.env:1: expected KEY=VALUE"),
    (b"# ok\nALERT_ONLY=production\n", "settings.env:2: unknown setting 'ALERT_ONLY'"),
    # break-it: the second line silently won, and production acted (a leftover 'none' from a rehearsal)
    (b"ALERT_ONLY_CLUSTERS=production\nCRASH_THRESHOLD=5\nALERT_ONLY_CLUSTERS=none\n",
     r"settings.env:3: ALERT_ONLY_CLUSTERS is set twice \(first on line 1\)"),
    (b"ALERT_ONLY_CLUSTERS=production\n\nexport ALERT_ONLY_CLUSTERS=production\n", "settings.env:3: .* set twice"),
])
def test_a_line_dotenv_cannot_read_names_its_line(tmp_path, text, where):
    with pytest.raises(ScenarioError, match=where):
        load_scenario(_folder(tmp_path, text))


def test_a_hash_inside_a_value_is_still_an_invalid_entry(tmp_path):
    """dotenv keeps ``#`` without a space before it; the entry check then refuses it."""
    with pytest.raises(ScenarioError, match="'production#prod' is not a cluster name"):
        load_scenario(_folder(tmp_path, b"ALERT_ONLY_CLUSTERS=production#prod\n"))


def test_replay_warns_for_every_entry_that_matches_no_cluster_of_the_fleet(tmp_path):
    folder = _folder(tmp_path, b"ALERT_ONLY_CLUSTERS=prodution,billing,arn:aws:ecs:eu-west-1:111122223333:"
                               b"cluster/production,arn:aws:ecs:us-east-1:111122223333:cluster/billing\n")
    warnings = alert_only_warnings(load_scenario(folder))
    assert len(warnings) == 2
    assert "'prodution' matches no cluster of fleet.json (production, billing)" in warnings[0]
    assert "'arn:aws:ecs:us-east-1:111122223333:cluster/billing'" in warnings[1]  # another region's
    assert alert_only_warnings(load_scenario(folder, {"ALERT_ONLY_CLUSTERS": "none"})) == []



def test_an_entry_matching_a_cluster_only_without_case_is_named():
    """Issue 29 item 7: the code matches without case, the IAM deny as typed: the difference is warned."""
    from ecs_guardrail.core.clusters import case_only_warning, parse_alert_only_clusters

    scope = parse_alert_only_clusters("Production,prod-*,arn:aws:ecs:eu-west-1:111122223333:cluster/Billing")
    clusters = [("production", "arn:aws:ecs:eu-west-1:111122223333:cluster/production"),
                ("PROD-eu", "arn:aws:ecs:eu-west-1:111122223333:cluster/PROD-eu"),
                ("prod-us", "arn:aws:ecs:eu-west-1:111122223333:cluster/prod-us"),
                ("billing", "arn:aws:ecs:eu-west-1:111122223333:cluster/billing")]
    assert all(scope.matches(n, a) for n, a in clusters)  # the code: every one is alert-only
    found = [(e.text, n) for e, n in scope.case_only(clusters)]
    assert found == [("Production", "production"), ("prod-*", "PROD-eu"),
                     ("arn:aws:ecs:eu-west-1:111122223333:cluster/Billing", "billing")]
    assert "matches cluster 'production' only without case" in case_only_warning(*scope.case_only(clusters)[0])
    assert parse_alert_only_clusters("production,prod-*").case_only(clusters[:1] + clusters[2:3]) == ()


def test_replay_warns_for_a_cluster_matched_only_without_case(tmp_path):
    folder = _folder(tmp_path, b"ALERT_ONLY_CLUSTERS=Production,billing\n")
    warnings = alert_only_warnings(load_scenario(folder))
    assert warnings == [w for w in warnings if "'Production' matches cluster 'production' only without case" in w]
    assert len(warnings) == 1
