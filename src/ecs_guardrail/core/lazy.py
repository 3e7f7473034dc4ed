"""A module imported on its first attribute access, not when the importing module loads (issue 33 item 7).

The watchdog's first invocation usually only counts a stopped task (``counted``, ``ignored``, ``spot``); the
episode machine (:mod:`ecs_guardrail.core.lifecycle`, 30-odd frozen dataclasses, about a third of the
handler's own import CPU) is needed only on a trigger, a resume or a probe. ``lc = lazy_module(...)`` keeps
the call sites (``lc.Phase``, ``lc.LeaseTaken(...)``) unchanged and moves the import to the first of them.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any, cast

__all__ = ["LazyModule", "lazy_module", "LazyCallable", "lazy_callable", "LazyPattern", "lazy_pattern"]


class LazyModule:
    """Stands in for the module named ``name``: the first attribute read imports it (``importlib``'s import
    lock makes that safe across threads) and every read is the real module's attribute after that.

    Raises (on the first attribute read): whatever importing the module raises (``ImportError``...).
    """

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    @property
    def loaded(self) -> bool:
        """Whether the real module has been imported through this stand-in."""
        return self._module is not None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{' (loaded)' if self._module is not None else ''}>"


def lazy_module(name: str) -> Any:
    """A :class:`LazyModule` for the dotted module ``name`` (typed ``Any``: importers declare the real module
    under ``TYPE_CHECKING`` so mypy checks their attribute reads)."""
    return LazyModule(name)


class LazyCallable:
    """Stands in for the function or class ``attr`` of the module named ``module``, for a caller that only
    calls it (``Decider(rt, episodes)``): the first call imports the module, and every call after that goes to
    the real object. Any other attribute read is the real object's, imported then. With ``bind`` (the
    importer's ``globals()``), the first resolution also puts the real object in place of this stand-in under
    the name ``attr``, so the importer's later calls cost nothing extra.

    Not for a name used in ``isinstance``, as a base class or compared by identity: import those eagerly.

    Raises (on the first call): whatever importing the module raises, or ``AttributeError`` for a missing name.
    """

    __slots__ = ("_module", "_attr", "_target", "_bind")

    def __init__(self, module: str, attr: str, bind: dict[str, Any] | None = None) -> None:
        self._module = module
        self._attr = attr
        self._target: Any = None
        self._bind = bind

    def _resolve(self) -> Any:
        target = self._target
        if target is None:
            target = self._target = getattr(importlib.import_module(self._module), self._attr)
            if self._bind is not None and self._bind.get(self._attr) is self:
                self._bind[self._attr] = target
        return target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self._target
        if target is None:
            target = self._resolve()
        return target(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._resolve(), attr)

    def __repr__(self) -> str:
        return f"<lazy {self._module}.{self._attr}{' (loaded)' if self._target is not None else ''}>"


def lazy_callable(module: str, attr: str, bind: dict[str, Any] | None = None) -> Any:
    """A :class:`LazyCallable` for ``module``'s ``attr`` (typed ``Any``: importers declare the real name under
    ``TYPE_CHECKING`` so mypy checks their calls); ``bind``: the importer's ``globals()``, where the real object
    replaces the stand-in on first use."""
    return LazyCallable(module, attr, bind)


class LazyPattern:
    """Stands in for ``re.compile(pattern, flags)``: the first attribute read (``sub``, ``search``...)
    compiles it and keeps the compiled pattern's methods as this object's own attributes, so every later
    read is a plain attribute read.

    Raises (on the first attribute read): ``re.error`` for an invalid pattern.
    """

    _KEPT = ("sub", "subn", "search", "match", "fullmatch", "finditer", "findall", "split", "pattern", "flags",
             "groups", "groupindex")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, attr: str) -> Any:
        compiled = re.compile(*self._source)
        for name in self._KEPT:
            setattr(self, name, getattr(compiled, name))
        return getattr(compiled, attr)

    def __repr__(self) -> str:
        return f"<lazy pattern {self._source[0]!r}>"


def lazy_pattern(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A :class:`LazyPattern` for ``pattern`` (typed as the compiled pattern it stands in for)."""
    return cast("re.Pattern[str]", LazyPattern(pattern, flags))
