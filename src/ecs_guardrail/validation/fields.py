"""The event models' and settings' validation, by msgspec (issue 36): what this project adds on top of it.

msgspec (https://jcristharif.com/msgspec/, ``Struct`` and ``convert``) checks every field's type, its
``Meta`` bounds (``ge``, ``le``, ``min_length``, ``max_length``, ``pattern``), nested structs and lists,
defaults and missing fields, in C: one :func:`msgspec.convert` call a document. A :class:`Model` adds:

- :attr:`Model.CHECKS`: ``{attribute: check}``, a plain function per field run after msgspec's own
  checks (``check(value) -> value``: it may normalise, as cutting a long text; ``ValueError`` or
  ``TypeError`` rejects), in field order, by ``__post_init__``; then :meth:`Model.check`, the class-wide
  rule. A default is checked too (each check takes its field's default as it is).
- :func:`validate`, which on a rejection reports the *first* problem in field order, nested ones in
  place, as pydantic did (msgspec stops at the first problem in the input's key order, and reports a
  missing field only after the others): :func:`first_problem` walks the fields again, on the rejection
  path only, and asks msgspec about each value on its own.

Unknown keys are ignored (msgspec's default; the recorder stores the raw event, not the model), and an
attribute's Python name is not read in place of its JSON key (``rename``/``field(name=...)``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Self, TypeVar, Union, get_args, get_origin

import msgspec

__all__ = ["Model", "Invalid", "Loc", "validate", "first_problem", "MISSING", "clip", "remembering"]

#: a location in the input: keys and list indexes, outermost first (pydantic's ``loc``)
Loc = tuple[str | int, ...]
#: the problem text of a required key that is absent
MISSING = "field required"
_T = TypeVar("_T", bound="Model")
# msgspec's "<message> - at `$.detail.containers[0].exitCode`" (no " - at" for the document itself)
_AT = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<key>[^`]*)` in `(?P<of>\$[^`]*)`| - at `(?P<path>\$[^`]*)`)?\Z", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


class Invalid(ValueError):
    """A rejected input: :attr:`loc` and :attr:`msg` of its first problem in field order, :attr:`input`
    the value found there; ``str()`` is ``loc: msg`` (``loc`` dotted, ``event`` for the whole input)."""

    def __init__(self, loc: Loc, msg: str, value: object = None) -> None:
        super().__init__(f"{'.'.join(str(p) for p in loc) or 'event'}: {msg}")
        self.loc, self.msg, self.input = loc, msg, value


class Model(msgspec.Struct):
    """A msgspec ``Struct`` with per-field :attr:`CHECKS` and a class-wide :meth:`check`, both run once
    msgspec's own checks passed (``__post_init__``: msgspec reports their ``ValueError`` as a rejection).

    Each subclass gets its own ``__post_init__``, written for its checks when the class is made
    (:func:`_post_init`): the checks in :attr:`CHECKS`' order, each reading its attribute directly, then
    :meth:`check` if the class has one; none at all for a class with neither. A document of three nested
    models (a task event) is checked in about a third of the time a loop over ``CHECKS`` took (issue 33.2).
    """

    CHECKS: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        setattr(cls, "__post_init__", _post_init(cls))  # noqa: B010 - msgspec reads it off the class

    def check(self) -> None:
        """The class-wide rule, once every field passed; raise ``ValueError`` to reject."""

    @classmethod
    def validate(cls, data: object, *, strict: bool = True) -> Self:
        """``data`` (a mapping) as this class: :func:`validate` (its conversion made here: one call less)."""
        try:
            return msgspec.convert(data, cls, strict=strict)
        except msgspec.ValidationError:
            return validate(cls, data, strict=strict)  # converted again: Invalid's first problem in field order


def clip(max_chars: int) -> Any:
    """A check for :attr:`Model.CHECKS` that cuts a text (or ``None``) to at most ``max_chars`` characters
    (code points) and never rejects; a model's ``__post_init__`` runs it inline (its ``clip_chars``)."""
    if type(max_chars) is not int or max_chars < 0:
        raise TypeError(f"clip: max_chars {max_chars!r} is not a count")

    def check(value: str | None) -> str | None:
        if value is not None and len(value) > max_chars:
            return value[:max_chars]
        return value

    check.clip_chars = max_chars  # type: ignore[attr-defined]
    return check


def remembering(check: Any, accepted: Any) -> Any:
    """``check`` (a :attr:`Model.CHECKS` check that returns the value it accepts unchanged) marked so that a
    model's ``__post_init__`` skips it for a value in ``accepted`` (a set or dict the check itself fills with
    the values it accepted: a fleet's few cluster ARNs and task groups, checked once each; issue 33 item 2).
    Only for a field whose values are hashable (text or ``None``). Returns ``check``."""
    check.accepted = accepted
    return check


