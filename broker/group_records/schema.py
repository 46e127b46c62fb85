"""A small interpreter of Kafka message schemas for the coordinators' records.

Used for ``__consumer_offsets`` (``messages.py``) and ``__transaction_state``
(``broker/coordinator/transaction/records.py``, which turns
:class:`GroupRecordError` into its own record error).

A schema is a list of :class:`Field` values transcribed from Kafka's JSON
(``group-coordinator/src/main/resources/common/message/*.json``); the field
names are Kafka's own (``commitTimestamp``), so a decoded message is the
dict Kafka's JSON converters print. Encodings, as in the wire protocol::

    int8 int16 int32 int64  big-endian      bool   1 byte
    uuid                    16 bytes
    string / bytes          INT16 / INT32 length (-1 null)   | flexible: UVARINT(length + 1)
    []T                     INT32 count (-1 null)            | flexible: UVARINT(count + 1)
    struct                  its fields, then (flexible) its tagged fields:
                            UVARINT count, per field UVARINT tag, UVARINT size, value

Decoding is bounded by the buffer: every length is checked against what is
left, and any malformation raises :class:`GroupRecordError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from broker.errors import CorruptRecordError

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "bool": struct.Struct(">?"),
}
_INT16 = _FIXED["int16"]
_INT32 = _FIXED["int32"]
Message = dict[str, Any]


class GroupRecordError(CorruptRecordError):
    """A ``__consumer_offsets`` key or value that does not fit its schema."""


class UnknownRecordTypeError(GroupRecordError):
    """``CoordinatorLoader.UnknownRecordTypeException``: a key type we do not know."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"Unknown record type {record_type}")
        self.record_type = record_type


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    low: int
    high: int
    #: versions in which null is allowed (low, high), None when never
    nullable: tuple[int, int] | None = None
    default: Any = None
    tag: int | None = None
    fields: tuple[Field, ...] = ()

    def present(self, version: int) -> bool:
        return self.low <= version <= self.high

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]


def f(
    name: str,
    type_: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = None,
    tag: int | None = None,
    fields: Sequence[Field] = (),
) -> Field:
    """A field in Kafka's notation (``"0+"``, ``"3"``, ``"2-4"``)."""
    low, high = _range(versions)
    return Field(
        name,
        type_,
        low,
        high,
        None if nullable is None else _range(nullable),
        _default(type_, default),
        tag,
        tuple(fields),
    )


def _range(text: str) -> tuple[int, int]:
    if text.endswith("+"):
        return int(text[:-1]), 32767
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _default(type_: str, default: Any) -> Any:
    if default == "null":  # Kafka's JSON spells a null default this way
        return None
    if default is not None:
        return default
    if type_ in ("int8", "int16", "int32", "int64"):
        return 0
    if type_ == "bool":
        return False
    if type_ == "string":
        return ""
    if type_ == "bytes":
        return b""
    if type_ == "uuid":
        return uuid.UUID(int=0)
    if type_.startswith("[]"):
        return []
    return None  # a nullable struct


@dataclass(frozen=True)
class Schema:
    """One message: its name, valid versions, first flexible version (None: never)."""

    name: str
    low: int
    high: int
    flexible_from: int | None
    fields: tuple[Field, ...]

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.low <= version <= self.high:
            raise GroupRecordError(f"{self.name} has no version {version}")

    def new(self, version: int, **values: Any) -> Message:
        """A message with Kafka's defaults for every field of ``version``."""
        out = {fl.name: fl.default for fl in self.fields if fl.present(version)}
        out.update(values)
        return out

    def read(self, buf: bytes | memoryview, version: int) -> Message:
        self.check_version(version)
        reader = _Reader(buf, 0, self.is_flexible(version))
        return reader.struct(self.fields, version)

    def write(self, message: Message, version: int) -> bytes:
        self.check_version(version)
        out = bytearray()
        _write_struct(out, self.fields, message, version, self.is_flexible(version))
        return bytes(out)


def schema(name: str, valid: str, flexible: str | None, fields: Sequence[Field]) -> Schema:
    low, high = _range(valid)
    return Schema(name, low, high, None if flexible is None else _range(flexible)[0], tuple(fields))


