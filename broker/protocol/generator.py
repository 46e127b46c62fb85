"""Turn a :class:`~broker.protocol.schema.MessageSpec` into classes and codecs.

For every message the generator makes

* one slotted class per struct (``generated_classes``), the nested ones
  attached to the message class as attributes;
* per version, on first use, a decoder and an encoder: Python source emitted
  by ``gen_decode.py`` / ``gen_encode.py``, compiled once and cached in the
  :class:`MessageCodec`. The source is registered with ``linecache`` under a
  name like ``<codec ProduceRequest v9 decode>`` so tracebacks show it, and
  :meth:`MessageCodec.source` returns it for reading.

Signatures of the generated functions::

    decode(buf, pos=0) -> (message, position after it)     # buf: any bytes-like
    encode(message, out: bytearray) -> (segments, size)     # appends to out

Decoders raise only :class:`~broker.protocol.primitives.DecodeError`;
encoders raise :class:`~broker.protocol.primitives.EncodeError` for objects
that do not fit the version (a wrong type, an int out of range, None where
the version has no null).
"""

from __future__ import annotations

import linecache
import struct
import uuid
from collections.abc import Callable, Sized
from typing import Any, TypeAlias

from broker.errors import UnsupportedVersionError
from broker.protocol import primitives
from broker.protocol.data import Data
from broker.protocol.gen_decode import DecoderEmitter
from broker.protocol.gen_encode import EncoderEmitter
from broker.protocol.schema import ArrayOf, MessageSpec, StructSpec, struct_specs
from broker.protocol.source import Source
from broker.records.buffers import ReadableBuffer

Decoder: TypeAlias = Callable[[ReadableBuffer, int], tuple[Data, int]]
Encoder: TypeAlias = Callable[[Data, bytearray], tuple[list[Sized], int]]

_EMPTY = object()  # default marker of array fields in generated __init__

#: names every generated function may use (besides interned constants and packers)
_RUNTIME: dict[str, Any] = {
    "_DecodeError": primitives.DecodeError,
    "_EncodeError": primitives.EncodeError,
    "_read_uvarint": primitives.read_uvarint,
    "_uvarint": primitives.uvarint,
    "_read_fixed_array": primitives.read_fixed_array,
    "_pack_fixed_array": primitives.pack_fixed_array,
    "_string_too_long": primitives.string_too_long,
    "_UUID": uuid.UUID,
    "_str": str,
    "_EMPTY": _EMPTY,
}


_RUNTIME["_as_view"] = primitives.as_view
# what a hostile buffer can make generated decoders raise (besides DecodeError)
_RUNTIME["_DECODE_FAILURES"] = (struct.error, IndexError, ValueError)
# what a message object that does not fit its version makes encoders raise
_RUNTIME["_ENCODE_FAILURES"] = (struct.error, AttributeError, TypeError, ValueError, OverflowError)


def generated_classes(spec: MessageSpec) -> dict[str, type[Data]]:
    """One class per struct of ``spec``, keyed by struct name."""
    namespace: dict[str, Any] = {"_Data": Data, **_RUNTIME}
    src = Source(namespace)
    for s in reversed(struct_specs(spec.struct)):
        _emit_class(src, s, spec.name)
    code = src.text()
    exec(compile(code, f"<classes {spec.name}>", "exec"), namespace)
    classes: dict[str, type[Data]] = {s.name: namespace[s.name] for s in struct_specs(spec.struct)}
    root = classes[spec.name]
    for name, cls in classes.items():
        cls.__module__ = "broker.protocol.messages"
        if cls is not root:
            cls.__qualname__ = f"{spec.name}.{name}"
            setattr(root, name, cls)
    return classes


def _emit_class(src: Source, s: StructSpec, message_name: str) -> None:
    names = [f.name for f in s.fields]
    params = []
    for f in s.fields:
        is_list = isinstance(f.type, ArrayOf) and f.default is not None
        params.append(f"{f.name}={'_EMPTY' if is_list else src.const(f.default)}")
    with src.block(f"class {s.name}(_Data)"):
        src.line(f"__slots__ = {tuple(names)!r}")
        src.line("fields = __slots__")
        with src.block(
            f"def __init__(self, {', '.join(params)})" if params else "def __init__(self)"
        ):
            for f in s.fields:
                if isinstance(f.type, ArrayOf) and f.default is not None:
                    src.line(f"self.{f.name} = [] if {f.name} is _EMPTY else {f.name}")
                else:
                    src.line(f"self.{f.name} = {f.name}")
            if not s.fields:
                src.line("pass")


class MessageCodec:
    """The classes of one message and its per-version decoders and encoders."""

    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.classes = generated_classes(spec)
        self.cls = self.classes[spec.name]
        self._decoders: dict[int, Decoder] = {}
        self._encoders: dict[int, Encoder] = {}
        self._sources: dict[tuple[int, str], str] = {}

    def decoder(self, version: int) -> Decoder:
        try:
            return self._decoders[version]
        except KeyError:
            self._check_version(version)
            fn: Decoder = self._compile(version, "decode")
            self._decoders[version] = fn
            return fn

    def encoder(self, version: int) -> Encoder:
        try:
            return self._encoders[version]
        except KeyError:
            self._check_version(version)
            fn: Encoder = self._compile(version, "encode")
            self._encoders[version] = fn
            return fn

    def source(self, version: int, kind: str) -> str:
        """The generated source of ``kind`` ("decode" or "encode") for ``version``."""
        (self.decoder if kind == "decode" else self.encoder)(version)
        return self._sources[(version, kind)]

    def _check_version(self, version: int) -> None:
        if version not in self.spec.valid:
            raise UnsupportedVersionError(
                f"{self.spec.name} version {version} is not in {self.spec.valid}"
            )

    def _compile(self, version: int, kind: str) -> Any:
        namespace: dict[str, Any] = dict(_RUNTIME)
        class_names = {}
        for name, cls in self.classes.items():
            class_names[name] = f"_C_{name}"
            namespace[f"_C_{name}"] = cls
        src = Source(namespace)
        emitter = DecoderEmitter if kind == "decode" else EncoderEmitter
        emitter(self.spec, version, src, class_names).emit(kind)
        code = src.text()
        filename = f"<codec {self.spec.name} v{version} {kind}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        exec(compile(code, filename, "exec"), namespace)
        self._sources[(version, kind)] = code
        fn = namespace[kind]
        fn.__qualname__ = fn.__name__ = f"{kind}_{self.spec.name}_v{version}"
        return fn
