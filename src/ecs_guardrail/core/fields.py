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

Speed (issue 23: a replay parses every event of a fleet-day): :meth:`Checked.read_generic` walks the
table for each input; once a class has been read :data:`GENERIC_READS` times, :meth:`Checked.read` builds
it a generated reader (:func:`_reader_source`, ``exec`` of one function with the table unrolled and the
common values taken inline, everything else by the generic loop's own body, :func:`_field`) that reads
exactly the same way at about half the cost. :meth:`Checked.reader_source` shows its source;
``tests/unit/test_fields_reader.py`` checks both ways agree.
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
#: reads of a class by :meth:`Checked.read_generic` before its generated reader is built (about the
#: reads whose time the build costs: a Lambda reading one event per invocation never pays for it)
GENERIC_READS = 100


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


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogate): the generated readers' inline form of
    :func:`_unicode`, for text that is not ASCII."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


def _list(spec: Spec, value: object, loc: Loc, problems: list[Problem], generic: bool = False) -> object:
    if not isinstance(value, list):
        raise _Fail("Input should be a valid list")
    if spec.max_length is not None and len(value) > spec.max_length:
        raise _Fail(f"List should have at most {_plural(spec.max_length, 'item')} after validation, "
                    f"not {len(value)}")
    before = len(problems)
    item = spec.item
    if isinstance(item, type):
        read = item.read_generic if generic else item.read
        out = [read(v, (*loc, i), problems) for i, v in enumerate(value)]
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


def _nested(spec: Spec, value: object, loc: Loc, problems: list[Problem], generic: bool = False) -> object:
    """A ``model``, ``list`` or ``dict`` field at ``loc``; records problems, returns :data:`_BAD` on any.
    ``generic``: nested models are read by :meth:`Checked.read_generic` (the reference path)."""
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
            value = (spec.model.read_generic if generic else spec.model.read)(value, loc, problems)
        elif spec.kind == "list":
            value = _list(spec, value, loc, problems, generic)
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


def _field(spec: Spec, value: object, key: str, loc: Loc, problems: list[Problem], generic: bool = False) -> object:
    """The value of one present field by ``spec`` (``key``: the input's key it was found at), or
    :data:`_BAD` with its problems recorded: the body of :meth:`Checked.read_generic`'s loop, and what
    the generated readers fall back to."""
    if value is None:
        if spec.none_ok:
            return None
    elif type(value) is str and len(value) <= spec.short_str:
        return value
    run = spec.run
    if run is None:
        return _nested(spec, value, (*loc, key), problems, generic)
    try:
        return run(value)
    except _Fail as fail:
        problems.append(((*loc, key), str(fail), value))
        return _BAD


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
        the instance, or a marker of failure when it recorded any.

        A class's first :data:`GENERIC_READS` reads go by :meth:`read_generic`; the next one builds the
        class's generated reader (:func:`_reader_source`: a few ms of ``compile``, worth it only for a
        class read often) and puts it in the class's own ``read``, which every later call then is. Both
        read exactly the same way."""
        reads = cls.__dict__.get("_READS", 0)
        if reads < GENERIC_READS:
            type.__setattr__(cls, "_READS", reads + 1)
            return cls.read_generic(data, loc, problems, deep=False)
        return cls.build_reader()(data, loc, problems)

    @classmethod
    def build_reader(cls) -> Callable[[object, Loc, list[Problem]], Any]:
        """Build this class's generated reader now and make it :meth:`read` (tests; :meth:`read` does it
        by itself once the class was read :data:`GENERIC_READS` times). Returns it."""
        reader = _build_reader(cls)
        type.__setattr__(cls, "read", staticmethod(reader))
        return reader

    @classmethod
    def reader_source(cls) -> str:
        """The source of this class's generated reader, for debugging (see :func:`_build_reader`)."""
        return _reader_source(cls)[0]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "read" not in cls.__dict__:  # its own lazy read: a base's generated reader reads the base's table
            type.__setattr__(cls, "read", Checked.__dict__["read"])

    @classmethod
    def read_generic(cls, data: object, loc: Loc, problems: list[Problem], *, deep: bool = True) -> Any:
        """:meth:`read` by the generic loop over :attr:`FIELDS`: the reference the generated readers are
        tested against, and the path of a class's first reads and of an input that is not a ``dict``.
        ``deep``: nested models are read this way too (else by their :meth:`read`)."""
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
            value = _field(spec, data[key], key, loc, problems, deep)
            if value is not _BAD:
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


# ---------------------------------------------------------------- generated readers
#
# Checked.read_generic walks FIELDS for every input: per field, a dozen attribute reads of the Spec,
# two dict lookups, a call of its check. _build_reader writes, once per class, the same reading as one
# function with the table unrolled: each field's key is a constant, its common values (a short plain
# str, None where it is a value, an int within bounds, a literal's choice, ECS's time text, a list of
# models) are taken inline, and everything else, including every value that fails, goes to _field, the
# generic loop's own body, so the values kept and the problems' text and order are the generic path's.
# A before/after check or a kind's check that raises ValueError on the inline path makes the field read
# again by _field (the checks are pure: the second reading records the problem as the generic path does).

