"""A Kafka-compatible broker-side append and validation service.

Layers (imports point down only; checked by import-linter, see pyproject.toml)::

    cli -> app -> server -> handlers | metrics -> partition | protocol
        -> validator | log -> records -> config | errors
"""

__version__ = "0.1.0"
