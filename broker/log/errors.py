"""Failures inside the storage layer.

None of these is caused by a client's bytes: the validator has accepted
every batch that reaches the log. They say that our own files or our own
bookkeeping disagree with what the log expects; Kafka raises the
corresponding exceptions (named in each docstring) and a produce or fetch
that meets one answers UNKNOWN_SERVER_ERROR or KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from broker.errors import KafkaStorageError, UnknownServerError


class LogSegmentOffsetOverflowError(UnknownServerError):
    """``LogSegmentOffsetOverflowException``: an offset does not fit the
    segment's 32-bit relative offsets (``offset - base_offset`` outside
    ``[0, Int.MAX]``)."""

    def __init__(self, base_offset: int, offset: int) -> None:
        super().__init__(
            f"Detected offset overflow at offset {offset} in segment with base offset {base_offset}"
        )
        self.base_offset = base_offset
        self.offset = offset


class IndexOffsetOverflowError(UnknownServerError):
    """``IndexOffsetOverflowException``."""


class InvalidOffsetError(UnknownServerError):
    """``InvalidOffsetException``: an index entry would not be larger than the
    last one."""


class IndexFullError(UnknownServerError):
    """Kafka's ``IllegalArgumentException("Attempt to append to a full index")``."""


class IndexTimestampError(UnknownServerError):
    """Kafka's ``IllegalStateException`` for a time-index timestamp smaller than
    the last one."""


class CorruptIndexError(UnknownServerError):
    """``CorruptIndexException``: an index fails its sanity check."""


class CorruptSnapshotError(UnknownServerError):
    """``CorruptSnapshotException``: a producer snapshot with an unknown
    version, a CRC mismatch or a bad structure."""


class CheckpointError(UnknownServerError):
    """A checkpoint file that does not parse (Kafka: ``IOException`` with a
    "Malformed line" or "Unrecognised version" message)."""


class LogDirLockedError(KafkaStorageError):
    """Another process (or this one) holds the ``.lock`` of a log directory."""


class LogClosedError(KafkaStorageError):
    """The log, a segment or an index was closed (Kafka:
    ``checkIfMemoryMappedBufferClosed``)."""


class LogCleaningAbortedError(Exception):
    """``LogCleaningAbortedException``: a cleaning stopped on purpose (the
    partition was deleted, cleaning was aborted or paused, the log changed
    under it, the broker is shutting down). Not a failure of the partition."""


class ThreadShutdownError(LogCleaningAbortedError):
    """``ThreadShutdownException``: the cleaner thread is stopping."""