_ABSENT: Final = object()  # a key not in the input (dict.get's default in the generated readers)
_ISO: Final = datetime.fromisoformat
_ECS_MATCH: Final = _ECS_TIME.match


def _reader_source(cls: type[Checked]) -> tuple[str, dict[str, object]]:
    """``(source of cls's reader, the names it reads)``: ``def read(data, loc, problems)``, as
    :meth:`Checked.read`, for a ``dict``; anything else goes to :meth:`Checked.read_generic`."""
    import keyword  # only here: a reader is built after a class's first reads, never at import

    direct = cls.__setattr__ is object.__setattr__
    fields = cls.FIELDS
    ns: dict[str, object] = {"cls": cls, "FIELDS0": fields, "_BAD": _BAD, "_ABSENT": _ABSENT, "_MISSING": _MISSING,
                             "_field": _field, "_by_name": _by_name, "generic": cls.read_generic, "new": object.__new__,
                             "setattr_": object.__setattr__, "ISO": _ISO, "ECS": _ECS_MATCH}
    out = ["def read(data, loc, problems):",
           "    if type(data) is not dict:",
           "        return generic(data, loc, problems, deep=False)",
           "    if cls.FIELDS is not FIELDS0:  # the table was replaced: read it again",
           "        return cls.build_reader()(data, loc, problems)",
           "    obj = new(cls)",
           "    nb = len(problems)",
           "    get = data.get"]

    def put(name: str, expr: str) -> str:
        if direct and name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("__"):
            return f"obj.{name} = {expr}"
        return f"setattr_(obj, {name!r}, {expr})"

    for i, spec in enumerate(fields):
        s, name, alias = f"S{i}", spec.name, spec.alias
        ns[s] = spec
        if spec.required:
            absent = f"problems.append(((*loc, {alias!r}), _MISSING, data))"
        elif spec.factory is not None:
            ns[f"F{i}"] = spec.factory
            absent = put(name, f"F{i}()")
        else:
            ns[f"D{i}"] = spec.default
            absent = put(name, f"D{i}")
        out.append(f"    v = get({alias!r}, _ABSENT)")
        out.append("    if v is _ABSENT:")
        if name != alias:  # the attribute's own name is read when the alias is absent (rare: by _by_name)
            out += [f"        if {name!r} in data:",
                    f"            _by_name({s}, data, loc, problems, obj)",
                    "        else:",
                    f"            {absent}"]
        else:
            out.append(f"        {absent}")
        out += _fast(spec, i, ns, put)
    out.append("    if len(problems) > nb:")
    out.append("        return _BAD")
    if cls.EXTRA:
        aliases, alias_of = cls._keys()
        ns["ALIASES"], ns["ALIAS_OF"] = aliases, alias_of
        keep = " and (k not in ALIAS_OF or ALIAS_OF[k] in data)" if alias_of else ""
        keep1 = " if k not in ALIAS_OF or ALIAS_OF[k] in data else {}" if alias_of else ""
        out += ["    left = data.keys() - ALIASES  # the unknown keys, if any (in C)",
                "    if not left:",
                "        extra = {}",
                "    elif len(left) == 1:  # one unknown key: no walk over the input",
                "        (k,) = left",
                f"        extra = {{k: data[k]}}{keep1}",
                "    else:",
                f"        extra = {{k: v for k, v in data.items() if k in left{keep}}}",
                f"    {put('model_extra', 'extra')}"]
    else:
        out.append(f"    {put('model_extra', 'None')}")
    if cls.check is not Checked.check:
        out += ["    try:",
                "        obj.check()",
                "    except ValueError as exc:",
                '        problems.append((loc, f"Value error, {exc}", data))',
                "        return _BAD"]
    out.append("    return obj")
    return "\n".join(out) + "\n", ns


