"""Cross-check against kafka-python 3.x, an independent implementation.

Two families of kafka-python classes are used:

* ``kafka.protocol.old.*`` (``ProduceRequest_v0`` ...): hand-written
  per-version schemas, the only independent coverage of the oldest versions
  (Produce v0-v2, Fetch v0-v3, ListOffsets v0 ...);
* ``kafka.protocol.{producer,consumer,metadata,admin}``: classes generated
  at run time from Kafka's JSON schemas (4.x ones; the versions both sides
  know are identical on the wire).

For every pair both directions are checked: what kafka-python encodes
decodes to the same values with ours, and what we encode decodes to the same
values with kafka-python.
"""

from __future__ import annotations

import importlib
import io
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import Data, decode, encode
from broker.protocol.generator import MessageCodec
from broker.protocol.messages import CODECS
from broker.protocol.schema import ArrayOf, Field, StructSpec
from tests.protocol_values import canonical, messages

_MODULES = ("producer", "consumer", "metadata", "admin", "sasl")
with warnings.catch_warnings():
    # kafka-python 3.0 reads its JSON schemas with importlib.resources.read_text
    warnings.simplefilter("ignore", DeprecationWarning)
    for _module in _MODULES:
        importlib.import_module(f"kafka.protocol.{_module}")
    from kafka.protocol.old.types import Array, BitField, Schema

#: our field name -> kafka-python's (old and JSON-driven classes alike)
ALIASES = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
}

# -- old hand-written classes -------------------------------------------------------------

#: our message -> (kafka.protocol.old module, versions to check); flexible versions
#: are left to the JSON-driven classes below. Not used: DescribeLogDirsRequest_v0
#: (kafka-python declares its ``partitions`` as INT32 instead of ARRAY(INT32)) and
#: CreatePartitionsRequest_v0/v1 (kafka-python nests count and assignments in an
#: inner struct, "not compatible with new protocol" says its source).
OLD = {
    "ProduceRequest": ("produce", range(9)),
    "ProduceResponse": ("produce", range(9)),
    "FetchRequest": ("fetch", range(12)),
    "FetchResponse": ("fetch", range(12)),
    "ListOffsetsRequest": ("list_offsets", range(6)),
    "ListOffsetsResponse": ("list_offsets", range(6)),
    "MetadataRequest": ("metadata", range(9)),
    "MetadataResponse": ("metadata", range(9)),
    "ApiVersionsRequest": ("api_versions", range(3)),
    "ApiVersionsResponse": ("api_versions", range(3)),
    "InitProducerIdRequest": ("init_producer_id", range(2)),
    "InitProducerIdResponse": ("init_producer_id", range(2)),
    "OffsetForLeaderEpochRequest": ("offset_for_leader_epoch", range(4)),
    "OffsetForLeaderEpochResponse": ("offset_for_leader_epoch", range(4)),
    "FindCoordinatorRequest": ("find_coordinator", range(3)),
    "FindCoordinatorResponse": ("find_coordinator", range(3)),
    "CreateTopicsRequest": ("admin", range(4)),
    "CreateTopicsResponse": ("admin", range(4)),
    "DeleteTopicsRequest": ("admin", range(4)),
    "DeleteTopicsResponse": ("admin", range(4)),
    "DescribeConfigsRequest": ("admin", range(3)),
    "DescribeConfigsResponse": ("admin", range(3)),
    "AlterConfigsRequest": ("admin", range(2)),
    "AlterConfigsResponse": ("admin", range(2)),
    "CreatePartitionsResponse": ("admin", range(2)),
    "DescribeLogDirsResponse": ("admin", range(1)),
    "DeleteRecordsRequest": ("admin", range(1)),
    "DeleteRecordsResponse": ("admin", range(1)),
}
OLD_CASES = [(name, v) for name, (_, versions) in OLD.items() for v in versions]
#: kafka-python models the ``*authorized_operations`` INT32s as sets of bit numbers
#: (None for Kafka's "not requested" value -2**31)
OMITTED = -(2**31)


def to_bits(value: int) -> set[int] | None:
    return None if value == OMITTED else {b for b in range(32) if (value >> b) & 1}


def from_bits(bits: set[int] | None) -> int:
    if bits is None:
        return OMITTED
    value = sum(1 << b for b in bits)
    return value - 2**32 if value >= 2**31 else value


def old_class(name: str, version: int) -> Any:
    module = importlib.import_module(f"kafka.protocol.old.{OLD[name][0]}")
    return getattr(module, f"{name}_v{version}")


def _untagged(s: StructSpec, version: int) -> list[Field]:
    return [f for f in s.fields if f.present_in(version) and not f.tagged_in(version)]


def _check_names(fields: list[Field], schema: Any) -> None:
    """Positional values are only meaningful if both sides name the fields alike."""
    ours = [ALIASES.get(f.name, f.name) for f in fields]
    assert ours == list(schema.names), (ours, schema.names)


def to_old(value: Any, s: StructSpec, version: int, schema: Any) -> list[Any]:
    """Our struct as kafka-python's positional values for ``schema``."""
    fields = _untagged(s, version)
    _check_names(fields, schema)
    return [
        _to_old_field(getattr(value, f.name), f, version, t)
        for f, t in zip(fields, schema.fields, strict=True)
    ]


def _to_old_field(v: Any, f: Field, version: int, t: Any) -> Any:
    if t is BitField:
        return to_bits(v)
    if not isinstance(t, Array) or v is None:
        return v
    item = f.type.item
    if not isinstance(item, StructSpec):
        return list(v)
    if isinstance(t.array_of, Schema):
        return [to_old(x, item, version, t.array_of) for x in v]
    # kafka-python writes a one-field struct as its field (e.g. topics as ARRAY(STRING))
    (only,) = _untagged(item, version)
    return [_to_old_field(getattr(x, only.name), only, version, t.array_of) for x in v]