# ---- reading --------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "flexible", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int, flexible: bool) -> None:
        self.buf = buf
        self.pos = pos
        self.flexible = flexible

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise GroupRecordError(f"need {n} bytes at {self.pos}, {len(self.buf) - self.pos} left")
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def fixed(self, packer: struct.Struct) -> Any:
        return packer.unpack(self.take(packer.size))[0]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.buf):
                raise GroupRecordError("truncated varint")
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise GroupRecordError("varint longer than 5 bytes")

    def length(self, packer: struct.Struct) -> int:
        """A length or count: -1 for null."""
        if self.flexible:
            return self.uvarint() - 1
        n: int = self.fixed(packer)
        return n

    def value(self, fl: Field, version: int) -> Any:
        t = fl.type
        packer = _FIXED.get(t)
        if packer is not None:
            return self.fixed(packer)
        if t == "uuid":
            return uuid.UUID(bytes=self.take(16))
        if t in ("string", "bytes"):
            n = self.length(_INT16 if t == "string" else _INT32)
            if n < 0:
                return self.null(fl, version)
            raw = self.take(n)
            if t == "bytes":
                return raw
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise GroupRecordError(f"{fl.name}: invalid UTF-8: {exc}") from None
        if t.startswith("[]"):
            n = self.length(_INT32)
            if n < 0:
                return self.null(fl, version)
            if n > len(self.buf) - self.pos:  # every item takes at least one byte
                raise GroupRecordError(f"{fl.name}: {n} items cannot fit")
            item = t[2:]
            if item:
                one = Field(fl.name, item, fl.low, fl.high)
                return [self.value(one, version) for _ in range(n)]
            return [self.struct(fl.fields, version) for _ in range(n)]
        # a nullable struct (tagged): INT8 -1 for null, else 1 then the struct
        present = self.fixed(_FIXED["int8"])
        if present < 0:
            return None
        return self.struct(fl.fields, version)

    def null(self, fl: Field, version: int) -> None:
        if not fl.nullable_in(version):
            raise GroupRecordError(f"{fl.name} is null in a version where it cannot be")

    def struct(self, fields: tuple[Field, ...], version: int) -> Message:
        out: Message = {}
        tagged: dict[int, Field] = {}
        for fl in fields:
            if not fl.present(version):
                continue
            if fl.tag is not None and self.flexible:
                tagged[fl.tag] = fl
                out[fl.name] = fl.default
                continue
            out[fl.name] = self.value(fl, version)
        if self.flexible:
            for _ in range(self.uvarint()):
                tag = self.uvarint()
                size = self.uvarint()
                known = tagged.get(tag)
                end = self.pos + size
                if end > len(self.buf):
                    raise GroupRecordError(f"tagged field {tag} of {size} bytes cannot fit")
                if known is None:
                    self.pos = end  # unknown tagged fields are skipped, as Kafka does
                    continue
                out[known.name] = self.value(known, version)
                if self.pos != end:
                    raise GroupRecordError(f"tagged field {known.name} is not {size} bytes")
        return out


# ---- writing --------------------------------------------------------------------------------


def _uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_length(out: bytearray, n: int, packer: struct.Struct, flexible: bool) -> None:
    if flexible:
        _uvarint(out, n + 1)
    else:
        out += packer.pack(n)


def _write_value(out: bytearray, fl: Field, value: Any, version: int, flexible: bool) -> None:
    t = fl.type
    packer = _FIXED.get(t)
    if packer is not None:
        out += packer.pack(value)
        return
    if t == "uuid":
        out += value.bytes
        return
    if t in ("string", "bytes"):
        lp = _INT16 if t == "string" else _INT32
        if value is None:
            if not fl.nullable_in(version):
                raise GroupRecordError(f"{fl.name} cannot be null in version {version}")
            _write_length(out, -1, lp, flexible)
            return
        raw = value.encode("utf-8") if t == "string" else bytes(value)
        _write_length(out, len(raw), lp, flexible)
        out += raw
        return
    if t.startswith("[]"):
        if value is None:
            if not fl.nullable_in(version):
                raise GroupRecordError(f"{fl.name} cannot be null in version {version}")
            _write_length(out, -1, _INT32, flexible)
            return
        _write_length(out, len(value), _INT32, flexible)
        item = t[2:]
        if item:
            one = Field(fl.name, item, fl.low, fl.high)
            for v in value:
                _write_value(out, one, v, version, flexible)
        else:
            for v in value:
                _write_struct(out, fl.fields, v, version, flexible)
        return
    if value is None:
        out.append(0xFF)
    else:
        out.append(1)
        _write_struct(out, fl.fields, value, version, flexible)


def _write_struct(
    out: bytearray, fields: tuple[Field, ...], message: Message, version: int, flexible: bool
) -> None:
    tagged: list[tuple[int, bytes]] = []
    for fl in fields:
        if not fl.present(version):
            continue
        value = message.get(fl.name, fl.default)
        if fl.tag is not None and flexible:
            if value != fl.default:
                buf = bytearray()
                _write_value(buf, fl, value, version, flexible)
                tagged.append((fl.tag, bytes(buf)))
            continue
        _write_value(out, fl, value, version, flexible)
    if flexible:
        _uvarint(out, len(tagged))
        for tag, raw in sorted(tagged):
            _uvarint(out, tag)
            _uvarint(out, len(raw))
            out += raw