def _fast(spec: Spec, i: int, ns: dict[str, object], put: Callable[[str, str], str]) -> list[str]:
    """The lines reading a present value ``v`` of field ``i`` (after ``if v is _ABSENT:``)."""
    s, name, alias = f"S{i}", spec.name, spec.alias
    slow = [f"        v = _field({s}, v, {alias!r}, loc, problems)",
            "        if v is not _BAD:",
            f"            {put(name, 'v')}"]
    lines: list[str] = []
    if spec.short_str >= 0:  # what _field itself takes first
        bound = "" if spec.short_str >= 1 << 62 else f" and len(v) <= {spec.short_str}"
        lines += [f"    elif type(v) is str{bound}:", f"        {put(name, 'v')}"]
    if spec.none_ok:
        lines += ["    elif v is None:", f"        {put(name, 'None')}"]
    plain = spec.before is None and spec.after is None
    if spec.short_str >= 0:  # a plain str bounded in length at most: what is left fails
        return [*lines, "    else:", *slow]
    if spec.kind in ("model", "list", "dict"):
        if not plain or spec.nullable or spec.kind == "dict":
            return [*lines, "    else:", *slow]
        lk = f"(*loc, {alias!r})"
        if spec.kind == "model":
            ns[f"M{i}"] = spec.model
            return [*lines, "    else:",
                    f"        v = M{i}.read(v, {lk}, problems)",
                    "        if v is not _BAD:",
                    f"            {put(name, 'v')}"]
        bound = "" if spec.max_length is None else f" and len(v) <= {spec.max_length}"
        if spec.item == "str":
            return [*lines, f"    elif type(v) is list{bound} and (not v or len(v) == 1 and type(v[0]) is str):",
                    f"        {put(name, 'list(v)')}",
                    "    else:", *slow]
        ns[f"I{i}"] = spec.item
        return [*lines, f"    elif type(v) is list{bound}:",
                "        n0 = len(problems)",
                f"        lk = {lk}",
                f"        r = I{i}.read",
                "        if len(v) == 1:  # the common case, without a comprehension's call",
                "            v = [r(v[0], (*lk, 0), problems)]",
                "        else:",
                "            v = [r(x, (*lk, j), problems) for j, x in enumerate(v)]",
                "        if len(problems) == n0:",
                f"            {put(name, 'v')}",
                "    else:", *slow]
    # a scalar: before, the kind's check (inline for its common values), after; a ValueError -> _field
    check = _simple(spec)
    ns[f"K{i}"] = check
    body = ["w = v"]
    if spec.before is not None:
        ns[f"B{i}"] = spec.before
        body.append(f"w = B{i}(w)")
    kind = _inline(spec, i, ns)
    if spec.nullable:
        body += ["if w is not None:", *(f"    {line}" for line in kind)]
    else:
        body += kind
    if spec.after is not None:
        ns[f"A{i}"] = spec.after
        body.append(f"w = A{i}(w)")
    return [*lines, "    else:", "        try:", *(f"            {line}" for line in body),
            "        except ValueError:  # _field records the problem as the generic path does",
            f"            w = _field({s}, v, {alias!r}, loc, problems)",
            "        if w is not _BAD:",
            f"            {put(name, 'w')}"]


def _inline(spec: Spec, i: int, ns: dict[str, object]) -> list[str]:
    """The check of kind value ``w`` as lines: the common values inline, others by ``K<i>`` (the kind's
    check, raising :class:`_Fail` on a bad one)."""
    kind, k = spec.kind, f"K{i}"
    if kind == "str":
        # the generic path's _check_str rejects a lone surrogate first (_unicode): so does the inline check
        ns["ENCODES"] = _encodes
        cond = ["type(w) is str", "(w.isascii() or ENCODES(w))"]
        if spec.min_length is not None:
            cond.append(f"len(w) >= {spec.min_length}")
        if spec.max_length is not None:
            cond.append(f"len(w) <= {spec.max_length}")
        if spec.regex is not None:
            ns[f"RX{i}"] = spec.regex.match
            cond.append(f"RX{i}(w) is not None")
        return [f"if not ({' and '.join(cond)}):", f"    w = {k}(w)"]
    if kind in ("int", "float"):
        cond = [f"type(w) is {kind}"]
        for bound, op in (("le", "<="), ("ge", ">="), ("gt", ">")):
            value = getattr(spec, bound)
            if value is not None:
                ns[f"{bound.upper()}{i}"] = value
                cond.append(f"w {op} {bound.upper()}{i}")
        return [f"if not ({' and '.join(cond)}):", f"    w = {k}(w)"]
    if kind == "literal":
        ns[f"C{i}"] = frozenset(spec.choices)
        return [f"if not (type(w) is str and w in C{i}):", f"    w = {k}(w)"]
    if kind == "datetime":
        return [f"w = ISO(w) if type(w) is str and ECS(w) else {k}(w)"]
    if kind == "bool":
        return ["if type(w) is not bool:", f"    w = {k}(w)"]
    return [] if kind == "any" else [f"w = {k}(w)"]


def _by_name(spec: Spec, data: dict[str, object], loc: Loc, problems: list[Problem], obj: object) -> None:
    """A field given by its attribute's name (its alias absent), as :meth:`Checked.read_generic` reads it."""
    value = _field(spec, data[spec.name], spec.name, loc, problems)
    if value is not _BAD:
        object.__setattr__(obj, spec.name, value)


def _build_reader(cls: type[Checked]) -> Callable[[object, Loc, list[Problem]], Any]:
    """``cls``'s generated reader (see :func:`_reader_source`), compiled."""
    import linecache  # tracebacks through a reader show its lines

    source, ns = _reader_source(cls)
    filename = f"<reader of {cls.__module__}.{cls.__qualname__}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), ns)  # noqa: S102
    reader = ns["read"]
    assert callable(reader)
    return reader
