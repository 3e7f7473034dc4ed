"""Every key and index value of the history table, spelled once.

Single table, string keys ``pk``/``sk``, index ``gsi1`` (``gsi1pk``/``gsi1sk``), TTL ``expires_at``.

| item | pk | sk | written by |
| --- | --- | --- | --- |
| task event | ``TASK#<taskArn>`` | ``V#<version:010d>`` (``E#<event id>`` without a version) | recorder |
| service or deployment event | ``SVC#<cluster>#<service>`` | ``EV#<time>#<event id>`` | recorder |
| decision | ``SVC#<cluster key>#<service>`` | ``DEC#<time>`` | watchdog, with the episode claim |
| rejected event | ``REJECTED#<day>`` | ``<received>#<sha256/16>`` | recorder |
| service summary | ``WD#<cluster key>`` | ``S#<service>`` | watchdog |
| held-at-zero slot | ``WD#<cluster key>`` | ``H#<n>`` (``n < bound``) | watchdog, restore |
| mass event | ``WD#<cluster key>`` | ``M#mass`` | watchdog |
| job family | ``JOB#<cluster key>`` | ``J#<family>`` | watchdog |
| failed deployment's alert | ``DEP#<cluster key>#<service>`` | ``D#<deploymentId>`` | watchdog (once per deployment) |
| fleet minute (rule 3) | ``FM#<cluster key>#<shard>`` (< 8) | ``<minute>`` (and ``#2``, ``#o``, ``#z``) | watchdog |
| availability sample block | ``HH#<cluster>#<service>#<targetgroup/NAME/ID>`` | ``<block start>`` | sampler |
| service task counts | ``HC#<cluster>#<service>`` | ``<sampled at>`` | sampler, when they change |

Timeline items (task, service and deployment events, decisions, samples) carry
``gsi1pk`` = ``TL#<cluster>#<YYYY-MM-DDTHH>`` (shard 0) or ``TL#<cluster>#<YYYY-MM-DDTHH>#<n>`` (shard
``0 < n < 8``, from a CRC-32 of the sort key) and ``gsi1sk`` = ``<time>#<kind>#<id>``: eight partitions
per cluster per *hour*, so a storm spreads over partitions (a 2,000-service storm's ~600 timeline writes a
second in one cluster: about 75 per key; DynamoDB partitions sustain about 1,000 write units a second
each) and a timeline reads eight Queries per hour, merged by sort key.

The *cluster key* is the cluster name, or ``NAME@ACCOUNT@REGION`` for a cluster outside the
watchdog's own account and region (cross-account mode): ``@`` cannot appear in a cluster name, so
clusters of the same name elsewhere never share state.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

from ecs_guardrail.core.records import iso

__all__ = [
    "task_event", "service_event", "decision", "rejected", "summary", "summaries", "slot", "slots", "mass", "job",
    "sample", "service_counts", "timeline_partition", "timeline_partitions", "timeline_shard", "TIMELINE_SHARDS",
    "timeline_sort", "cluster_key", "fleet_minutes", "fleet_minute", "fleet_member", "fleet_member_prefix",
    "fleet_member_sort", "deployment_alert", "task_event_keys",
]


def cluster_key(cluster: str, account: str | None = None, region: str | None = None) -> str:
    """``cluster`` at home, ``cluster@account@region`` elsewhere (both given)."""
    return f"{cluster}@{account}@{region}" if account and region else cluster


def task_event(task_arn: str, version: int | None, event_id: str) -> tuple[str, str]:
    return f"TASK#{task_arn}", (f"V#{version:010d}" if version is not None else f"E#{event_id}")


def service_event(cluster: str, service: str, t: datetime, event_id: str) -> tuple[str, str]:
    return f"SVC#{cluster}#{service}", f"EV#{iso(t)}#{event_id}"


def decision(ck: str, service: str, t: datetime) -> tuple[str, str]:
    return f"SVC#{ck}#{service}", f"DEC#{iso(t)}"


def rejected(received: datetime, digest: str) -> tuple[str, str]:
    return f"REJECTED#{received.astimezone(UTC):%Y-%m-%d}", f"{iso(received)}#{digest}"


def summaries(ck: str) -> str:
    """The partition of a cluster's service summaries, slots and mass event."""
    return f"WD#{ck}"


