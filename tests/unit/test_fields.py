"""The msgspec adapter (``validation/fields.py``, issue 36): a rejection names its first problem in field order,
as pydantic did, whatever order the input's keys come in; checks run after msgspec's own, in field order."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
import pytest

from ecs_guardrail.validation.fields import MISSING, Invalid, Model, validate


def _even(value: int) -> int:
    if value % 2:
        raise ValueError("must be even")
    return value


class Item(Model, kw_only=True):
    CHECKS: ClassVar[dict[str, Any]] = {"n": _even}
    name: str
    n: int = 0


class Doc(Model, kw_only=True):
    first: str
    count: Annotated[int, msgspec.Meta(ge=0)] = msgspec.field(default=0, name="Count")
    items: list[Item] = msgspec.field(default_factory=list)
    last: str = ""

    def check(self) -> None:
        if self.first == self.last:
            raise ValueError("first and last differ")


def _problem(data: object) -> tuple[Any, str]:
    with pytest.raises(Invalid) as err:
        validate(Doc, data)
    return err.value.loc, err.value.msg


def test_a_missing_field_comes_before_a_bad_value_of_a_later_field_given_first():
    # msgspec alone reports the bad value of the first key it reads (last), and the missing field after
    assert _problem({"last": 1, "Count": -1}) == (("first",), MISSING)
    assert _problem({"last": 1, "Count": -1, "first": "a"}) == (("Count",), "Expected `int` >= 0")


def test_a_nested_item_is_read_in_field_order_too():
    loc, msg = _problem({"first": "a", "items": [{"name": "x"}, {"n": "2", "name": 3}]})
    assert loc == ("items", 1, "name") and msg == "Expected `str`, got `int`"


def test_a_check_rejects_at_its_field_in_its_turn():
    assert _problem({"first": "a", "items": [{"name": "x", "n": 3}], "last": 7}) == (("items", 0, "n"), "must be even")
    assert validate(Doc, {"first": "a", "items": [{"name": "x", "n": 4}]}).items == [Item(name="x", n=4)]


def test_the_class_wide_check_is_the_documents_own_problem_and_names_only_the_first():
    assert _problem({"first": "a", "last": "a"}) == ((), "first and last differ")
    assert str(Invalid((), "x")) == "event: x" and str(Invalid(("items", 0, "n"), "x")) == "items.0.n: x"


def test_not_an_object_and_an_attribute_name_for_its_key():
    assert _problem([1]) == ((), "Expected `object`, got `array`")
    assert validate(Doc, {"first": "a", "count": 5}).count == 0  # only the JSON key "Count" is read
