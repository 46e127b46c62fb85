"""The declarative description of Kafka messages that the codec generator reads.

A message is described once, for all its versions, the way Kafka's
``clients/src/main/resources/common/message/*.json`` files do it (our
descriptions are transcribed by hand from Kafka 3.9's files, see
``broker/protocol/schemas/``)::

    message("ProduceRequest", api_key=0, valid="0-11", flexible="9+", fields=[
        field("transactional_id", "string", "3+", nullable="3+", default=None),
        field("acks", "int16"),
        field("topic_data", array("TopicProduceData", [
            field("name", "string"),
            ...
        ])),
    ])

Types, with their encoding in non-flexible / flexible versions::

    int8 int16 int32 int64     1/2/4/8 bytes, big-endian, signed
    uint16 float64 bool        2 bytes unsigned / IEEE 754 double / 1 byte (!= 0 is true)
    uuid                       16 bytes
    string                     INT16 length + UTF-8  | UVARINT(length + 1) + UTF-8
    bytes, records             INT32 length + bytes  | UVARINT(length + 1) + bytes
    []T                        INT32 count + items   | UVARINT(count + 1) + items
    (null string/bytes/array)  length -1             | UVARINT 0
    struct                     its fields in order, then (flexible) its tagged fields
    tagged fields              UVARINT count, then per field: UVARINT tag,
                               UVARINT size, value (flexible versions only)

Version ranges are written like Kafka's: ``"0+"``, ``"3-5"``, ``"7"``,
``"none"``. Defaults follow Kafka's ``FieldSpec``: 0 for numbers, false,
``""`` for strings, the zero UUID, empty bytes, empty arrays, ``None`` for
records; a struct-typed field holds ``None`` for "absent / all defaults".
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

PRIMITIVE_TYPES = frozenset(
    {
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "float64",
        "bool",
        "uuid",
        "string",
        "bytes",
        "records",
    }
)
#: types encoded in a fixed number of bytes (the generator coalesces runs of them)
FIXED_SIZES = {
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
    "float64": 8,
    "bool": 1,
    "uuid": 16,
}
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``high`` None means open-ended ("3+")."""

    low: int
    high: int | None

    def __contains__(self, version: object) -> bool:
        return (
            isinstance(version, int)
            and self.low <= version
            and (self.high is None or version <= self.high)
        )

    @property
    def empty(self) -> bool:
        return self.high is not None and self.high < self.low

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


NONE = Versions(0, -1)


def versions(text: str) -> Versions:
    """Parse Kafka's version-range syntax."""
    text = text.strip()
    if text == "none":
        return NONE
    if text.endswith("+"):
        return Versions(int(text[:-1]), None)
    low, _, high = text.partition("-")
    return Versions(int(low), int(high) if high else int(low))


@dataclass(frozen=True)
class ArrayOf:
    """``[]T``: an array of a primitive type name or of a struct."""

    item: TypeSpec


@dataclass(frozen=True)
class StructSpec:
    name: str
    fields: tuple[Field, ...]


TypeSpec: TypeAlias = "str | ArrayOf | StructSpec"

_UNSET: object = object()


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeSpec
    versions: Versions
    nullable: Versions
    default: object
    tag: int | None
    tagged: Versions
    #: a field-level override of the message's flexible versions (Kafka's
    #: per-field "flexibleVersions"; only the request header's client_id uses it)
    flexible: Versions | None

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def tagged_in(self, version: int) -> bool:
        return version in self.versions and version in self.tagged

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable


@dataclass(frozen=True)
class MessageSpec:
    name: str
    api_key: int
    kind: Literal["request", "response"]
    valid: Versions
    flexible: Versions
    struct: StructSpec

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible


def field(
    name: str,
    type_: TypeSpec,
    versions_: str = "0+",
    *,
    nullable: str = "none",
    default: object = _UNSET,
    tag: int | None = None,
    tagged: str = "none",
    flexible: str | None = None,
) -> Field:
    """One field. ``type_`` is a type name, ``"[]int32"``, or an :func:`array`/:func:`struct`."""
    if isinstance(type_, str) and type_.startswith("[]"):
        type_ = ArrayOf(type_[2:])
    _check_type(type_)
    tagged_v = versions(tagged)
    if (tag is None) != tagged_v.empty:
        raise ValueError(f"field {name}: a tag needs tagged versions and vice versa")
    f = Field(
        name=name,
        type=type_,
        versions=versions(versions_),
        nullable=versions(nullable),
        default=_UNSET,
        tag=tag,
        tagged=tagged_v,
        flexible=None if flexible is None else versions(flexible),
    )
    return dataclasses.replace(f, default=default_value(f) if default is _UNSET else default)


def array(name: str, fields: Sequence[Field]) -> ArrayOf:
    """An array of a struct named ``name`` (Kafka's ``"[]Name"`` with ``fields``)."""
    return ArrayOf(StructSpec(name, tuple(fields)))


def struct(name: str, fields: Sequence[Field]) -> StructSpec:
    """A single nested struct (Kafka's ``"type": "Name"`` with ``fields``)."""
    return StructSpec(name, tuple(fields))


def message(
    name: str,
    *,
    api_key: int,
    valid: str,
    flexible: str,
    fields: Sequence[Field],
) -> MessageSpec:
    kind: Literal["request", "response"] = "request" if name.endswith("Request") else "response"
    spec = MessageSpec(
        name, api_key, kind, versions(valid), versions(flexible), StructSpec(name, tuple(fields))
    )
    _check_struct_names(spec.struct, {})
    return spec


def default_value(f: Field) -> object:
    """Kafka's implicit default of a field (``FieldSpec.fieldDefault``)."""
    t = f.type
    if isinstance(t, ArrayOf):
        return []
    if isinstance(t, StructSpec):
        return None
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        return 0
    if t == "float64":
        return 0.0
    if t == "bool":
        return False
    if t == "uuid":
        return ZERO_UUID
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    return None  # records


def struct_specs(spec: StructSpec) -> list[StructSpec]:
    """``spec`` and every struct nested in it, outermost first."""
    found = [spec]
    for f in spec.fields:
        inner = f.type.item if isinstance(f.type, ArrayOf) else f.type
        if isinstance(inner, StructSpec):
            found.extend(struct_specs(inner))
    return found


def _check_type(t: TypeSpec) -> None:
    if isinstance(t, ArrayOf):
        if isinstance(t.item, ArrayOf):
            raise ValueError("nested arrays are not supported (Kafka's rule too)")
        if isinstance(t.item, str) and t.item == "records":
            raise ValueError("arrays of records are not supported")
        _check_type(t.item)
    elif isinstance(t, str) and t not in PRIMITIVE_TYPES:
        raise ValueError(f"unknown type {t!r}")


def _check_struct_names(spec: StructSpec, seen: dict[str, StructSpec]) -> None:
    """Nested struct names must be unique within a message (they become class attributes)."""
    for s in struct_specs(spec):
        if s.name in seen and seen[s.name] is not s:
            raise ValueError(f"struct name {s.name} used twice")
        seen[s.name] = s
        names = [f.name for f in s.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate field name in {s.name}")
