"""The base class of every generated message and struct class.

The generator (``generator.py``) makes one class per Kafka struct, with
``__slots__`` holding the union of the struct's fields over all versions in
schema order, an ``__init__`` taking them by position or keyword with
Kafka's defaults, and the nested struct classes as class attributes::

    ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
            ProduceResponse.PartitionProduceResponse(index=0, base_offset=42),
        ]),
    ], throttle_time_ms=0)

Those classes are built at import time, so mypy cannot see them; it reads
their declarations from ``message_classes.pyi`` instead, a stub generated
from the same schemas (``python -m broker.protocol.stubs``), which
``messages.py`` imports under ``TYPE_CHECKING``. This base class declares
only what every generated class has: ``fields``, equality and ``repr``.
"""

from __future__ import annotations

from typing import ClassVar


class Data:
    """A decoded or to-be-encoded Kafka message or struct."""

    __slots__ = ()
    #: field names in schema order (the union over all versions)
    fields: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, like Kafka's data classes

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.fields)
        return f"{type(self).__qualname__}({inner})"