def summary(ck: str, service: str) -> tuple[str, str]:
    return summaries(ck), f"S#{service}"


def slots(ck: str) -> tuple[str, str]:
    """(partition, sort-key prefix) of the held-at-zero slots."""
    return summaries(ck), "H#"


def slot(ck: str, n: int) -> tuple[str, str]:
    return summaries(ck), f"H#{n:04d}"


def mass(ck: str) -> tuple[str, str]:
    return summaries(ck), "M#mass"


def fleet_minutes(ck: str, shard: int) -> str:
    """The partition of one shard of a cluster's fleet minutes (core/fleet_minutes.py): a service's
    shard is fixed (:func:`~ecs_guardrail.core.fleet_minutes.shard_of`), so a storm's writes spread
    over the shards and a decision reads each shard's window in one Query."""
    return f"FM#{ck}#{shard}"


def fleet_minute(ck: str, shard: int, minute: datetime) -> tuple[str, str]:
    """A shard's minute: its partition and the sort key its items share (``<minute>``, then ``#n``
    the names, ``#o`` the overflowed, ``#z`` the scale-downs; ``""`` and ``#2`` as the release before
    wrote them)."""
    return fleet_minutes(ck, shard), iso(minute)


def fleet_member_prefix(minute: datetime) -> str:
    """The sort-key prefix of a minute's per-service member items (:func:`fleet_member`): one Query
    of it reads the members of every service of the shard that failed in the minute."""
    return f"m#{iso(minute)}#"


def fleet_member(ck: str, shard: int, minute: datetime, service: str) -> tuple[str, str]:
    """One service's members in one minute (a small item of its own, at most ``MEMBERS_KEPT``
    members): outside the range a decision's Query of the shard's window reads, so a decision reads
    a service's members only where the window cuts a minute and that service is still undecided."""
    return fleet_minutes(ck, shard), fleet_member_sort(iso(minute), service)


def fleet_member_sort(minute_sort: str, service: str) -> str:
    """:func:`fleet_member`'s sort key from the minute's own (:func:`fleet_minute`'s second part)."""
    return f"m#{minute_sort}#{service}"


def job(ck: str, family: str) -> tuple[str, str]:
    return f"JOB#{ck}", f"J#{family}"


def deployment_alert(ck: str, service: str, deployment_id: str) -> tuple[str, str]:
    """The claim of the one alert for failed deployment ``deployment_id`` (``ecs-svc/...``) of a service.

    An id longer than ECS ever gives (over 200 bytes; a sort key holds at most 1,024) is keyed by its
    SHA-256, so a forged one still dedupes and never fails the write."""
    if len(deployment_id.encode("utf-8", "replace")) > 200:
        import hashlib

        deployment_id = "sha256:" + hashlib.sha256(deployment_id.encode("utf-8", "replace")).hexdigest()
    return f"DEP#{ck}#{service}", f"D#{deployment_id}"


def sample(cluster: str, service: str, target_group_dimension: str, minute: datetime) -> tuple[str, str]:
    return f"HH#{cluster}#{service}#{target_group_dimension}", iso(minute)


def service_counts(cluster: str, service: str, t: datetime) -> tuple[str, str]:
    return f"HC#{cluster}#{service}", iso(t)


#: shards of one cluster-hour of the timeline index (issue 32 item 2: a 2,000-service storm writes about
#: 600 timeline items a second in one cluster; over 8 shards no ``gsi1pk`` takes more than about 100,
#: well under a partition's 1,000 write units a second, and ``make bench`` prints the per-key rates)
TIMELINE_SHARDS = 8


