"""Declarative field checks for plain typed classes: what pydantic did for the event models and settings.

One table a class (:attr:`Checked.FIELDS`, a tuple of :class:`Spec`) says each field's key in the input
(``alias``), its kind, whether ``None`` is allowed, its default, its bounds and its checks;
:meth:`Checked.validate` reads a ``dict`` by that table into an instance with ``__slots__`` and collects
every problem, as pydantic v2 did (issue 23: importing pydantic and building the models cost about
100 ms of every cold start).

The semantics are pydantic v2's lax mode where this project's inputs depend on them, and the messages
are pydantic's own words (tests and operators' runbooks quote them):

- ``str``: a ``str`` only (``"Input should be a valid string"``; text with a lone surrogate, as
  ``os.environ`` makes of bytes that are not UTF-8, is no text here nor for ``int``, ``float``, ``bool``
  and ``literal``); ``min_length`` / ``max_length`` count
  characters (``"String should have at most 255 characters"``); ``pattern`` must match from the start
  (``"String should match pattern '^...$'"``; as pydantic's Rust regex, a final ``$`` is the very end).
- ``int``: an ``int`` (not a ``bool``); a float with no fractional part; a string of ASCII digits with
  optional sign, ``_`` between digits, surrounding whitespace and a ``.0`` tail (``" 1_0 "``, ``"1.00"``).
- ``float``: an ``int`` or ``float``, or a string as pydantic parses it (``"1e-1"``, ``".5"``, ``"nan"``,
  ``"inf"``); bounds are checked ``le`` before ``ge`` (``nan`` fails the first).
- ``bool``: a ``bool``, ``0``/``1``, or one of pydantic's words (``true/false``, ``yes/no``, ``on/off``,
  ``t/f``, ``y/n``, ``1/0``, any case, nothing around them).
- ``literal``: one of :attr:`Spec.choices`, exactly (``"Input should be 'chatbot' or 'text'"``).
- ``datetime``: a ``datetime``, or ISO 8601 / RFC 3339 text ``YYYY-MM-DD[(T|t| |_)HH:MM[:SS[(.|,)F+]]
  [Z|z|+HH:MM|+HHMM]]`` (digits past microseconds are cut, as pydantic did); a naive one stays naive.
  Stricter than pydantic: no number, and no string of one, is read as seconds since the epoch.
- ``list``: a ``list`` only (JSON has no other sequence), at most ``max_length`` items (checked before
  the items, as pydantic did), each of :attr:`Spec.item`'s kind (``"str"`` or a :class:`Checked` class).
- ``model``: a mapping (or an instance) read by the nested class's table.
- ``dict``: a ``dict`` with ``str`` keys, copied; values as they are.
- ``any``: the value as it is (a ``before`` check gives it its shape).

``before(value)`` runs first, ``after(value)`` last (also on ``None`` of a nullable field); a
``ValueError`` from either is the problem ``"Value error, <its text>"``, any other exception propagates.
:meth:`Checked.check` runs once every field passed (its problem is at the class's own location).
Problems are ``(loc, msg, input)`` in field order; :class:`Invalid` carries them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar, Final, Self

__all__ = ["Checked", "Invalid", "Loc", "Problem", "Spec", "describe", "parse_datetime", "REQUIRED"]

#: a location in the input: keys and list indexes, outermost first (pydantic's ``loc``)
Loc = tuple[str | int, ...]
#: ``(loc, message, the input that was rejected)``
Problem = tuple[Loc, str, object]


class _Required:
    __slots__ = ()

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()  # a Spec default: the field must be given
_BAD: Final = object()  # a value that did not pass (its problems are recorded)


class Invalid(ValueError):
    """The input does not fit the table: :attr:`problems` lists each ``(loc, msg, input)``; ``str()`` is
    :func:`describe` of them."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(describe(problems))
        self.problems = problems


def describe(problems: list[Problem], first: int = 3) -> str:
    """The first ``first`` problems as ``loc: msg`` joined by ``"; "``, then ``" (+N more)"``.

    ``loc`` is dotted (``detail.containers.0.exitCode``), ``event`` for the whole input; a missing
    field's message is ``field required``.
    """
    parts = [f"{'.'.join(str(p) for p in loc) or 'event'}: {'field required' if msg == _MISSING else msg}"
             for loc, msg, _ in problems[:first]]
    more = len(problems) - first
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


