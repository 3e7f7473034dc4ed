"""``ALERT_ONLY_CLUSTERS``: parse its entries once, and match a cluster against them (pure).

ARCHITECTURE.md ("Entitlement", "Deployment"): the setting takes cluster names, globs (``prod-*``) or
cluster ARNs, comma-separated. An entry that is none of these (a space, a ``#`` comment, a quote) is
an error at start, never a pattern that matches nothing. Unset or empty means *every* cluster is
alert-only (acting must be asked for); the single value ``none`` (any case) means *no* cluster is.

- a cluster **name**: up to 255 letters (upper or lower case), digits, hyphens and underscores (the
  ``clusterName`` rule of ECS CreateCluster);
- a **glob**: the same characters plus ``*`` (any run) and ``?`` (one character), as IAM ARN
  patterns read them, so the deny in both templates covers exactly what the code matches;
- a cluster **ARN**: ``arn:PARTITION:ecs:REGION:ACCOUNT:cluster/NAME`` (ECS ``clusterArn``).

Matching ignores case on purpose: a capitalisation slip (``PRODUCTION``) must fail safe. An ARN
entry matched against a cluster whose ARN is not known (Application Auto Scaling's ResourceId carries
only the cluster name) matches on its name: broader is safer when the question is "may I act?".
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from enum import StrEnum
from functools import lru_cache

from msgspec import Struct

from ecs_guardrail.core.lazy import lazy_pattern
from ecs_guardrail.core.links import resource_name

__all__ = [
    "EntryKind",
    "ClusterEntry",
    "AlertOnlyClusters",
    "NO_CLUSTER",
    "parse_alert_only_clusters",
    "cluster_name_of",
    "unmatched_in_account",
]

#: the documented value for "no cluster is alert-only" (alone, any case)
NO_CLUSTER = "none"

_NAME = lazy_pattern(r"[A-Za-z0-9_-]{1,255}")
_GLOB = lazy_pattern(r"[A-Za-z0-9_*?-]{1,255}")
_ARN = lazy_pattern(r"arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/([A-Za-z0-9_-]{1,255})")

_ACCEPTS = ("a cluster name (up to 255 letters, digits, hyphens, underscores), a glob (prod-*, team?) "
            "or a cluster ARN (arn:aws:ecs:REGION:ACCOUNT:cluster/NAME)")


class EntryKind(StrEnum):
    """What an ``ALERT_ONLY_CLUSTERS`` entry is."""

    NAME = "name"
    GLOB = "glob"
    ARN = "arn"


class ClusterEntry(Struct, frozen=True):
    """One validated entry: ``text`` as given, its ``kind``, and ``name`` (the name or glob; an ARN's
    cluster name)."""

    text: str
    kind: EntryKind
    name: str

    def matches(self, cluster: str, cluster_arn: str = "") -> bool:
        """True when the cluster (``cluster``: its name, or an ARN; ``cluster_arn``: its ARN when
        known) is this entry, without case. An ARN entry needs the ARN to match when one is known."""
        name = cluster_name_of(cluster).lower()
        arn = cluster_arn or (cluster if cluster.startswith("arn:") else "")
        if self.kind is EntryKind.ARN:
            return arn.lower() == self.text.lower() if arn else name == self.name.lower()
        return fnmatch.fnmatchcase(name, self.name.lower())

    def matches_as_typed(self, cluster: str, cluster_arn: str = "") -> bool:
        """:meth:`matches` with case, as the IAM deny the entry becomes compares it (IAM ARN matching is
        case-sensitive: IAM User Guide, "IAM JSON policy elements: Resource")."""
        name = cluster_name_of(cluster)
        arn = cluster_arn or (cluster if cluster.startswith("arn:") else "")
        if self.kind is EntryKind.ARN:
            return arn == self.text if arn else name == self.name
        return fnmatch.fnmatchcase(name, self.name)


class AlertOnlyClusters(Struct, frozen=True):
    """The parsed setting. ``every``: unset or empty (every cluster is alert-only); ``entries`` empty
    and ``every`` False: the value was ``none`` (no cluster is)."""

    entries: tuple[ClusterEntry, ...]
    every: bool

    @property
    def none(self) -> bool:
        """True for the explicit ``none``."""
        return not self.every and not self.entries

    def matches(self, cluster: str, cluster_arn: str = "") -> bool:
        """True when the cluster is alert-only (see :meth:`ClusterEntry.matches`)."""
        return self.every or any(e.matches(cluster, cluster_arn) for e in self.entries)

    def unmatched(self, clusters: Iterable[tuple[str, str]]) -> tuple[ClusterEntry, ...]:
        """The entries that match none of ``clusters`` (``(name, arn)`` pairs; arn may be ``""``), in
        setting order: probably a typo (``prodution``), which protects nothing."""
        known = list(clusters)
        return tuple(e for e in self.entries if not any(e.matches(n, a) for n, a in known))

    def case_only(self, clusters: Iterable[tuple[str, str]]) -> tuple[tuple[ClusterEntry, str], ...]:
        """``(entry, cluster name)`` for each of ``clusters`` (``(name, arn)`` pairs) that an entry matches
        only without case (``Production`` for the cluster ``production``): the code holds the cluster
        alert-only, but the IAM deny, written as typed, does not cover it. In setting order."""
        known = list(clusters)
        return tuple((e, n) for e in self.entries for n, a in known
                     if e.matches(n, a) and not e.matches_as_typed(n, a))

    def describe(self) -> str:
        """One line for reports and alerts: the entries, or what unset/``none`` means."""
        if self.every:
            return "unset: every cluster is alert-only"
        if self.none:
            return "none: no cluster is alert-only"
        return ",".join(e.text for e in self.entries)


def cluster_name_of(cluster: str) -> str:
    """A cluster's name from its name or its ARN (``...:cluster/NAME``)."""
    return resource_name(cluster) if cluster.startswith("arn:") else cluster