def timeline_shard(sort: str) -> int:
    """The shard (``0 <= n <`` :data:`TIMELINE_SHARDS`) of the timeline item whose ``gsi1sk`` is ``sort``:
    CRC-32 of the sort key, stable across processes (never Python's salted ``hash``). Items with the
    same sort key share a shard, so a reader's merge of the shards by sort key gives the one
    partition's order exactly."""
    return zlib.crc32(sort.encode("utf-8", "surrogatepass")) % TIMELINE_SHARDS


def timeline_partition(cluster: str, t: datetime, sort: str | None = None) -> str:
    """``TL#<cluster>#<YYYY-MM-DDTHH>`` (UTC hour), with ``#<n>`` for shard ``n > 0`` of the item whose
    ``gsi1sk`` is ``sort`` (:func:`timeline_shard`). Shard 0 is the unsharded key that items written
    before the shards existed carry, so readers (:func:`timeline_partitions`) find those too;
    ``sort=None``: shard 0."""
    utc = t.astimezone(UTC)
    # as iso(): strftime's year without leading zeros; else iso's first 13 characters (cheaper)
    base = f"TL#{cluster}#{utc:%Y-%m-%dT%H}" if utc.year < 1000 else f"TL#{cluster}#{iso(utc)[:13]}"
    n = 0 if sort is None else timeline_shard(sort)
    return base if n == 0 else f"{base}#{n}"


#: :func:`task_event`'s sort key of versions 0 to 63 (a task's versions are small: one a state change), made once
_VERSION_KEYS = tuple(f"V#{version:010d}" for version in range(64))


def task_event_keys(task_arn: str, version: int | None, event_id: str, cluster: str,
                    when: str) -> tuple[str, str, str, str]:
    """``(pk, sk, gsi1pk, gsi1sk)`` of a task event's item at the UTC time whose
    :func:`~ecs_guardrail.core.records.iso` text is ``when`` (a year of four digits): :func:`task_event`'s
    keys, ``timeline_sort(t, "task", <task id>, sk)`` (the task id: the ARN's last ``/`` segment) and
    ``timeline_partition(cluster, t, sort)``, made from the texts at hand in one call (the recorder writes
    one item a task event; issue 33 item 2: about a third of the calls' CPU).
    """
    if version is not None:
        sk = _VERSION_KEYS[version] if 0 <= version < len(_VERSION_KEYS) else f"V#{version:010d}"
    else:
        sk = f"E#{event_id}"
    sort = f"{when}#task#{task_arn.rpartition('/')[2]}#{sk}"
    n = zlib.crc32(sort.encode("utf-8", "surrogatepass")) % TIMELINE_SHARDS  # timeline_shard(sort)
    index_pk = f"TL#{cluster}#{when[:13]}" if n == 0 else f"TL#{cluster}#{when[:13]}#{n}"
    return f"TASK#{task_arn}", sk, index_pk, sort


def timeline_partitions(cluster: str, t: datetime) -> list[str]:
    """Every shard's ``gsi1pk`` of ``cluster``'s UTC hour at ``t``, shard 0 first: a reader queries
    each and merges by ``gsi1sk``."""
    base = timeline_partition(cluster, t)
    return [base] + [f"{base}#{n}" for n in range(1, TIMELINE_SHARDS)]


def timeline_sort(t: datetime, kind: str, *ids: str) -> str:
    return "#".join((iso(t), kind, *ids))


#: the partition of the sweep's index of open work (one item per cluster key; ARCHITECTURE.md, "Recovery")
OPEN_WORK = "OPEN#work"


def open_work(ck: str) -> tuple[str, str]:
    """The cluster's item of the sweep's index: the services held at zero whose recovery is open
    (``services``), and the standalone job families with an open window and its end (``jobs``)."""
    return OPEN_WORK, ck
