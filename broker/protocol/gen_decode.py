"""Emit the Python source of a decoder for one (message, version).

The decoder is straight-line code, nested structs and arrays inlined as
loops, with no per-field interpretation left at run time. For
``ProduceRequest`` v3 it reads (``_u0``... are precompiled
``struct.Struct.unpack_from`` methods)::

    TransactionalId => NULLABLE_STRING, Acks => INT16, TimeoutMs => INT32,
    TopicData => ARRAY(Name => STRING, PartitionData => ARRAY(
        Index => INT32, Records => RECORDS))

    def decode(buf, pos=0):
        ...
        n1 = _u0(buf, pos)[0]                       # INT16 length of TransactionalId
        ...
        t4, t5, n6 = _u1(buf, pos)                  # Acks, TimeoutMs, TopicData's count
        pos += 10
        if n6 * 6 > end - pos: raise _DecodeError(...)   # each item needs >= 6 bytes
        for _ in range(n6):
            ...
                t9, n10 = _u2(buf, pos)             # Index and the records length
                ...
                t11 = buf[pos:e]                    # records: a memoryview slice, no copy

Fixed-size fields and the INT16/INT32 length or count prefix of the next
variable-length field are read by one ``unpack_from`` ("runs", see
``source.py``); in flexible versions the first byte of the UNSIGNED_VARINT
prefix (or of a tag-buffer count) joins the run, and only a byte with its
continuation bit set costs more (inline for record-set lengths, which
usually take two bytes; a call to ``read_uvarint`` otherwise).

Semantics follow Kafka's ``MessageDataGenerator``: a negative length or
count is null where the field is nullable and an error where it is not;
strings longer than 0x7FFF bytes are an error; an array count must fit in
the remaining bytes. We are stricter in two places (see
``docs/deviations.md``): malformed UTF-8 is an error (Java substitutes
U+FFFD), and a known tagged field must fill exactly the size its tag header
announces. Unknown tags are skipped, also tags Kafka knows only in other
versions of the message.
"""

from __future__ import annotations

from broker.protocol.schema import FIXED_SIZES, ArrayOf, Field, MessageSpec, StructSpec
from broker.protocol.source import ReadRun, Source

#: struct codes of the fixed-size types; uuid is read as 16 raw bytes
CODES = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "float64": "d",
    "bool": "?",
    "uuid": "16s",
}


def min_size(struct_: StructSpec, version: int, flexible: bool) -> int:
    """The fewest bytes one encoded ``struct_`` can take in ``version``."""
    total = 1 if flexible else 0  # the tagged-field count
    for f in struct_.fields:
        if not f.present_in(version) or f.tagged_in(version):
            continue
        t = f.type
        if isinstance(t, StructSpec):
            total += 1 if f.nullable_in(version) else min_size(t, version, flexible)
        elif isinstance(t, str) and t in FIXED_SIZES:
            total += FIXED_SIZES[t]
        elif flexible:
            total += 1
        else:
            total += 2 if t == "string" else 4
    return total


