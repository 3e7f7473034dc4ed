"""``replay --jobs N`` and ``--scheduler ADDRESS`` (issue 32 item 6): a scenario's events partitioned by
account and cluster, the partitions replayed in parallel processes (or on a Dask cluster), and the results
merged into the serial replay's, byte for byte.

Clusters are independent by the spec (ARCHITECTURE.md: the fleet test, the blast-radius cap and the
alerts are per cluster), so each partition replays a copy of the scenario folder with only its own lines
of ``events.jsonl`` (the others blanked: line numbers, ``delivered.csv`` rows and the minute clock's
placement stay those of the file), its own clusters of ``fleet.json`` and its own target groups' rows of
``healthy_hosts.csv`` (plus the file's first and last minute: the sampler's minutes are the whole file's).
What is NOT per cluster is computed from the merged results:

- order: every decision, job failure and alert is tagged with the stage that made it (an events.jsonl
  line, or a minute tick of the sweep and sampler, through :func:`~ecs_guardrail.replay.run.replay`'s
  ``on_stage`` hook); the serial order is rebuilt from the whole file's clock: minute M's tick runs before
  the first line whose running newest accepted time reaches M + 1 min. Alerts of one tick from several
  clusters go in the sweep's order (services, then job summaries; each by cluster key, the index's sort);
- counters and totals (events read and rejected, duplicates, alerts sent, stops by kind) are summed;
  ``scaled_to_zero`` and ``decisions`` are recomputed; ``desired_counts`` and the availability report's
  services and minutes come from the partition owning each cluster (the first partition holds the
  clusters without events), in the serial order (fleet order; by cluster and service);
- warnings: each once, in the order of the stage that first gave it; those of the whole fleet.json and
  CSV, and those the serial replay gives at the end from the whole file, computed again.

A scenario is replayed serially instead, with a warning saying why, when its partitions could differ
from the serial replay: one partition only (nothing to split; no warning), ``RECOVERY=probe`` (the probe's
last minute is the newest event of the whole file), ``container_restarts.csv`` (its clock is separate),
a JSON event naming no cluster, ``--calls``/``--timeline``/``--plot`` (the calls of one process, the
timeline of one store), or after the run: a line replayed at another clock than in the serial replay (an
event older than another cluster's newest, so the minutes ticked before it differ), or more minutes swept
in all than one replay may sweep.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ecs_guardrail.core.errors import ScenarioError

__all__ = ["check_jobs", "partition_lines", "replay_parallel", "pool_map", "sweep_replays", "PartitionResult"]

#: seconds to wait for a Dask scheduler to answer before the replay gives up with one line
SCHEDULER_TIMEOUT_S = 10
_EARLIEST = datetime.min.replace(tzinfo=None)


def check_jobs(jobs: int | None, scheduler: str | None) -> None:
    """Validate ``--jobs``/``--scheduler`` before anything runs.

    Raises:
        ScenarioError: ``--jobs`` under 1, or a ``--scheduler`` that is not an address
            (``[SCHEME://]HOST:PORT``, port 1-65535): Dask's ``Client`` raised on one and then hung 20 s
            in its ``__del__`` with a traceback.
    """
    if jobs is not None and jobs < 1:
        raise ScenarioError(f"--jobs {jobs}: give a number of processes of at least 1 (1: the serial replay)")
    if scheduler is not None and not scheduler.strip():
        raise ScenarioError("--scheduler: give the Dask scheduler's address (tcp://HOST:PORT)")
    if scheduler is not None and not _address_ok(scheduler):
        raise ScenarioError(f"--scheduler {scheduler[:200]!r}: not a Dask scheduler address (tcp://HOST:PORT, "
                            "tls://HOST:PORT; a port from 1 to 65535)")


def _address_ok(address: str) -> bool:
    """``address`` is ``[tcp|tls|ws|wss|ucx://]HOST:PORT`` (HOST a name, an IPv4 or a ``[IPv6]``)."""
    m = re.fullmatch(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?P<host>[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])"
                     r":(?P<port>[0-9]{1,5})/?", address)
    return m is not None and 1 <= int(m.group("port")) <= 65535


def _key_of(raw: Any) -> tuple[str, str] | None:
    """``(account, cluster)`` an event belongs to: its ``detail.clusterArn`` (not a deployment event's), else
    the first ARN of ``resources`` naming a cluster or service (ECS Deployment/Service Action events); None: none."""
    if not isinstance(raw, dict):
        return None
    detail = raw.get("detail")
    # a deployment event's model has no detail.clusterArn: its cluster is resources[0]'s, whatever detail adds
    deployment = raw.get("detail-type") == "ECS Deployment State Change"
    arn = detail.get("clusterArn") if isinstance(detail, dict) and not deployment else None
    if not isinstance(arn, str) or not arn:
        arn = None
        resources = raw.get("resources")
        for r in resources if isinstance(resources, list) else []:
            if isinstance(r, str) and (":cluster/" in r or ":service/" in r):
                arn = r
                break
    if arn is None:
        return None
    parts = arn.split(":", 5)
    account = parts[4] if len(parts) > 5 else str(raw.get("account") or "")
    tail = parts[5] if len(parts) > 5 else arn
    if tail.startswith("service/"):
        names = tail.split("/")
        cluster = names[1] if len(names) > 2 else ""
        if not cluster:
            return None  # an old-style service ARN names no cluster
    else:
        cluster = tail.rsplit("/", 1)[-1]
    return account, cluster


def partition_lines(events: Path) -> tuple[dict[tuple[str, str], list[int]], int | None]:
    """Line numbers of ``events`` (1-based, blank lines left out) by ``(account, cluster)``, in the order
    first seen (a cluster name seen in two accounts is one partition, under its first account). Lines
    that are no JSON object go to the first partition (each replay rejects them alike).
    Returns ``(partitions, line)``: ``line`` is the first JSON event naming no cluster (then the scenario
    is replayed serially), else None."""
    from ecs_guardrail.replay.lines import decode_line

    parts: dict[tuple[str, str], list[int]] = {}
    by_name: dict[str, tuple[str, str]] = {}  # a cluster name in two accounts: one partition (the store keys
    unkeyed: list[int] = []                  # service events and the timeline by the cluster's name)
    with events.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(decode_line(line)[0])
            except (ValueError, RecursionError):
                unkeyed.append(n)
                continue
            key = _key_of(raw)
            if key is None:
                if isinstance(raw, dict):
                    return parts, n
                unkeyed.append(n)
                continue
            parts.setdefault(by_name.setdefault(key[1], key), []).append(n)
    if unkeyed:
        if not parts:
            parts[("", "")] = []
        first = next(iter(parts))
        parts[first] = sorted(parts[first] + unkeyed)
    return parts, None


@dataclass
class PartitionResult:
    """What one partition's replay gives back to the merge (picklable: it crosses processes)."""

    key: tuple[str, str]
    decisions: list[dict[str, Any]]
    job_failures: list[dict[str, Any]]
    alerts: list[dict[str, Any]]
    rejected: list[tuple[int, str]]
    summary: dict[str, Any]
    availability: Any
    clock_span: tuple[datetime, datetime] | None
    #: ``(stage, decisions, alerts, job failures before it)`` in the order the stages ran
    stages: list[tuple[tuple[Any, ...], int, int, int]] = field(default_factory=list)
    #: ``(stages run before it, text)`` in the order given
    warnings: list[tuple[int, str]] = field(default_factory=list)
    #: ``lastStatus`` of the accepted events of stopping tasks (the serial replay's end-of-file warning)
    stop_lines: dict[str, int] = field(default_factory=dict)
    #: the warnings its own fleet.json and settings earn (the merge gives the whole fleet's instead)
    preamble: list[str] = field(default_factory=list)


@dataclass
class PartitionSpec:
    """One partition to replay: the scenario ``folder`` with ``overrides``, and its own ``lines``."""

    folder: str
    overrides: dict[str, str]
    engine: str
    key: tuple[str, str]
    lines: list[int]
    #: the cluster names every partition replays (``healthy_hosts.csv``'s rows of the others go to the first)
    owned: list[str] = field(default_factory=list)
    first: bool = True


def run_partition(spec: PartitionSpec) -> PartitionResult:
    """Replay one partition (a worker process or a Dask worker: it reads ``spec.folder`` itself, so the
    folder must be at the same path there). A copy of the folder in a temporary directory holds the
    partition's ``events.jsonl`` (the other lines blank, so every line keeps its number), its
    ``fleet.json`` (its own clusters; the first partition also those no partition replays) and its
    ``healthy_hosts.csv`` (:func:`_partition_csv`): it builds, samples and reports only its own clusters.

    Raises:
        ScenarioError: as :func:`~ecs_guardrail.replay.run.replay` raises it.
    """
    from ecs_guardrail.replay.fleet import fleet_warnings
    from ecs_guardrail.replay.lines import decode_line
    from ecs_guardrail.replay.run import _stop_line_kind, replay
    from ecs_guardrail.replay.scenario import load_scenario, scenario_warnings

    src = Path(spec.folder)
    mine = set(spec.lines)
    stopping: dict[int, str] = {}  # line -> lastStatus of a stopping task's event
    with tempfile.TemporaryDirectory(prefix="ecs-guardrail-part-") as tmp:
        folder = Path(tmp) / src.name
        folder.mkdir()
        for f in src.iterdir():
            if f.name == "healthy_hosts.csv" and f.is_file():
                _partition_csv(f, folder / f.name, spec)
            elif f.name == "fleet.json" and f.is_file():
                _partition_fleet(f, folder / f.name, spec)
            elif f.name != "events.jsonl":
                (folder / f.name).symlink_to(f.resolve())
        with (src / "events.jsonl").open("rb") as fh, (folder / "events.jsonl").open("wb") as out:
            for n, line in enumerate(fh, 1):
                out.write(line if n in mine else b"\n")
                if n in mine and b"STOPPED" in line:
                    with contextlib.suppress(ValueError, RecursionError):
                        kind = _stop_line_kind(json.loads(decode_line(line)[0]))
                        if kind is not None:
                            stopping[n] = kind
        scenario = load_scenario(folder, spec.overrides)
        stages: list[tuple[tuple[Any, ...], int, int, int]] = []
        warnings: list[tuple[int, str]] = []
        res = replay(scenario, engine=spec.engine, on_warning=lambda text: warnings.append((len(stages), text)),
                     on_stage=lambda key, d, a, j: stages.append((key, d, a, j)))
        preamble = fleet_warnings(scenario.fleet) + scenario_warnings(scenario)
    rejected = {n for n, _ in res.rejected}
    return PartitionResult(key=spec.key, decisions=res.decisions, job_failures=res.job_failures, alerts=res.alerts,
                           rejected=res.rejected, preamble=preamble, summary=res.summary, availability=res.availability,
                           clock_span=res.clock_span, stages=stages, warnings=warnings,
                           stop_lines=dict(Counter(k for n, k in stopping.items() if n not in rejected)))


def _partition_fleet(src: Path, dst: Path, spec: PartitionSpec) -> None:
    """``fleet.json`` with the partition's own clusters (the first partition: also those no partition
    replays); the whole file when that would leave none (events of a cluster fleet.json lacks)."""
    fleet = json.loads(src.read_text(encoding="utf-8"))
    owned = set(spec.owned)
    keep = [c for c in fleet["clusters"]
            if c.get("name") == spec.key[1] or (spec.first and c.get("name") not in owned)]
    if not keep or len(keep) == len(fleet["clusters"]):
        dst.symlink_to(src.resolve())
        return
    dst.write_text(json.dumps({**fleet, "clusters": keep}), encoding="utf-8")


def _partition_csv(src: Path, dst: Path, spec: PartitionSpec) -> None:
    """``healthy_hosts.csv`` for one partition: the header, the rows of its own clusters' target groups, in
    the first partition also those of clusters no partition replays and of target groups no service names,
    and in every partition the file's first row at its earliest and at its latest minute (the sampler's
    minutes, its clock and its last block are the whole file's). Each partition then samples only its own
    services; the merge takes each cluster's availability from its own partition."""
    import csv

    from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv
    from ecs_guardrail.replay.scenario import load_scenario

    rows = read_healthy_hosts_csv(src)  # ScenarioError as the serial replay raises it
    fleet = load_scenario(src.parent, spec.overrides).fleet
    clusters_of: dict[str, set[str]] = {}
    for c in fleet["clusters"]:
        for svc in c.get("services", []):
            for tg in svc.get("targetGroups") or []:
                clusters_of.setdefault(str(tg), set()).add(str(c["name"]))
    mine, owned = {spec.key[1]}, set(spec.owned)
    with open(src, newline="", encoding="utf-8-sig") as fh:
        lines = list(fh)
    reader = csv.DictReader(iter(lines))
    reader.fieldnames  # noqa: B018 - reads the header: line_num is then the header's last line
    header_end = prev = reader.line_num
    spans: list[tuple[int, int]] = []  # each row's lines (0-based, end excluded), as the reader read them
    for _ in reader:
        spans.append((prev, reader.line_num))
        prev = reader.line_num
    if len(spans) != len(rows) or not rows:
        dst.symlink_to(src.resolve())  # nothing to filter by (or an unexpected shape): the whole file
        return
    earliest, latest = min(r[0] for r in rows), max(r[0] for r in rows)
    bounds = {next(i for i, r in enumerate(rows) if r[0] == earliest), next(i for i, r in enumerate(rows)
                                                                             if r[0] == latest)}
    keep: list[str] = lines[:header_end]
    for i, r in enumerate(rows):
        of = clusters_of.get(r[1], set())
        if of & mine or i in bounds or (spec.first and not of <= owned) or (spec.first and not of):
            keep.extend(lines[spans[i][0]:spans[i][1]])
    with open(dst, "w", newline="", encoding="utf-8") as out:
        out.writelines(keep)


@contextlib.contextmanager
def pool_map(jobs: int, scheduler: str | None) -> Iterator[Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]]:
    """A ``map(fn, items) -> results in order`` over ``jobs`` worker processes (the standard library's
    pool, started by spawn: no fork of a process that may hold threads), or over the Dask cluster at
    ``scheduler`` (``dask.distributed.Client``; imported only then).

    Raises:
        ScenarioError: the scheduler does not answer within :data:`SCHEDULER_TIMEOUT_S` seconds, or
            ``dask[distributed]`` is not installed (the ``dist`` extra).
    """
    if scheduler is not None:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ScenarioError("--scheduler needs dask[distributed]: pip install 'ecs-guardrail[dist]'") from None
        try:
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ScenarioError(f"--scheduler {scheduler}: no Dask scheduler answered ({reason[:160]})") from None
        try:
            def dask_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
                return list(client.gather(client.map(fn, list(items), pure=False)))

            yield dask_map
        finally:
            client.close()
        return
    if jobs <= 1:
        yield lambda fn, items: [fn(i) for i in items]
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        yield lambda fn, items: list(ex.map(fn, items))


def serial_reason(scenario: Any, parts: dict[tuple[str, str], list[int]], unkeyed: int | None,
                  single_process_outputs: Sequence[str]) -> str | None:
    """Why ``scenario`` is replayed serially before anything runs (None: it is partitioned)."""
    if unkeyed is not None:
        return f"events.jsonl:{unkeyed} names no cluster (no detail.clusterArn nor a cluster in resources)"
    if len(parts) < 2:
        return None
    if scenario.settings.probes() is not None:
        return "RECOVERY=probe steps probes up to the newest event of the whole file"
    if (scenario.folder / "container_restarts.csv").exists():
        return "container_restarts.csv ticks on its own clock beside the sweep's"
    if single_process_outputs:  # what each reads after the run, from the one replay that made it
        return "; ".join(_SINGLE_PROCESS.get(flag, f"{flag} reads one process's replay")
                         for flag in single_process_outputs)
    return None


#: why each output of ``replay`` needs the scenario replayed in one process (the warning's words)
_SINGLE_PROCESS = {
    "--calls": "--calls counts the AWS calls one process made",
    "--timeline": "--timeline reads the incident timeline from the history table one process wrote",
    "--plot": "--plot draws from the history table one process wrote",
}


def replay_parallel(scenario: Any, overrides: dict[str, str], *, jobs: int, scheduler: str | None,
                    engine: str = "fast", single_process_outputs: Sequence[str] = (),
                    on_reject: Callable[[int, str], None] | None = None,
                    on_warning: Callable[[str], None] | None = None,
                    serial: Callable[[], Any]) -> Any:
    """The serial replay's :class:`~ecs_guardrail.replay.run.ReplayResult`, computed from partitions by
    account and cluster on ``jobs`` processes or the Dask ``scheduler`` (module docstring). ``serial()``
    runs the serial replay (the fallback; its warnings and rejections go where the caller sends them).

    Raises:
        ScenarioError: as the serial replay; a scheduler that does not answer (also when the scenario is
            replayed in one process: one cluster, or a reason not to partition it).
    """
    parts, unkeyed = partition_lines(scenario.events_path)
    reason = serial_reason(scenario, parts, unkeyed, single_process_outputs)
    if scheduler is not None and (reason is not None or len(parts) < 2):
        with pool_map(1, scheduler):  # the serial fallback still says when the scheduler given does not answer
            pass
    if reason is None and len(parts) < 2:
        return serial()
    if reason is not None:
        if on_warning:
            on_warning(f"replayed in one process, not partitioned by cluster: {reason}")
        return serial()
    owned = [key[1] for key in parts]
    specs = [PartitionSpec(str(scenario.folder), overrides, engine, key, lines, owned, i == 0)
             for i, (key, lines) in enumerate(parts.items())]
    with pool_map(jobs, scheduler) as pmap:
        results: list[PartitionResult] = pmap(run_partition, specs)
    merged = merge(scenario, results)
    if isinstance(merged, str):
        if on_warning:
            on_warning(f"replayed in one process, not partitioned by cluster: {merged}")
        return serial()
    res, warnings = merged
    for n, why in res.rejected:
        if on_reject:
            on_reject(n, why)
    for text in warnings:
        if on_warning:
            on_warning(text)
    return res


def _newest_by_line(results: Sequence[PartitionResult]) -> tuple[dict[int, datetime | None], str | None]:
    """Per accepted line, the newest accepted event time up to it in the whole file; and why the
    partitions' clocks differ from it (None: they agree at every line, to the minute)."""
    lines: dict[int, tuple[int, datetime | None]] = {}
    for p, r in enumerate(results):
        for key, *_ in r.stages:
            if key[0] == "line":
                lines[key[1]] = (p, key[2])
    newest: datetime | None = None
    own: dict[int, datetime | None] = {}
    out: dict[int, datetime | None] = {}
    for n in sorted(lines):
        p, t = lines[n]
        if t is not None:
            newest = t if newest is None else max(newest, t)
            mine = own.get(p)
            own[p] = t if mine is None else max(mine, t)
            if own[p] != newest:  # the sweep's minutes and the time a scale-down acts
                return out, (f"events.jsonl:{n} is older than another cluster's newest event "
                             f"({newest:%Y-%m-%dT%H:%M:%SZ}): the minutes swept before it differ")
        out[n] = newest
    return out, None


def _stage_key(stage: tuple[Any, ...], newest: dict[int, datetime | None]) -> tuple[Any, ...]:
    """Where a stage ran in the serial replay: line n after every tick of minute M with M + 1 min <= the
    newest accepted time up to n; ticks by minute; the end last."""
    if stage[0] == "line":
        t = newest.get(stage[1])
        return (0, t.replace(tzinfo=None) if t is not None else _EARLIEST, 1, stage[1])
    if stage[0] == "tick":
        m: datetime = stage[1]
        return (0, (m + timedelta(minutes=1)).replace(tzinfo=None), 0, 0)
    return (1, _EARLIEST, 0, 0)


def _tagged(r: PartitionResult, newest: dict[int, datetime | None], index: int) -> Iterator[tuple[str, Any, Any]]:
    """``(list name, sort key, item)`` for every decision, alert and job failure of partition ``r``."""
    bounds = r.stages + [(("end-of-results",), len(r.decisions), len(r.alerts), len(r.job_failures))]
    ck = _cluster_key(r.key)
    prev_key: tuple[Any, ...] = (-1,)  # what came before the first stage
    prev = (0, 0, 0)
    for key, d, a, j in bounds:  # the items between two stages were made in the first of them
        for name, lo, hi, items in (("decisions", prev[0], d, r.decisions), ("alerts", prev[1], a, r.alerts),
                                    ("job_failures", prev[2], j, r.job_failures)):
            for i in range(lo, hi):
                item = items[i]
                phase = 1 if name == "alerts" and item.get("kind") == "job_summary" else 0
                yield name, (prev_key, phase, ck, index, i), item
        prev_key = _stage_key(key, newest) if key[0] != "end-of-results" else (2,)
        prev = (d, a, j)


def _cluster_key(key: tuple[str, str]) -> str:
    """The sweep index's sort key of a partition's cluster (its name: the index's ``sk`` starts with it)."""
    return key[1]


def merge(scenario: Any, results: Sequence[PartitionResult]) -> tuple[Any, list[str]] | str:
    """The serial replay's result and warnings from the partitions' (module docstring); a string says
    why they cannot be merged (the caller replays serially)."""
    from ecs_guardrail.replay.healthy_hosts import MAX_REPLAY_MINUTES
    from ecs_guardrail.replay.run import ReplayResult

    newest, differ = _newest_by_line(results)
    if differ is not None:
        return differ
    ticks = {s[0][1] for r in results for s in r.stages if s[0][0] == "tick"}
    if len(ticks) > MAX_REPLAY_MINUTES:
        return "more minutes swept than one replay sweeps"
    lists: dict[str, list[tuple[Any, Any]]] = {"decisions": [], "alerts": [], "job_failures": []}
    for p, r in enumerate(results):
        for name, key, item in _tagged(r, newest, p):
            lists[name].append((key, item))
    for name in lists:
        lists[name].sort(key=lambda kv: kv[0])
    owner = {r.key[1]: r for r in results}
    first = results[0]
    decisions = [d for _, d in lists["decisions"]]
    summary = dict(first.summary)
    for k in ("events_read", "events_rejected", "duplicates_ignored", "alerts_sent", "stopped_tasks_to_watchdog",
              "stop_repeats"):
        if k in summary:
            summary[k] = sum(r.summary[k] for r in results)
    summary["decisions"] = len(decisions)
    summary["scaled_to_zero"] = sorted({f"{d['cluster']}/{d['service']}" for d in decisions
                                        if d["action"] == "scale_to_zero"})
    kinds: Counter[str] = Counter()
    for r in results:
        kinds.update(r.summary.get("stops_by_kind", {}))
    summary["stops_by_kind"] = dict(sorted(kinds.items()))
    desired: dict[str, int] = {}
    for c in scenario.fleet["clusters"]:  # the serial replay reads them back cluster by cluster, in fleet order
        prefix = f"{c['name']}/"
        counts = owner.get(str(c["name"]), first).summary["desired_counts"]
        desired.update((k, v) for k, v in counts.items() if k.startswith(prefix))
    summary["desired_counts"] = desired
    availability = first.availability
    if availability is not None:
        availability = _merged_availability(results, owner)
        if isinstance(availability, str):
            return availability
        summary["unavailable_service_minutes"] = availability.unavailable_service_minutes
        summary["watchdog_service_minutes"] = availability.by_cause["zero_by_watchdog"]
        if availability.clients_view:
            summary["served_service_minutes"] = availability.served_service_minutes
            summary["idle_service_minutes"] = availability.idle_service_minutes
            summary["checker_disagreement_minutes"] = availability.checker_disagreement_minutes
            if availability.healthy_hosts_only:
                summary["healthy_hosts_only"] = availability.healthy_hosts_only
    spans = [r.clock_span for r in results if r.clock_span is not None]
    res = ReplayResult(decisions=decisions, job_failures=[j for _, j in lists["job_failures"]], summary=summary,
                       alerts=[a for _, a in lists["alerts"]],
                       rejected=sorted((x for r in results for x in r.rejected), key=lambda x: x[0]),
                       availability=availability,
                       clock_span=(min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None)
    return res, _merged_warnings(scenario, results, newest, res.clock_span)


def _merged_availability(results: Sequence[PartitionResult], owner: dict[str, PartitionResult]) -> Any:
    """The availability report with each cluster's services and minutes from the partition that replayed
    its events (a cluster without events: the first partition's, which sampled it), in the report's order
    (by cluster and service; minutes then by time)."""
    import copy

    first = results[0].availability
    if any(r.availability is None or (r.availability.start, r.availability.end) != (first.start, first.end)
           for r in results):
        return "the partitions' availability reports cover other minutes"
    out = copy.copy(first)
    out.services = sorted((s for r in results for s in r.availability.services
                           if owner.get(s.cluster, results[0]) is r), key=lambda s: (s.cluster, s.service))
    out.minutes = sorted((m for r in results for m in r.availability.minutes
                          if owner.get(m.cluster, results[0]) is r), key=lambda m: (m.cluster, m.service))
    return out


_SHARED_TASK = re.compile(r"^task .*: events stamped at (\d+) different times were ignored as duplicates")
_NO_STOPPED = re.compile(r"^\d+ task event\(s\) of stopping tasks \(.*\) and none with lastStatus STOPPED")
_FAR_FUTURE = re.compile(r"^events\.jsonl:\d+: stamped .* day\(s\) past every other event")
_UNKNOWN_TG = re.compile(r"^healthy_hosts\.csv: target group '(.*)' is not in fleet\.json; rows ignored$")
_DUPLICATE_MINUTES = re.compile(r"^healthy_hosts\.csv: \d+ target group minute\(s\) have more than one row")
_SHIFTED = re.compile(r"^healthy_hosts\.csv: (.+?)'s healthy hosts first reach 0 at .*, "
                      r"(\d+(?:\.\d+)?) h from its nearest")
_OVERLAP = re.compile(r"^healthy_hosts\.csv covers .* and the events .*: no overlap")
_LINE = re.compile(r"^events\.jsonl:(\d+): ")
_FIRST_SEEN = re.compile(r"^events\.jsonl:(\d+): .* \(first seen here\)$", re.DOTALL)


def _newest_before(lines: list[int], newest: dict[int, datetime | None], n: int) -> datetime:
    """The newest accepted event time of the lines before line ``n`` (the earliest time: none)."""
    import bisect

    i = bisect.bisect_left(lines, n)
    t = newest[lines[i - 1]] if i else None
    return t.replace(tzinfo=None) if t is not None else _EARLIEST


def _merged_warnings(scenario: Any, results: Sequence[PartitionResult], newest: dict[int, datetime | None],
                     span: tuple[datetime, datetime] | None) -> list[str]:
    """Each partition warning once, in the order of the stage that first gave it; those the serial replay
    gives at the end from the whole file (the CSV's overlap with the events, a task's duplicates at other
    times, events far past the rest, no STOPPED event) computed again from every partition's, in its order."""
    from ecs_guardrail.replay.delivered import read_delivered
    from ecs_guardrail.replay.fleet import fleet_warnings
    from ecs_guardrail.replay.healthy_hosts import duplicate_minutes_warning, read_healthy_hosts_csv
    from ecs_guardrail.replay.run import far_future_warnings
    from ecs_guardrail.replay.scenario import scenario_warnings

    keyed: list[tuple[Any, str]] = []  # ((where, partition, index), text)
    lines = sorted(newest)
    shared: list[tuple[int, int, str]] = []
    shifted: list[tuple[float, int, str]] = []
    order = {str(c["name"]): i for i, c in enumerate(scenario.fleet["clusters"])}
    known = {str(tg) for c in scenario.fleet["clusters"] for svc in c.get("services", [])
             for tg in svc.get("targetGroups") or []}
    for p, r in enumerate(results):
        for i, (stages_before, text) in enumerate(r.warnings):
            stage = r.stages[stages_before - 1][0] if stages_before else None
            if stage is None and (_DUPLICATE_MINUTES.match(text) or text in r.preamble):
                continue  # each partition read part of the CSV and of fleet.json: the whole files' are below
            unknown = _UNKNOWN_TG.match(text)
            if stage is None and unknown and unknown.group(1) in known:
                continue  # another partition's target group (a row kept for the CSV's first or last minute)
            if stage is not None and stage[0] == "end":
                m = _SHARED_TASK.match(text)
                if m:
                    shared.append((-int(m.group(1)), p, text))
                s = _SHIFTED.match(text)
                if s and s.group(1).split("/", 1)[0] == r.key[1]:  # its own service (the others' it barely saw)
                    shifted.append((-float(s.group(2)), order.get(r.key[1], 0), text))
                if m or s or _NO_STOPPED.match(text) or _FAR_FUTURE.match(text) or _OVERLAP.match(text):
                    continue
                line = _LINE.match(text)  # unclosed deployments by line; then delivered.csv's rows past the end
                keyed.append((((1, 2, int(line.group(1))), p, i) if line else ((1, 4, 0), p, i), text))
                continue
            at = _FIRST_SEEN.match(text)
            if at is not None:  # given while its line was read, before the minutes swept at that line
                n = int(at.group(1))
                keyed.append((((0, _newest_before(lines, newest, n), 1, n - 0.5), p, i), text))
                continue
            keyed.append(((_stage_key(stage, newest) if stage is not None else (-1,), p, i), text))
    before = list(dict.fromkeys(w for w in fleet_warnings(scenario.fleet) + scenario_warnings(scenario) if w))
    for k, text in enumerate(before):  # the whole fleet's, first, as the serial replay gives them
        keyed.append((((-1,), -1, k), text))
    if scenario.healthy_hosts_path is not None:  # then the CSV's own, before the rows of unknown target groups
        dup = duplicate_minutes_warning(read_healthy_hosts_csv(scenario.healthy_hosts_path))
        if dup:
            keyed.append((((-1,), -1, len(before)), dup))
    ends: list[str] = []
    overlap = _csv_overlap(scenario, span) if span is not None else None
    if overlap:
        ends.append(overlap)
    elif shifted:
        ends.append(min(shifted)[2])
    if shared:
        ends.append(min(shared)[2])
    for k, text in enumerate(ends):
        keyed.append((((1, 0, k), 0, 0), text))
    accepted = {key[1]: key[2] for r in results for key, *_ in r.stages if key[0] == "line" and key[2] is not None}
    for k, text in enumerate(far_future_warnings(accepted, read_delivered(scenario.delivered_path))):
        keyed.append((((1, 3, k), 0, 0), text))
    stops: Counter[str] = Counter()
    for r in results:
        stops.update(r.stop_lines)
    if stops and not stops.get("STOPPED"):
        keyed.append((((1, 5, 0), 0, 0), f"{sum(stops.values())} task event(s) of stopping tasks "
                                         f"({', '.join(sorted(stops))}) and none with lastStatus STOPPED: only the "
                                         "STOPPED event reaches the watchdog, so no stop was counted"))
    seen: set[str] = set()
    out = []
    for _, text in sorted(keyed, key=lambda kv: kv[0]):
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _csv_overlap(scenario: Any, span: tuple[datetime, datetime]) -> str | None:
    from ecs_guardrail.core.availability import minute_floor
    from ecs_guardrail.replay.healthy_hosts import read_healthy_hosts_csv
    from ecs_guardrail.replay.scenario import samples_overlap_warning

    path = scenario.healthy_hosts_path
    rows = read_healthy_hosts_csv(path) if path is not None else []
    if not rows:
        return None
    return samples_overlap_warning(span, (minute_floor(min(r[0] for r in rows)), minute_floor(max(r[0] for r in rows))))


@dataclass
class SweepReplay:
    """What ``--sweep``'s row needs of one combination's replay (picklable)."""

    decisions: list[dict[str, Any]]
    summary: dict[str, Any]
    warnings: list[str]


@dataclass
class SweepSpec:
    folder: str
    settings: dict[str, str]
    engine: str


def _sweep_one(spec: SweepSpec) -> SweepReplay:
    """One ``--sweep`` combination, replayed in a worker."""
    from ecs_guardrail.replay.run import replay
    from ecs_guardrail.replay.scenario import load_scenario

    warnings: list[str] = []
    res = replay(load_scenario(Path(spec.folder), spec.settings), engine=spec.engine, on_warning=warnings.append)
    return SweepReplay(decisions=res.decisions, summary=res.summary, warnings=warnings)


def sweep_replays(jobs: int, scheduler: str | None) -> Callable[[Path, list[dict[str, str]], str], list[SweepReplay]]:
    """``--sweep``'s fan-out: ``fan(folder, settings per combination, engine)`` replays every combination on
    ``jobs`` processes or the Dask ``scheduler``, results in the combinations' order."""

    def fan(folder: Path, combos: list[dict[str, str]], engine: str) -> list[SweepReplay]:
        with pool_map(jobs, scheduler) as pmap:
            return list(pmap(_sweep_one, [SweepSpec(str(folder), c, engine) for c in combos]))

    return fan
