"""record.Record: the value-class base that replaced dataclasses on the start-up path."""

import pytest

from kubectl_kvcache.record import Record


class Point(Record):
    __slots__ = ("x", "y", "tag")
    _uncompared = ("tag",)

    def __init__(self, x, y=0, tag=""):
        self.x = x
        self.y = y
        self.tag = tag


class Other(Record):
    __slots__ = ("x", "y", "tag")

    def __init__(self, x, y=0, tag=""):
        self.x, self.y, self.tag = x, y, tag


def test_equality_and_hash_are_over_the_compared_fields_of_one_class():
    assert Point(1, 2, "a") == Point(1, 2, "b")
    assert hash(Point(1, 2, "a")) == hash(Point(1, 2, "b"))
    assert Point(1, 2) != Point(1, 3)
    assert Point(1, 2) != Other(1, 2)
    assert len({Point(1, 2), Point(1, 2, "x"), Point(2, 2)}) == 2


def test_replace_goes_through_init_and_refuses_unknown_fields():
    p = Point(1, 2, "a")
    q = p.replace(y=5)
    assert (q.x, q.y, q.tag) == (1, 5, "a") and (p.x, p.y) == (1, 2)
    with pytest.raises(TypeError, match="no field 'z'"):
        p.replace(z=1)


def test_repr_names_every_field():
    assert repr(Point(1, tag="t")) == "Point(x=1, y=0, tag='t')"


def test_slots_refuse_unknown_attributes():
    with pytest.raises(AttributeError):
        Point(1).z = 3
