"""IAM permissions declared on the unit of code that makes each AWS call (``@permissions``), and their
union over a class; ``ecs_guardrail.iam`` walks them per Lambda function.

Pure declarations (no I/O): the adapters import this, the root ``ecs_guardrail.iam`` reads it. The resource
kinds are listed in ``ecs_guardrail.iam``'s docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from types import CodeType, MappingProxyType
from typing import Any, TypeVar

__all__ = ["RESOURCE_KINDS", "Permissions", "permissions", "permissions_of", "declared_by_code", "declared_functions",
           "performs", "performer_by_code"]

RESOURCE_KINDS = frozenset({"history_table", "history_index", "ecs_service", "ecs_service_deployment", "alert_topic",
                            "default_bus", "webhook_secret", "scalable_target", "crash_log_group", "any"})

#: resource kind -> IAM actions (``service:Action``)
Permissions = Mapping[str, frozenset[str]]

_ACTION = re.compile(r"[a-z0-9-]+:[A-Z][A-Za-z0-9]+")
_F = TypeVar("_F", bound=Callable[..., Any])
#: the code object of every declared unit -> its declaration (the call recorder's stack walk reads it)
_BY_CODE: dict[CodeType, Permissions] = {}
#: the code object of every effect performer (:func:`performs`) -> its declaration
_PERFORMERS: dict[CodeType, Permissions] = {}


def permissions(**needs: Iterable[str]) -> Callable[[_F], _F]:
    """Declare the IAM actions of the AWS calls the decorated function makes itself, per resource kind:
    ``@permissions(ecs_service=["ecs:UpdateService", "ecs:UntagResource"])``. The function is returned
    unchanged (no wrapper, no cost per call); the declaration is its ``__iam_permissions__``.

    Raises:
        ValueError: an unknown resource kind (not in :data:`RESOURCE_KINDS`), an action not written
            ``service:Action``, or no action at all.
    """
    declared: dict[str, frozenset[str]] = {}
    for kind, actions in needs.items():
        if kind not in RESOURCE_KINDS:
            raise ValueError(f"unknown resource kind {kind!r}; known: {', '.join(sorted(RESOURCE_KINDS))}")
        listed = frozenset([actions] if isinstance(actions, str) else actions)
        bad = sorted(a for a in listed if not _ACTION.fullmatch(a))
        if bad or not listed:
            raise ValueError(f"{kind}: IAM actions are written service:Action, got {bad or 'none'}")
        declared[kind] = listed
    if not declared:
        raise ValueError("permissions() needs at least one resource kind")
    frozen: Permissions = MappingProxyType(declared)

    def mark(fn: _F) -> _F:
        fn.__iam_permissions__ = frozen  # type: ignore[attr-defined]
        _BY_CODE[fn.__code__] = frozen
        return fn

    return mark


def declared_by_code(code: CodeType) -> Permissions | None:
    """The declaration of the unit whose code object is ``code`` (a frame's ``f_code``), or ``None``."""
    return _BY_CODE.get(code)


def _functions_of(klass: type) -> Iterable[Any]:
    for base in klass.__mro__:
        for value in vars(base).values():
            if isinstance(value, staticmethod | classmethod):
                yield value.__func__
            elif isinstance(value, property):
                yield from (f for f in (value.fget, value.fset) if f is not None)
            elif hasattr(value, "func") and callable(value.func):  # functools.cached_property
                yield value.func
            else:
                yield value


def permissions_of(unit: Any) -> dict[str, frozenset[str]]:
    """Resource kind -> IAM actions of ``unit``: a declared function's own declaration, or, for a class,
    the union of the declarations of its methods (its bases' included). ``{}`` when nothing is declared."""
    sources = list(_functions_of(unit)) if isinstance(unit, type) else [unit]
    out: dict[str, set[str]] = {}
    for fn in sources:
        for kind, actions in (getattr(fn, "__iam_permissions__", None) or {}).items():
            out.setdefault(kind, set()).update(actions)
    return {kind: frozenset(actions) for kind, actions in out.items()}


def declared_functions(unit: Any) -> list[Any]:
    """The declared functions of ``unit``: itself when it carries ``@permissions``, or a class's declared
    methods (its bases' included)."""
    sources = list(_functions_of(unit)) if isinstance(unit, type) else [unit]
    return [fn for fn in sources if getattr(fn, "__iam_permissions__", None)]


def performs(*units: Any) -> Callable[[_F], _F]:
    """Declare an effect's performer (the one small unit that carries out one effect of the episode
    machine, :mod:`ecs_guardrail.core.lifecycle`): the IAM actions it needs are the union of the
    declarations of the adapter ``units`` it calls (declared functions or classes), so the declaration
    cannot drift from the calls. Each call made while the performer runs must be among them
    (``tests/infra/test_iam_calls.py``). The function is returned unchanged.

    Raises:
        ValueError: a unit declares nothing (it is not an adapter unit that calls AWS).
    """
    needs: dict[str, set[str]] = {}
    for unit in units:
        declared = permissions_of(unit) or dict(getattr(unit, "__iam_performs__", {}))  # an adapter, or a performer
        if not declared:
            raise ValueError(f"{unit!r} declares no IAM action")
        for kind, actions in declared.items():
            needs.setdefault(kind, set()).update(actions)
    frozen: Permissions = MappingProxyType({kind: frozenset(actions) for kind, actions in needs.items()})

    def mark(fn: _F) -> _F:
        fn.__iam_performs__ = frozen  # type: ignore[attr-defined]
        _PERFORMERS[fn.__code__] = frozen
        return fn

    return mark


def performer_by_code(code: CodeType) -> Permissions | None:
    """The declaration of the effect performer whose code object is ``code``, or ``None``."""
    return _PERFORMERS.get(code)
