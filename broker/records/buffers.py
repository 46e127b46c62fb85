"""Buffer type aliases shared by the record modules.

Record bytes travel as ``bytes``, ``bytearray``, ``memoryview`` or ``mmap``
without copies; these aliases name what a function needs from them.
"""

from __future__ import annotations

import mmap
from typing import TypeAlias

ReadableBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap
