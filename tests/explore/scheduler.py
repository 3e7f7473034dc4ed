"""A deterministic scheduler for interleavings and faults (FoundationDB-style simulation, in the small).

Each *invocation* runs in its own thread, but only one runs at a time: every AWS call and every table
call is a *switch point* (the wrapped clients and table call :meth:`Scheduler.point` before the real
call), where the scheduler decides which invocation goes on, and whether the call about to be made
fails first (a fault). A schedule is the list of those choices, so any failure is reproduced from its
choice list or its seed. Nothing depends on the machine's speed: the only clock is the world's
:class:`ManualClock`, and it moves only when a fault says "the lease expired".

Faults at a switch point:

- ``throttle``: the call raises the AWS error a throttled call raises after the SDK's retries
  (``ThrottlingException`` for AWS APIs, ``ProvisionedThroughputExceededException`` for the table);
- ``die``: the invocation dies there (Lambda timeout, out of memory): :class:`InvocationDied`, a
  ``BaseException`` no handler code catches;
- ``expire``: the invocation dies there *and* the clock moves past its lease (the lease outlives the
  holder, so an expired lease always means a dead holder).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

FAULTS = ("throttle", "die", "expire")


class InvocationDied(BaseException):  # noqa: N818 - it is an event, not an error: the process is gone
    """The simulated invocation is gone at this point (nothing after it runs)."""


class Stop(BaseException):  # noqa: N818
    """Raised in a parked invocation when the scheduler abandons a schedule."""


@dataclass
class Task:
    """One invocation: ``fn`` runs in a thread; ``error`` is what it raised (``None``: returned)."""

    name: str
    fn: Callable[[], Any]
    result: Any = None
    error: BaseException | None = None
    done: bool = False
    points: int = 0
    ops: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Step:
    """One switch point of a finished schedule: who could run, who ran, what call it was about to make."""

    runnable: tuple[str, ...]
    chosen: str
    op: str


Chooser = Callable[[list[str], str | None, int], str]
FaultPlan = Callable[[str, str, int], str | None]


class Scheduler:
    """Run tasks one at a time, switching only at :meth:`point`.

    ``choose(runnable names, name of the task that ran last, step) -> name`` picks who goes on;
    ``fault(task name, op, step) -> None | "throttle" | "die" | "expire"`` injects a fault at that
    point; ``on_expire()`` moves the world's clock past every lease. ``check()`` runs at every switch
    point with every other task parked (the invariants that must hold at all times).

    The running task itself makes each choice at its switch point and hands the turn over only when
    another task is chosen, so a stretch without preemption costs no thread switch.
    """

    def __init__(self, choose: Chooser, fault: FaultPlan | None = None, *,
                 on_expire: Callable[[], None] | None = None, check: Callable[[], None] | None = None,
                 max_steps: int = 2000) -> None:
        self.choose = choose
        self.fault = fault or (lambda *_: None)
        self.on_expire = on_expire or (lambda: None)
        self.check = check or (lambda: None)
        self.max_steps = max_steps
        self.trace: list[Step] = []
        self.failure: BaseException | None = None
        self._cv = threading.Condition()
        self._turn: Task | None = None
        self._local = threading.local()
        self._tasks: list[Task] = []
        self._parked: dict[str, str] = {}
        self._abandon = False

    def _next(self, last: str | None) -> None:
        """Pick who runs next (the caller holds the lock); ``None`` when every task is done."""
        runnable = [t for t in self._tasks if not t.done]
        if not runnable:
            self._turn = None
            self._cv.notify_all()
            return
        try:
            self.check()
            if len(self.trace) >= self.max_steps:
                raise RuntimeError(f"schedule longer than {self.max_steps} steps")
        except BaseException as exc:  # noqa: BLE001 - an invariant broke: stop the schedule, report it
            self.failure = exc
            self._abandon = True
            self._turn = None
            self._cv.notify_all()
            return
        names = [t.name for t in runnable]
        name = self.choose(names, last, len(self.trace))
        self.trace.append(Step(tuple(names), name, self._parked.get(name, "?")))
        self._turn = next(t for t in runnable if t.name == name)
        self._cv.notify_all()

    # ---------------------------------------------------------------- inside an invocation
    def point(self, op: str) -> None:
        """Called by a wrapped client before each call ``op``: choose who goes on, park unless it is
        this task. Raises the fault planned for this point, if any. A call from a thread that is not a
        task passes."""
        task: Task | None = getattr(self._local, "task", None)
        if task is None:
            return
        task.points += 1
        task.ops.append(op)
        with self._cv:
            self._parked[task.name] = op
            self._next(task.name)
            self._cv.wait_for(lambda: self._turn is task or self._abandon)
            if self._abandon:
                raise Stop()
        kind = self.fault(task.name, op, len(self.trace) - 1)
        if kind == "throttle":
            code = "ProvisionedThroughputExceededException" if op.startswith("table.") else "ThrottlingException"
            raise ClientError({"Error": {"Code": code, "Message": "injected by the explorer"},
                               "ResponseMetadata": {"HTTPStatusCode": 400}}, op)
        if kind == "expire":
            self.on_expire()
            raise InvocationDied(f"{task.name} died at {op}; its lease expired")
        if kind == "die":
            raise InvocationDied(f"{task.name} died at {op}")

    # ---------------------------------------------------------------- the driver
    def run(self, tasks: list[Task]) -> list[Task]:
        """Run ``tasks`` to completion under the schedule; returns them (results and errors set).

        Raises:
            AssertionError (or what ``check`` raised): an invariant broke at a switch point.
        """
        self._tasks = tasks
        threads = [threading.Thread(target=self._body, args=(t,), name=f"explore-{t.name}", daemon=True)
                   for t in tasks]
        with self._cv:
            for t in tasks:
                self._parked[t.name] = "start"
        for th in threads:
            th.start()
        with self._cv:
            self._next(None)
            self._cv.wait_for(lambda: all(t.done for t in tasks) or self._abandon)
            self._abandon = True
            self._cv.notify_all()
        for th in threads:
            th.join(timeout=30)
        if self.failure is not None:
            raise self.failure
        self.check()
        return tasks

    def _body(self, task: Task) -> None:
        self._local.task = task
        with self._cv:
            self._cv.wait_for(lambda: self._turn is task or self._abandon)
        try:
            if not self._abandon:
                task.result = task.fn()
        except Stop:
            task.error = None
        except BaseException as exc:  # noqa: BLE001 - the task's outcome, judged by the test
            task.error = exc
        finally:
            with self._cv:
                task.done = True
                if self._turn is task:
                    self._next(task.name)


# -------------------------------------------------------------------- wrapped clients and table
class Switching:
    """A client (or table) whose every public method first calls ``sched.point("<prefix>.<method>")``."""

    def __init__(self, target: Any, prefix: str, sched: Scheduler) -> None:
        self._target = target
        self._prefix = prefix
        self._sched = sched

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name == "get_paginator":
            return self._paginator
        if not callable(attr) or name.startswith("_") or name == "meta":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._sched.point(f"{self._prefix}.{name}")
            return attr(*args, **kwargs)

        return call

    def _paginator(self, op: str) -> Any:
        real = self._target.get_paginator(op)
        outer = self

        class Paginator:
            def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
                outer._sched.point(f"{outer._prefix}.{op}")
                yield from real.paginate(**kwargs)

        return Paginator()


# -------------------------------------------------------------------- schedules
def non_preemptive(names: list[str], last: str | None, step: int) -> str:
    """Go on with the task that ran last while it can; else the first runnable one."""
    return last if last in names else names[0]


@dataclass
class Forced:
    """A chooser that follows ``prefix`` (task names, one per step), then runs non-preemptively."""

    prefix: list[str]

    def __call__(self, names: list[str], last: str | None, step: int) -> str:
        if step < len(self.prefix) and self.prefix[step] in names:
            return self.prefix[step]
        return non_preemptive(names, last, step)


def preemptions(choices: list[str], trace: list[Step]) -> int:
    """How many times ``choices`` switch away from a task that could have gone on."""
    n = 0
    for i in range(1, len(choices)):
        prev = choices[i - 1]
        if choices[i] != prev and i < len(trace) and prev in trace[i].runnable:
            n += 1
    return n


def bounded_schedules(run: Callable[[Forced], list[Step]], bound: int, *, sample: int | None = None,
                      seed: int = 0) -> Iterator[list[Step]]:
    """Every schedule with at most ``bound`` preemptions (CHESS's preemption bounding: every
    interleaving up to that many forced switches, exhaustively), each run once through ``run``.

    Yields each schedule's trace. Depth-first: a run's trace names, at each step, who else could have
    gone; each alternative within the bound becomes a new forced prefix.

    ``sample=N``: every schedule with fewer than ``bound`` preemptions, exhaustively, and of the
    schedules whose prefix makes the ``bound``-th preemption a fixed sample of ``N`` (``random.Random(seed)``
    over the sorted prefixes: the same schedules every run), then those as above. ``None``: all of them.
    """
    stack: list[list[str]] = [[]]
    seen: set[tuple[str, ...]] = set()
    last_level: set[tuple[str, ...]] = set()
    while True:
        while stack:
            prefix = stack.pop()
            trace = run(Forced(prefix))
            choices = [s.chosen for s in trace]
            key = tuple(choices)
            if key in seen:
                continue
            seen.add(key)
            yield trace
            for i in range(len(prefix), len(trace)):
                for alt in trace[i].runnable:
                    if alt == choices[i]:
                        continue
                    candidate = choices[:i] + [alt]
                    n = preemptions(candidate, trace)
                    if n < bound or (n == bound and sample is None):
                        stack.append(candidate)
                    elif n == bound:
                        last_level.add(tuple(candidate))
        if sample is None or not last_level:
            return
        ordered = sorted(last_level)
        chosen = random.Random(seed).sample(ordered, min(sample, len(ordered)))
        stack = [list(c) for c in reversed(chosen)]
        sample = None  # the sampled prefixes' own descendants within the bound: every one, as above
        last_level = set()


@dataclass
class Seeded:
    """A random chooser and fault plan from one seed: switch with probability ``switch``, fault with
    probability ``fault_rate`` per point (one of :data:`FAULTS`), at most ``max_faults`` per schedule."""

    seed: int
    switch: float = 0.3
    fault_rate: float = 0.03
    max_faults: int = 2
    faults: list[tuple[int, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def choose(self, names: list[str], last: str | None, step: int) -> str:
        if last in names and self.rng.random() > self.switch:
            return last
        return self.rng.choice(names)

    def fault(self, task: str, op: str, step: int) -> str | None:
        if len(self.faults) >= self.max_faults or self.rng.random() >= self.fault_rate:
            return None
        kind = self.rng.choice(FAULTS)
        self.faults.append((step, task, op, kind))
        return kind