class DecoderEmitter:
    def __init__(self, spec: MessageSpec, version: int, src: Source, class_names: dict[str, str]):
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self.src = src
        self.class_names = class_names

    def emit(self, fn_name: str) -> None:
        src = self.src
        with src.block(f"def {fn_name}(buf, pos=0)"):
            src.line("buf = _as_view(buf)")
            src.line("end = len(buf)")
            with src.block("try"):
                self.struct(self.spec.struct, "msg")
                src.line("return msg, pos")
            where = f"{self.spec.name} v{self.version}: "
            with src.block("except _DECODE_FAILURES as exc"):
                src.line(f"raise _DecodeError({where!r} + str(exc)) from exc")

    # -- structs -------------------------------------------------------------

    def struct(self, s: StructSpec, target: str) -> None:
        src = self.src
        run = ReadRun(src)
        args: list[str] = []
        tagged: list[tuple[Field, str]] = []
        for f in s.fields:
            if not f.present_in(self.version):
                args.append(self.default_expr(f))
            elif f.tagged_in(self.version):
                var = src.var()
                src.line(f"{var} = {self.default_expr(f)}")
                tagged.append((f, var))
                args.append(var)
            else:
                var = src.var()
                args.append(var)
                self.field(f, var, run)
        if self.flexible:
            self.tagged_fields(s, tagged, run)
        run.flush()
        src.line(f"{target} = {self.class_names[s.name]}({', '.join(args)})")

    def tagged_fields(self, s: StructSpec, known: list[tuple[Field, str]], run: ReadRun) -> None:
        src = self.src
        count = src.var("k")
        run.add_uvarint(count)
        # the count is almost always 0: skip building an empty loop
        with src.block(f"if {count}"), src.block(f"for _ in range({count})"):
            tag, size, stop = src.var("tag"), src.var("sz"), src.var("e")
            src.line(f"{tag}, pos = _read_uvarint(buf, pos)")
            src.line(f"{size}, pos = _read_uvarint(buf, pos)")
            src.line(f"{stop} = pos + {size}")
            self.fail_if(f"{stop} > end", f"{s.name}: tagged field runs past the end")
            for i, (f, var) in enumerate(known):
                with src.block(f"{'if' if i == 0 else 'elif'} {tag} == {f.tag}"):
                    run = ReadRun(src)
                    self.field(f, var, run, compact=True)
                    run.flush()
                    self.fail_if(
                        f"pos != {stop}",
                        f"{s.name}.{f.name}: tagged field size does not match its value",
                    )
            src.line(f"pos = {stop}")

    # -- fields --------------------------------------------------------------

    def field(self, f: Field, var: str, run: ReadRun, *, compact: bool | None = None) -> None:
        t = f.type
        if compact is None:
            compact = self.version in f.flexible if f.flexible is not None else self.flexible
        if isinstance(t, str) and t in CODES:
            run.add(CODES[t], var, "_UUID(bytes={})" if t == "uuid" else None)
            return
        if isinstance(t, StructSpec):
            if f.nullable_in(self.version):
                # a nullable struct: INT8 -1 for null, else (any other value) the struct
                marker = self.src.var("m")
                run.add("b", marker)
                run.flush()
                with self.src.block(f"if {marker} < 0"):
                    self.src.line(f"{var} = None")
                with self.src.block("else"):
                    self.struct(t, var)
                return
            run.flush()
            self.struct(t, var)
            return
        # variable length: a length/count prefix, then the body
        n = self.src.var("n")
        if compact:
            run.add_uvarint(n, often_long=t in ("records", "bytes"))
            self.src.line(f"{n} -= 1")
        else:
            run.add("h" if t == "string" else "i", n)
            run.flush()
        name = f.name
        with self.src.block(f"if {n} < 0"):
            if f.nullable_in(self.version):
                self.src.line(f"{var} = None")
            else:
                self.src.line(
                    f"raise _DecodeError('non-nullable field {name} was serialized as null')"
                )
        with self.src.block("else"):
            if isinstance(t, ArrayOf):
                self.array_body(f, t, var, n, compact)
            else:
                self.bytes_body(t, name, var, n, compact)

    def bytes_body(self, t: str, name: str, var: str, n: str, compact: bool) -> None:
        src = self.src
        stop = src.var("e")
        src.line(f"{stop} = pos + {n}")
        if t == "string" and compact:
            self.fail_if(f"{n} > 32767", f"string field {name} had invalid length")
        self.fail_if(f"{stop} > end", f"field {name}: length runs past the end")
        if t == "string":
            src.line(f"{var} = _str(buf[pos:{stop}], 'utf-8')")
        elif t == "bytes":
            src.line(f"{var} = bytes(buf[pos:{stop}])")
        else:  # records: a zero-copy view of the request
            src.line(f"{var} = buf[pos:{stop}]")
        src.line(f"pos = {stop}")

    def array_body(self, f: Field, t: ArrayOf, var: str, n: str, compact: bool) -> None:
        src = self.src
        item = t.item
        if isinstance(item, StructSpec):
            least = max(1, min_size(item, self.version, self.flexible))
        elif item in FIXED_SIZES:
            least = FIXED_SIZES[item]
        else:
            least = 1 if compact else (2 if item == "string" else 4)
        self.fail_if(
            f"{n} * {least} > end - pos",
            f"array {f.name}: count does not fit in the remaining bytes",
        )
        if isinstance(item, str) and item in CODES and item != "uuid":
            code = CODES[item]
            unpackers = src.array_packers(code, unpack=True)
            with src.block(f"if {n} <= 32"):
                src.line(f"{var} = list({unpackers}[{n}](buf, pos))")
            with src.block("else"):
                src.line(f"{var} = _read_fixed_array({code!r}, buf, pos, {n})")
            src.line(f"pos += {n} * {least}")
            return
        src.line(f"{var} = []")
        append = src.var("ap")
        src.line(f"{append} = {var}.append")
        with src.block(f"for _ in range({n})"):
            elem = src.var()
            if isinstance(item, StructSpec):
                self.struct(item, elem)
            elif item == "uuid":
                run = ReadRun(src)
                run.add("16s", elem, "_UUID(bytes={})")
                run.flush()
            else:
                m = src.var("n")
                run = ReadRun(src)
                if compact:
                    run.add_uvarint(m)
                    src.line(f"{m} -= 1")
                else:
                    run.add("h" if item == "string" else "i", m)
                    run.flush()
                self.fail_if(f"{m} < 0", f"array {f.name}: null element")
                self.bytes_body(str(item), f"{f.name} element", elem, m, compact)
            src.line(f"{append}({elem})")

    # -- helpers -------------------------------------------------------------

    def fail_if(self, condition: str, message: str) -> None:
        with self.src.block(f"if {condition}"):
            self.src.line(f"raise _DecodeError({message!r})")

    def default_expr(self, f: Field) -> str:
        if isinstance(f.type, ArrayOf) and f.default is not None:
            return "[]"  # a fresh list per object
        return self.src.const(f.default)
