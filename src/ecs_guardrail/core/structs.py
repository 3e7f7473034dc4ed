"""``replace`` for a module whose frozen records are of both kinds: msgspec Structs (the episode summaries,
failures, decisions and alerts: a class msgspec builds in C costs a few microseconds at import where a frozen
dataclass costs about half a millisecond, issue 33 item 7) and standard-library dataclasses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from msgspec import Struct, structs

from ecs_guardrail.core.lazy import lazy_module

if TYPE_CHECKING:
    import dataclasses
else:  # imported by the first dataclass replaced: every record on the handlers' and a replay's paths is a Struct
    dataclasses = lazy_module("dataclasses")  # (issue 33 item 2: dataclasses and copy, about 0.8 ms of an import)

__all__ = ["replace"]

T = TypeVar("T")


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes`` (field names) set: :func:`msgspec.structs.replace` for a Struct,
    :func:`dataclasses.replace` for a dataclass instance.

    Raises:
        TypeError: ``obj`` is neither, or a change names no field of it.
    """
    if isinstance(obj, Struct):
        return structs.replace(obj, **changes)
    return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