_MISSING = "Field required"


class _Fail(ValueError):
    """One problem with one value (internal): its message."""


# Rust's char::is_whitespace (Unicode White_Space): what pydantic strips around a number
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
      "\u2028\u2029\u202f\u205f\u3000"
_INT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?\Z")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[Tt _](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
                       r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?\Z", re.ASCII)
_ECS_TIME = re.compile(r"\d\d\d\d-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d(?:\.\d{1,6})?Z\Z", re.ASCII)
_NOT_INT = "Input should be a valid integer, unable to parse string as an integer"
_NOT_FLOAT = "Input should be a valid number, unable to parse string as a number"
_NOT_UNICODE = "Input should be a valid string, unable to parse raw data as a unicode string"


def _unicode(text: str) -> None:
    """Reject text holding a lone surrogate (``os.environ`` decodes bytes that are not UTF-8 into them),
    as pydantic did before any other check of a ``str``, ``int``, ``float``, ``bool`` or ``literal``."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise _Fail(_NOT_UNICODE) from None


def _num(bound: float) -> str:
    """A bound as pydantic prints it: ``0`` for ``0.0``, ``0.2`` for ``0.2``."""
    return str(int(bound)) if isinstance(bound, float) and bound.is_integer() else str(bound)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _to_int(value: object) -> int:
    if isinstance(value, bool):
        raise _Fail("Input should be a valid integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Fail("Input should be a finite number")
        if not value.is_integer():
            raise _Fail("Input should be a valid integer, got a number with a fractional part")
        return int(value)
    if isinstance(value, str):
        _unicode(value)
        text = value.strip(_WS)
        if not _INT.match(text):
            raise _Fail(_NOT_INT)
        digits = text.split(".", 1)[0].replace("_", "")
        sign = -1 if digits.startswith("-") else 1
        try:
            return sign * int(digits.lstrip("+-").lstrip("0") or "0")
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits): pydantic's words
            raise _Fail("Unable to parse input string as an integer, exceeded maximum size") from None
    raise _Fail("Input should be a valid integer")


def _to_float(value: object) -> float:
    if isinstance(value, bool):
        raise _Fail("Input should be a valid number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        _unicode(value)
        text = value.strip(_WS)
        # float() strips more than pydantic does (\x1c-\x1f) and reads non-ASCII digits: pydantic did not
        if not text or not text.isascii() or text[0].isspace() or text[-1].isspace():
            raise _Fail(_NOT_FLOAT)
        if "_" in text:  # pydantic drops single inner underscores ("1_0", "._5"), not with whitespace around
            if text != value or text[0] == "_" or text[-1] == "_" or "__" in text:
                raise _Fail(_NOT_FLOAT)
            text = text.replace("_", "")
        try:
            return float(text)
        except ValueError:
            raise _Fail(_NOT_FLOAT) from None
    raise _Fail("Input should be a valid number")


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        _unicode(value)
        lowered = value.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise _Fail("Input should be a valid boolean, unable to interpret input")
    raise _Fail("Input should be a valid boolean")


def parse_datetime(value: object) -> datetime:
    """ISO 8601 text (the module docstring's ``datetime``) or a ``datetime`` -> a ``datetime``, aware
    when the text has ``Z`` or an offset (``Z`` and ``+00:00`` are :data:`datetime.UTC`).

    Raises:
        ValueError: anything else, with pydantic's message (``Input should be a valid datetime...``).
    """
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise _Fail("Input should be a valid datetime")
    if _ECS_TIME.match(value):  # what ECS sends, the common case: read in C
        try:
            return datetime.fromisoformat(value)
        except ValueError:  # a day or an hour out of range: the message below
            pass
    m = _DATETIME.match(value)
    if not m:
        raise _Fail("Input should be a valid datetime or date, "
                    "ISO 8601 text like 2025-08-21T10:00:00Z or 2025-08-21T10:00:00.123+01:00")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = m.groups()
    if (fraction is None or len(fraction) <= 6) and (not sign or int(off_h) <= 23 and int(off_m) <= 59):
        try:  # the common case, in C; the same datetime as the fields below give
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    tz: timezone | None = None
    if zulu:
        tz = UTC
    elif sign:
        oh, om = int(off_h), int(off_m)
        if oh > 23 or om > 59:
            raise _Fail("Input should be a valid datetime or date, timezone offset out of range")
        offset = timedelta(hours=oh, minutes=om)
        tz = timezone(-offset if sign == "-" else offset) if offset else UTC
    micro = int((fraction or "")[:6].ljust(6, "0"))
    try:
        return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                        micro, tzinfo=tz)
    except ValueError:
        raise _Fail("Input should be a valid datetime or date, a value is outside its range") from None


class Spec:
    """One field of a :class:`Checked` table (the module docstring lists the kinds).

    ``name``: the attribute; ``alias``: the input's key (default ``name``; ``name`` itself is read when
    the alias is absent, as pydantic's ``populate_by_name``); ``default`` (or ``factory``, called per
    instance) when the key is absent, :data:`REQUIRED` (the default) if it must be given; ``nullable``:
    ``None`` is a value and skips the kind's checks; ``ge`` / ``gt`` / ``le``: numeric bounds;
    ``min_length`` / ``max_length``: characters of a ``str``, items of a ``list``; ``pattern``:
    pydantic's pattern text (the message quotes it); ``choices``: a ``literal``'s values; ``item``: a
    ``list``'s item kind; ``model``: a ``model``'s class; ``before`` / ``after``: checks (see module).
    """

    __slots__ = ("name", "alias", "kind", "default", "factory", "nullable", "ge", "gt", "le", "min_length",
                 "max_length", "pattern", "regex", "choices", "item", "model", "before", "after", "required", "run",
                 "none_ok", "short_str")

    def __init__(self, name: str, kind: str, *, alias: str | None = None, default: object = REQUIRED,
                 factory: Callable[[], object] | None = None, nullable: bool = False,
                 ge: float | None = None, gt: float | None = None, le: float | None = None,
                 min_length: int | None = None, max_length: int | None = None, pattern: str | None = None,
                 choices: tuple[str, ...] = (), item: str | type[Checked] | None = None,
                 model: type[Checked] | None = None, before: Callable[[Any], Any] | None = None,
                 after: Callable[[Any], Any] | None = None) -> None:
        self.name, self.alias, self.kind = name, alias or name, kind
        self.default, self.factory, self.nullable = default, factory, nullable
        self.required = default is REQUIRED and factory is None
        self.ge, self.gt, self.le = ge, gt, le
        self.min_length, self.max_length, self.pattern = min_length, max_length, pattern
        # Rust regex semantics: a final $ is the very end (Python's $ also matches before a final \n)
        self.regex = re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern) if pattern else None
        self.choices, self.item, self.model = choices, item, model
        self.before, self.after = before, after
        self.run = _runner(self)  # the whole check of a scalar value; None for model, list and dict
        plain = before is None and after is None
        # fast paths of Checked.read: a null where None is a value, a text only bounded in length
        self.none_ok = nullable and plain
        self.short_str: int = -1  # the longest text taken as it is (-1: none is)
        if kind == "str" and plain and min_length is None and pattern is None:
            self.short_str = (1 << 62) if max_length is None else max_length

    def default_value(self) -> object:
        return self.factory() if self.factory is not None else self.default


def _check_str(spec: Spec, value: object) -> str:
    if not isinstance(value, str):
        raise _Fail("Input should be a valid string")
    _unicode(value)
    if spec.min_length is not None and len(value) < spec.min_length:
        raise _Fail(f"String should have at least {_plural(spec.min_length, 'character')}")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise _Fail(f"String should have at most {_plural(spec.max_length, 'character')}")
    if spec.regex is not None and not spec.regex.match(value):
        raise _Fail(f"String should match pattern '{spec.pattern}'")
    return value


def _bounds(spec: Spec, number: float) -> None:
    if spec.le is not None and not number <= spec.le:
        raise _Fail(f"Input should be less than or equal to {_num(spec.le)}")
    if spec.ge is not None and not number >= spec.ge:
        raise _Fail(f"Input should be greater than or equal to {_num(spec.ge)}")
    if spec.gt is not None and not number > spec.gt:
        raise _Fail(f"Input should be greater than {_num(spec.gt)}")


def _literal(spec: Spec, value: object) -> object:
    if isinstance(value, str):
        _unicode(value)
    if isinstance(value, str) and value in spec.choices:
        return value
    shown = [f"'{c}'" for c in spec.choices]
    raise _Fail(f"Input should be {shown[0] if len(shown) == 1 else ', '.join(shown[:-1]) + ' or ' + shown[-1]}")


def _dict(value: object, loc: Loc, problems: list[Problem]) -> object:
    if not isinstance(value, dict):
        raise _Fail("Input should be a valid dictionary")
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        problems.extend(((*loc, k, "[key]"), "Input should be a valid string", k) for k in bad)
        return _BAD
    return dict(value)


def _list(spec: Spec, value: object, loc: Loc, problems: list[Problem]) -> object:
    if not isinstance(value, list):
        raise _Fail("Input should be a valid list")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise _Fail(f"List should have at most {_plural(spec.max_length, 'item')} after validation, "
                    f"not {len(value)}")
    before = len(problems)
    item = spec.item
    if isinstance(item, type):
        out = [item.read(v, (*loc, i), problems) for i, v in enumerate(value)]
    else:
        out = list(value)
        problems.extend(((*loc, i), "Input should be a valid string", v)
                        for i, v in enumerate(value) if not isinstance(v, str))
    return _BAD if len(problems) > before else out


def _simple(spec: Spec) -> Callable[[object], object] | None:
    """The check of a scalar kind (``None`` for the nested kinds ``model``, ``list`` and ``dict``)."""
    kind = spec.kind
    if kind == "str":
        if spec.min_length is None and spec.max_length is None and spec.regex is None:
            def plain_str(v: object) -> object:
                if isinstance(v, str):
                    _unicode(v)
                    return v
                raise _Fail("Input should be a valid string")
            return plain_str
        return lambda v: _check_str(spec, v)
    if kind == "int":
        def int_(v: object) -> object:
            n = v if type(v) is int else _to_int(v)
            _bounds(spec, n)
            return n
        return int_
    if kind == "float":
        def float_(v: object) -> object:
            f = _to_float(v)
            _bounds(spec, f)
            return f
        return float_
    if kind == "literal":
        return lambda v: _literal(spec, v)
    if kind == "datetime":
        return parse_datetime
    if kind == "bool":
        return _to_bool
    if kind == "any":
        return lambda v: v
    if kind in ("model", "list", "dict"):
        return None
    raise TypeError(f"unknown field kind {kind!r}")


def _runner(spec: Spec) -> Callable[[object], object] | None:
    """``spec``'s whole check of one scalar value (before, kind, after), raising :class:`_Fail`."""
    kind_check = _simple(spec)
    if kind_check is None:
        return None
    before, after, nullable = spec.before, spec.after, spec.nullable
    if before is None and after is None:
        if not nullable:
            return kind_check
        return lambda v: v if v is None else kind_check(v)

    def run(v: object) -> object:
        if before is not None:
            try:
                v = before(v)
            except ValueError as exc:
                raise _Fail(f"Value error, {exc}") from None
        if v is not None or not nullable:
            v = kind_check(v)
        if after is not None:
            try:
                v = after(v)
            except ValueError as exc:
                raise _Fail(f"Value error, {exc}") from None
        return v
    return run


