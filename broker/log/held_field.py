"""A field that the log's append owner holds while its object is attached (``HeldField``).

The active segment's append state has one owner, ``ActiveSegment``
(``broker.log.active_segment``). The storage objects it takes over --
``FileRecords``, ``OffsetIndex``, ``TimeIndex``, ``LogSegment``,
``ProducerStateManager`` -- point to it through ``_active`` while attached
and own their fields again when it lets go. A field declared
``HeldField[T](own_name, held_name)`` reads and writes::

    obj._active is None      obj.<own_name>             (sealed: the object's slot)
    obj._active is owner     owner.<held_name>          (attached: the owner's field)

``ActiveSegment.attach`` copies each field to the owner before setting
``_active``; ``detach`` clears ``_active`` before writing each one back, so
a hand-over keeps every value.

These fields are read on the fetch path (index lookups, the ``.log``'s
size), so a ``HeldField`` is a ``property`` whose getter and setter are
generated from the two names (as ``dataclasses`` generates ``__init__``):
the same bytecode a hand-written property pair runs, with the attribute
names as constants, and the property's C-level ``__get__``/``__set__``.
The checker sees ``__get__``/``__set__`` typed by ``T``.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:
    from typing import Self

T = TypeVar("T")

_ACCESSORS = """\
def get(self):
    active = self._active
    return self.{own} if active is None else active.{held}

def set(self, value):
    active = self._active
    if active is None:
        self.{own} = value
    else:
        active.{held} = value
"""


def _accessors(
    own_name: str, held_name: str
) -> tuple[Callable[[Any], Any], Callable[[Any, Any], None]]:
    for name in (own_name, held_name):
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__"):
            raise ValueError(f"not a plain attribute name: {name!r}")
    namespace: dict[str, Any] = {}
    code = _ACCESSORS.format(own=own_name, held=held_name)
    exec(compile(code, f"<HeldField {own_name} / {held_name}>", "exec"), namespace)
    return namespace["get"], namespace["set"]


class HeldField(property, Generic[T]):
    """``obj.<own_name>`` while ``obj._active`` is None, else ``obj._active.<held_name>``."""

    def __init__(self, own_name: str, held_name: str) -> None:
        fget, fset = _accessors(own_name, held_name)
        super().__init__(fget, fset)
        self.own_name = own_name
        self.held_name = held_name

    def __set_name__(self, owner: type, name: str) -> None:
        for accessor in (self.fget, self.fset):
            if accessor is not None:
                accessor.__qualname__ = f"{owner.__qualname__}.{name}.{accessor.__name__}"

    def __repr__(self) -> str:
        return f"HeldField({self.own_name!r}, {self.held_name!r})"

    if TYPE_CHECKING:  # typed views of property's own (C-level) __get__ and __set__

        @overload
        def __get__(self, instance: None, owner: type | None = None, /) -> Self: ...
        @overload
        def __get__(self, instance: object, owner: type | None = None, /) -> T: ...
        def __get__(self, instance: object, owner: type | None = None, /) -> Any: ...
        def __set__(self, instance: object, value: T, /) -> None: ...
