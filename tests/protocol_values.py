"""Test helpers for the protocol codec: Hypothesis strategies and comparable forms.

Strategies are generated from the same schemas as the codec: for a
(message, version) every field the version has gets a value of its type
(nullable ones also None, tagged structs also None), every other field keeps
its default. ``canonical`` turns a message into nested tuples of the fields
a version carries, so two messages compare equal exactly when they encode
the same.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from broker.errors import ErrorCode
from broker.protocol.data import Data
from broker.protocol.generator import MessageCodec
from broker.protocol.messages import CODECS
from broker.protocol.schema import ArrayOf, Field, MessageSpec, StructSpec

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
# surrogates cannot be encoded as UTF-8, so no client can send them
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
ERROR_CODES = st.sampled_from([int(c) for c in ErrorCode])


def all_versions(spec: MessageSpec) -> list[int]:
    high = spec.valid.high
    assert high is not None
    return list(range(spec.valid.low, high + 1))


def message_versions() -> list[tuple[str, int]]:
    """Every (message name, version) the codec supports."""
    return [(name, v) for name, codec in CODECS.items() for v in all_versions(codec.spec)]


@functools.cache
def messages(name: str, version: int, friendly: bool = False) -> st.SearchStrategy[Data]:
    """Messages of ``name`` for ``version``.

    ``friendly`` keeps to values that stricter third-party codecs accept:
    real error codes, non-negative durations and timestamps, short lists.
    """
    codec = CODECS[name]
    return _struct(codec, codec.spec.struct, version, friendly)


def _struct(codec: MessageCodec, s: StructSpec, version: int, friendly: bool) -> Any:
    kwargs = {
        f.name: _field(codec, f, version, friendly) for f in s.fields if f.present_in(version)
    }
    return st.builds(codec.classes[s.name], **kwargs)


def _field(codec: MessageCodec, f: Field, version: int, friendly: bool) -> Any:
    t = f.type
    if isinstance(t, StructSpec):
        inner = _struct(codec, t, version, friendly)
        nullable = f.tagged_in(version) or f.nullable_in(version)
        return st.none() | inner if nullable else inner
    if isinstance(t, ArrayOf):
        if isinstance(t.item, StructSpec):
            item = _struct(codec, t.item, version, friendly)
        else:
            item = _scalar(t.item, f.name, friendly)
        base: Any = st.lists(item, max_size=2 if friendly else 3)
    else:
        base = _scalar(t, f.name, friendly)
    return st.none() | base if f.nullable_in(version) else base


def _scalar(t: str, name: str, friendly: bool) -> Any:
    if t in INT_RANGES:
        low, high = INT_RANGES[t]
        if friendly and name == "error_code":
            return ERROR_CODES
        if friendly and (name.endswith("_ms") or name == "log_append_time_ms"):
            return st.integers(0, 2**31 - 1)
        return st.integers(low, high)
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "bool":
        return st.booleans()
    if t == "uuid":
        return st.uuids()
    if t == "string":
        return TEXT
    if t in ("bytes", "records"):
        return st.binary(max_size=40)
    raise AssertionError(t)


def canonical(msg: Data, version: int) -> tuple[Any, ...]:
    """The fields ``version`` carries, nested; a None tagged struct equals its default."""
    codec = CODECS[type(msg).__qualname__.split(".")[0]]
    return _canon_struct(codec, codec.spec.struct, msg, version)


def _canon_struct(codec: MessageCodec, s: StructSpec, value: Any, version: int) -> tuple[Any, ...]:
    if value is None:
        value = codec.classes[s.name]()
    return tuple(
        (f.name, _canon_field(codec, f, getattr(value, f.name), version))
        for f in s.fields
        if f.present_in(version)
    )


def _canon_field(codec: MessageCodec, f: Field, value: Any, version: int) -> Any:
    t = f.type
    if isinstance(t, StructSpec):
        if value is None and f.nullable_in(version) and not f.tagged_in(version):
            return None  # a null struct (INT8 -1) differs from one of defaults
        return _canon_struct(codec, t, value, version)
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        if isinstance(t.item, StructSpec):
            return [_canon_struct(codec, t.item, v, version) for v in value]
        return [bytes(v) if t.item == "bytes" else v for v in value]
    if t in ("bytes", "records"):
        return bytes(value)
    return value
