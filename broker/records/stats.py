"""``RecordValidationStats``: what a validation or a conversion cost.

Kafka's three fields (``RecordValidationStats.java``; ``RecordConversionStats``
before 3.7), reported per partition and fed to ProduceMessageConversionsPerSec /
FetchMessageConversionsPerSec (records converted) and the request metrics
TemporaryMemoryBytes and MessageConversionsTimeMs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RecordValidationStats:
    temporary_memory_bytes: int = 0
    num_records_converted: int = 0
    conversion_time_nanos: int = 0

    def add(self, other: RecordValidationStats) -> RecordValidationStats:
        return RecordValidationStats(
            self.temporary_memory_bytes + other.temporary_memory_bytes,
            self.num_records_converted + other.num_records_converted,
            self.conversion_time_nanos + other.conversion_time_nanos,
        )


EMPTY_STATS = RecordValidationStats()
