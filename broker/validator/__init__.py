"""Kafka 3.9's ``LogValidator`` and the checks around it (``UnifiedLog``'s
``analyzeAndValidateRecords``, ``ProduceRequest.validateRecords``).

One entry point, :func:`validate_records`; see ``validate.py`` for the path
decision table and ``checks.py`` for every check with its error.
"""

from broker.validator.result import (
    AppendOrigin,
    BatchInfo,
    MetricsRecorder,
    NullRecorder,
    RecordValidationStats,
    ValidationResult,
)
from broker.validator.validate import validate_records

__all__ = [
    "AppendOrigin",
    "BatchInfo",
    "MetricsRecorder",
    "NullRecorder",
    "RecordValidationStats",
    "ValidationResult",
    "validate_records",
]
