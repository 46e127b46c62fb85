"""The message description language: version ranges, defaults, checks."""

from __future__ import annotations

import uuid

import pytest

from broker.protocol.schema import (
    NONE,
    ArrayOf,
    Versions,
    array,
    field,
    message,
    struct,
    struct_specs,
    versions,
)


@pytest.mark.parametrize(
    ("text", "expected", "inside", "outside"),
    [
        ("0+", Versions(0, None), [0, 7, 1000], [-1]),
        ("3-5", Versions(3, 5), [3, 4, 5], [2, 6]),
        ("7", Versions(7, 7), [7], [6, 8]),
        ("none", NONE, [], [0, 1, -1]),
    ],
)
def test_version_ranges(text, expected, inside, outside):
    v = versions(text)
    assert v == expected
    assert str(v) == text
    assert all(i in v for i in inside)
    assert not any(o in v for o in outside)


def test_implicit_defaults_follow_kafka():
    assert field("a", "int32").default == 0
    assert field("a", "bool").default is False
    assert field("a", "string").default == ""
    assert field("a", "string", nullable="0+").default == ""  # nullable, but "" unless said
    assert field("a", "uuid").default == uuid.UUID(int=0)
    assert field("a", "bytes").default == b""
    assert field("a", "records").default is None
    assert field("a", "float64").default == 0.0
    assert field("a", "[]int32").default == []
    assert field("a", struct("S", [field("x", "int8")])).default is None
    assert field("a", "int64", default=-1).default == -1


def test_array_shorthand():
    assert field("a", "[]string").type == ArrayOf("string")


@pytest.mark.parametrize(
    "make",
    [
        lambda: field("a", "int128"),
        lambda: field("a", "[]records"),
        lambda: field("a", ArrayOf(ArrayOf("int8"))),
        lambda: field("a", "int8", tag=0),  # a tag without tagged versions
        lambda: field("a", "int8", tagged="1+"),  # tagged versions without a tag
        lambda: message(
            "XRequest",
            api_key=1,
            valid="0",
            flexible="none",
            fields=[field("a", "int8"), field("a", "int16")],
        ),
        lambda: message(
            "XRequest",
            api_key=1,
            valid="0",
            flexible="none",
            fields=[
                field("a", array("S", [field("x", "int8")])),
                field("b", array("S", [field("y", "int8")])),
            ],
        ),
    ],
)
def test_invalid_descriptions_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_struct_specs_lists_nested_structs_outermost_first():
    inner = struct("Inner", [field("x", "int8")])
    msg = message(
        "XResponse",
        api_key=1,
        valid="0-1",
        flexible="1+",
        fields=[field("a", array("Mid", [field("i", inner, tag=0, tagged="1+")]))],
    )
    assert [s.name for s in struct_specs(msg.struct)] == ["XResponse", "Mid", "Inner"]
    assert msg.kind == "response"
    assert msg.is_flexible(1) and not msg.is_flexible(0)
