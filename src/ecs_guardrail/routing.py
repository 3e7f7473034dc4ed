"""Which events reach which function: the EventBridge rule patterns, as data.

``template.yaml`` and ``terraform/`` carry the same patterns (a test checks it), and ``replay`` routes
the scenario's events with :func:`matches`, so the watchdog sees in a replay exactly what the bus would
deliver to it. Pattern syntax: EventBridge's exact-value lists and nested objects (EventBridge User
Guide, "Event patterns": exact values, ``prefix``, nested objects, ``$or``); that subset is all these
patterns use.

:func:`targets` runs the patterns compiled once per account into one function (:func:`compile_targets`)
that reads each field once and checks every pattern inline: the same answers as :func:`matches` (a test
compares the two on every event file and on generated events), without walking a pattern for every event.
:func:`compile_pattern` compiles one pattern alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

__all__ = ["PATTERNS", "STACK_ACCOUNT", "matches", "targets", "targets_for", "compile_pattern", "compile_targets",
           "for_account"]

#: stands in a pattern for the stack's own account: ``!Ref AWS::AccountId`` in template.yaml,
#: ``${local.account_id}`` in terraform/ (:func:`for_account` puts the account in, or any account when unknown)
STACK_ACCOUNT = "${AWS::AccountId}"

ECS_DETAIL_TYPES = ["ECS Task State Change", "ECS Service Action", "ECS Deployment State Change"]

PATTERNS: dict[str, dict[str, Any]] = {
    # every ECS event, of every detail-type: the evidence (ECS adds event types, e.g. lifecycle-hook state
    # changes; the recorder keeps one it does not read with a note, never drops it at the bus)
    "recorder": {"source": ["aws.ecs"]},
    # only what the watchdog reads: stopped tasks (Spot notices included), two service actions (impaired
    # starts; steady state closes an episode) and every deployment state change
    "watchdog": {
        "source": ["aws.ecs"],
        # never an event replayed from the archive (EventBridge adds "replay-name" to each): a replay
        # without FilterArns reaches every rule of the bus, and old crashes would scale services today
        "replay-name": [{"exists": False}],
        "$or": [
            # stopped tasks (one event per task reaches the watchdog, not the notice and DEPROVISIONING too)
            {"detail-type": ["ECS Task State Change"], "detail": {"lastStatus": ["STOPPED"]}},
            # Spot notices: their verdict is remembered so the task's STOPPED event never counts as a crash
            {"detail-type": ["ECS Task State Change"],
             "detail": {"stopCode": ["SpotInterruption", "TerminationNotice"]}},
            {"detail-type": ["ECS Task State Change"], "detail": {"stoppedReason": [{"prefix": "Your Spot Task"}]}},
            {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_TASK_START_IMPAIRED"]}},
            # steady state: the watchdog closes the service's episode
            {"detail-type": ["ECS Service Action"], "detail": {"eventName": ["SERVICE_STEADY_STATE"]}},
            # every deployment state change (in progress, completed, failed)
            {"detail-type": ["ECS Deployment State Change"]},
        ],
    },
    # the crash path's own lane (issue 32 item 3): the sweep function (the watchdog's code, its own
    # reserved concurrency and async queue) takes the sampler's container-restart observations
    # (restart-policy loops emit no ECS event), so they never wait behind a storm's task events; put by
    # the stack's own sampler only: another account's (a member account may put events on the bus in
    # cross-account mode) is a forgery, never delivered (the handler also refuses it). The one-minute
    # schedule is its other rule (no pattern).
    "sweep": {
        "source": ["ecs-guardrail"],
        "replay-name": [{"exists": False}],
        "detail-type": ["Container Restarts"],
        "account": [STACK_ACCOUNT],
    },
}


def for_account(pattern: dict[str, Any], account: str | None) -> dict[str, Any]:
    """``pattern`` with :data:`STACK_ACCOUNT` made ``account`` (``None``: unknown, any account matches)."""
    out: dict[str, Any] = {}
    for key, want in pattern.items():
        if key == "$or":
            out[key] = [for_account(alternative, account) for alternative in want]
        elif want == [STACK_ACCOUNT]:
            if account is not None:
                out[key] = [account]
        else:
            out[key] = want
    return out


def matches(pattern: dict[str, Any], event: Any, account: str | None = None) -> bool:
    """True when ``event`` matches ``pattern`` (value lists, ``prefix``, ``exists``, nested objects and ``$or``) for a
    stack in ``account`` (:func:`for_account`)."""
    if STACK_ACCOUNT in str(pattern):
        pattern = for_account(pattern, account)
    if not isinstance(event, dict):
        return False
    for key, want in pattern.items():
        if key == "$or":
            if not any(matches(alternative, event) for alternative in want):
                return False
            continue
        got = event.get(key, _ABSENT)
        if isinstance(want, dict):
            if not matches(want, got):
                return False
        elif isinstance(got, list):
            if not any(_value_matches(want, g) for g in got):
                return False
        elif not _value_matches(want, got):
            return False
    return True


def _value_matches(want: list[Any], got: Any) -> bool:
    """One value against a pattern's list: exact values, ``{"prefix": "..."}`` (case-sensitive), or
    ``{"exists": bool}`` (the field is present, or absent: EventBridge User Guide, "Exists matching"; a field
    whose value is JSON ``null`` is present, as EventBridge matches it with ``[null]``: "Matching events on null
    values and empty strings", eb-event-patterns-null-values.html; :data:`_ABSENT` stands for a field that is not
    there)."""
    for w in want:
        if isinstance(w, dict):
            if "prefix" in w and isinstance(got, str) and got.startswith(w["prefix"]):
                return True
            if "exists" in w and (got is not _ABSENT) is bool(w["exists"]):
                return True
        elif isinstance(got, str | int | float | bool | None) and w == got and type(w) is type(got):
            return True
    return False


Check = Callable[[Any], bool]
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: a field the event does not have (``dict.get``'s default), never equal to a value: ``null`` is a value
_ABSENT = type("_Absent", (), {"__slots__": (), "__repr__": lambda self: "<absent>"})()


def _tells_absent(want: Any) -> bool:
    """True when a value list tells a missing field from ``null`` (``{"exists": ...}`` or ``null`` itself):
    only such a field is read with :data:`_ABSENT` for a default by the compiled matchers (for any other a
    missing field and ``null`` match the same values: none of the list's)."""
    return isinstance(want, list) and any(w is None or (isinstance(w, dict) and "exists" in w) for w in want)


def _one_of(got: Any, exact: frozenset[tuple[type, Any]], prefixes: tuple[str, ...]) -> bool:
    """:func:`_value_matches` against precomputed ``(type, value)`` pairs and prefixes."""
    if type(got) in _SCALARS and (type(got), got) in exact:
        return True
    return bool(prefixes) and isinstance(got, str) and got.startswith(prefixes)


def _any_of(got: list[Any], exact: frozenset[tuple[type, Any]], prefixes: tuple[str, ...]) -> bool:
    return any(_one_of(g, exact, prefixes) for g in got)


class _Compiler:
    """Turns patterns into the source of boolean expressions over local names (``x0`` the event), with the
    pattern's value lists as frozensets (of ``(type, value)``: an exact match in EventBridge is type and
    value, ``1`` is not ``true``; of the strings alone when every value is a string) and tuples of
    prefixes. With ``hoisted`` (:func:`compile_targets`) each field is read once, before the patterns, into
    the name :attr:`reads` gives it; without, each check binds the field it reads (``:=``)."""

    def __init__(self, *, hoisted: bool = False) -> None:
        self.constants: dict[str, Any] = {}
        self._named: dict[tuple[type, Any], str] = {}
        self.names = 0
        self.hoisted = hoisted
        #: (object's name, key) -> the name its field is read into (hoisted), in reading order
        self.reads: dict[tuple[str, str], str] = {}
        self.absent_reads: set[str] = set()  # the reads whose missing field is _ABSENT, not None (_tells_absent)

    def _const(self, value: Any) -> str:
        """The name of constant ``value``: an equal value of the same type already named keeps its name (so
        the same check on the same field reads the same, and :meth:`pattern` can factor it out of ``$or``)."""
        key = (type(value), value)
        name = self._named.get(key)
        if name is None:
            name = self._named[key] = f"C{len(self.constants)}"
            self.constants[name] = value
        return name

    def _name(self) -> str:
        self.names += 1
        return f"x{self.names}"

    def values(self, var: str, want: list[Any]) -> str:
        exact = frozenset((type(w), w) for w in want if not isinstance(w, dict))
        prefixes = tuple(w["prefix"] for w in want if isinstance(w, dict) and "prefix" in w)
        e, p = self._const(exact), self._const(prefixes)
        if exact and len(exact) == len(want) and all(t is str for t, _ in exact):
            # exact strings only: a string is decided by the set alone (a string equals only a string);
            # anything else can match only as a list holding one of them
            strings = self._const(frozenset(v for _, v in exact))
            listed = f"(isinstance({var}, list) and _any_of({var}, {e}, {p}))"
            return f"({var} in {strings} if type({var}) is str else {listed})"
        if exact and all(t is str for t, _ in exact):  # a string equals only a string: the values alone
            parts = [f"(type({var}) is str and {var} in {self._const(frozenset(v for _, v in exact))})"]
        else:
            parts = [f"(type({var}) in _SCALARS and (type({var}), {var}) in {e})"] if exact else []
        for exists in sorted({bool(w["exists"]) for w in want if isinstance(w, dict) and "exists" in w}):
            # a list matches by its elements, as in matches(): [] has none, [null] one (null is a value)
            absent = self._const(_ABSENT)  # null is present (matches()): only a missing field is absent
            parts.append(f"(not isinstance({var}, list) and ({var} is not {absent}) is {exists})")
            parts.append(f"(isinstance({var}, list) and any((g is not {absent}) is {exists} for g in {var}))")
        if prefixes:
            parts.append(f"(isinstance({var}, str) and {var}.startswith({p}))")
        parts.append(f"(isinstance({var}, list) and _any_of({var}, {e}, {p}))")
        return "(" + " or ".join(parts) + ")"

    def hoist(self, var: str, pattern: dict[str, Any]) -> None:
        """Name every field ``pattern`` reads of ``var`` (and of its nested objects) in :attr:`reads`."""
        for key, want in pattern.items():
            if key == "$or":
                for alt in want:
                    self.hoist(var, alt)
                continue
            field = self.reads.get((var, key))
            if field is None:
                field = self.reads[(var, key)] = self._name()
            if _tells_absent(want):
                self.absent_reads.add(field)
            if isinstance(want, dict):
                self.hoist(field, want)

    def reading(self, var: str, indent: str) -> list[str]:
        """Statements that read the hoisted fields of ``var`` (a dict), then those of its nested objects
        (each read only when it is a dict; its fields are ``None`` otherwise, never looked at: every check
        of them starts with ``isinstance(..., dict)``)."""
        mine = [(key, name) for (of, key), name in self.reads.items() if of == var]
        lines = [f"{indent}{name} = {var}.get({key!r}{self._default(name)})" for key, name in mine]
        for _, name in mine:
            inner = [n for (of, _), n in self.reads.items() if of == name]
            if inner:
                lines.append(f"{indent}if isinstance({name}, dict):")
                lines += self.reading(name, indent + "    ")
                lines.append(f"{indent}else:")
                lines.append(f"{indent}    {' = '.join(self._below(name))} = None")
        return lines

    def _default(self, name: str) -> str:
        return f", {self._const(_ABSENT)}" if name in self.absent_reads else ""

    def _below(self, var: str) -> list[str]:
        out = []
        for (of, _), name in self.reads.items():
            if of == var:
                out += [name, *self._below(name)]
        return out

    def pattern(self, var: str, pattern: dict[str, Any], *, is_dict: bool = False) -> str:
        parts = self.parts(var, pattern, is_dict=is_dict)
        return "(" + " and ".join(parts) + ")" if parts else "True"

    def _any(self, var: str, alternatives: list[dict[str, Any]], *, is_dict: bool) -> str:
        """``$or``: each alternative's checks; with :attr:`hoisted`, consecutive alternatives that begin with
        the same check (``detail-type`` is ECS Task State Change) test it once: ``(a and b) or (a and c)``
        is ``a and (b or c)`` (the checks only read names bound before them)."""
        if not alternatives:
            return "False"
        alts = [self.parts(var, alt, is_dict=is_dict) for alt in alternatives]
        if not self.hoisted:
            return "(" + " or ".join("(" + " and ".join(a) + ")" if a else "True" for a in alts) + ")"
        groups: list[tuple[str | None, list[list[str]]]] = []
        for a in alts:
            head = a[0] if len(a) > 1 else None
            if head is not None and groups and groups[-1][0] == head:
                groups[-1][1].append(a[1:])
                continue
            groups.append((head, [a[1:]] if head is not None else [a]))
        out = []
        for head, rests in groups:
            either = " or ".join("(" + " and ".join(r) + ")" if r else "True" for r in rests)
            out.append(f"({head} and ({either}))" if head is not None else f"({either})")
        return "(" + " or ".join(out) + ")"

    def parts(self, var: str, pattern: dict[str, Any], *, is_dict: bool = False) -> list[str]:
        parts = [] if is_dict else [f"isinstance({var}, dict)"]
        for key, want in pattern.items():
            if key == "$or":
                parts.append(self._any(var, want, is_dict=is_dict))
                continue
            if self.hoisted:
                field = self.reads[(var, key)]
                parts.append(self.pattern(field, want) if isinstance(want, dict) else self.values(field, want))
                continue
            field = self._name()
            # binds the field's value for the check that follows (the test itself is always true)
            default = f", {self._const(_ABSENT)}" if _tells_absent(want) else ""
            bind = f"({field} := {var}.get({key!r}{default}))"
            if isinstance(want, dict):
                parts.append(f"({bind} is not None or True) and {self.pattern(field, want)}")
            else:
                parts.append(f"({bind} is not None or True) and {self.values(field, want)}")
        return parts


def compile_pattern(pattern: dict[str, Any], account: str | None = None) -> Check:
    """``pattern`` (for a stack in ``account``: :func:`for_account`) as one generated function
    ``event -> bool`` of inline field checks, answering as :func:`matches` does (exact values, ``prefix``,
    nested objects, ``$or``): the pattern is walked once, here, not for every event (a test compares the
    two on every event file and on near misses)."""
    pattern = for_account(pattern, account)
    compiler = _Compiler()
    body = compiler.pattern("x0", pattern)
    namespace: dict[str, Any] = {"_SCALARS": _SCALARS, "_any_of": _any_of, **compiler.constants}
    exec(compile(f"def check(x0):\n    return bool({body})\n", "<routing pattern>", "exec"), namespace)  # noqa: S102
    return cast(Check, namespace["check"])


def compile_targets(patterns: dict[str, dict[str, Any]],
                    account: str | None = None) -> Callable[[Any], frozenset[str]]:
    """``patterns`` (name -> pattern, each for a stack in ``account``) as one generated function ``event ->
    frozenset of the names whose pattern matches``, answering as :func:`matches` does for each: every field
    any pattern reads is read once per event (``source``, ``detail``, ``detail.lastStatus``...), a check two
    patterns share (``source`` is ``aws.ecs``) is made once, then each pattern is one inline expression over
    them; the answer is one of the prebuilt frozensets (one per combination of matching patterns), not a set
    built per event (:func:`targets` runs it; a test compares it with :func:`matches` on every event file
    and on near misses)."""
    compiler = _Compiler(hoisted=True)
    wanted = {name: for_account(p, account) for name, p in patterns.items()}
    for p in wanted.values():
        compiler.hoist("x0", p)
    names = list(wanted)
    lines = ["def targets(x0):", "    if not isinstance(x0, dict):", "        return _OUT[0]"]
    lines += compiler.reading("x0", "    ")
    # the checks of the patterns' own fields (each a pure expression over the names read above); one that
    # two patterns make (recorder's and the watchdog's source) is computed once, into a name of its own
    parts = [compiler.parts("x0", p, is_dict=True) for p in wanted.values()]
    uses: dict[str, int] = {}
    for ps in parts:
        for part in dict.fromkeys(ps):
            uses[part] = uses.get(part, 0) + 1
    shared: dict[str, str] = {}
    for part, k in uses.items():
        if k > 1:
            shared[part] = f"s{len(shared)}"
            lines.append(f"    {shared[part]} = {part}")
    lines.append("    k = 0")
    for i, ps in enumerate(parts):
        body = " and ".join(shared.get(part, part) for part in ps) if ps else "True"
        lines.append(f"    if {body}:")
        lines.append(f"        k |= {1 << i}")
    lines.append("    return _OUT[k]")
    out = tuple(frozenset(name for i, name in enumerate(names) if k >> i & 1) for k in range(1 << len(names)))
    namespace: dict[str, Any] = {"_SCALARS": _SCALARS, "_any_of": _any_of, "_OUT": out, **compiler.constants}
    exec(compile("\n".join(lines) + "\n", "<routing patterns>", "exec"), namespace)  # noqa: S102
    return cast(Callable[[Any], frozenset[str]], namespace["targets"])


#: the patterns compiled per account, each on first use (a replay compiles its fleet's account alone, never
#: ``None``: about 0.7 ms saved at import)
_COMPILED: dict[str | None, Callable[[Any], frozenset[str]]] = {}


def targets_for(account: str | None = None) -> Callable[[Any], frozenset[str]]:
    """:func:`targets` for a stack in ``account``, as one function ``event -> frozenset of function names``
    (the patterns compiled once per account, :func:`compile_targets`): a caller routing many events
    (``replay``) looks the account up once, not per event."""
    compiled = _COMPILED.get(account)
    if compiled is None:
        if len(_COMPILED) > 16:
            _COMPILED.clear()
        compiled = _COMPILED[account] = compile_targets(PATTERNS, account)
    return compiled


def targets(event: Any, account: str | None = None) -> frozenset[str]:
    """The functions (``recorder``, ``watchdog``, ``sweep``) the bus of a stack in ``account`` would invoke for
    ``event`` (``None``: the account is unknown, and a pattern's :data:`STACK_ACCOUNT` takes any): the
    patterns compiled once per account (:func:`compile_targets`, :func:`targets_for`)."""
    compiled = _COMPILED.get(account)
    if compiled is None:
        compiled = targets_for(account)
    return compiled(event)
