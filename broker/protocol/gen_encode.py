"""Emit the Python source of an encoder for one (message, version).

The encoder appends to a ``bytearray`` (``out``) that the caller may have
started with a size prefix and a response header, and returns
``(segments, size)``. For ``ProduceResponse`` v9 (flexible) a partition is::

    Index => INT32, ErrorCode => INT16, BaseOffset => INT64,
    LogAppendTimeMs => INT64, LogStartOffset => INT64,
    RecordErrors => COMPACT_ARRAY(BatchIndex => INT32,
                                  BatchIndexErrorMessage => COMPACT_NULLABLE_STRING),
    ErrorMessage => COMPACT_NULLABLE_STRING, TAG_BUFFER

and the emitted loop body is, in essence::

    out += _p1(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)
    v = p.record_errors; m = len(v) + 1
    if m < 128: out.append(m)
    else: out += _uvarint(m)
    for e in v: ...
    s = p.error_message
    if s is None: out.append(0)
    else: ...
    out.append(0)                                   # no tagged fields

In non-flexible versions the INT16/INT32 length or count of a
variable-length field joins the preceding fixed-size fields in one ``pack``.
A ``records`` value ends the current ``bytearray`` segment and is placed in
the segment list as given (not copied). Tagged fields are written in tag
order and only when they differ from their default (Kafka's
``generateNonDefaultValueCheck``); a struct-typed field that is ``None``
counts as its default. Fields the version does not have are ignored (Kafka
raises for non-ignorable ones; we leave the choice of fields to the
handlers, which build one object for every version).
"""

from __future__ import annotations

from broker.protocol.gen_decode import CODES
from broker.protocol.schema import ArrayOf, Field, MessageSpec, StructSpec, struct_specs
from broker.protocol.source import Source, WriteRun


def has_records(s: StructSpec, version: int) -> bool:
    for inner in struct_specs(s):
        for f in inner.fields:
            if f.type == "records" and f.present_in(version):
                return True
    return False


