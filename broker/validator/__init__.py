"""Kafka 3.9's ``LogValidator`` and the checks around it (``UnifiedLog``'s
``analyzeAndValidateRecords``, ``ProduceRequest.validateRecords``).

One entry point, :func:`validate_records`; see ``validate.py`` for the path
decision table and ``checks.py`` for every check with its error.
"""

from broker.validator.inline import OffloadRequired
from broker.validator.result import (
    AppendOrigin,
    BatchInfo,
    DeferredRecorder,
    MetricsRecorder,
    NullRecorder,
    RecordValidationStats,
    ValidationResult,
)
from broker.validator.validate import validate_records

__all__ = [
    "AppendOrigin",
    "BatchInfo",
    "DeferredRecorder",
    "MetricsRecorder",
    "NullRecorder",
    "OffloadRequired",
    "RecordValidationStats",
    "ValidationResult",
    "validate_records",
]
