"""A tiny builder of Python source text for the codec generator.

It owns three things the emitters need: indented lines, fresh local
variable names, and the namespace the source is later ``exec``'d in, where
constants and precompiled ``struct.Struct`` methods are interned under
short names (``_k3``, ``_u">ihq"``...) so the generated code loads them as
globals instead of rebuilding them on every call.

It also owns "runs": consecutive fixed-size items are collected and written
as *one* ``unpack_from`` / ``pack`` call with a combined format (``>ihqqq``
for a ProduceResponse partition), which is most of what makes the generated
code as fast as a hand-written struct encoder.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from broker.protocol import primitives


class Source:
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace
        self.lines: list[str] = []
        self._indent = 0
        self._count = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self._indent + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header + ":")
        self._indent += 1
        try:
            yield
        finally:
            self._indent -= 1

    def var(self, hint: str = "t") -> str:
        self._count += 1
        return f"{hint}{self._count}"

    def const(self, value: object) -> str:
        """An expression for ``value``: a literal when it has one, else an interned name."""
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return repr(value)
        for name, existing in self.namespace.items():
            if name.startswith("_k") and existing is value:
                return name
        name = f"_k{sum(1 for n in self.namespace if n.startswith('_k'))}"
        self.namespace[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        return self._struct_method(fmt, "_u", "unpack_from")

    def packer(self, fmt: str) -> str:
        return self._struct_method(fmt, "_p", "pack")

    def _struct_method(self, fmt: str, prefix: str, method: str) -> str:
        key = f"{prefix}_{fmt}"
        names = self.namespace.setdefault("__formats__", {})
        if key not in names:
            names[key] = f"{prefix}{len(names)}"
            self.namespace[names[key]] = getattr(struct.Struct(fmt), method)
        return str(names[key])

    def array_packers(self, code: str, *, unpack: bool) -> str:
        """Name of a list of (un)packers for 0..32 items of ``code``, indexed by count."""
        name = f"_ua_{code}" if unpack else f"_pa_{code}"
        if name not in self.namespace:
            make = primitives.array_unpackers if unpack else primitives.array_packers
            self.namespace[name] = make(code)
        return name

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


# mark a run's last item as the first byte of a varint
_UVARINT = "uvarint"
_UVARINT_LONG = "uvarint, often two bytes"


class ReadRun:
    """Pending fixed-size reads: ``(struct code, target variable, post-conversion)``.

    :meth:`add_uvarint` ends a run with the first byte of an unsigned varint
    (a compact length or a tagged-field count, almost always one byte): it is
    read with the run, and only a byte with the continuation bit set sends
    the decoder back to read the whole varint from that byte.
    """

    def __init__(self, src: Source) -> None:
        self.src = src
        self.items: list[tuple[str, str, str | None]] = []

    def add(self, code: str, var: str, post: str | None = None) -> None:
        self.items.append((code, var, post))

    def add_uvarint(self, var: str, *, often_long: bool = False) -> None:
        """``often_long``: inline the two-byte case too (record set and bytes lengths)."""
        self.items.append(("B", var, _UVARINT_LONG if often_long else _UVARINT))
        self.flush()

    def flush(self) -> None:
        if not self.items:
            return
        fmt = ">" + "".join(code for code, _, _ in self.items)
        unpack = self.src.unpacker(fmt)
        targets = [var for _, var, _ in self.items]
        if fmt == ">B":  # one byte: indexing is cheaper than a struct call
            self.src.line(f"{targets[0]} = buf[pos]")
        elif len(targets) == 1:
            self.src.line(f"{targets[0]} = {unpack}(buf, pos)[0]")
        else:
            self.src.line(f"{', '.join(targets)} = {unpack}(buf, pos)")
        self.src.line(f"pos += {struct.calcsize(fmt)}")
        for _, var, post in self.items:
            if post is _UVARINT:
                with self.src.block(f"if {var} > 127"):
                    self.src.line(f"{var}, pos = _read_uvarint(buf, pos - 1)")
            elif post is _UVARINT_LONG:
                with self.src.block(f"if {var} > 127"):
                    with self.src.block("if buf[pos] < 128"):
                        self.src.line(f"{var} = {var} & 127 | buf[pos] << 7")
                        self.src.line("pos += 1")
                    with self.src.block("else"):
                        self.src.line(f"{var}, pos = _read_uvarint(buf, pos - 1)")
            elif post is not None:
                self.src.line(f"{var} = {post.format(var)}")
        self.items = []


class WriteRun:
    """Pending fixed-size writes: ``(struct code, value expression)``."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.items: list[tuple[str, str]] = []

    def add(self, code: str, expr: str) -> None:
        self.items.append((code, expr))

    def flush(self) -> None:
        if not self.items:
            return
        if len(self.items) == 1 and self.items[0] == ("B", "0"):
            self.src.line("out.append(0)")
        else:
            fmt = ">" + "".join(code for code, _ in self.items)
            pack = self.src.packer(fmt)
            self.src.line(f"out += {pack}({', '.join(expr for _, expr in self.items)})")
        self.items = []