def _entry(text: str) -> ClusterEntry:
    if _NAME.fullmatch(text):
        return ClusterEntry(text, EntryKind.NAME, text)
    if _GLOB.fullmatch(text):
        return ClusterEntry(text, EntryKind.GLOB, text)
    arn = _ARN.fullmatch(text)
    if arn:
        return ClusterEntry(text, EntryKind.ARN, arn.group(1))
    raise ValueError(f"ALERT_ONLY_CLUSTERS entry {text!r} is not {_ACCEPTS}; a comment or a space is not "
                     f"part of a value (write {NO_CLUSTER!r} for no alert-only cluster)")


def parse_alert_only_clusters(value: str | Iterable[str] | None) -> AlertOnlyClusters:
    """Parse ``ALERT_ONLY_CLUSTERS``: a comma-separated string (or its parts), spaces around entries
    ignored, empty parts dropped.

    Returns:
        :class:`AlertOnlyClusters`: ``every`` for ``None``/empty, no entries for ``none``.

    Raises:
        ValueError: an entry that is not a name, glob or cluster ARN (the message quotes it and says
            what is accepted), or ``none`` together with other entries.
    """
    if value is None:
        return _parse(())
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return _parse(tuple(p.strip() for p in parts if p.strip()))


@lru_cache(maxsize=64)
def _parse(parts: tuple[str, ...]) -> AlertOnlyClusters:
    if not parts:
        return AlertOnlyClusters((), every=True)
    if any(p.lower() == NO_CLUSTER for p in parts):
        if len(parts) > 1:
            raise ValueError(f"ALERT_ONLY_CLUSTERS={','.join(parts)!r}: {NO_CLUSTER!r} means no alert-only "
                             f"cluster and cannot be combined with entries (a cluster named {NO_CLUSTER} is "
                             f"listed by its ARN)")
        return AlertOnlyClusters((), every=False)
    return AlertOnlyClusters(tuple(_entry(p) for p in parts), every=False)


def case_only_warning(entry: ClusterEntry, cluster: str) -> str:
    """The one-line warning for an entry that matches ``cluster`` only without case (replay, audit, log)."""
    return (f"ALERT_ONLY_CLUSTERS entry {entry.text!r} matches cluster {cluster!r} only without case: the code "
            f"keeps it alert-only, but the IAM deny the entry becomes matches names as typed and does not "
            f"cover it; write the entry as the cluster is named")


def unmatched_in_account(scope: AlertOnlyClusters, cluster_arns: Iterable[str], account: str | None,
                         region: str | None) -> tuple[ClusterEntry, ...]:
    """The entries of ``scope`` that match none of one account's clusters (``cluster_arns``: ECS
    ListClusters of ``account`` in ``region``). An ARN entry of another account or region is not
    checked (those clusters cannot be listed from here); nor is anything when ``scope`` is unset or
    ``none``.

    Returns:
        the unmatched entries, in setting order: each protects nothing in this account (a typo?).
    """
    if scope.every or scope.none:
        return ()
    home = f":ecs:{region}:{account}:cluster/".lower() if account and region else None
    checkable = tuple(e for e in scope.entries
                      if e.kind is not EntryKind.ARN or (home is not None and home in e.text.lower()))
    pairs = [(cluster_name_of(a), a) for a in cluster_arns]
    return AlertOnlyClusters(checkable, every=False).unmatched(pairs)