def from_old(codec: MessageCodec, values: Any, s: StructSpec, version: int, schema: Any) -> Data:
    fields = _untagged(s, version)
    _check_names(fields, schema)
    kwargs = {
        f.name: _from_old_field(codec, v, f, version, t)
        for f, v, t in zip(fields, values, schema.fields, strict=True)
    }
    return codec.classes[s.name](**kwargs)


def _from_old_field(codec: MessageCodec, v: Any, f: Field, version: int, t: Any) -> Any:
    if t is BitField:
        return from_bits(v)
    if not isinstance(t, Array) or v is None:
        return v
    item = f.type.item
    if not isinstance(item, StructSpec):
        return list(v)
    if isinstance(t.array_of, Schema):
        return [from_old(codec, x, item, version, t.array_of) for x in v]
    (only,) = _untagged(item, version)
    cls = codec.classes[item.name]
    return [cls(**{only.name: _from_old_field(codec, x, only, version, t.array_of)}) for x in v]


def _draw(data: Any, name: str, version: int) -> Data:
    msg = data.draw(messages(name, version))
    if name == "ApiVersionsResponse" and version > 0:
        # kafka-python reads an ApiVersionsResponse with an error as v0 on purpose:
        # brokers answer an unsupported version with a v0 body (KIP-511)
        msg.error_code = 0
    return msg


@pytest.mark.parametrize(("name", "version"), OLD_CASES, ids=[f"{n}-v{v}" for n, v in OLD_CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_old_classes_agree(name, version, data):
    msg = _draw(data, name, version)
    cls = old_class(name, version)
    struct_spec = CODECS[name].spec.struct
    ours = encode(msg, version).to_bytes()
    # theirs -> ours
    theirs = bytes(cls(*to_old(msg, struct_spec, version, cls.SCHEMA)).encode())
    assert canonical(decode(type(msg), version, theirs), version) == canonical(msg, version)
    # ours -> theirs
    back = from_old(
        CODECS[name], cls.SCHEMA.decode(io.BytesIO(ours)), struct_spec, version, cls.SCHEMA
    )
    assert canonical(back, version) == canonical(msg, version)
    assert theirs == ours


# -- JSON-driven classes ------------------------------------------------------------------


def new_class(name: str) -> Any:
    for module in _MODULES:
        mod = importlib.import_module(f"kafka.protocol.{module}")
        if hasattr(mod, name):
            return getattr(mod, name)
    raise LookupError(name)


#: messages kafka-python 3.x has no class for (KIP-848's; covered by the golden bytes of
#: ``test_codec.py`` and by librdkafka in ``tests/integration/test_consumer_protocol.py``)
NOT_IN_KAFKA_PYTHON = {
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
}


def _new_cases() -> list[tuple[str, int]]:
    cases = []
    for name, codec in CODECS.items():
        if name in NOT_IN_KAFKA_PYTHON:
            continue
        low, high = new_class(name)._valid_versions
        ours = codec.spec.valid
        for v in range(max(low, ours.low), min(high, ours.high or high) + 1):
            cases.append((name, v))
    return cases


NEW_CASES = _new_cases()


def to_new(value: Any, s: StructSpec, version: int, cls: Any) -> Any:
    fields = cls._struct.fields
    kwargs = {}
    for f in s.fields:
        if not f.present_in(version):
            continue
        key = f.name if f.name in fields else ALIASES[f.name]
        v = getattr(value, f.name)
        if f.type == "int32" and key.endswith("authorized_operations"):  # DescribeGroups too
            v = to_bits(v)
        inner = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(inner, StructSpec) and v is not None:
            data_class = fields[key].data_class
            if isinstance(f.type, ArrayOf):
                v = [to_new(x, inner, version, data_class) for x in v]
            else:
                v = to_new(v, inner, version, data_class)
        kwargs[key] = v
    return cls(version=version, **kwargs)


def from_new(theirs: Any, s: StructSpec, version: int, cls: Any) -> Any:
    kwargs = {}
    for f in s.fields:
        if not f.present_in(version):
            continue
        key = f.name if f.name in theirs._struct.fields else ALIASES[f.name]
        v = getattr(theirs, key)
        if f.type == "int32" and key.endswith("authorized_operations"):
            v = from_bits(v)
        inner = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(inner, StructSpec) and v is not None:
            sub = cls.classes[inner.name]
            if isinstance(f.type, ArrayOf):
                v = [from_new(x, inner, version, cls) for x in v]
            else:
                v = from_new(v, inner, version, cls)
            assert all(isinstance(x, sub) for x in (v if isinstance(v, list) else [v]))
        kwargs[f.name] = v
    return cls.classes[s.name](**kwargs)


@pytest.mark.parametrize(("name", "version"), NEW_CASES, ids=[f"{n}-v{v}" for n, v in NEW_CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_json_classes_agree(name, version, data):
    msg = _draw(data, name, version)
    codec = CODECS[name]
    cls = new_class(name)
    ours = encode(msg, version).to_bytes()
    # theirs -> ours
    theirs = bytes(to_new(msg, codec.spec.struct, version, cls).encode(version=version))
    assert canonical(decode(type(msg), version, theirs), version) == canonical(msg, version)
    # ours -> theirs
    back = from_new(cls.decode(ours, version=version), codec.spec.struct, version, codec)
    assert canonical(back, version) == canonical(msg, version)