def _post_init(cls: type[Model]) -> Any:
    """``cls.__post_init__``: each check of ``cls.CHECKS`` on its attribute, in the dict's order, the value
    replaced when the check returns another object (it normalised); then ``cls.check`` when ``cls`` (or a
    base) overrides :meth:`Model.check`. ``None`` (msgspec calls nothing) when there is neither."""
    names = list(cls.CHECKS)
    wide = cls.check is not Model.check
    if not names and not wide:
        return None
    lines = ["def __post_init__(self):"]
    scope: dict[str, Any] = {"_set": msgspec.Struct.__setattr__}
    for i, name in enumerate(names):
        if not name.isidentifier():
            raise TypeError(f"{cls.__name__}.CHECKS: {name!r} is not an attribute name")
        check = cls.CHECKS[name]
        most = getattr(check, "clip_chars", None)
        if type(most) is int:  # a clip (:func:`clip`): written inline, no call a field (issue 33 item 2)
            lines += [f"    v = self.{name}", f"    if v is not None and len(v) > {most}:",
                      f"        _set(self, {name!r}, v[:{most}])"]
            continue
        scope[f"_check{i}"] = check
        accepted = getattr(check, "accepted", None)
        if accepted is not None:  # a value the check accepted before: no call (:func:`remembering`)
            scope[f"_accepted{i}"] = accepted
            lines += [f"    v = self.{name}", f"    if v not in _accepted{i}:", f"        w = _check{i}(v)",
                      "        if w is not v:", f"            _set(self, {name!r}, w)"]
            continue
        lines += [f"    v = self.{name}", f"    w = _check{i}(v)", "    if w is not v:",
                  f"        _set(self, {name!r}, w)"]
    if wide:
        lines.append("    self.check()")
    exec("\n".join(lines), scope)  # noqa: S102 - source made above from attribute names only
    function = scope["__post_init__"]
    function.__qualname__ = f"{cls.__qualname__}.__post_init__"
    return function


def validate(cls: type[_T], data: object, *, strict: bool = True) -> _T:
    """``data`` converted to ``cls`` by msgspec (``strict=False``: msgspec's lax conversions, numbers and
    booleans from text, for the environment).

    Raises:
        Invalid: the first problem in field order (:func:`first_problem`).
    """
    try:
        return msgspec.convert(data, cls, strict=strict)
    except msgspec.ValidationError as exc:
        loc, msg, value = first_problem(cls, data, (), strict) or (*_split(str(exc)), data)
        raise Invalid(loc, msg, value) from None


def _split(text: str) -> tuple[Loc, str]:
    """msgspec's error text -> ``(loc, message)``."""
    m = _AT.match(text)
    assert m is not None  # the pattern matches any text
    path = m["path"] or m["of"] or "$"
    loc: Loc = tuple(k if i == "" else int(i) for k, i in _STEP.findall(path[1:]))
    return ((*loc, m["key"], "[key]") if m["key"] else loc), m["msg"]


def _model_in(tp: Any) -> tuple[type[Model] | None, bool]:
    """``(the Model class a field's type holds, whether in a list)``: ``M``, ``M | None``, ``list[M]``."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp, False
    args = [a for a in get_args(tp) if a is not type(None)]
    if get_origin(tp) is list and args and isinstance(args[0], type) and issubclass(args[0], Model):
        return args[0], True
    if get_origin(tp) is Union and len(args) == 1:
        return _model_in(args[0])
    return None, False


def first_problem(cls: type[Model], data: object, loc: Loc, strict: bool) -> tuple[Loc, str, object] | None:
    """The first problem of ``data`` as ``cls`` in field order (pydantic's order): ``(loc, msg, value)``,
    ``None`` if there is none. Each field's value is converted alone (a nested model's by this walk), then
    its check runs; the class-wide check last, by converting the whole."""
    if isinstance(data, dict):
        for f in msgspec.structs.fields(cls):
            here = (*loc, f.encode_name)
            if f.encode_name not in data:
                if f.required:
                    return here, MISSING, data
                continue
            value = data[f.encode_name]
            try:
                converted = msgspec.convert(value, f.type, strict=strict)
            except msgspec.ValidationError as exc:
                model, listed = _model_in(f.type)
                inner, msg = _split(str(exc))
                if model is not None and isinstance(value, list) and listed and inner and isinstance(inner[0], int):
                    found = first_problem(model, value[inner[0]], (*here, inner[0]), strict)
                elif model is not None and isinstance(value, dict) and not listed:
                    found = first_problem(model, value, here, strict)
                else:
                    found = None
                return found or ((*here, *inner), msg, value)
            check = cls.CHECKS.get(f.name)
            try:
                if check is not None:
                    check(converted)
            except (ValueError, TypeError) as exc:  # what msgspec makes a rejection of, in __post_init__
                return here, str(exc), value
    try:
        msgspec.convert(data, cls, strict=strict)
    except msgspec.ValidationError as exc:
        inner, msg = _split(str(exc))
        return (*loc, *inner), msg, data
    return None