def _nested(spec: Spec, value: object, loc: Loc, problems: list[Problem]) -> object:
    """A ``model``, ``list`` or ``dict`` field at ``loc``; records problems, returns :data:`_BAD` on any."""
    raw = value
    try:
        if spec.before is not None:
            try:
                value = spec.before(value)
            except ValueError as exc:
                raise _Fail(f"Value error, {exc}") from None
        if value is None and spec.nullable:
            pass
        elif spec.kind == "model":
            assert spec.model is not None
            value = spec.model.read(value, loc, problems)
        elif spec.kind == "list":
            value = _list(spec, value, loc, problems)
        else:
            value = _dict(value, loc, problems)
        if value is _BAD:
            return _BAD
        if spec.after is not None:
            try:
                value = spec.after(value)
            except ValueError as exc:
                raise _Fail(f"Value error, {exc}") from None
    except _Fail as fail:
        problems.append((loc, str(fail), raw))
        return _BAD
    return value


class Checked:
    """A plain class whose instances are read from a mapping by its :attr:`FIELDS` table.

    Subclasses declare ``__slots__`` for their own fields (annotated in the class body) and their
    ``FIELDS`` (a subclass repeats its base's rows first: the order is the problems' order);
    ``EXTRA = True`` keeps unknown keys in :attr:`model_extra` (in input order; each also reads as an
    attribute, as on a pydantic model), else they are ignored and :attr:`model_extra` is ``None``.
    Instances compare equal when of the same class with equal fields and extras; :meth:`check` is the
    class-wide check, run after every field passed.
    """

    __slots__ = ("model_extra",)
    FIELDS: ClassVar[tuple[Spec, ...]] = ()
    EXTRA: ClassVar[bool] = False
    model_extra: dict[str, Any] | None

    @classmethod
    def validate(cls, data: object) -> Self:
        """Read ``data`` (a mapping; an instance of this class is returned as it is).

        Raises:
            Invalid: every problem found, in field order (nested ones in place).
        """
        problems: list[Problem] = []
        out = cls.read(data, (), problems)
        if problems:
            raise Invalid(problems)
        return out  # type: ignore[no-any-return]

    @classmethod
    def read(cls, data: object, loc: Loc, problems: list[Problem]) -> Any:
        """:meth:`validate` at ``loc`` of a larger input: records problems in ``problems`` and returns
        the instance, or a marker of failure when it recorded any."""
        if type(data) is not dict:
            if isinstance(data, cls):
                return data
            if not isinstance(data, Mapping):
                problems.append((loc, f"Input should be a valid dictionary or instance of {cls.__name__}", data))
                return _BAD
        obj = object.__new__(cls)
        setattr_ = object.__setattr__
        before = len(problems)
        for spec in cls.FIELDS:
            key = spec.alias
            if key not in data:
                key = spec.name
                if key == spec.alias or key not in data:
                    if spec.required:
                        problems.append(((*loc, spec.alias), _MISSING, data))
                    else:
                        setattr_(obj, key, spec.default if spec.factory is None else spec.factory())
                    continue
            value = data[key]
            if value is None:
                if spec.none_ok:
                    setattr_(obj, spec.name, None)
                    continue
            elif type(value) is str and len(value) <= spec.short_str:
                setattr_(obj, spec.name, value)
                continue
            run = spec.run
            if run is None:
                value = _nested(spec, value, (*loc, key), problems)
                if value is _BAD:
                    continue
            else:
                try:
                    value = run(value)
                except _Fail as fail:
                    problems.append(((*loc, key), str(fail), value))
                    continue
            setattr_(obj, spec.name, value)
        if len(problems) > before:
            return _BAD
        if cls.EXTRA:
            # an attribute's own name is read only when its alias is absent; given beside it, it is extra
            aliases, alias_of = cls._keys()
            extra: dict[str, Any] | None = {k: v for k, v in data.items()
                                            if k not in aliases and (k not in alias_of or alias_of[k] in data)}
        else:
            extra = None
        setattr_(obj, "model_extra", extra)
        try:
            obj.check()
        except ValueError as exc:
            problems.append((loc, f"Value error, {exc}", data))
            return _BAD
        return obj

    @classmethod
    def _keys(cls) -> tuple[frozenset[str], dict[str, str]]:
        """``(every alias, {attribute name: its alias} where they differ)`` of :attr:`FIELDS`, cached."""
        cached = cls.__dict__.get("_KEYS")
        if cached is None or cached[0] is not cls.FIELDS:
            cached = (cls.FIELDS, frozenset(s.alias for s in cls.FIELDS),
                      {s.name: s.alias for s in cls.FIELDS if s.name != s.alias})
            type.__setattr__(cls, "_KEYS", cached)
        return cached[1], cached[2]

    def check(self) -> None:
        """The class-wide check, once every field passed; raise ``ValueError`` to reject."""

    def __getattr__(self, name: str) -> Any:
        """A kept extra field reads as an attribute too, as on a pydantic model (``extra="allow"``)."""
        # not a dunder: copy.deepcopy, pickle and others look those up on the instance ("__deepcopy__": 1)
        if name != "model_extra" and not (name.startswith("__") and name.endswith("__")):
            extra = self.model_extra
            if extra is not None and name in extra:
                return extra[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy rebuild the instance as it is (no validation, no ``__init__``)."""
        return _rebuild, (type(self), self.fields(), self.model_extra)

    def fields(self) -> dict[str, object]:
        """``{attribute: value}`` in table order."""
        return {s.name: getattr(self, s.name) for s in self.FIELDS}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Checked)
        return self.fields() == other.fields() and self.model_extra == other.model_extra

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.fields().items())})"


def _rebuild(cls: type[Checked], values: dict[str, object], extra: dict[str, Any] | None) -> Checked:
    obj = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)
    object.__setattr__(obj, "model_extra", extra)
    return obj
