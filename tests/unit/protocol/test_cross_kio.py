"""Cross-check against kio, a codec generated from Kafka 4.x's schemas (Rust core).

kio covers the newer versions (it lacks what Kafka 4.0 removed, e.g. Produce
v0-v2); for every (message, version) both know, values drawn from our
strategies are encoded by each side and decoded by the other. kio's value
model differs in three ways the adapter below bridges: ``*_ms`` fields are
``timedelta`` (``throttle_time``) or, for log append times, ``datetime`` /
None; error codes are an enum; arrays are tuples.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import re
import types
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer

from broker.protocol import Data, decode, encode
from broker.protocol.generator import MessageCodec
from broker.protocol.messages import CODECS
from broker.protocol.schema import ArrayOf, StructSpec
from tests.protocol_values import canonical, messages

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
MS = datetime.timedelta(milliseconds=1)


def kio_module(name: str, version: int) -> types.ModuleType | None:
    api = name.removesuffix("Request").removesuffix("Response")
    package = re.sub(r"(?<!^)(?=[A-Z])", "_", api).lower()
    kind = "request" if name.endswith("Request") else "response"
    try:
        return importlib.import_module(f"kio.schema.{package}.v{version}.{kind}")
    except ModuleNotFoundError:
        return None


CASES = [
    (name, v)
    for name, codec in CODECS.items()
    for v in range(codec.spec.valid.low, (codec.spec.valid.high or 0) + 1)
    if kio_module(name, v) is not None
]


def _entity_class(annotation: Any) -> Any:
    """The kio dataclass inside ``X``, ``X | None`` or ``tuple[X, ...]``."""
    if dataclasses.is_dataclass(annotation):
        return annotation
    for arg in typing.get_args(annotation):
        found = _entity_class(arg)
        if found is not None:
            return found
    return None


def _kio_value(kind: str | None, v: Any) -> Any:
    if kind in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=v)
    if kind == "datetime_i64":
        return None if v == -1 else EPOCH + v * MS
    if kind == "error_code":
        return KioErrorCode(v)
    return v


def _our_value(kind: str | None, v: Any) -> Any:
    if kind in ("timedelta_i32", "timedelta_i64"):
        return v // MS
    if kind == "datetime_i64":
        return -1 if v is None else (v - EPOCH) // MS
    if kind == "error_code":
        return int(v)
    if isinstance(v, (bytes, memoryview)):
        return bytes(v)
    return v


def _our_name(kio_name: str, s: StructSpec) -> str:
    names = {f.name for f in s.fields}
    return kio_name if kio_name in names else kio_name + "_ms"


def to_kio(value: Any, s: StructSpec, version: int, cls: Any) -> Any:
    if value is None:  # a tagged struct left at its default
        value = type("Defaults", (), {f.name: f.default for f in s.fields})()
    hints = typing.get_type_hints(cls)
    specs = {f.name: f for f in s.fields}
    kwargs = {}
    for fld in dataclasses.fields(cls):
        spec = specs[_our_name(fld.name, s)]
        v = getattr(value, spec.name)
        inner = spec.type.item if isinstance(spec.type, ArrayOf) else spec.type
        if isinstance(inner, StructSpec):
            sub = _entity_class(hints[fld.name])
            if isinstance(spec.type, ArrayOf):
                v = None if v is None else tuple(to_kio(x, inner, version, sub) for x in v)
            elif v is None and spec.nullable_in(version) and not spec.tagged_in(version):
                v = None  # a null struct (ConsumerGroupHeartbeatResponse.assignment)
            else:
                v = to_kio(v, inner, version, sub)
        elif isinstance(spec.type, ArrayOf):
            v = None if v is None else tuple(v)
        else:
            v = _kio_value(fld.metadata.get("kafka_type"), v)
        kwargs[fld.name] = v
    return cls(**kwargs)


def from_kio(entity: Any, s: StructSpec, version: int, codec: MessageCodec) -> Data:
    specs = {f.name: f for f in s.fields}
    kwargs = {}
    for fld in dataclasses.fields(entity):
        spec = specs[_our_name(fld.name, s)]
        v = getattr(entity, fld.name)
        inner = spec.type.item if isinstance(spec.type, ArrayOf) else spec.type
        if isinstance(inner, StructSpec):
            if isinstance(spec.type, ArrayOf):
                v = None if v is None else [from_kio(x, inner, version, codec) for x in v]
            elif v is not None:
                v = from_kio(v, inner, version, codec)
        elif isinstance(spec.type, ArrayOf):
            v = None if v is None else [_our_value(None, x) for x in v]
        else:
            v = _our_value(fld.metadata.get("kafka_type"), v)
        kwargs[spec.name] = v
    return codec.classes[s.name](**kwargs)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kio_agrees(name, version, data):
    msg = data.draw(messages(name, version, friendly=True))
    codec = CODECS[name]
    module = kio_module(name, version)
    cls = getattr(module, name)
    # kio -> ours
    out = io.BytesIO()
    entity_writer(cls)(out, to_kio(msg, codec.spec.struct, version, cls))
    theirs = out.getvalue()
    assert canonical(decode(type(msg), version, theirs), version) == canonical(msg, version)
    # ours -> kio
    ours = encode(msg, version).to_bytes()
    entity, size = entity_reader(cls)(ours, 0)
    assert size == len(ours)
    back = from_kio(entity, codec.spec.struct, version, codec)
    assert canonical(back, version) == canonical(msg, version)


def test_kio_covers_the_newer_versions():
    assert ("ProduceRequest", 11) in CASES
    assert ("FetchResponse", 17) in CASES
    assert ("ProduceRequest", 2) not in CASES  # removed in Kafka 4.0: kafka-python covers it