class EncoderEmitter:
    def __init__(self, spec: MessageSpec, version: int, src: Source, class_names: dict[str, str]):
        self.spec = spec
        self.version = version
        self.flexible = spec.is_flexible(version)
        self.src = src
        self.class_names = class_names
        self.segmented = has_records(spec.struct, version)

    def emit(self, fn_name: str) -> None:
        src = self.src
        with src.block(f"def {fn_name}(msg, out)"):
            if self.segmented:
                src.line("segs = []")
                src.line("size = 0")
            with src.block("try"):
                before = len(src.lines)
                self.struct(self.spec.struct, "msg", WriteRun(src), top=True)
                if len(src.lines) == before:
                    src.line("pass")  # a version with nothing to write (ApiVersionsRequest v0)
            where = f"{self.spec.name} v{self.version}: "
            with src.block("except _ENCODE_FAILURES as exc"):
                src.line(f"raise _EncodeError({where!r} + repr(exc)) from exc")
            if self.segmented:
                with src.block("if out or not segs"):
                    src.line("segs.append(out)")
                src.line("return segs, size + len(out)")
            else:
                src.line("return [out], len(out)")

    # -- structs -------------------------------------------------------------

    def struct(self, s: StructSpec, obj: str, run: WriteRun, *, top: bool = False) -> None:
        tagged: list[Field] = []
        for f in s.fields:
            if not f.present_in(self.version):
                continue
            if f.tagged_in(self.version):
                tagged.append(f)
                continue
            self.field(f, f"{obj}.{f.name}", run)
        if self.flexible:
            self.tagged_fields(obj, sorted(tagged, key=lambda f: f.tag or 0), run)
        if top:
            run.flush()

    def tagged_fields(self, obj: str, fields: list[Field], run: WriteRun) -> None:
        if not fields:
            run.add("B", "0")
            return
        src = self.src
        run.flush()
        flags = []
        for f in fields:
            value, flag = src.var(), src.var("w")
            src.line(f"{value} = {obj}.{f.name}")
            src.line(f"{flag} = {self.non_default(f, value)}")
            flags.append((f, value, flag))
        src.line(f"out.append({' + '.join(flag for _, _, flag in flags)})")
        for f, value, flag in flags:
            with src.block(f"if {flag}"):
                src.line(f"out += {src.const(_uvarint_const(f.tag or 0))}")
                saved, body = src.var("sv"), src.var("tb")
                src.line(f"{saved} = out")
                src.line("out = bytearray()")
                inner = WriteRun(src)
                self.field(f, value, inner, compact=True)
                inner.flush()
                src.line(f"{body} = out")
                src.line(f"out = {saved}")
                src.line(f"out += _uvarint(len({body}))")
                src.line(f"out += {body}")

    def non_default(self, f: Field, value: str) -> str:
        """Kafka's ``generateNonDefaultValueCheck`` as a Python expression."""
        t = f.type
        if f.default is None:
            if isinstance(t, StructSpec):
                default = self.src.const(self.default_struct(t))
                return f"{value} is not None and {value} != {default}"
            return f"{value} is not None"
        if isinstance(t, ArrayOf):
            if f.nullable_in(self.version):
                return f"{value} is None or len({value}) != 0"
            return f"len({value}) != 0"
        return f"{value} != {self.src.const(f.default)}"

    def default_struct(self, s: StructSpec) -> object:
        cls = self.src.namespace[self.class_names[s.name]]
        return cls()

    # -- fields --------------------------------------------------------------

    def field(self, f: Field, expr: str, run: WriteRun, *, compact: bool | None = None) -> None:
        src = self.src
        t = f.type
        if compact is None:
            compact = self.version in f.flexible if f.flexible is not None else self.flexible
        if isinstance(t, str) and t in CODES:
            run.add(CODES[t], f"{expr}.bytes" if t == "uuid" else expr)
            return
        if isinstance(t, StructSpec):
            value = src.var()
            src.line(f"{value} = {expr}")
            if f.nullable_in(self.version):
                # a nullable struct: INT8 -1 for null, else 1 and the struct (Kafka's
                # generated ``write``: ``_writable.writeByte((byte) -1)``)
                run.add("b", f"(-1 if {value} is None else 1)")
                run.flush()
                with src.block(f"if {value} is not None"):
                    inner = WriteRun(src)
                    self.struct(t, value, inner)
                    inner.flush()
                return
            with src.block(f"if {value} is None"):
                src.line(f"{value} = {src.const(self.default_struct(t))}")
            self.struct(t, value, run)
            return
        nullable = f.nullable_in(self.version)
        value = src.var()
        if t == "string":
            # encode first: the length prefix counts UTF-8 bytes
            if nullable:
                src.line(f"{value} = {expr}")
                src.line(f"{value} = None if {value} is None else {value}.encode()")
            else:
                src.line(f"{value} = {expr}.encode()")
        else:
            src.line(f"{value} = {expr}")
        length = src.var("n")
        if nullable:
            src.line(f"{length} = -1 if {value} is None else len({value})")
        else:
            src.line(f"{length} = len({value})")
        if t == "string":
            self.check_string_length(length, f.name)
        if compact:
            run.flush()
            self.uvarint(f"{length} + 1")
        else:
            run.add("h" if t == "string" else "i", length)
            run.flush()
        if nullable:
            with src.block(f"if {value} is not None"):
                self.body(f, t, value, length, compact)
        else:
            self.body(f, t, value, length, compact)

    def body(self, f: Field, t: str | ArrayOf, value: str, length: str, compact: bool) -> None:
        src = self.src
        if (
            isinstance(t, ArrayOf)
            and isinstance(t.item, str)
            and t.item in CODES
            and t.item != "uuid"
        ):
            code = CODES[t.item]
            packers = src.array_packers(code, unpack=False)
            with src.block(f"if {length} <= 32"):
                src.line(f"out += {packers}[{length}](*{value})")
            with src.block("else"):
                src.line(f"out += _pack_fixed_array({code!r}, {value})")
        elif t in ("string", "bytes"):
            src.line(f"out += {value}")
        elif t == "records":
            if not self.segmented:
                raise AssertionError("records outside a segmented encoder")
            with src.block(f"if {length}"):
                src.line("size += len(out) + " + length)
                src.line("segs.append(out)")
                src.line(f"segs.append({value})")
                src.line("out = bytearray()")
        elif isinstance(t, ArrayOf):
            self.array_body(f, t, value, compact)

    def array_body(self, f: Field, t: ArrayOf, value: str, compact: bool) -> None:
        src = self.src
        item = t.item
        elem = src.var("x")
        with src.block(f"for {elem} in {value}"):
            run = WriteRun(src)
            if isinstance(item, StructSpec):
                self.struct(item, elem, run)
            elif item == "uuid":
                run.add("16s", f"{elem}.bytes")
            else:
                encoded, length = src.var(), src.var("n")
                src.line(
                    f"{encoded} = {elem}.encode()" if item == "string" else f"{encoded} = {elem}"
                )
                src.line(f"{length} = len({encoded})")
                if item == "string":
                    self.check_string_length(length, f.name)
                if compact:
                    self.uvarint(f"{length} + 1")
                else:
                    run.add("h" if item == "string" else "i", length)
                    run.flush()
                src.line(f"out += {encoded}")
            run.flush()

    def check_string_length(self, length: str, name: str) -> None:
        with self.src.block(f"if {length} > 32767"):
            self.src.line(f"_string_too_long({length}, {name!r})")

    def uvarint(self, expr: str) -> None:
        src = self.src
        m = src.var("m")
        src.line(f"{m} = {expr}")
        with src.block(f"if {m} < 128"):
            src.line(f"out.append({m})")
        with src.block("else"):
            src.line(f"out += _uvarint({m})")


def _uvarint_const(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
