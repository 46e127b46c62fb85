"""The base class of every generated message and struct class, and its typed facade.

The generator (``generator.py``) makes one class per Kafka struct, with
``__slots__`` holding the union of the struct's fields over all versions in
schema order, an ``__init__`` taking them by position or keyword with
Kafka's defaults, and the nested struct classes as class attributes::

    ProduceResponse(responses=[
        ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
            ProduceResponse.PartitionProduceResponse(index=0, base_offset=42),
        ]),
    ], throttle_time_ms=0)

Those classes are built at import time, so mypy cannot see their fields.
Under ``TYPE_CHECKING`` this module declares what it can: instances accept
any constructor arguments and any attribute (typed ``Any``), and the class
objects expose nested classes as attributes of type ``type[Data]``. At run
time nothing here intercepts attribute access; an unknown field is an
``AttributeError`` as with any slotted class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar


class DataMeta(type):
    """Metaclass of generated classes (adds nothing at run time)."""

    if TYPE_CHECKING:

        def __getattr__(cls, name: str) -> type[Data]: ...


class Data(metaclass=DataMeta):
    """A decoded or to-be-encoded Kafka message or struct."""

    __slots__ = ()
    #: field names in schema order (the union over all versions)
    fields: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, like Kafka's data classes

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.fields)
        return f"{type(self).__qualname__}({inner})"
