"""Shared fixtures: event files under events/ (the same files serve ``sam local invoke``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"
SCENARIOS = EVENTS / "scenarios"

# never reach real AWS from a test, whatever the developer's shell has
for _k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
    os.environ.pop(_k, None)
os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                   "AWS_DEFAULT_REGION": "eu-west-1", "POWERTOOLS_DEV": "false"})
# moto's EC2 backend (built for every account and region the ELBv2 fleet build touches, and again at every
# mock's reset) loads its ~5,400 default AMIs unless told not to: about a quarter of the CPU of a functional
# test on moto, for images nothing here reads (issue 33 item 4; moto's documented setting)
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")



def _share_botocore_loader() -> None:
    """One botocore data loader per search path for the whole test process (issue 33 item 4).

    moto resets boto3's default session at every ``mock_aws`` start (its ``reset_boto3_session``), and each
    new session builds a new loader that parses the service models' JSON again (DynamoDB, ECS, EC2...):
    about a third of the CPU of a functional test on moto. A loader caches what it parses and never changes
    it after, so every session of the process sharing one is what a long-lived session does; each session
    still has its own credentials, clients and event hooks."""
    import botocore.loaders
    import botocore.session

    loaders: dict[str | None, botocore.loaders.Loader] = {}
    real = botocore.loaders.create_loader

    def create_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
        if search_path_string not in loaders:
            loaders[search_path_string] = real(search_path_string)
        return loaders[search_path_string]

    botocore.session.create_loader = create_loader  # type: ignore[assignment]


_share_botocore_loader()


def _moto_query_reads_one_partition() -> None:
    """moto's DynamoDB Query on a table's key reads one partition, not the whole table (issue 33 item 4).

    moto 5 answers a Query by sorting every item of the table (``Table.all_items``: each key cast and
    compared) and then keeping the queried partition key's items, sorted again by the sort key: on the
    history table of a moto replay that was about half the replay's CPU. While a Query without an index
    runs, ``all_items`` here gives only that partition's items, in the same (sort key) order: the items
    the Query kept before, so the answer is the same. Queries on an index, and every other caller of
    ``all_items`` (Scan, exports), see the whole table as before."""
    import contextvars

    try:
        from moto.dynamodb.models.table import Table
    except ImportError:  # moto is a dependency of replay's moto engine; without it nothing to speed up
        return
    if not all(hasattr(Table, name) for name in ("query", "all_items")):
        return
    partition: contextvars.ContextVar[Any] = contextvars.ContextVar("moto_query_partition", default=None)
    real_query, real_all_items = Table.query, Table.all_items

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return real_query(self, hash_key, *args, **kwargs)
        token = partition.set(hash_key)
        try:
            return real_query(self, hash_key, *args, **kwargs)
        finally:
            partition.reset(token)

    def all_items(self: Any) -> Any:
        hash_key = partition.get()
        if hash_key is None:
            return real_all_items(self)
        part = self.items.get(hash_key)  # a defaultdict: .get adds no partition
        if part is None:
            return []
        if not self.range_key_attr:
            return [part]
        return sorted(part.values(), key=lambda x: x.range_key)

    Table.query, Table.all_items = query, all_items


_moto_query_reads_one_partition()


def _moto_serializer_remembers_attribute_names() -> None:
    """moto's response serializer finds each attribute's names once per kind of object (issue 33 item 4).

    For every member of every response shape moto 5 builds six alias providers and asks each whether the
    member has another name on the Python object (``XFormedAttributePicker.get_possible_keys``): about a
    third of the CPU of a functional test on moto's CloudWatch and ELB. The names depend only on the
    object's class (its name and its class-level ``Meta``), the member's name and its shape, so they are
    kept per (class, member, shape); an object whose ``Meta`` is its own (not its class's) is asked every
    time, as before."""
    try:
        from moto.core import serialize
    except ImportError:
        return
    picker = getattr(serialize, "XFormedAttributePicker", None)
    if picker is None or not hasattr(picker, "get_possible_keys"):
        return
    real = picker.get_possible_keys
    cache: dict[tuple[Any, ...], tuple[Any, Any, tuple[str, ...]]] = {}

    def get_possible_keys(self: Any, context: Any) -> Any:
        obj, shape = context.obj, context.shape
        if getattr(obj, "Meta", None) is not getattr(type(obj), "Meta", None):
            return real(self, context)
        key = (type(obj), context.key, id(shape), id(self.alias_providers))
        hit = cache.get(key)
        if hit is None or hit[0] is not shape or hit[1] is not self.alias_providers:
            hit = cache[key] = (shape, self.alias_providers, tuple(real(self, context)))
        return iter(hit[2])

    picker.get_possible_keys = get_possible_keys


_moto_serializer_remembers_attribute_names()


class ManualClock:
    """An invocation clock (Unix seconds) that moves only when a test says so: leases never depend on
    how fast the machine runs. Assign it to ``Runtime.clock``."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def load_event(name: str) -> dict[str, Any]:
    """One event file from ``events/ecs/`` (``.json`` may be omitted)."""
    path = EVENTS / "ecs" / (name if name.endswith(".json") else f"{name}.json")
    return json.loads(path.read_text())


@pytest.fixture
def event():
    return load_event


class WallClock:
    """A stand-in for ``time.time()`` (epoch seconds, float) that moves only when a test says so.

    Leases (``lease_until``) are epoch seconds from ``time.time()`` in the watchdog; a test that let the
    real clock run out a lease (``time.sleep``) failed when a loaded scheduler stretched the steps in
    between, and one that needed the lease still running failed the same way. This clock starts at the
    real time (so TTLs and event ages stay realistic) and stands still until :meth:`advance`.
    """

    def __init__(self, start: float) -> None:
        self.now = start

    def time(self) -> float:
        """Epoch seconds, like ``time.time()``."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (>= 0)."""
        if seconds < 0:
            raise ValueError("a wall clock does not run backwards")
        self.now += seconds


class _TimeModule:
    """The ``time`` module as one product module sees it: ``time()`` from a :class:`WallClock`, every
    other attribute (``monotonic``, ``sleep``, ``strftime``) the real module's."""

    def __init__(self, clock: WallClock) -> None:
        self._clock = clock

    def time(self) -> float:
        return self._clock.time()

    def __getattr__(self, name: str) -> Any:
        import time

        return getattr(time, name)


@pytest.fixture
def wall_clock(monkeypatch: pytest.MonkeyPatch) -> WallClock:
    """Put every ``ecs_guardrail`` module that reads ``time.time()`` (the watchdog's leases) on one
    injected :class:`WallClock` for the test; ``wall_clock.advance(s)`` runs a lease out.

    Patches each loaded ``ecs_guardrail.*`` module whose global ``time`` is the ``time`` module, so it
    follows the code wherever the lease logic lives (``handlers/watchdog.py`` today)."""
    import contextlib
    import importlib
    import sys
    import time

    for name in ("ecs_guardrail.handlers.watchdog", "ecs_guardrail.handlers.episode", "ecs_guardrail.core.lifecycle"):
        with contextlib.suppress(ModuleNotFoundError):  # the lease's home as the code moves (issue 17)
            importlib.import_module(name)
    clock = WallClock(time.time())
    proxy = _TimeModule(clock)
    for name, module in list(sys.modules.items()):
        if name.startswith("ecs_guardrail.") and getattr(module, "time", None) is time:
            monkeypatch.setattr(module, "time", proxy)
    return clock


@contextlib.contextmanager
def dev_account(monkeypatch: pytest.MonkeyPatch, region: str = "eu-west-1") -> Iterator[dict[str, Any]]:
    """A moto account for the handlers and the CLI: the history table (``history``), cluster ``dev``
    with five services at desired count 3, an alert topic, the functions' environment and the
    runtime's client factory. Yields ``{"ddb": client, "ecs": client}``."""
    import boto3
    from moto import mock_aws

    from ecs_guardrail.handlers import runtime
    from ecs_guardrail.replay.embedded import create_history_table

    with mock_aws():
        ddb = boto3.client("dynamodb", region_name=region)
        create_history_table(ddb, "history")
        ecs = boto3.client("ecs", region_name=region)
        ecs.create_cluster(clusterName="dev")
        ecs.register_task_definition(family="api", containerDefinitions=[{"name": "app", "image": "x", "memory": 128}])
        for name in ("api", "web", "jobs", "mail", "auth"):
            ecs.create_service(cluster="dev", serviceName=name, taskDefinition="api", desiredCount=3)
        topic = boto3.client("sns", region_name=region).create_topic(Name="alerts")["TopicArn"]
        for k, v in {"HISTORY_TABLE": "history", "ALERT_ONLY_CLUSTERS": "production", "ALERT_TOPIC_ARN": topic,
                     "AWS_DEFAULT_REGION": region}.items():
            monkeypatch.setenv(k, v)
        runtime.set_client_factory(lambda s: boto3.client(s, region_name=region))
        try:
            yield {"ddb": ddb, "ecs": ecs}
        finally:
            runtime.set_client_factory(None)


def cli_in_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ecs-guardrail ARGV...`` through the door (``cli.main``) in this process: its exit status, stdout
    and stderr, as ``subprocess.run(..., capture_output=True, text=True)`` returns them; ``env``: variables
    set (an empty string unsets) while it runs. Cheaper than a subprocess (issue 23: an interpreter start
    and the project's imports cost more than most replays), for machine output (``--json``, files); what
    only a real process shows (exit statuses of signals, a terminal's width, pipes) stays in subprocesses
    (tests/e2e/test_cli_exit_status.py, test_replay_cli.py, test_progress.py)."""
    import io

    from ecs_guardrail.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name, value in (env or {}).items():
            if value:
                mp.setenv(name, value)
            elif name in os.environ:
                mp.delenv(name)
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's own errors
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(list(argv), code if code is not None else 0, out.getvalue(), err.getvalue())


def json_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a decoded JSON value, itself first: ``()``, then each key or list index down to the
    leaves (``("detail", "containers", 0, "exitCode")``); the fuzz tests mutate an event at one of them."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from json_paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from json_paths(v, (*prefix, i))
